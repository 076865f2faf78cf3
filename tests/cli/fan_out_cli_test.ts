/**
 * Fan-out steps through `run-agent` on a real `.agent` folder: 0, 1 and 40 items, `concurrency`
 * measured from the children's recorded start and end times, the results in item order, each
 * `onItemError` mode, `--show` and `--json`, `--runs` of the child agent, and under `fail` the
 * cancelled children's processes (Bash, MCP servers) gone.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFleetAgents } from "../flow/fan_out_fixtures.ts";
import { groupGone, serverCommand } from "../mcp/npm_servers.ts";
import { finish, runCli, spawnCli } from "./helpers.ts";
import {
  fileList,
  type ItemRow,
  mostInFlight,
  reviewOf,
  reviewScript,
} from "./fan_out_cli_fixtures.ts";

const ARGS = ["--agent", "fleet", "--script", "fleet.script.json"];

async function user(step: Record<string, unknown> = {}, form?: "plain" | "tools"): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-fanout-cli-" });
  await writeFleetAgents(dir, step, form);
  return dir;
}

interface FleetResult {
  runId: string;
  completionReason: string;
  error?: { code: string; message: string };
  state: {
    handoff: Record<string, {
      results: {
        item: string;
        status: string;
        output: { verdict: string } | null;
        runId: string;
      }[];
      counts: { total: number; completed: number; failed: number };
    }>;
  };
}

async function run(dir: string, script: string, extra: string[] = []) {
  await Deno.writeTextFile(join(dir, "fleet.script.json"), script);
  const out = await runCli([...ARGS, "--json", ...extra], { userDir: dir });
  return { ...out, result: JSON.parse(out.stdout) as FleetResult };
}

async function items(dir: string, runId: string): Promise<ItemRow[]> {
  const shown = await runCli(["--agent", "fleet", "--show", runId, "--json"], { userDir: dir });
  assert.equal(shown.code, 0, shown.stderr);
  return (JSON.parse(shown.stdout) as { fanOuts: { items: ItemRow[] }[] }).fanOuts[0].items;
}

Deno.test("run-agent: a fan-out over 0, 1 and 40 items; concurrency 4 held (measured); results in item order", async () => {
  for (const n of [0, 1, 40]) {
    const dir = await user({ concurrency: 4 });
    const files = fileList(n);
    const { code, stderr, result } = await run(dir, reviewScript({ files, delayMs: 40 }));
    assert.equal(code, 0, `${n} items: ${stderr}`);
    assert.equal(result.completionReason, "completed");
    const { results, counts } = result.state.handoff["review.each"];
    assert.deepEqual(counts, { total: n, completed: n, failed: 0 });
    assert.deepEqual(results.map((r) => r.item), files);
    assert.deepEqual(results.map((r) => r.output?.verdict), files.map((f) => `ok ${f}`));
    if (n === 0) continue;
    const rows = await items(dir, result.runId);
    assert.equal(rows.length, n);
    assert.deepEqual(rows.map((r) => r.status), files.map(() => "completed"));
    assert.deepEqual(rows.map((r) => r.runId), results.map((r) => r.runId));
    const most = mostInFlight(rows);
    assert.ok(most <= 4, `${n} items: ${most} children in flight at once`);
    if (n === 40) assert.ok(most >= 2, `40 items ran one at a time (${most})`);
    // Each child is a run of the reviewer agent: its own --runs lists it with its parent.
    const listed = await runCli(["--agent", "reviewer", "--runs", "--json"], { userDir: dir });
    const children = JSON.parse(listed.stdout) as { parentRunId?: string; status: string }[];
    assert.equal(children.length, n);
    assert.ok(children.every((c) => c.parentRunId === result.runId && c.status === "completed"));
    if (n === 40) {
      const table = await runCli(["--agent", "fleet", "--show", result.runId], { userDir: dir });
      assert.match(
        table.stdout,
        /Fan-out review\.each \(agent reviewer\): 40 items · 40 completed · 0 failed/,
      );
      assert.match(
        table.stdout,
        /^ {1,2}1 {2}src\/f0\.ts +completed +\d+(ms|\.\ds) +10\/5 +\d{8}T\d{6}Z-[0-9a-f]{6}$/m,
      );
      assert.match(table.stdout, /fan-out reviewer: 40 items, 40 completed/);
    }
  }
});

Deno.test("run-agent: onItemError continue, retry=N and fail", async () => {
  {
    const dir = await user({ onItemError: "continue", concurrency: 2 });
    const files = fileList(5);
    const { code, result, stderr } = await run(
      dir,
      reviewScript({ files, failing: { "src/f3.ts": 1 } }),
      ["--max-attempts", "1"],
    );
    assert.equal(code, 0, stderr);
    const { results, counts } = result.state.handoff["review.each"];
    assert.deepEqual(counts, { total: 5, completed: 4, failed: 1 });
    assert.equal(results[3].status, "failed");
    assert.equal(results[3].output, null);
  }
  {
    const dir = await user({ onItemError: "retry=2", concurrency: 2 });
    const files = fileList(4);
    const { code, result, stderr } = await run(
      dir,
      reviewScript({ files, failing: { "src/f1.ts": 2 } }),
      ["--max-attempts", "1"],
    );
    assert.equal(code, 0, stderr);
    assert.deepEqual(result.state.handoff["review.each"].counts, {
      total: 4,
      completed: 4,
      failed: 0,
    });
    const rows = await items(dir, result.runId);
    assert.deepEqual(rows.map((r) => r.children), [1, 3, 1, 1]);
  }
  {
    const dir = await user({ onItemError: "fail", concurrency: 1 });
    const files = fileList(4);
    await Deno.writeTextFile(
      join(dir, "fleet.script.json"),
      reviewScript({ files, failing: { "src/f1.ts": 1 } }),
    );
    const out = await runCli([...ARGS, "--max-attempts", "1"], { userDir: dir });
    assert.equal(out.code, 1, out.stderr);
    assert.match(out.stdout, /failed: step_failed at review\.each/);
    assert.match(out.stdout, /FANOUT_ITEM_FAILED/);
    assert.match(out.stdout, /item 2 \(src\/f1\.ts\) failed/);
    assert.match(out.stderr, /Restart it from its failed step with: \S.* redrive /);
  }
});

Deno.test("run-agent: under onItemError fail, the cancelled children's Bash and MCP server processes are gone", async () => {
  const dir = await user({ onItemError: "fail", concurrency: 4 }, "tools");
  const everything = await serverCommand("mcp-server-everything");
  const pids = join(dir, "pids");
  await Deno.mkdir(pids);
  // The reviewer gets an MCP server (its process group recorded) besides Bash.
  const agentFile = join(dir, ".agent", "reviewer", "agent.json");
  const agent = JSON.parse(await Deno.readTextFile(agentFile));
  agent.behavior.allowedTools = ["Bash", "mcp__everything"];
  agent.behavior.mcpServers = {
    everything: {
      command: "bash",
      args: ["-c", `echo $$ >> '${join(pids, "servers")}'; exec '${everything}'`],
    },
  };
  await Deno.writeTextFile(agentFile, JSON.stringify(agent));
  const registryFile = join(dir, ".agent", "reviewer", "steps_registry.json");
  const registry = JSON.parse(await Deno.readTextFile(registryFile));
  registry.steps["complete.review"].allowedTools = ["Bash", "mcp__everything"];
  await Deno.writeTextFile(registryFile, JSON.stringify(registry));
  const files = fileList(4);
  const script = reviewScript({
    files,
    failing: {},
    before: (path) => [
      { toolCalls: [{ name: "mcp__everything__echo", arguments: { message: path } }] },
      {
        toolCalls: [{
          name: "Bash",
          arguments: {
            command: `echo $$ > ${join(pids, path.replaceAll("/", "_"))}; sleep 31.4159`,
          },
        }],
      },
    ],
  });
  // The last file's review fails once its Bash would start: the three others are in `sleep`.
  const parsed = JSON.parse(script);
  const reviews = parsed["complete.review"] as Record<string, unknown>[];
  const last = reviewOf(files[3]);
  parsed["complete.review"] = reviews.filter((e) => e.promptIncludes !== last);
  parsed["complete.review"].push({ promptIncludes: last, delayMs: 1500, error: "model down" });
  await Deno.writeTextFile(join(dir, "fleet.script.json"), JSON.stringify(parsed));
  const started = performance.now();
  const out = await runCli([...ARGS, "--max-attempts", "1"], { userDir: dir });
  assert.equal(out.code, 1, `${out.stdout}\n${out.stderr}`);
  assert.ok(performance.now() - started < 20_000, "the 31 s sleeps were cancelled");
  assert.match(out.stdout, /FANOUT_ITEM_FAILED/);
  const bash = [...Deno.readDirSync(pids)].filter((e) => e.name.startsWith("src_"));
  assert.equal(bash.length, 3, `the three others started Bash: ${bash.map((e) => e.name)}`);
  for (const entry of bash) {
    const pid = Number(await Deno.readTextFile(join(pids, entry.name)));
    assert.deepEqual(await groupGone(pid), [], `Bash of ${entry.name} (group ${pid}) still runs`);
  }
  const servers = (await Deno.readTextFile(join(pids, "servers"))).split("\n").filter(Boolean);
  assert.ok(servers.length >= 3, `MCP servers started: ${servers.length}`);
  for (const pid of servers) {
    assert.deepEqual(await groupGone(Number(pid)), [], `MCP server ${pid} still runs`);
  }
  const listed = JSON.parse(
    (await runCli(["--agent", "reviewer", "--runs", "--json"], { userDir: dir })).stdout,
  ) as { status: string }[];
  assert.deepEqual(listed.map((c) => c.status).sort(), [
    "cancelled",
    "cancelled",
    "cancelled",
    "failed",
  ]);
});

Deno.test("run-agent: SIGTERM cancels a fan-out like Ctrl-C: every running child ends cancelled, its Bash gone", async () => {
  const dir = await user({ concurrency: 3 }, "tools");
  const pids = join(dir, "pids");
  await Deno.mkdir(pids);
  const files = fileList(5);
  await Deno.writeTextFile(
    join(dir, "fleet.script.json"),
    reviewScript({
      files,
      before: (path) => [{
        toolCalls: [{
          name: "Bash",
          arguments: {
            command: `echo $$ > ${join(pids, path.replaceAll("/", "_"))}; sleep 31.4159`,
          },
        }],
      }],
    }),
  );
  const child = spawnCli("run-agent", ARGS, { userDir: dir });
  for (let i = 0; i < 600 && [...Deno.readDirSync(pids)].length < 3; i++) {
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.equal([...Deno.readDirSync(pids)].length, 3, "three children in Bash");
  child.kill("SIGTERM");
  const out = await finish(child);
  assert.equal(out.code, 143, out.stderr); // SIGTERM's exit code, as every command's
  assert.match(out.stdout, /cancelled at review\.each/);
  for (const entry of Deno.readDirSync(pids)) {
    const pid = Number(await Deno.readTextFile(join(pids, entry.name)));
    assert.deepEqual(await groupGone(pid), [], `Bash of ${entry.name} still runs`);
  }
  const listed = JSON.parse(
    (await runCli(["--agent", "reviewer", "--runs", "--json"], { userDir: dir })).stdout,
  ) as { status: string }[];
  assert.deepEqual(listed.map((c) => c.status), ["cancelled", "cancelled", "cancelled"]);
});
