/**
 * The `qplan` command line: stdout, stderr and exit codes, in-process through `qplanMain(argv, io)`
 * with INIT_CWD set to a temporary folder, and once for real (`deno task qplan …` spawned).
 */
import { openAiError, startFakeServer } from "../llm/fake_server.ts";
import { stepflowCommand } from "../../src/invocation.ts";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { qplanMain } from "../../src/cli/qplan.ts";
import { runMain } from "../cli/helpers.ts";
import { workspace } from "./helpers.ts";

const REPO = fileURLToPath(new URL("../../", import.meta.url));

/** `qplan …` in-process, as `deno task qplan` from `cwd` would run it. */
function qplan(args: string[], cwd: string) {
  return runMain(qplanMain, args, { userDir: cwd });
}

/** The real `deno task qplan` in a subprocess (the smoke test). */
async function qplanTask(args: string[], cwd: string) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "qplan", ...args],
    cwd: REPO,
    env: { INIT_CWD: cwd, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

const GOOD = `@title "Numbers"
@params "limit"
step id="load" desc="Read numbers" {
  file read path="nums.txt" -> raw
  return text=raw
}
step id="stats" desc="Statistics" {
  math sum arr=load.text -> total
  print "total:", total
  file write path="out/total.json" data={"total": total}
  if total > limit {
    print "over", limit
  }
  return total
}`;

function noStackTrace(stderr: string) {
  assert.doesNotMatch(stderr, /^\s+at .*:\d+:\d+/m, stderr);
}

Deno.test("deno task qplan (subprocess smoke test): stdout, stderr and exit codes of the real process", async () => {
  const dir = await workspace({ "plan.qplan": GOOD, "nums.txt": "1 2 3" });
  const r = await qplanTask(["run", "plan.qplan", "--param", "limit=5", "--quiet"], dir);
  assert.deepEqual([r.code, r.stdout, r.stderr], [0, "total: 6\nover 5\n", ""]);
  const usage = await qplanTask(["run", "plan.qplan", "--bogus"], dir);
  assert.deepEqual([usage.code, usage.stdout], [2, ""]);
  assert.equal(usage.stderr, "qplan: Unknown option --bogus. (see --help)\n");
});

Deno.test("qplan run: print on stdout, the step tree on stderr, files in INIT_CWD, exit 0", async () => {
  const dir = await workspace({ "plan.qplan": GOOD, "nums.txt": "1 2 3" });
  const r = await qplan(["run", "plan.qplan", "--param", "limit=5"], dir);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "total: 6\nover 5\n");
  const lines = r.stderr.trim().split("\n");
  const at = String.raw`^\[\d\d:\d\d\.\d{3}\] `;
  assert.match(
    lines[0],
    new RegExp(`${at}run \\d{8}T\\d{6}Z-[0-9a-f]{6} started: "Numbers", 2 steps$`),
  );
  assert.match(lines[1], new RegExp(`${at}step load #1 started \\("Read numbers"\\)$`));
  assert.match(
    lines[2],
    new RegExp(`${at}step load #1 completed in \\d+ ms → \\{"text":"1 2 3"\\}$`),
  );
  assert.match(lines[3], new RegExp(`${at}step stats #2 started \\("Statistics"\\)$`));
  assert.match(lines[4], new RegExp(`${at}step stats #2 completed in \\d+ ms → \\{"total":6\\}$`));
  assert.match(lines[5], new RegExp(`${at}run completed$`));
  assert.deepEqual(JSON.parse(await Deno.readTextFile(`${dir}/out/total.json`)), { total: 6 });
});

Deno.test("qplan run --json: the result on stdout (print goes to stderr); --params-file", async () => {
  const dir = await workspace({
    "plan.qplan": GOOD,
    "nums.txt": "4 5",
    "params.yaml": "limit: 100\n",
  });
  const r = await qplan([
    "run",
    "plan.qplan",
    "--json",
    "--quiet",
    "--params-file",
    "params.yaml",
    "--run-id",
    "r7",
  ], dir);
  assert.equal(r.code, 0, r.stderr);
  const json = JSON.parse(r.stdout);
  assert.equal(json.status, "completed");
  assert.equal(json.runId, "r7");
  assert.deepEqual(json.results, { load: { text: "4 5" }, stats: { total: 9 } });
  assert.deepEqual(json.vars, { limit: 100, raw: "4 5", total: 9 });
  assert.equal(r.stderr, "total: 9\n");
});

Deno.test("qplan run: a syntax error shows the caret, no stack trace, exit 2", async () => {
  const dir = await workspace({ "bad.qplan": 'step id="a" {\n  math add a=1 b=\n}\n' });
  const r = await qplan(["run", "bad.qplan"], dir);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  assert.equal(
    r.stderr,
    [
      "qplan: bad.qplan cannot run:",
      'error: Syntax error at line 3, column 1: expected a value (number, string, JSON, variable or (expression)), found "}"',
      "  3 | }",
      "    | ^",
      "",
    ].join("\n"),
  );
});

Deno.test("qplan run: invalid scripts and missing params exit 2 with every problem", async () => {
  const dir = await workspace({
    "invalid.qplan": `step id="a" {\n  set n = 1\n  jump to="nowhere"\n}\n`,
    "plan.qplan": GOOD,
  });
  const invalid = await qplan(["run", "invalid.qplan"], dir);
  assert.equal(invalid.code, 2);
  assert.match(
    invalid.stderr,
    /error at line 2, column 3: set target 'n' does not exist\n {2}2 \| {3}set n = 1\n {4}\| {3}\^/,
  );
  assert.match(invalid.stderr, /error at line 3, column 3: jump target 'nowhere' not found/);
  noStackTrace(invalid.stderr);
  const web = await workspace({ "web.qplan": `http get url="https://example.com" -> page\n` });
  const off = await qplan(["run", "web.qplan"], web);
  assert.equal(off.code, 2);
  assert.match(off.stderr, /unknown module 'http'/);
  assert.match(off.stderr, /note: http is off by default; pass --enable http/);
  const params = await qplan(["run", "plan.qplan", "--quiet"], dir);
  assert.equal(params.code, 2);
  assert.match(
    params.stderr,
    /missing required param 'limit' \(declared by @params at line 2\); pass it in params \(CLI: --param limit=…\)/,
  );
});

Deno.test("qplan run: a script that fails while running exits 1 and shows where", async () => {
  const dir = await workspace({
    "div.qplan": `step id="d" desc="Divide" {\n  math div a=1 b=0 -> x\n}\n`,
  });
  const r = await qplan(["run", "div.qplan"], dir);
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /step d #1 error \[QPLAN_RUNTIME\] Module 'math' failed: math div: division by zero/,
  );
  assert.match(
    r.stderr,
    /qplan: error: Module 'math' failed: math div: division by zero \(b is 0\) \(line 2, step 'd'\)\n {2}2 \| {3}math div a=1 b=0 -> x\n {4}\| {3}\^\n$/,
  );
  noStackTrace(r.stderr);
});

Deno.test("qplan run --timeout: exit 1, timed out", async () => {
  const dir = await workspace({ "slow.qplan": `step id="s" { sleep ms=20000 }\n` });
  const r = await qplan(["run", "slow.qplan", "--timeout", "100", "--quiet"], dir);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /qplan: aborted: QPlan run timed out after 100 ms/);
});

Deno.test("qplan run with the ai module on a scripted backend (--script resolved in INIT_CWD)", async () => {
  const dir = await workspace({
    "ask.qplan": `step id="ask" {\n  ai "Say hi" -> answer\n  print answer\n}\n`,
    "answers.yaml": "ask:\n  - Hello there\n",
  });
  const r = await qplan(["run", "ask.qplan", "--script", "answers.yaml", "--quiet"], dir);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "Hello there\n");
});

Deno.test("--max-attempts: a server that keeps failing is tried that often, and the error says how to allow more", async () => {
  const failing = openAiError(500, "server_error", "boom", { "retry-after-ms": "1" });
  const server = startFakeServer([failing, failing, failing]);
  try {
    const dir = await workspace({ "ask.qplan": `step id="ask" {\n  ai "Say hi" -> answer\n}\n` });
    const base = ["run", "ask.qplan", "--quiet", "--backend", "openai", "--model", "m"];
    const r = await qplan([...base, "--base-url", `${server.url}/v1`, "--max-attempts", "2"], dir);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(server.requests.length, 2);
    assert.match(
      r.stderr,
      /stayed unavailable or rate-limited through 2 attempts; try again later, or allow more attempts per call: --max-attempts N on the command line/,
    );
    const bad = await qplan([...base, "--max-attempts", "0"], dir);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--max-attempts expects a positive integer/);
  } finally {
    await server.close();
  }
});

Deno.test("qplan run/validate: an ai line with no backend is a configuration error found before anything runs (exit 2)", async () => {
  const dir = await workspace({
    "ask.qplan":
      `step id="first" {\n  file write path="ran.txt" data="x"\n}\nstep id="ask" {\n  ai "Say hi" -> answer\n}\n`,
    "answers.yaml": "ask:\n  - Hello\n",
  });
  const [run, validate, scripted] = await Promise.all([
    qplan(["run", "ask.qplan", "--quiet"], dir),
    qplan(["validate", "ask.qplan"], dir),
    qplan(["validate", "ask.qplan", "--script", "answers.yaml"], dir),
  ]);
  for (const r of [run, validate]) {
    assert.equal(r.code, 2, r.stderr);
    assert.match(
      r.stderr,
      /error at line 5, column 3: module 'ai' cannot run: no LLM backend is configured \(pass --backend scripted\|claude-code\|anthropic\|openai or --script FILE/,
    );
    noStackTrace(r.stderr);
  }
  // The step before the ai line did not run.
  await assert.rejects(Deno.stat(`${dir}/ran.txt`), Deno.errors.NotFound);
  assert.equal(scripted.code, 0, scripted.stderr);
  const badFlags = await qplan(["validate", "ask.qplan", "--backend", "gpt"], dir);
  assert.equal(badFlags.code, 2);
});

Deno.test("qplan validate: the step tree on success, problems and exit 2 otherwise; --json", async () => {
  const dir = await workspace({
    "plan.qplan": GOOD,
    "warn.qplan": `step "Todo" {\n  ...\n}\n`,
    "bad.qplan": `var 1\n`,
  });
  const ok = await qplan(["validate", "plan.qplan"], dir);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(
    ok.stdout,
    "✓ plan.qplan is valid: 2 steps\n  Read numbers [load]\n  Statistics [stats]\n",
  );
  const warn = await qplan(["validate", "warn.qplan"], dir);
  assert.equal(warn.code, 0);
  assert.match(warn.stdout, /is valid: 1 step, 1 warning/);
  assert.match(warn.stderr, /warning at line 2, column 3: placeholder '\.\.\.' does nothing/);
  const bad = await qplan(["validate", "bad.qplan"], dir);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /error at line 1, column 1: var requires '-> outputVar'/);
  assert.match(bad.stderr, /✗ bad.qplan: 1 error\n$/);
  const json = await qplan(["validate", "plan.qplan", "--json"], dir);
  const parsed = JSON.parse(json.stdout);
  assert.equal(parsed.ok, true);
  assert.deepEqual(parsed.steps.map((s: { id: string; path: string[] }) => [s.id, s.path]), [
    ["load", ["Read numbers"]],
    ["stats", ["Statistics"]],
  ]);
});

Deno.test("qplan prompt: the prompt on stdout; usage errors exit 2 without a stack trace", async () => {
  const dir = await workspace();
  const p = await qplan(["prompt", "Summarize notes.txt", "--enable", "http"], dir);
  assert.equal(p.code, 0);
  assert.match(p.stdout, /## Task\nSummarize notes.txt\n/);
  assert.match(p.stdout, /^- http: /m);
  for (
    const [args, message] of [
      [["frobnicate"], /Unknown command "frobnicate"/],
      [["run"], /qplan run needs a script file/],
      [["run", "missing.qplan"], /cannot read script missing.qplan: no such file/],
      [["run", "x.qplan", "--bogus"], /Unknown option --bogus\./],
      [["prompt"], /qplan prompt needs a task/],
      [["prompt", "x", "--enable", "ftp"], /--enable knows http, html and ai, not "ftp"/],
      [["prompt", "x", "--param", "novalue"], /--param needs name=value/],
    ] as [string[], RegExp][]
  ) {
    const r = await qplan(args, dir);
    assert.equal(r.code, 2, args.join(" "));
    assert.match(r.stderr, message);
    noStackTrace(r.stderr);
  }
  const help = await qplan(["--help"], dir);
  assert.equal(help.code, 0);
  // Outside the checkout the help shows the command that works there.
  assert.ok(help.stdout.includes(`${stepflowCommand("qplan", dir)} run FILE`), help.stdout);
});
