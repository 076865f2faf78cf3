/**
 * MCP servers serving tool plans (`run-plan --mcp-config FILE`) and QPlan scripts
 * (`qplan run|validate --mcp-config FILE`) through the one tool registry, with real servers from
 * npm: only the servers a plan or script names start, once, and none is left running when the
 * command ends — completed, failed, refused, or stopped with Ctrl-C.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { main as runPlanMain } from "../../src/cli/run_plan.ts";
import { qplanMain } from "../../src/cli/qplan.ts";
import { finish, readUntil, runMain, spawnCli, type Spawned } from "../cli/helpers.ts";
import { groupMembers, running, serverCommand, startHttpEverything } from "./npm_servers.ts";

/**
 * A user folder with `.mcp.json` naming server-everything (`everything`), server-filesystem over
 * the folder (`fs`) and a third server (`spare`); each is started through a wrapper that appends
 * its process id to `<name>.pids`.
 */
async function userFolder(): Promise<string> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "stepflow_plan_mcp_" }));
  const wrapped = (name: string, command: string, args: string[] = []) => ({
    command: "bash",
    args: ["-c", `echo $$ >> '${join(dir, `${name}.pids`)}'; exec "$0" "$@"`, command, ...args],
  });
  const everything = await serverCommand("mcp-server-everything");
  const filesystem = await serverCommand("mcp-server-filesystem");
  await Deno.writeTextFile(
    join(dir, ".mcp.json"),
    JSON.stringify({
      mcpServers: {
        everything: wrapped("everything", everything),
        fs: wrapped("fs", filesystem, [dir]),
        spare: wrapped("spare", everything),
      },
    }),
  );
  return dir;
}

async function pidsOf(dir: string, server: string): Promise<number[]> {
  const text = await Deno.readTextFile(join(dir, `${server}.pids`)).catch(() => "");
  return text.split("\n").filter(Boolean).map(Number);
}

function planOf(steps: Record<string, unknown>[]): string {
  return JSON.stringify({
    id: "p",
    taskId: "t",
    version: 1,
    createdAt: "2025-01-01T00:00:00Z",
    steps: steps.map((s) => ({ description: `Step ${s.id}`, ...s })),
  });
}

function runPlan(dir: string, args: string[]): Promise<Spawned> {
  return runMain(runPlanMain, args, { userDir: dir });
}

function qplan(dir: string, args: string[]): Promise<Spawned> {
  return runMain(qplanMain, args, { userDir: dir });
}

/** Every server the command started has exited, with its whole process group, by the time it returned. */
async function assertAllClosed(dir: string, servers: string[]): Promise<void> {
  for (const server of servers) {
    for (const pid of await pidsOf(dir, server)) {
      assert.deepEqual(groupMembers(pid), [], `${server} (${pid}) left behind`);
    }
  }
}

/** A plan of one step calling server-everything's 60-second operation, reporting `steps` times. */
async function writeLongPlan(dir: string, steps: number): Promise<void> {
  await Deno.writeTextFile(
    join(dir, "plan.json"),
    planOf([{
      id: "long",
      tool: "mcp__everything__trigger-long-running-operation",
      args: { duration: 60, steps },
    }]),
  );
}

/**
 * Sends Ctrl-C (or `signal`) to `child` once its stderr shows `marker` (the call under way), then
 * checks that it exits 130 (143 for SIGTERM) with server-everything closed by the command — gone
 * when the process has exited, not left to die with it.
 */
async function interruptMidCall(
  dir: string,
  child: Deno.ChildProcess,
  marker: string,
  signal: "SIGINT" | "SIGTERM" = "SIGINT",
): Promise<void> {
  const reader = child.stderr.getReader();
  const sink = { text: "" };
  await readUntil(reader, sink, marker);
  const [pid] = await pidsOf(dir, "everything");
  assert.equal(running(pid), true);
  child.kill(signal);
  await readUntil(reader, sink);
  reader.releaseLock();
  const out = await finish(child);
  assert.equal(out.code, signal === "SIGTERM" ? 143 : 130, sink.text);
  if (signal === "SIGTERM") assert.match(sink.text, /SIGTERM: /);
  assert.deepEqual(groupMembers(pid), []);
}

Deno.test("run-plan --mcp-config: steps call server-everything and server-filesystem tools; only the servers named start, once; all closed at the end", async () => {
  const dir = await userFolder();
  await Deno.writeTextFile(
    join(dir, "plan.json"),
    planOf([
      { id: "a", tool: "mcp__everything__echo", args: { message: "hello" } },
      { id: "b", tool: "mcp__everything__get-sum", args: { a: 2, b: 3 } },
      {
        id: "c",
        tool: "mcp__fs__write_file",
        args: { path: join(dir, "out.txt"), content: "$a" },
        dependsOn: ["a"],
      },
      {
        id: "d",
        tool: "mcp__fs__read_text_file",
        args: { path: join(dir, "out.txt") },
        dependsOn: ["c"],
      },
    ]),
  );
  const out = await runPlan(dir, [
    "plan.json",
    "--mcp-config",
    ".mcp.json",
    "--approve",
    "mcp__fs__write_file",
  ]);
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stderr, /MCP servers started: everything \(\d+ tools\), fs \(\d+ tools\)/);
  assert.equal(await Deno.readTextFile(join(dir, "out.txt")), "Echo: hello");
  const saved = JSON.parse(await Deno.readTextFile(join(dir, "plan.json")));
  const results = Object.fromEntries(
    saved.steps.map((s: { id: string; result: { value: unknown } }) => [s.id, s.result.value]),
  );
  assert.equal(results.a, "Echo: hello");
  assert.match(results.b as string, /\b5\b/);
  assert.equal(results.d, "Echo: hello");
  // Each server named started once for the whole plan; the one it does not name never started.
  assert.equal((await pidsOf(dir, "everything")).length, 1);
  assert.equal((await pidsOf(dir, "fs")).length, 1);
  assert.deepEqual(await pidsOf(dir, "spare"), []);
  await assertAllClosed(dir, ["everything", "fs"]);
});

Deno.test("run-plan: MCP annotations decide approvals — read-only and non-destructive tools run, destructive ones ask", async () => {
  const dir = await userFolder();
  await Deno.writeTextFile(
    join(dir, "plan.json"),
    planOf([
      { id: "read", tool: "mcp__fs__list_allowed_directories", args: {} },
      { id: "mkdir", tool: "mcp__fs__create_directory", args: { path: join(dir, "made") } },
      {
        id: "write",
        tool: "mcp__fs__write_file",
        args: { path: join(dir, "w.txt"), content: "x" },
      },
    ]),
  );
  // Without a terminal, --approve starts the run and every approval it does not name is denied.
  const out = await runPlan(dir, ["plan.json", "--mcp-config", ".mcp.json", "--approve", "none"]);
  assert.equal(out.code, 3, out.stderr);
  assert.match(
    out.stdout,
    /Requires approval ⚠ \(MCP tool not marked read-only or non-destructive\)/,
  );
  const saved = JSON.parse(await Deno.readTextFile(join(dir, "plan.json")));
  const status = Object.fromEntries(
    saved.steps.map((s: { id: string; status: string }) => [s.id, s.status]),
  );
  assert.deepEqual(status, { read: "completed", mkdir: "completed", write: "skipped" });
  assert.equal((await Deno.stat(join(dir, "made"))).isDirectory, true);
  assert.equal(await Deno.stat(join(dir, "w.txt")).then(() => true, () => false), false);
  await assertAllClosed(dir, ["fs"]);
});

Deno.test("run-plan: an unconfigured server, a tool its server lacks, a server named alone — every problem at once, with the closest name; nothing is left running", async () => {
  const dir = await userFolder();
  await Deno.writeTextFile(
    join(dir, "plan.json"),
    planOf([
      { id: "a", tool: "mcp__everything__ecoh", args: { message: "x" } },
      { id: "b", tool: "mcp__evrything__echo", args: { message: "x" } },
      { id: "c", tool: "mcp__everything", args: {} },
      { id: "d", tool: "mcp__everything__get-sum", args: { a: "two", b: 1 } },
    ]),
  );
  const out = await runPlan(dir, ["plan.json", "--mcp-config", ".mcp.json", "--yes"]);
  assert.equal(out.code, 2, out.stderr);
  assert.match(out.stderr, /the plan has 4 problems/);
  assert.match(
    out.stderr,
    /Step "a": Unknown tool: mcp__everything__ecoh: the MCP server "everything" has no tool "ecoh"\. Did you mean "mcp__everything__echo"\? Its tools: mcp__everything__echo, /,
  );
  assert.match(
    out.stderr,
    /Step "b": Unknown tool: mcp__evrything__echo: no MCP server "evrything" is configured \(configured: everything, fs, spare\)\. Did you mean "mcp__everything__echo"\?/,
  );
  assert.match(
    out.stderr,
    /Step "c": Unknown tool: mcp__everything: "mcp__everything" names the MCP server "everything", not one of its tools: write mcp__everything__<tool>/,
  );
  assert.match(
    out.stderr,
    /Step "d": Invalid args for mcp__everything__get-sum at args\.a: must be number/,
  );
  assert.deepEqual(await pidsOf(dir, "fs"), []);
  await assertAllClosed(dir, ["everything"]);

  // Without --mcp-config, the message says how to configure the server.
  const bare = await runPlan(dir, ["plan.json", "--yes"]);
  assert.equal(bare.code, 2);
  assert.match(
    bare.stderr,
    /Step "a": Unknown tool: mcp__everything__ecoh: no MCP server is configured; configure "everything" \(run-plan, qplan: --mcp-config FILE/,
  );
});

Deno.test("run-plan --mcp-config: a missing file, a misspelt key, an unset variable — MCP_CONFIG_INVALID, exit 2, no stack trace", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow_plan_mcp_config_" });
  await Deno.writeTextFile(
    join(dir, "plan.json"),
    planOf([{ id: "a", tool: "mcp__x__echo", args: {} }]),
  );
  const missing = await runPlan(dir, ["plan.json", "--mcp-config", "nope.json", "--yes"]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /Cannot read the MCP configuration .*nope\.json: no such file/);
  await Deno.writeTextFile(
    join(dir, "bad.json"),
    JSON.stringify({
      mcpServer: {},
      mcpServers: { x: { command: "x", env: { TOKEN: "${STEPFLOW_TEST_UNSET_VAR}" } } },
    }),
  );
  const bad = await runPlan(dir, ["plan.json", "--mcp-config", "bad.json", "--yes"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /Invalid MCP server configuration \(.*bad\.json\):/);
  assert.match(bad.stderr, /unknown key "mcpServer" \(did you mean "mcpServers"\?\)/);
  assert.match(
    bad.stderr,
    /mcpServers\.x\.env\.TOKEN: the environment variable STEPFLOW_TEST_UNSET_VAR is not set/,
  );
  assert.doesNotMatch(bad.stderr, /^\s+at /m);
});

Deno.test("run-plan: a server that dies mid-call fails the step with MCP_SERVER_EXITED at once — not a hang", async () => {
  const dir = await userFolder();
  await writeLongPlan(dir, 60);
  let stderr = "";
  let killed = false;
  const done = runMain(runPlanMain, ["plan.json", "--mcp-config", ".mcp.json", "--yes"], {
    userDir: dir,
    io: {
      // The call is under way once its first progress report is shown.
      stderr: {
        write: (text) => {
          stderr += text;
          if (/step long #1 · /.test(text) && !killed) {
            killed = true;
            void pidsOf(dir, "everything").then(([pid]) => Deno.kill(pid, "SIGKILL"));
          }
        },
      },
    },
  });
  const out = await done;
  assert.equal(killed, true, stderr);
  assert.equal(out.code, 1, stderr);
  assert.match(
    out.stdout + stderr,
    /MCP server "everything" exited \(killed by SIGKILL\) while calling trigger-long-running-operation/,
  );
  await assertAllClosed(dir, ["everything"]);
});

Deno.test("Ctrl-C on run-plan during an MCP call cancels the run and closes the servers before the process exits", async () => {
  const dir = await userFolder();
  await writeLongPlan(dir, 60);
  await interruptMidCall(
    dir,
    spawnCli("run-plan", ["plan.json", "--mcp-config", ".mcp.json", "--yes"], { userDir: dir }),
    "step long #1 · ",
  );
  const saved = JSON.parse(await Deno.readTextFile(join(dir, "plan.json")));
  assert.equal(saved.steps[0].status, "pending");
});

Deno.test("qplan run --mcp-config: a script calls MCP tools as modules (names with '-' too); destructive ones need --approve", async () => {
  const dir = await userFolder();
  await Deno.writeTextFile(
    join(dir, "s.qplan"),
    [
      'step id="a" desc="Use MCP" {',
      '  mcp__everything__echo message="hi" -> e',
      "  mcp__everything__get-sum a=2 b=3 -> sum",
      `  mcp__fs__write_file path="${join(dir, "q.txt")}" content=e -> w`,
      "  return e sum w",
      "}",
    ].join("\n"),
  );
  const refused = await qplan(dir, ["run", "s.qplan", "--mcp-config", ".mcp.json"]);
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(
    refused.stderr,
    /Module 'mcp__fs__write_file' was not approved: MCP tool not marked read-only or non-destructive; pass --approve mcp__fs__write_file to let it run/,
  );
  await assertAllClosed(dir, ["everything", "fs"]);

  const out = await qplan(dir, [
    "run",
    "s.qplan",
    "--mcp-config",
    ".mcp.json",
    "--approve",
    "mcp__fs__write_file",
    "--json",
  ]);
  assert.equal(out.code, 0, out.stderr);
  const result = JSON.parse(out.stdout);
  assert.equal(result.results.a.e, "Echo: hi");
  assert.match(result.results.a.sum, /\b5\b/);
  assert.equal(await Deno.readTextFile(join(dir, "q.txt")), "Echo: hi");
  assert.deepEqual(await pidsOf(dir, "spare"), []);
  assert.equal((await pidsOf(dir, "everything")).length, 2, "one start per command");
  await assertAllClosed(dir, ["everything", "fs"]);
});

Deno.test("qplan validate --mcp-config: a misspelt MCP tool or server is an error with the closest name", async () => {
  const dir = await userFolder();
  await Deno.writeTextFile(
    join(dir, "s.qplan"),
    [
      'step id="a" {',
      "  mcp__everything__get-sun a=2 b=3 -> sum",
      '  mcp__evrything__echo message="x" -> e',
      "}",
    ].join("\n"),
  );
  const out = await qplan(dir, ["validate", "s.qplan", "--mcp-config", ".mcp.json"]);
  assert.equal(out.code, 2, out.stderr);
  assert.match(
    out.stderr,
    /line 2, column 3: unknown module 'mcp__everything__get-sun': the MCP server "everything" has no tool "get-sun"\. Did you mean "mcp__everything__get-sum"\?/,
  );
  assert.match(
    out.stderr,
    /line 3, column 3: unknown module 'mcp__evrything__echo': no MCP server "evrything" is configured \(configured: everything, fs, spare\)\. Did you mean "mcp__everything__echo"\?/,
  );
  await assertAllClosed(dir, ["everything"]);
});

Deno.test("run-plan and qplan reach an MCP server over streamable HTTP", async () => {
  const server = await startHttpEverything();
  try {
    const dir = await Deno.makeTempDir({ prefix: "stepflow_plan_mcp_http_" });
    await Deno.writeTextFile(
      join(dir, "mcp.json"),
      JSON.stringify({
        mcpServers: { web: { type: "http", url: "${EVERYTHING_URL}" } },
      }),
    );
    await Deno.writeTextFile(
      join(dir, "plan.json"),
      planOf([{ id: "a", tool: "mcp__web__echo", args: { message: "over http" } }]),
    );
    const env = { EVERYTHING_URL: server.url };
    const plan = await runMain(runPlanMain, ["plan.json", "--mcp-config", "mcp.json", "--yes"], {
      userDir: dir,
      env,
    });
    assert.equal(plan.code, 0, plan.stderr);
    const saved = JSON.parse(await Deno.readTextFile(join(dir, "plan.json")));
    assert.equal(saved.steps[0].result.value, "Echo: over http");

    await Deno.writeTextFile(join(dir, "s.qplan"), 'mcp__web__echo message="again" -> e\nprint e');
    const script = await runMain(qplanMain, ["run", "s.qplan", "--mcp-config", "mcp.json"], {
      userDir: dir,
      env,
    });
    assert.equal(script.code, 0, script.stderr);
    assert.equal(script.stdout, "Echo: again\n");
  } finally {
    await server.close();
  }
});

Deno.test("run-plan --generate and qplan prompt offer every configured server's tools; a server that cannot start is left out", async () => {
  const dir = await userFolder();
  const config = JSON.parse(await Deno.readTextFile(join(dir, ".mcp.json")));
  config.mcpServers.broken = { command: join(dir, "no-such-server") };
  await Deno.writeTextFile(join(dir, "all.json"), JSON.stringify(config));
  await Deno.writeTextFile(
    join(dir, "answers.yaml"),
    [
      "plan.generate:",
      "  - output:",
      "      steps:",
      "        - { id: a, description: Echo, tool: mcp__everything__echo, args: { message: made } }",
    ].join("\n"),
  );
  const out = await runPlan(dir, [
    "--generate",
    "Echo something",
    "gen.json",
    "--script",
    "answers.yaml",
    "--mcp-config",
    "all.json",
    "--yes",
  ]);
  assert.equal(out.code, 0, out.stderr);
  assert.match(
    out.stderr,
    /MCP server "broken" is left out, its tools are not offered: MCP server "broken" could not be started/,
  );
  const saved = JSON.parse(await Deno.readTextFile(join(dir, "gen.json")));
  assert.equal(saved.steps[0].result.value, "Echo: made");
  for (const server of ["everything", "fs", "spare"]) {
    assert.equal((await pidsOf(dir, server)).length, 1, server);
  }
  await assertAllClosed(dir, ["everything", "fs", "spare"]);

  const prompt = await qplan(dir, ["prompt", "Sum two numbers", "--mcp-config", ".mcp.json"]);
  assert.equal(prompt.code, 0, prompt.stderr);
  assert.match(prompt.stdout, /mcp__everything__get-sum/);
  assert.match(prompt.stdout, /mcp__fs__read_text_file/);
  await assertAllClosed(dir, ["everything", "fs", "spare"]);
});

Deno.test("run-plan: MCP_TOOL_TIMEOUT bounds a call — the step fails with MCP_CALL_TIMEOUT naming the limit", async () => {
  const dir = await userFolder();
  await writeLongPlan(dir, 3);
  const child = spawnCli("run-plan", ["plan.json", "--mcp-config", ".mcp.json", "--yes"], {
    userDir: dir,
    env: { MCP_TOOL_TIMEOUT: "400" },
  });
  const out = await finish(child);
  assert.equal(out.code, 1, out.stderr);
  assert.match(
    out.stdout + out.stderr,
    /MCP server "everything" did not answer within 400 ms while calling trigger-long-running-operation\. Try again, or raise the call timeout \(MCP_TOOL_TIMEOUT, in ms\)/,
  );
  await assertAllClosed(dir, ["everything"]);
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.test(
    `${
      signal === "SIGINT" ? "Ctrl-C" : "SIGTERM"
    } on qplan run during an MCP call aborts the script and closes the servers before the process exits`,
    async () => {
      const dir = await userFolder();
      await Deno.writeTextFile(
        join(dir, "long.qplan"),
        'step id="a" {\n  mcp__everything__trigger-long-running-operation duration=60 steps=60\n}',
      );
      await interruptMidCall(
        dir,
        spawnCli("qplan", ["run", "long.qplan", "--mcp-config", ".mcp.json"], { userDir: dir }),
        "step a #1 started",
        signal,
      );
    },
  );
}

Deno.test("SIGTERM on run-plan during an MCP call cancels the run like Ctrl-C: exit 143, servers closed", async () => {
  const dir = await userFolder();
  await writeLongPlan(dir, 60);
  await interruptMidCall(
    dir,
    spawnCli("run-plan", ["plan.json", "--mcp-config", ".mcp.json", "--yes"], { userDir: dir }),
    "step long #1 · ",
    "SIGTERM",
  );
});
