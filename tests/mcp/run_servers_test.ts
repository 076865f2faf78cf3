/**
 * The MCP servers of a run on the chat backends, with a real server from npm: started once for
 * the whole run (not once per tool-using call), closed at its end — when it completes, when it is
 * cancelled, and when the CLI gets Ctrl-C — with no process left behind.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { finish, spawnCli } from "../cli/helpers.ts";
import { seed001Files, seed001Script, writeAgent } from "../flow/fixtures.ts";
import { groupGone, groupMembers, running, serverCommand } from "./npm_servers.ts";
import { openAiCompletion, openAiToolCalls, startFakeServer } from "../llm/fake_server.ts";

/**
 * The seed's code-improver agent with server-everything behind a wrapper that appends its process
 * id to `server.pids` on every start.
 */
async function agentWithServer(): Promise<{ root: string; pidFile: string; everything: string }> {
  const everything = await serverCommand("mcp-server-everything");
  const root = await Deno.makeTempDir({ prefix: "stepflow_mcp_run_" });
  const pidFile = join(root, "server.pids");
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Read", "mcp__everything"],
    mcpServers: {
      everything: {
        command: "bash",
        args: ["-c", `echo $$ >> '${pidFile}'; exec '${everything}'`],
      },
    },
  });
  await writeAgent(root, "code-improver", files);
  return { root, pidFile, everything };
}

async function startedPids(pidFile: string): Promise<number[]> {
  const text = await Deno.readTextFile(pidFile).catch(() => "");
  return text.split("\n").filter(Boolean).map(Number);
}

const echo = (message: string) => ({
  toolCalls: [{ name: "mcp__everything__echo", arguments: { message } }],
});

Deno.test("a run starts each MCP server once for all its steps and checks, and closes it at the end", async () => {
  const { root, pidFile } = await agentWithServer();
  const def = await loadAgentDefinition("code-improver", { cwd: root });
  let alive: boolean[] = [];
  const backend = new ScriptedBackend(seed001Script({
    s_a8f3: [echo("one"), "Echoed one."],
    s_b2c1: [echo("two"), "Echoed two."],
    s_c9d4: [echo("three"), "Echoed three."],
  }));
  const result = await new StepFlowRunner(def, { backend }).run({
    args: { topic: "t" },
    cwd: root,
  });
  assert.equal(result.success, true, JSON.stringify(result.error));
  // Three steps and three checks, each a tool-using call: one server process.
  const pids = await startedPids(pidFile);
  assert.equal(pids.length, 1, `started ${pids.length} times`);
  const results = backend.toolTurns.flatMap((t) =>
    t.messages.flatMap((m) => m.role === "tool" ? m.results.map((r) => r.content) : [])
  );
  assert.ok(results.includes("Echo: three"), results.join(" | "));
  alive = pids.map(running);
  assert.deepEqual(await groupGone(pids[0]), [], `left running after the run (alive: ${alive})`);
});

Deno.test("a cancelled run closes its MCP servers", async () => {
  const { root, pidFile } = await agentWithServer();
  const def = await loadAgentDefinition("code-improver", { cwd: root });
  const controller = new AbortController();
  const backend = new ScriptedBackend(async (req) => {
    if (req.stepId === "s_a8f3" && req.kind !== "check") {
      const pids = await startedPids(pidFile);
      // The second turn of the first step: the server answered the echo; cancel while it runs.
      if (pids.length === 1) {
        assert.equal(running(pids[0]), true);
        controller.abort();
        return { text: "never read", delayMs: 60_000 };
      }
      return echo("before the cancel");
    }
    return { output: { result: "ok", message: "fine" } };
  });
  const result = await new StepFlowRunner(def, { backend }).run({
    args: { topic: "t" },
    cwd: root,
    signal: controller.signal,
  });
  assert.equal(result.completionReason, "cancelled");
  const pids = await startedPids(pidFile);
  assert.equal(pids.length, 1);
  assert.deepEqual(await groupGone(pids[0]), []);
});

Deno.test("Ctrl-C on run-agent closes the run's MCP servers before the process exits", async () => {
  const { root, pidFile } = await agentWithServer();
  // A model on the wire: it asks for the echo, then takes its time with the next answer.
  const server = startFakeServer([
    openAiToolCalls([{
      id: "call_1",
      name: "mcp__everything__echo",
      arguments: '{"message":"before Ctrl-C"}',
    }]),
    { ...openAiCompletion("never read"), delayMs: 120_000 },
  ]);
  try {
    const child = spawnCli("run-agent", [
      "--agent",
      "code-improver",
      "--backend",
      "openai",
      "--base-url",
      `${server.url}/v1`,
      "--model",
      "m",
      "--topic",
      "t",
    ], { userDir: root });
    // The event: the second request carries the server's answer to the echo.
    while (server.requests.length < 2) await new Promise((r) => setTimeout(r, 20));
    assert.match(JSON.stringify(server.requests[1].body), /Echo: before Ctrl-C/);
    const pids = await startedPids(pidFile);
    assert.equal(pids.length, 1);
    assert.equal(running(pids[0]), true);
    child.kill("SIGINT");
    const out = await finish(child);
    assert.equal(out.code, 130, out.stderr);
    // Closed by the run, not left to die with the process: gone when the CLI has exited.
    assert.deepEqual(groupMembers(pids[0]), []);
  } finally {
    await server.close();
  }
});

Deno.test("a program that ran an agent with MCP servers ends as soon as the run has (no timer left behind)", async () => {
  const { root, pidFile } = await agentWithServer();
  // A library user's program: the run, then nothing — Deno exits once its event loop is empty.
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(import.meta.dirname!, "library_run.ts"), root],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let printed = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    while (!printed.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) break;
      printed += value;
    }
    // (Its stderr is read only on failure: it closes when the process ends.)
    if (!printed.startsWith('{"success":true')) assert.fail(`${printed}\n${await stderr}`);
    assert.deepEqual(JSON.parse(printed), { success: true, error: null });
    // The bug kept it alive for the MCP call timeout (120 s); any bound well under it tells.
    const ended = performance.now();
    const late = new Promise<"late">((done) => timer = setTimeout(() => done("late"), 30_000));
    const status = await Promise.race([child.status, late]);
    assert.notEqual(
      status,
      "late",
      `still running ${Math.round(performance.now() - ended)} ms after its run ended`,
    );
    assert.equal((status as Deno.CommandStatus).code, 0);
    const pids = await startedPids(pidFile);
    assert.deepEqual(groupMembers(pids[0]), [], "its MCP server was closed");
  } finally {
    clearTimeout(timer);
    try {
      child.kill("SIGKILL");
    } catch { /* it ended */ }
    await lines.cancel().catch(() => {});
    await child.status;
    await stderr;
  }
});
