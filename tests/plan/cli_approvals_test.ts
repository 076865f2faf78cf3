/**
 * `run-plan --approvals dashboard`: without a terminal the run starts and a step that needs
 * approval waits for a decision file (what the dashboard writes) instead of being denied.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { main } from "../../src/cli/run_plan.ts";
import { decideApproval, listApprovals } from "../../src/plan/file_approver.ts";
import type { Plan } from "../../src/plan/types.ts";
import { runMain, spawnCli } from "../cli/helpers.ts";

async function planDir(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-run-plan-approvals-" });
  await Deno.writeTextFile(
    join(dir, "plan.json"),
    JSON.stringify({
      id: "plan_approvals",
      taskId: "task_approvals",
      version: 1,
      createdAt: "2025-01-01T00:00:00Z",
      steps: [
        {
          id: "write",
          description: "Write the release note",
          tool: "write_file",
          args: { path: "NOTE.md", content: "released" },
          requiresApproval: true,
        },
        {
          id: "read",
          description: "Read it back",
          tool: "read_file",
          args: { path: "NOTE.md" },
          dependsOn: ["write"],
        },
      ],
    }),
  );
  return dir;
}

/**
 * Starts run-plan in its own process without a terminal (stdin closed), as a CI job or a
 * background run would.
 */
function startRunPlan(args: string[], cwd: string) {
  const child = spawnCli("run-plan", args, { userDir: cwd });
  return {
    result: child.output().then((out) => ({
      code: out.code,
      stdout: new TextDecoder().decode(out.stdout),
      stderr: new TextDecoder().decode(out.stderr),
    })),
  };
}

/** Starts run-plan in this process (`main(argv, io)`), without a terminal. */
function startRunPlanInProcess(args: string[], cwd: string) {
  return { result: runMain(main, args, { userDir: cwd }) };
}

async function waitingRequestId(planFile: string, stepId: string): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const record = (await listApprovals(planFile)).records.get(stepId);
    if (record?.state === "waiting") return record.requestId;
    assert.ok(Date.now() < deadline, `run-plan did not ask for ${stepId}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

Deno.test("run-plan --approvals dashboard: an approval written by another process runs the step (exit 0)", async () => {
  const dir = await planDir();
  const planFile = join(dir, "plan.json");
  const run = startRunPlan(["plan.json", "--approvals", "dashboard"], dir);
  const requestId = await waitingRequestId(planFile, "write");
  await decideApproval(planFile, "write", requestId, { approved: true, by: "dashboard" });
  const r = await run.result;
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stderr,
    /\] step write · waiting for approval from the dashboard \(.*plan\.json\.approvals/,
  );
  assert.match(r.stderr, /\] step write #1 · approved\n/);
  assert.equal(await Deno.readTextFile(join(dir, "NOTE.md")), "released");
  const saved: Plan = JSON.parse(await Deno.readTextFile(planFile));
  assert.deepEqual(saved.steps.map((s) => s.status), ["completed", "completed"]);
  assert.equal((await listApprovals(planFile)).records.get("write")?.state, "approved");
});

Deno.test("run-plan --approvals dashboard: a denial skips the step and its dependents (exit 3)", async () => {
  const dir = await planDir();
  const planFile = join(dir, "plan.json");
  const run = startRunPlanInProcess(["plan.json", "--approvals", "dashboard"], dir);
  const requestId = await waitingRequestId(planFile, "write");
  await decideApproval(planFile, "write", requestId, {
    approved: false,
    reason: "wrong wording",
    by: "dashboard",
  });
  const r = await run.result;
  assert.equal(r.code, 3, r.stderr);
  await assert.rejects(Deno.stat(join(dir, "NOTE.md")), Deno.errors.NotFound);
  const saved: Plan = JSON.parse(await Deno.readTextFile(planFile));
  assert.deepEqual(saved.steps.map((s) => s.status), ["skipped", "skipped"]);
  assert.equal(
    saved.steps[0].result?.error,
    "User denied approval (denied by dashboard: wrong wording)",
  );
  assert.match(r.stdout, /did not run because approval was not given \(write, read\)/);
});

Deno.test("run-plan --approvals: a wrong mode is a usage error; without it no terminal still refuses", async () => {
  const dir = await planDir();
  const bad = await startRunPlanInProcess(["plan.json", "--approvals", "email"], dir).result;
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--approvals is "terminal" .* or "dashboard"/);
  const refused = await startRunPlanInProcess(["plan.json"], dir).result;
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /--approvals dashboard/);
});

Deno.test("run-plan --approvals dashboard on a terminal: the first answer wins (in-process)", async () => {
  const dir = await planDir();
  const planFile = join(dir, "plan.json");
  // The terminal answers "y" to start, then nothing: the dashboard answers the step.
  const stdin = new TransformStream<Uint8Array, Uint8Array>();
  const typing = stdin.writable.getWriter();
  void typing.write(new TextEncoder().encode("y\n"));
  let stderr = "";
  const running = main(["plan.json", "--approvals", "dashboard"], {
    cwd: dir,
    env: {},
    isTerminal: { stdin: true, stdout: false, stderr: false },
    stdin: stdin.readable,
    stdout: { write: () => {} },
    stderr: { write: (t) => void (stderr += t) },
  });
  const requestId = await waitingRequestId(planFile, "write");
  await decideApproval(planFile, "write", requestId, { approved: true, by: "dashboard" });
  assert.equal(await running, 0, stderr);
  assert.match(stderr, /Approve step "write" \(Write the release note\)\?/);
  assert.match(stderr, /\(answered from the dashboard\)/);
  assert.equal(await Deno.readTextFile(join(dir, "NOTE.md")), "released");

  // Now the terminal answers first ("n"): its answer is recorded in the request, so the dashboard
  // cannot answer it too.
  const again = new TransformStream<Uint8Array, Uint8Array>();
  const keys = again.writable.getWriter();
  void keys.write(new TextEncoder().encode("y\n"));
  let err2 = "";
  const second = main(["plan.json", "--approvals", "dashboard", "--restart"], {
    cwd: dir,
    env: {},
    isTerminal: { stdin: true, stdout: false, stderr: false },
    stdin: again.readable,
    stdout: { write: () => {} },
    stderr: { write: (t) => void (err2 += t) },
  });
  const secondId = await waitingRequestId(planFile, "write");
  assert.notEqual(secondId, requestId, "a new request for the new run");
  void keys.write(new TextEncoder().encode("n\n"));
  assert.equal(await second, 3, err2);
  assert.doesNotMatch(err2, /answered from the dashboard/);
  const record = (await listApprovals(planFile)).records.get("write");
  assert.equal(record?.state, "denied");
  assert.equal(record?.decidedBy, "terminal");
  assert.equal(record?.denyReason, "denied at the prompt");
  await assert.rejects(
    decideApproval(planFile, "write", secondId, { approved: true, by: "dashboard" }),
    /another answer was given first: its request was already denied by terminal/,
  );
  const saved: Plan = JSON.parse(await Deno.readTextFile(planFile));
  assert.equal(saved.steps[0].result?.error, "User denied approval (denied at the prompt)");
  void typing.close();
  void keys.close();
});
