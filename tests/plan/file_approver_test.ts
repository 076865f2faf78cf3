/**
 * The file approver: requests recorded beside the plan, answered in place exactly once (the first
 * answer wins, whatever the timing), a request of an earlier run replaced, cancellation withdraws,
 * and no step id names a file outside the folder.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { StepflowError } from "../../src/errors.ts";
import {
  approvalFiles,
  approvalsDir,
  approvalStem,
  decideApproval,
  fileApprover,
  firstApproval,
  listApprovals,
  recordedApprover,
} from "../../src/plan/file_approver.ts";
import type { ApprovalRequest, Approver } from "../../src/plan/types.ts";

function request(stepId: string, tool = "write_file"): ApprovalRequest {
  return {
    planId: "plan_1",
    stepId,
    description: `Step ${stepId}`,
    tool,
    args: { path: "config.json", content: "<x>" },
    reason: "the step asks for approval",
  };
}

async function planFile(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-approvals-" });
  const file = join(dir, "release.json");
  await Deno.writeTextFile(file, "{}");
  return file;
}

/** Waits until the step's request is recorded and waiting; returns its id. */
async function waitingRequest(file: string, stepId: string): Promise<string> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const record = (await listApprovals(file)).records.get(stepId);
    if (record?.state === "waiting") return record.requestId;
    assert.ok(Date.now() < deadline, `no waiting request for ${stepId}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const notWaiting = (e: unknown) => e instanceof StepflowError && e.code === "APPROVAL_NOT_WAITING";

Deno.test("file approver: the request is recorded; an approval lets the step run", async () => {
  const file = await planFile();
  const approve = fileApprover(file, { pollMs: 10 });
  const answer = approve(request("step_1"), new AbortController().signal);
  const requestId = await waitingRequest(file, "step_1");
  const recorded = JSON.parse(await Deno.readTextFile(join(approvalsDir(file), "step_1.json")));
  assert.equal(recorded.tool, "write_file");
  assert.deepEqual(recorded.args, { path: "config.json", content: "<x>" });
  assert.equal(recorded.reason, "the step asks for approval");
  assert.equal(recorded.pid, Deno.pid);
  assert.ok(Date.parse(recorded.requestedAt) > 0);
  await decideApproval(file, "step_1", requestId, { approved: true, by: "dashboard" });
  assert.equal(await answer, true);
  const after = (await listApprovals(file)).records.get("step_1");
  assert.equal(after?.state, "approved");
  assert.equal(after?.decidedBy, "dashboard");
  // The answer is in the request itself: nothing else is left in the folder; a second is refused.
  assert.deepEqual([...Deno.readDirSync(approvalsDir(file))].map((e) => e.name), ["step_1.json"]);
  await assert.rejects(
    decideApproval(file, "step_1", requestId, { approved: false, by: "dashboard" }),
    notWaiting,
  );
});

Deno.test("file approver: a denial skips the step with the reason; the first answer wins", async () => {
  const file = await planFile();
  const answer = fileApprover(file, { pollMs: 200 })(
    request("step_2"),
    new AbortController().signal,
  );
  const requestId = await waitingRequest(file, "step_2");
  await decideApproval(file, "step_2", requestId, {
    approved: false,
    reason: "not on a Friday",
    by: "dashboard",
  });
  // The waiting run has not read it yet (200 ms poll): a later answer loses.
  await assert.rejects(
    decideApproval(file, "step_2", requestId, { approved: true, by: "someone else" }),
    (e) => notWaiting(e) && /another answer was given first/.test((e as Error).message),
  );
  assert.deepEqual(await answer, {
    approved: false,
    reason: "denied by dashboard: not on a Friday",
  });
  const record = (await listApprovals(file)).records.get("step_2");
  assert.equal(record?.state, "denied");
  assert.equal(record?.denyReason, "not on a Friday");
});

Deno.test("file approver: cancelling the run withdraws the request", async () => {
  const file = await planFile();
  const controller = new AbortController();
  const answer = fileApprover(file, { pollMs: 10 })(request("step_3"), controller.signal);
  const requestId = await waitingRequest(file, "step_3");
  controller.abort(new Error("cancelled"));
  await assert.rejects(Promise.resolve(answer), /cancelled/);
  assert.equal((await listApprovals(file)).records.get("step_3")?.state, "withdrawn");
  await assert.rejects(
    decideApproval(file, "step_3", requestId, { approved: true, by: "dashboard" }),
    notWaiting,
  );
  // A signal aborted before the call records nothing.
  await assert.rejects(
    Promise.resolve(fileApprover(file)(request("step_4"), AbortSignal.abort())),
  );
  assert.equal((await listApprovals(file)).records.has("step_4"), false);
});

Deno.test("file approver: a request of an earlier run is replaced; one removed while waiting is recorded again", async () => {
  const file = await planFile();
  const files = approvalFiles(file, "step_5");
  await Deno.mkdir(approvalsDir(file), { recursive: true });
  // Left by an earlier run that was killed while its request was waiting.
  const old = {
    ...request("step_5"),
    requestId: "old",
    requestedAt: "x",
    pid: 1,
    state: "waiting",
  };
  await Deno.writeTextFile(files.request, JSON.stringify(old));
  const warnings: string[] = [];
  const approve = fileApprover(file, { pollMs: 10, onWarning: (m) => warnings.push(m) });
  let settled = false;
  const answer = Promise.resolve(approve(request("step_5"), new AbortController().signal))
    .finally(() => settled = true);
  let requestId = "old";
  while (requestId === "old") requestId = await waitingRequest(file, "step_5");
  // An answer naming the old request is refused.
  await assert.rejects(
    decideApproval(file, "step_5", "old", { approved: true, by: "dashboard" }),
    (e) => notWaiting(e) && /replaced by a newer one/.test((e as Error).message),
  );
  // Removed, or overwritten with something that is not a request: recorded again, same id.
  for (
    const damage of [
      () => Deno.remove(files.request),
      () => Deno.writeTextFile(files.request, "{not json"),
    ]
  ) {
    await damage();
    assert.equal(await waitingRequest(file, "step_5"), requestId);
  }
  assert.equal(settled, false, "damage did not decide");
  assert.ok(warnings.length >= 2);
  assert.match(warnings[0], /was removed or replaced; recorded it again/);
  await decideApproval(file, "step_5", requestId, { approved: true, by: "dashboard" });
  assert.equal(await answer, true);
});

Deno.test("file approver: of many answers given at once, exactly one wins", async () => {
  const file = await planFile();
  for (let round = 0; round < 5; round++) {
    const answer = fileApprover(file, { pollMs: 5 })(
      request("race"),
      new AbortController().signal,
    );
    const requestId = await waitingRequest(file, "race");
    const outcomes = await Promise.allSettled(
      Array.from(
        { length: 8 },
        (_, i) =>
          decideApproval(file, "race", requestId, { approved: i % 2 === 0, by: `answer ${i}` }),
      ),
    );
    const won = outcomes.flatMap((o, i) => (o.status === "fulfilled" ? [i] : []));
    assert.equal(won.length, 1, `round ${round}: ${won.length} answers won`);
    for (const o of outcomes) {
      if (o.status === "rejected") assert.ok(notWaiting(o.reason), String(o.reason));
    }
    const decided = await answer;
    assert.equal(decided === true, won[0] % 2 === 0);
    const record = (await listApprovals(file)).records.get("race");
    assert.equal(record?.decidedBy, `answer ${won[0]}`);
    assert.deepEqual([...Deno.readDirSync(approvalsDir(file))].map((e) => e.name), ["race.json"]);
  }
});

Deno.test("file approver: step ids like ../x or constructor stay inside the folder", async () => {
  const file = await planFile();
  const dir = approvalsDir(file);
  assert.equal(approvalStem("../x"), "%2E%2E%2Fx");
  assert.equal(approvalStem(".."), "%2E%2E");
  assert.equal(approvalStem("a/b\\c"), "a%2Fb%5Cc");
  assert.equal(approvalStem("é"), "%C3%A9");
  const long = approvalStem("x".repeat(5000));
  assert.ok(long.length <= 160);
  assert.notEqual(long, approvalStem("x".repeat(4999)));
  for (const stepId of ["../x", "constructor", "__proto__", "..", "a/../../b"]) {
    const files = approvalFiles(file, stepId);
    assert.equal(join(files.request, ".."), dir, stepId);
    const approve = fileApprover(file, { pollMs: 10 });
    const answer = approve(request(stepId), new AbortController().signal);
    const requestId = await waitingRequest(file, stepId);
    await decideApproval(file, stepId, requestId, { approved: stepId !== "..", by: "test" });
    const decided = await answer;
    assert.equal(decided === true, stepId !== "..", stepId);
  }
  const { records } = await listApprovals(file);
  assert.deepEqual([...records.keys()].sort(), [
    "..",
    "../x",
    "__proto__",
    "a/../../b",
    "constructor",
  ]);
  // Nothing was written outside the folder (the plan's own folder holds the plan and the folder).
  const beside = [...Deno.readDirSync(join(dir, ".."))].map((e) => e.name).sort();
  assert.deepEqual(beside, ["release.json", "release.json.approvals"]);
});

Deno.test("firstApproval: the first answer wins and the other approver is cancelled", async () => {
  let cancelled = false;
  const slow: Approver = (_req, signal) =>
    new Promise((_resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener("abort", () => {
        cancelled = true;
        reject(signal.reason);
      });
    });
  const fast: Approver = () => ({ approved: false, reason: "no" });
  const both = firstApproval([slow, fast]);
  assert.deepEqual(await both(request("s"), new AbortController().signal), {
    approved: false,
    reason: "no",
  });
  assert.equal(cancelled, true);
  // When every approver fails, the first failure is reported.
  const failing: Approver = () => Promise.reject(new Error("tty gone"));
  const controller = new AbortController();
  const pending = firstApproval([failing, slow])(request("s"), controller.signal);
  controller.abort(new Error("run cancelled"));
  await assert.rejects(Promise.resolve(pending), /tty gone/);
});

Deno.test("terminal and dashboard answering at once: exactly one answer counts, and it is recorded", async () => {
  const file = await planFile();
  let previous: string | undefined;
  for (let round = 0; round < 16; round++) {
    const delay = round < 4 ? round : Math.floor(Math.random() * 30);
    // A terminal that denies after `delay` ms; the dashboard approves at about the same moment.
    const terminal: Approver = (_req, signal) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => resolve({ approved: false, reason: "denied at the prompt" }),
          delay,
        );
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          reject(signal.reason);
        });
      });
    const approver = firstApproval([
      recordedApprover(file, terminal, "terminal"),
      fileApprover(file, { pollMs: 5 }),
    ]);
    const asked = Promise.resolve(approver(request("both"), new AbortController().signal));
    // The dashboard answers the request it sees (as soon as there is one of this round).
    let requestId: string | undefined;
    while (requestId === undefined) {
      const seen = (await listApprovals(file)).records.get("both");
      if (seen && seen.requestId !== previous) requestId = seen.requestId;
      else await new Promise((r) => setTimeout(r, 1));
    }
    previous = requestId;
    const dashboard = decideApproval(file, "both", requestId, { approved: true, by: "dashboard" })
      .then(() => "won", (e) => (notWaiting(e) ? "refused" : Promise.reject(e)));
    const [decision, said] = await Promise.all([asked, dashboard]);
    const record = (await listApprovals(file)).records.get("both")!;
    const what = `round ${round} (${delay} ms): dashboard ${said}, record ${record.state}`;
    if (said === "won") {
      assert.equal(decision, true, what);
      assert.equal(record.state, "approved", what);
    } else {
      assert.deepEqual(decision, { approved: false, reason: "denied at the prompt" }, what);
      // Recorded as the terminal's denial, even when the terminal answered before the request
      // was written.
      assert.equal(record.state, "denied", what);
      assert.equal(record.decidedBy, "terminal", what);
    }
  }
});
