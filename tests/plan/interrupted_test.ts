/**
 * Steps in flight at a kill (`run-plan`): a step is saved as `running` before its
 * tool starts; after a real SIGKILL of the run-plan CLI's process mid-step, the next run re-runs it
 * only when its tool is idempotent, stops for the user otherwise, and re-runs it with `--yes`,
 * saying so. The next runs are the same CLI in this process (`main(argv, io)`, no terminal).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { main } from "../../src/cli/run_plan.ts";
import type { Plan } from "../../src/plan/types.ts";
import { runMain } from "../cli/helpers.ts";

const REPO = new URL("../../", import.meta.url).pathname;

function planJson(steps: unknown[]): string {
  return JSON.stringify({
    id: "plan_kill",
    taskId: "task_kill",
    version: 1,
    createdAt: "2025-01-01T00:00:00Z",
    steps,
  });
}

async function readPlan(file: string): Promise<Plan | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(file));
  } catch {
    return undefined; // not written yet
  }
}

/** The run-plan CLI in its own process group, so SIGKILL takes its tool's children too. */
function spawnRunPlan(args: string[], cwd: string): Deno.ChildProcess {
  return new Deno.Command("setsid", {
    args: [Deno.execPath(), "run", "-A", join(REPO, "src/cli/run_plan.ts"), ...args],
    cwd: REPO,
    env: { INIT_CWD: cwd, NO_COLOR: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
}

/** The run-plan CLI in this process (`main(argv, io)`), without a terminal. */
const runPlan = (args: string[], cwd: string) => runMain(main, args, { userDir: cwd });

/** Waits until `ready()` holds (polling), then SIGKILLs the whole process group. */
async function killWhen(child: Deno.ChildProcess, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await ready())) {
    if (Date.now() > deadline) {
      Deno.kill(-child.pid, "SIGKILL");
      await child.status;
      throw new Error("the step never started");
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  Deno.kill(-child.pid, "SIGKILL");
  // The CLI is the group's leader and was started directly, so its end is the end of the process
  // that held the plan's lock; the tool's shell and its sleep got the same SIGKILL and cannot write
  // after it (they may linger as zombies until PID 1 reaps them, which is no reason to wait).
  const status = await child.status;
  assert.equal(status.signal, "SIGKILL");
}

async function lines(file: string): Promise<number> {
  try {
    return (await Deno.readTextFile(file)).split("\n").filter(Boolean).length;
  } catch {
    return 0;
  }
}

Deno.test("SIGKILL mid-step, non-idempotent tool: the next run stops and names it; --yes re-runs it and says so", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_plan_kill_" });
  const planFile = join(dir, "plan.json");
  const marks = join(dir, "marks.txt");
  await Deno.writeTextFile(
    planFile,
    planJson([
      {
        id: "mark",
        description: "Append a mark, then work for a while",
        tool: "run_command",
        // Sleeps only on its first run, so the re-run ends at once.
        args: {
          command: "sh",
          args: ["-c", 'echo ran >> marks.txt; [ "$(wc -l < marks.txt)" -ge 2 ] || sleep 30'],
        },
      },
      {
        id: "after",
        description: "Read the marks",
        tool: "read_file",
        args: { path: "marks.txt" },
        dependsOn: ["mark"],
      },
    ]),
  );
  const child = spawnRunPlan(["plan.json", "--yes", "--enable-commands"], dir);
  await killWhen(child, async () => {
    const plan = await readPlan(planFile);
    return plan?.steps[0].status === "running" && (await lines(marks)) === 1;
  });
  assert.equal((await readPlan(planFile))!.steps[0].status, "running", "recorded as started");

  // Without --yes (and no terminal): nothing runs, the step and its tool are named, exit 2.
  const stopped = await runPlan(
    ["plan.json", "--approve", "run_command", "--enable-commands"],
    dir,
  );
  assert.equal(stopped.code, 2, stopped.stderr);
  assert.match(
    stopped.stderr,
    /Step "mark" \(run_command\) was running when an earlier run stopped \(killed or crashed\).*not declared idempotent.*--yes/s,
  );
  assert.doesNotMatch(stopped.stderr, /\n\s+at /);
  assert.equal(await lines(marks), 1, "nothing ran again");
  assert.equal((await readPlan(planFile))!.steps[0].status, "running", "the file is unchanged");

  // With --yes: it re-runs, and says so.
  const rerun = await runPlan(["plan.json", "--yes", "--enable-commands"], dir);
  assert.equal(rerun.code, 0, rerun.stderr);
  assert.match(rerun.stderr, /Re-running "mark" \(run_command\).*--yes re-runs steps/s);
  assert.equal(await lines(marks), 2, "the documented cost: the effect happened twice");
  const done = (await readPlan(planFile))!;
  assert.deepEqual(done.steps.map((s) => s.status), ["completed", "completed"]);
});

Deno.test("SIGKILL mid-step, idempotent tool (http_get): the next run re-runs it on its own", async () => {
  let requests = 0;
  let releaseFirst = () => {};
  const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async () => {
      requests++;
      if (requests === 1) {
        // The first call hangs until its client was killed.
        await firstHeld;
        return new Response("late");
      }
      return Response.json({ ok: true });
    },
  );
  try {
    const dir = await Deno.makeTempDir({ prefix: "run_plan_kill_http_" });
    const planFile = join(dir, "plan.json");
    await Deno.writeTextFile(
      planFile,
      planJson([{
        id: "fetch",
        description: "Fetch the status",
        tool: "http_get",
        args: { url: `http://127.0.0.1:${server.addr.port}/status` },
      }]),
    );
    const child = spawnRunPlan(["plan.json", "--yes", "--enable-http"], dir);
    await killWhen(
      child,
      async () => requests === 1 && (await readPlan(planFile))?.steps[0].status === "running",
    );
    releaseFirst();
    const again = await runPlan(["plan.json", "--approve", "http_get", "--enable-http"], dir);
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      again.stderr,
      /step fetch · was running when an earlier run stopped.*http_get is idempotent/,
    );
    assert.equal(requests, 2);
    const plan = (await readPlan(planFile))!;
    assert.equal(plan.steps[0].status, "completed");
    assert.deepEqual((plan.steps[0].result?.value as { body: unknown }).body, { ok: true });
  } finally {
    releaseFirst();
    await server.shutdown();
  }
});
