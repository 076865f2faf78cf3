/**
 * An eval's runs are listed together: `deno task eval` (a process) starts every run in one group
 * per eval, prints it with the commands that list the group, and writes it in the JSON report;
 * the dashboard's list filtered to the group (`/?group=`, `/api/runs?group=`) and `run-agent
 * --runs --group` show exactly those runs — not a run made outside the eval, nor a second eval's —
 * on the file store and on the PostgreSQL store.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { shellQuote } from "../../src/invocation.ts";
import { redactUrl } from "../../src/store/pg_connection.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { recordSubmission } from "../../src/worker/submissions.ts";
import { serveDashboard } from "../../src/ui/server.ts";
import { discoverStores } from "../../src/ui/source.ts";
import { copyDir, finish, REPO_ROOT } from "../cli/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

function spawn(script: string, userDir: string, args: string[]): Promise<{
  code: number;
  stdout: string;
  stderr: string;
}> {
  return finish(
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", join(REPO_ROOT, script), ...args],
      cwd: REPO_ROOT,
      env: { INIT_CWD: userDir, NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn(),
  );
}

const evalCli = (dir: string, args: string[]) => spawn("src/cli/eval.ts", dir, args);
const runAgent = (dir: string, args: string[]) => spawn("src/cli/run_agent.ts", dir, args);

/** A project with the haiku agent and a case file of two scripted cases. */
async function haikuProject(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-eval-group-" });
  await copyDir(join(REPO_ROOT, ".agent", "haiku"), join(dir, ".agent", "haiku"));
  const script = ".agent/haiku/demo.script.yaml";
  const cases = [
    { name: "one", args: { topic: "autumn" }, script, expect: {} },
    { name: "two", args: { topic: "winter" }, script, expect: {} },
  ];
  await Deno.writeTextFile(
    join(dir, "cases.jsonl"),
    cases.map((c) => JSON.stringify(c)).join("\n") + "\n",
  );
  return dir;
}

/** Runs an eval (2 cases × 2 runs) and returns its group and run ids from the JSON report. */
async function runEvalOf(dir: string, store: string[] = []) {
  const out = await evalCli(dir, [
    "--agent",
    "haiku",
    "--cases",
    "cases.jsonl",
    "--runs",
    "2",
    "--json",
    "report.json",
    ...store,
  ]);
  assert.equal(out.code, 0, out.stderr);
  const report = JSON.parse(await Deno.readTextFile(join(dir, "report.json")));
  const runIds: string[] = report.cases.flatMap((c: { runIds: string[] }) => c.runIds).sort();
  assert.equal(runIds.length, 4);
  assert.match(report.group, /^eval-\d{8}T\d{6}Z-[0-9a-f]{6}$/);
  return { group: report.group as string, runIds, stdout: out.stdout };
}

/** The run ids the dashboard lists for the group, through its JSON API and its HTML page. */
async function dashboardGroup(dir: string, group: string, store?: string) {
  const stores = await discoverStores(dir, store);
  const ui = serveDashboard({ source: { cwd: dir, stores }, port: 0 });
  try {
    const api = await (await fetch(`${ui.url}api/runs?group=${group}`)).json();
    const html = await (await fetch(`${ui.url}?group=${group}`)).text();
    const rows = [...html.matchAll(/data-run="([^"]+)"/g)].map((m) => m[1]).sort();
    // The run page names the group too.
    if (rows[0] !== undefined) {
      const runPage = await (await fetch(`${ui.url}runs/${rows[0]}`)).text();
      assert.ok(
        runPage.includes(`<span>Group</span> <a class="group" href="/?group=${group}"`),
        "the run page shows the group",
      );
    }
    return { api: api.runs.map((r: { runId: string }) => r.runId).sort() as string[], rows, html };
  } finally {
    await ui.close();
    for (const s of stores) {
      if (s.store instanceof PostgresRunStore) await s.store.close();
    }
  }
}

Deno.test("eval groups: the dashboard filtered to an eval's group shows exactly its runs (file store)", async () => {
  const dir = await haikuProject();
  try {
    // A run made outside any eval, in the same store.
    const alone = await runAgent(dir, [
      "--agent",
      "haiku",
      "--script",
      ".agent/haiku/demo.script.yaml",
      "--topic",
      "spring",
    ]);
    assert.equal(alone.code, 0, alone.stderr);
    const first = await runEvalOf(dir);
    const second = await runEvalOf(dir);
    assert.notEqual(first.group, second.group, "one group per eval");
    // The report says where to see the runs together, as the commands work from the user's folder.
    assert.match(first.stdout, new RegExp(`Runs recorded in group ${first.group}\\.`));
    assert.ok(first.stdout.includes(`/?group=${first.group}`), first.stdout);
    assert.ok(
      first.stdout.includes(` runs haiku --run-group ${first.group}\n`),
      first.stdout,
    );

    const shown = await dashboardGroup(dir, first.group);
    assert.deepEqual(shown.api, first.runIds);
    assert.deepEqual(shown.rows, first.runIds);
    // Each row carries its group as a badge linking to the group's list; the filter shows it.
    assert.ok(
      shown.html.includes(`<a class="group" href="/?group=${first.group}"`),
      "group badge",
    );
    assert.ok(shown.html.includes(`name="group" size="24" maxlength="64" value="${first.group}"`));
    assert.match(shown.html, /4 of 9 runs/);

    // run-agent --runs --run-group lists the same runs; --runs names the group; --show shows it.
    const listed = await runAgent(dir, [
      "--agent",
      "haiku",
      "--runs",
      "--run-group",
      first.group,
      "--json",
    ]);
    assert.equal(listed.code, 0, listed.stderr);
    const runs = JSON.parse(listed.stdout) as { runId: string; group?: string }[];
    assert.deepEqual(runs.map((r) => r.runId).sort(), first.runIds);
    assert.ok(runs.every((r) => r.group === first.group));
    const table = await runAgent(dir, ["--agent", "haiku", "--runs"]);
    assert.match(table.stdout, /GROUP/);
    assert.match(table.stdout, new RegExp(`${second.runIds[0]} .* ${second.group}`));
    const show = await runAgent(dir, ["--agent", "haiku", "--show", first.runIds[0]]);
    assert.match(show.stdout, new RegExp(`· group ${first.group}`));
    const shownJson = await runAgent(dir, [
      "--agent",
      "haiku",
      "--show",
      first.runIds[0],
      "--json",
    ]);
    assert.equal(JSON.parse(shownJson.stdout).checkpoint.state.group, first.group);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("eval groups: a bad group is refused where it is given, by the dashboard too", async () => {
  const dir = await haikuProject();
  try {
    const bad = await evalCli(dir, [
      "--agent",
      "haiku",
      "--cases",
      "cases.jsonl",
      "--group",
      "<b>x</b>",
    ]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(
      bad.stderr,
      /Invalid --group "<b>x<\/b>": a run group is 1-64/,
    );
    const long = await runAgent(dir, [
      "--agent",
      "haiku",
      "--script",
      ".agent/haiku/demo.script.yaml",
      "--topic",
      "x",
      "--run-group",
      "g".repeat(65),
    ]);
    assert.equal(long.code, 2, long.stderr);
    assert.match(long.stderr, /Invalid --run-group "g{65}"/);
    // run-agent --run-group starts a run in a group; --runs --run-group lists it alone.
    const manual = await runAgent(dir, [
      "--agent",
      "haiku",
      "--script",
      ".agent/haiku/demo.script.yaml",
      "--topic",
      "x",
      "--run-group",
      "manual-1",
      "--json",
    ]);
    assert.equal(manual.code, 0, manual.stderr);
    const manualId = JSON.parse(manual.stdout).runId;
    const inManual = await runAgent(dir, ["--agent", "haiku", "--runs", "--run-group", "manual-1"]);
    assert.match(
      inManual.stdout,
      /Runs of agent "haiku" in group manual-1 in .* \(1, newest first\)/,
    );
    assert.ok(inManual.stdout.includes(manualId));
    const none = await runAgent(dir, ["--agent", "haiku", "--runs", "--run-group", "nope"]);
    assert.match(
      none.stdout,
      /No runs of agent "haiku" in group nope recorded in .*\. 1 other run: list them without --run-group\./,
    );
    const resumed = await runAgent(dir, ["--agent", "haiku", "--resume", "r1", "--run-group", "g"]);
    assert.equal(resumed.code, 2);
    assert.match(resumed.stderr, /--run-group cannot be combined with --resume/);

    // A named group: the eval's runs carry it.
    const named = await evalCli(dir, [
      "--agent",
      "haiku",
      "--cases",
      "cases.jsonl",
      "--group",
      "nightly-2026.11.26",
    ]);
    assert.equal(named.code, 0, named.stderr);
    const shown = await dashboardGroup(dir, "nightly-2026.11.26");
    assert.equal(shown.api.length, 2);

    const stores = await discoverStores(dir);
    const ui = serveDashboard({ source: { cwd: dir, stores }, port: 0 });
    try {
      const refused = await fetch(`${ui.url}?group=${encodeURIComponent("<script>x")}`);
      assert.equal(refused.status, 400);
      assert.equal(refused.headers.get("content-type"), "text/plain; charset=utf-8");
      assert.match(await refused.text(), /Invalid group: a run group is 1-64/);
    } finally {
      await ui.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "eval groups: on the PostgreSQL store the list filtered to the group is the eval's runs",
  ignore: pg === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const url = await freshDatabase(pg!);
    const dir = await haikuProject();
    try {
      const alone = await runAgent(dir, [
        "--agent",
        "haiku",
        "--script",
        ".agent/haiku/demo.script.yaml",
        "--topic",
        "spring",
        "--store",
        url,
      ]);
      assert.equal(alone.code, 0, alone.stderr);
      const first = await runEvalOf(dir, ["--store", url]);
      // The store is repeated in the printed commands, its password never.
      const redacted = redactUrl(url);
      if (redacted !== url) assert.ok(!first.stdout.includes(url), "a password is not printed");
      assert.ok(first.stdout.includes(`--store ${shellQuote(redacted)}`), first.stdout);
      const shown = await dashboardGroup(dir, first.group, url);
      assert.deepEqual(shown.api, first.runIds);
      assert.deepEqual(shown.rows, first.runIds);
      const listed = await runAgent(dir, [
        "--agent",
        "haiku",
        "--runs",
        "--run-group",
        first.group,
        "--json",
        "--store",
        url,
      ]);
      assert.deepEqual(
        JSON.parse(listed.stdout).map((r: { runId: string }) => r.runId).sort(),
        first.runIds,
      );
      // A run submitted in a group and not started yet is listed in it (from its request).
      const store = new PostgresRunStore(url, { agent: "haiku" });
      try {
        await recordSubmission(store, {
          runId: "queued-in-group",
          agent: "haiku",
          agentHash: "h",
          request: { group: first.group },
        });
      } finally {
        await store.close();
      }
      const withQueued = await dashboardGroup(dir, first.group, url);
      assert.deepEqual(withQueued.api, [...first.runIds, "queued-in-group"].sort());
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
