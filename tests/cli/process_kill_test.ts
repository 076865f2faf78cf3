/**
 * Nothing a run started outlives it: a real `run-agent` (a scripted model) is killed with SIGKILL
 * or stopped with SIGTERM while a Bash call runs — a command that left processes behind in five
 * ways (`setsid -f`, `setsid … &`, `nohup … &`, a double fork, a background job) — or while an MCP
 * server that ignores SIGTERM and the end of its input works on a call with a grandchild that left
 * its session; then `/proc` is checked for every one of them. A `--resume` refuses to call a call
 * "unfinished" while a process of it still runs (`TOOL_CALL_STILL_RUNNING`, naming the pid).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { seed001Files, seed001Script, writeAgent } from "../flow/fixtures.ts";
import { escapePids, escapingCommand, stillAlive } from "../process_escapes.ts";
import { finish, readUntil, runCli, spawnCli } from "./helpers.ts";
import { FileRunStore } from "../../src/store/file.ts";

const LINUX = Deno.build.os === "linux";
const SCRIPT_FILE = "tool.script.json";
const STUBBORN = fileURLToPath(new URL("./fixtures/stubborn_mcp_server.ts", import.meta.url));

/**
 * The seed's agent whose first step makes one call (`call`), in a fresh folder; with the stubborn
 * MCP server for an MCP call.
 */
async function project(
  call: { name: string; arguments: Record<string, unknown> },
): Promise<string> {
  const user = await Deno.makeTempDir({ prefix: "stepflow-proc-kill-" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Bash", "mcp__stubborn"],
    permissionMode: "bypassPermissions",
    ...(call.name.startsWith("mcp__")
      ? {
        mcpServers: { stubborn: { command: Deno.execPath(), args: ["run", "-A", STUBBORN, user] } },
      }
      : {}),
  });
  await writeAgent(user, "code-improver", files);
  await Deno.writeTextFile(
    join(user, SCRIPT_FILE),
    JSON.stringify(seed001Script({ s_a8f3: [{ toolCalls: [call] }, "Done."] })),
  );
  return user;
}

const bash = (command: string) => ({ name: "Bash", arguments: { command } });
const ARGS = ["--agent", "code-improver", "--script", SCRIPT_FILE, "--topic", "t"];

/** Waits for `name` in `dir` to hold a pid; fails when the run ended first. */
async function pidFile(dir: string, name: string, ended: AbortSignal): Promise<number> {
  for (;;) {
    const text = await Deno.readTextFile(join(dir, name)).catch(() => "");
    if (/^\d+\n$/.test(text)) return Number(text);
    ended.throwIfAborted();
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Starts the run; `ended` fires when its process exits. */
function start(user: string, env: Record<string, string> = {}) {
  const child = spawnCli("run-agent", ARGS, { userDir: user, env, stdout: "piped" });
  const controller = new AbortController();
  const status = finish(child).finally(() =>
    controller.abort(new Error("run-agent ended before the moment"))
  );
  return { child, status, ended: controller.signal };
}

/** The pids of the Bash call's processes, once every one of them runs. */
async function bashProcesses(user: string, ended: AbortSignal): Promise<Map<string, number>> {
  const pids = await escapePids(user, ended);
  pids.set("bash", await pidFile(user, "bash.pid", ended));
  return pids;
}

async function theRun(user: string): Promise<string> {
  const [run] = await new FileRunStore(join(user, "tmp/logs/agents/code-improver")).list();
  return run.runId;
}

const resume = (user: string, runId: string) =>
  runCli(["resume", runId, "--script", SCRIPT_FILE], {
    userDir: user,
  });

Deno.test({
  name:
    "run-agent killed with SIGKILL in a Bash call: nothing the command started is left; --resume says TOOL_CALL_UNFINISHED",
  ignore: !LINUX,
  fn: async () => {
    const user = await project(bash(escapingCommand("echo $$ > bash.pid; sleep 4709")));
    try {
      const run = start(user);
      const pids = await bashProcesses(user, run.ended);
      run.child.kill("SIGKILL");
      assert.equal((await run.status).signal, "SIGKILL");
      assert.deepEqual(await stillAlive(pids.values()), [], JSON.stringify([...pids]));
      const runId = await theRun(user);
      const resumed = await resume(user, runId);
      assert.equal(resumed.code, 2, resumed.stderr);
      assert.match(
        resumed.stderr,
        /Check the effect, then resume the run with the unfinished call re-run anyway/,
      );
      assert.match(
        resumed.stderr,
        new RegExp(`^Next: \\S.* resume ${runId} --rerun-unfinished-call$`, "m"),
      );
      assert.doesNotMatch(resumed.stderr, /still running/);
    } finally {
      await Deno.remove(user, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "--resume refuses (TOOL_CALL_STILL_RUNNING, with the pids) while a process of the unfinished call still runs, then accepts once it is gone",
  ignore: !LINUX,
  fn: async () => {
    const user = await project(bash(escapingCommand("echo $$ > bash.pid; sleep 4709")));
    let pids = new Map<string, number>();
    try {
      // Chosen weaker containment: the command outlives a kill -9 of the run.
      const run = start(user, { STEPFLOW_PROCESS_CONTAINMENT: "session" });
      pids = await bashProcesses(user, run.ended);
      run.child.kill("SIGKILL");
      await run.status;
      const left = await stillAlive(pids.values(), 0);
      assert.ok(left.includes(pids.get("setsid_f")!), "the setsid -f escape outlived the run");
      const runId = await theRun(user);
      const refused = await resume(user, runId);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(
        refused.stderr,
        new RegExp(
          `Run ${runId} was stopped in step "s_a8f3" while the tool call Bash \\(.*\\) was running, and \\d+ processes the run started are still running on this machine: .*pid ${
            pids.get("setsid_f")
          } \\(sleep 4701\\)`,
        ),
      );
      assert.match(
        refused.stderr,
        /Wait for them to end, or stop them \(kill [\d ]+\), then resume/,
      );
      assert.doesNotMatch(refused.stderr, /\n\s+at /, "no stack trace");
      for (const pid of left) Deno.kill(pid, "SIGKILL");
      assert.deepEqual(await stillAlive(pids.values()), []);
      const resumed = await resume(user, runId);
      assert.equal(resumed.code, 2, resumed.stderr);
      assert.match(
        resumed.stderr,
        /Check the effect, then resume the run with the unfinished call re-run anyway/,
      );
    } finally {
      for (const pid of await stillAlive(pids.values(), 0)) Deno.kill(pid, "SIGKILL");
      await Deno.remove(user, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "run-agent stopped with SIGTERM in a Bash call: cancelled like Ctrl-C, exit 143, nothing left",
  ignore: !LINUX,
  fn: async () => {
    const user = await project(bash(escapingCommand("echo $$ > bash.pid; sleep 4709")));
    try {
      const run = start(user);
      const pids = await bashProcesses(user, run.ended);
      run.child.kill("SIGTERM");
      const out = await run.status;
      assert.equal(out.code, 143, out.stderr);
      assert.match(out.stderr, /SIGTERM: Cancelling the run/);
      assert.match(out.stdout, /■ code-improver cancelled at s_a8f3/);
      // Killed by the run before it exited (a moment for the kernel to reap them).
      assert.deepEqual(await stillAlive(pids.values(), 2_000), [], JSON.stringify([...pids]));
    } finally {
      await Deno.remove(user, { recursive: true });
    }
  },
});

for (const signal of ["SIGKILL", "SIGTERM"] as const) {
  Deno.test({
    name: `run-agent ${
      signal === "SIGKILL" ? "killed with SIGKILL" : "stopped with SIGTERM"
    } in an MCP call: a server that ignores TERM and the end of its input dies, with its setsid grandchild`,
    ignore: !LINUX,
    fn: async () => {
      const user = await project({ name: "mcp__stubborn__work", arguments: {} });
      try {
        const run = start(user);
        const server = await pidFile(user, "server.pid", run.ended);
        const grandchild = await pidFile(user, "grandchild.pid", run.ended);
        run.child.kill(signal);
        const out = await run.status;
        if (signal === "SIGTERM") assert.equal(out.code, 143, out.stderr);
        assert.deepEqual(await stillAlive([server, grandchild]), [], `${server}, ${grandchild}`);
      } finally {
        await Deno.remove(user, { recursive: true });
      }
    },
  });
}

Deno.test("ui: SIGTERM stops the dashboard like Ctrl-C (exit 0)", async () => {
  const user = await Deno.makeTempDir({ prefix: "stepflow-proc-ui-" });
  try {
    const child = spawnCli("ui", ["--port", "0"], { userDir: user });
    const reader = child.stdout.getReader();
    const sink = { text: "" };
    await readUntil(reader, sink, "stepflow dashboard: http");
    child.kill("SIGTERM");
    reader.releaseLock();
    const out = await finish(child);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.signal, null);
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});
