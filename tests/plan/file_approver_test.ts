/**
 * The file approver: requests recorded beside the plan, answered by decision files (first answer
 * wins), stale answers ignored, cancellation withdraws, and no step id names a file outside the
 * folder.
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
  // The decision file is consumed; a second answer is refused.
  await assert.rejects(Deno.stat(approvalFiles(file, "step_1").decision), Deno.errors.NotFound);
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

Deno.test("file approver: stale decision files are never taken for a new request", async () => {
  const file = await planFile();
  const files = approvalFiles(file, "step_5");
  await Deno.mkdir(approvalsDir(file), { recursive: true });
  // Left by an earlier run: an approval of an old request, present before the step asks.
  const old = { requestId: "old", approved: true, by: "dashboard", decidedAt: "2026-01-01" };
  await Deno.writeTextFile(files.decision, JSON.stringify(old));
  const warnings: string[] = [];
  const approve = fileApprover(file, { pollMs: 10, onWarning: (m) => warnings.push(m) });
  let settled = false;
  const answer = Promise.resolve(approve(request("step_5"), new AbortController().signal))
    .finally(() => settled = true);
  const requestId = await waitingRequest(file, "step_5");
  // One written while it waits, for another request, and one that is not JSON: both removed.
  await Deno.writeTextFile(files.decision, JSON.stringify(old));
  const removed = async () => {
    for (let i = 0; i < 200; i++) {
      try {
        await Deno.stat(files.decision);
      } catch {
        return;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.fail("the stale decision was not removed");
  };
  await removed();
  await Deno.writeTextFile(files.decision, "{not json");
  await removed();
  // One too large to be an answer, though it names the waiting request: refused too.
  const huge = JSON.stringify({ ...old, requestId, reason: "x".repeat(10_000_001) });
  await Deno.writeTextFile(files.decision, huge);
  await removed();
  assert.equal(settled, false, "a stale answer did not decide");
  assert.equal(warnings.length, 3);
  assert.match(warnings[0], /an answer to another request \(old\)/);
  assert.match(warnings[1], /not an approval answer/);
  assert.match(warnings[2], /not an approval answer/);
  // An answer naming an id that is not the waiting one is refused up front.
  await assert.rejects(
    decideApproval(file, "step_5", "old", { approved: true, by: "dashboard" }),
    (e) => notWaiting(e) && /replaced by a newer one/.test((e as Error).message),
  );
  await decideApproval(file, "step_5", requestId, { approved: true, by: "dashboard" });
  assert.equal(await answer, true);
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
