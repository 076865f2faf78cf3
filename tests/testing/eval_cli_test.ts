/**
 * `deno task eval` as a process: a case file with a passing and a failing case, through the real
 * openai backend against a local server, exits 1 under the default --min-pass and 0 under a lower
 * one, with the table, the summary and the JSON report; scripted cases check judges, workspace
 * commands and pass rates over --runs; bad case files name the line; Ctrl-C prints what was
 * measured and exits 130.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { copyDir, finish, REPO_ROOT } from "../cli/helpers.ts";
import { openAiCompletion, startFakeServer } from "../llm/fake_server.ts";
import { runAgentForTest } from "../../src/testing/mod.ts";

function spawnEval(userDir: string, args: string[]): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(REPO_ROOT, "src/cli/eval.ts"), ...args],
    cwd: REPO_ROOT,
    env: { INIT_CWD: userDir, NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

async function withHaiku(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-eval-test-" });
  try {
    await copyDir(join(REPO_ROOT, ".agent", "haiku"), join(dir, ".agent", "haiku"));
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const lines = (...cases: unknown[]) => cases.map((c) => JSON.stringify(c)).join("\n") + "\n";

Deno.test("eval cli: a passing and a failing case on the openai backend exit as --min-pass says", async () => {
  await withHaiku(async (dir) => {
    await Deno.writeTextFile(
      join(dir, "cases.jsonl"),
      lines(
        { name: "accepted", args: { topic: "autumn" }, expect: { path: ["draft.haiku"] } },
        {
          name: "redrafted",
          args: { topic: "winter" },
          expect: { path: ["draft.haiku", "draft.haiku"] },
        },
      ),
    );
    const server = startFakeServer();
    const answers = () =>
      server.push(
        openAiCompletion("Red leaves on the path\nthe old gate creaks\nautumn walks home"),
        openAiCompletion('{"result":"ok","message":"5-7-5"}'),
        openAiCompletion("Snow on the old roof\nthe gate is silent\nwinter walks home"),
        openAiCompletion('{"result":"ok","message":"fine"}'),
      );
    try {
      const base = [
        "--agent",
        "haiku",
        "--cases",
        "cases.jsonl",
        "--backend",
        "openai",
        "--base-url",
        `${server.url}/v1`,
        "--model",
        "m-1",
      ];
      answers();
      const strict = await finish(spawnEval(dir, [...base, "--json", "report.json"]));
      assert.equal(strict.code, 1, strict.stderr);
      assert.match(strict.stdout, /^accepted\s+pass\s+1\/1\s+1\s+58\s/m);
      assert.match(
        strict.stdout,
        /^redrafted\s+fail\s+0\/1\s+1\s+58\s.*Iteration #2: expected step "draft\.haiku", got the run ended/m,
      );
      assert.match(strict.stdout, /^FAIL: 1 of 2 runs passed \(50\.0%; --min-pass 100%\)/m);
      assert.match(strict.stderr, /\[#+-*\] 2\/2 redrafted #1 FAIL/);
      const report = JSON.parse(await Deno.readTextFile(join(dir, "report.json")));
      assert.equal(report.passRate, 0.5);
      assert.equal(report.ok, false);
      assert.deepEqual(
        report.cases.map((c: { name: string; result: string }) => [c.name, c.result]),
        [
          ["accepted", "pass"],
          ["redrafted", "fail"],
        ],
      );
      assert.equal(report.tokens.input + report.tokens.output, 116);
      // The runs are recorded in the agent's store like any other.
      const listed = await finish(
        new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "-A",
            join(REPO_ROOT, "src/cli/run_agent.ts"),
            "--agent",
            "haiku",
            "--runs",
            "--json",
          ],
          env: { INIT_CWD: dir, NO_COLOR: "1" },
          stdout: "piped",
          stderr: "piped",
        }).spawn(),
      );
      const runs = JSON.parse(listed.stdout);
      assert.equal(runs.length, 2);

      answers();
      const lenient = await finish(spawnEval(dir, [...base, "--min-pass", "50%"]));
      assert.equal(lenient.code, 0, lenient.stderr);
      assert.match(lenient.stdout, /^PASS: 1 of 2 runs passed/m);
    } finally {
      await server.close();
    }
  });
});

Deno.test("eval cli: judges, workspace commands and pass rates over --runs", async () => {
  await withHaiku(async (dir) => {
    await Deno.mkdir(join(dir, "ws"));
    await Deno.writeTextFile(join(dir, "ws/notes.txt"), "autumn\n");
    await Deno.writeTextFile(
      join(dir, "judge.yaml"),
      [
        "draft.haiku: ['Red leaves on the path']",
        "draft.haiku#check: [{ output: { result: ok } }]",
        "eval.judge#check: [{ output: { result: ng, message: not about autumn } }]",
      ].join("\n"),
    );
    await Deno.writeTextFile(
      join(dir, "cases.jsonl"),
      lines(
        {
          name: "demo",
          args: { topic: "autumn" },
          script: ".agent/haiku/demo.script.yaml",
          workspace: "ws",
          expect: { path: ["draft.haiku", "draft.haiku"], command: "grep -q autumn notes.txt" },
        },
        {
          name: "judged",
          args: { topic: "autumn" },
          script: "judge.yaml",
          expect: { judge: "Is it about autumn?" },
        },
        {
          name: "no-file",
          args: { topic: "autumn" },
          script: ".agent/haiku/demo.script.yaml",
          workspace: "ws",
          expect: { command: "test -f missing.txt" },
        },
      ),
    );
    const out = await finish(
      spawnEval(dir, [
        "--agent",
        "haiku",
        "--cases",
        "cases.jsonl",
        "--runs",
        "2",
        "--concurrency",
        "2",
      ]),
    );
    assert.equal(out.code, 1, out.stderr);
    assert.match(out.stdout, /^demo\s+pass\s+2\/2/m);
    assert.match(out.stdout, /^judged\s+fail\s+0\/2 .*judge: ng — not about autumn/m);
    assert.match(out.stdout, /^no-file\s+fail\s+0\/2 .*command `test -f missing\.txt` exited 1/m);
    assert.match(out.stdout, /^FAIL: 2 of 6 runs passed/m);
  });
});

Deno.test("eval cli: a bad case file names every bad line and exits 2", async () => {
  await withHaiku(async (dir) => {
    await Deno.writeTextFile(
      join(dir, "cases.jsonl"),
      `${JSON.stringify({ args: { topic: "a" } })}\nnot json\n${
        JSON.stringify({ args: { topc: "a" } })
      }\n${JSON.stringify({ args: { topic: "a" }, expect: { pth: [] } })}\n`,
    );
    const out = await finish(spawnEval(dir, ["--agent", "haiku", "--cases", "cases.jsonl"]));
    assert.equal(out.code, 2);
    assert.match(out.stderr, /EVAL_CASES_INVALID|3 problems/);
    assert.match(out.stderr, /cases\.jsonl:2: not JSON/);
    assert.match(out.stderr, /cases\.jsonl:3: args\.topc: agent "haiku" has no such parameter/);
    assert.match(out.stderr, /cases\.jsonl:4: expect: Unrecognized key: "pth"/);
    const missing = await finish(spawnEval(dir, ["--agent", "haiku"]));
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /Missing --cases FILE/);
    const both = await finish(
      spawnEval(dir, [
        "--agent",
        "haiku",
        "--cases",
        "c.jsonl",
        "--backend",
        "openai",
        "--script",
        "a.yaml",
      ]),
    );
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--script is for the scripted backend, but --backend is "openai"/);
    const rate = await finish(
      spawnEval(dir, ["--agent", "haiku", "--cases", "c.jsonl", "--min-pass", "120%"]),
    );
    assert.equal(rate.code, 2);
    assert.match(rate.stderr, /--min-pass expects a share between 0 and 1/);
  });
});

Deno.test("eval cli: a workspace outside the project, missing or not a folder is a setup error (exit 2) before any run", async () => {
  await withHaiku(async (dir) => {
    await Deno.mkdir(join(dir, "evals"));
    await Deno.writeTextFile(join(dir, "notes.txt"), "a file\n");
    await Deno.symlink("/etc", join(dir, "etc-link"));
    const ws = (name: string, workspace: string) => ({
      name,
      args: { topic: "autumn" },
      script: "../.agent/haiku/demo.script.yaml",
      workspace,
    });
    await Deno.writeTextFile(
      join(dir, "evals", "cases.jsonl"),
      lines(
        ws("root", "/"),
        ws("up", "../../../../etc"),
        ws("link", "../etc-link"),
        ws("missing", "../nope"),
        ws("file", "../notes.txt"),
        ws("inside", "../.agent"), // allowed: in the project (a parent of the case file's folder)
      ),
    );
    const out = await finish(
      spawnEval(dir, ["--agent", "haiku", "--cases", "evals/cases.jsonl"]),
    );
    assert.equal(out.code, 2, `${out.stdout}\n${out.stderr}`);
    assert.equal(out.stdout, "");
    const real = await Deno.realPath(dir);
    assert.match(out.stderr, /The case file has 5 problems:/);
    assert.match(
      out.stderr,
      new RegExp(
        `evals/cases\\.jsonl:1: workspace /: it is outside the project folder ${real}; a workspace is a folder inside the folder you run stepflow eval in`,
      ),
    );
    assert.match(out.stderr, /cases\.jsonl:2: workspace \/etc: it is outside the project folder/);
    assert.match(
      out.stderr,
      /cases\.jsonl:3: workspace \S+\/etc-link: it is outside the project folder \S+ \(it leads to \/etc\)/,
    );
    assert.match(out.stderr, /cases\.jsonl:4: workspace \S+\/nope: no such folder/);
    assert.match(out.stderr, /cases\.jsonl:5: workspace \S+\/notes\.txt: it is not a folder/);
    assert.doesNotMatch(out.stderr, /cases\.jsonl:6:/);
  });
});

for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  Deno.test(`eval cli: ${signal === "SIGINT" ? "Ctrl-C" : "SIGTERM"} prints the runs measured so far and exits ${code}`, async () => {
    await withHaiku(async (dir) => {
      await Deno.writeTextFile(
        join(dir, "slow.yaml"),
        "draft.haiku: [{ text: 'slow', delayMs: 60000 }]\ndraft.haiku#check: [{ output: { result: ok } }]\n",
      );
      await Deno.writeTextFile(
        join(dir, "cases.jsonl"),
        lines(
          { name: "quick", args: { topic: "a" }, script: ".agent/haiku/demo.script.yaml" },
          { name: "slow", args: { topic: "a" }, script: "slow.yaml" },
        ),
      );
      const child = spawnEval(dir, ["--agent", "haiku", "--cases", "cases.jsonl"]);
      const stdoutText = new Response(child.stdout).text();
      const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
      let seen = "";
      while (!seen.includes("1/2 quick #1 pass")) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += value;
      }
      child.kill(signal);
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += value;
      }
      const [status, stdout] = await Promise.all([child.status, stdoutText]);
      assert.match(seen, /Stopping the eval/);
      assert.equal(status.code, code, stdout);
      assert.match(stdout, /^quick\s+pass\s+1\/1/m);
      assert.match(stdout, /^slow\s+not run\s+0\/0/m);
      assert.match(stdout, /Interrupted: 1 of 2 runs measured/);
    });
  });
}

Deno.test("eval cli: the case file docs/testing.md shows passes from the checkout", async () => {
  const userDir = await Deno.makeTempDir({ prefix: "stepflow-eval-docs-" });
  try {
    await copyDir(join(REPO_ROOT, ".agent", "haiku"), join(userDir, ".agent", "haiku"));
    await copyDir(join(REPO_ROOT, "tests/testing/evals"), join(userDir, "evals"));
    const out = await finish(
      spawnEval(userDir, ["--agent", "haiku", "--cases", "evals/haiku.jsonl"]),
    );
    assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
    assert.match(out.stdout, /^PASS: 3 of 3 runs passed \(100%; --min-pass 100%\)/m);
  } finally {
    await Deno.remove(userDir, { recursive: true });
  }
});

Deno.test("eval cli: --max-attempts N sets how often a model call that gets a 500 is tried", async () => {
  await withHaiku(async (dir) => {
    await Deno.writeTextFile(
      join(dir, "cases.jsonl"),
      lines({ name: "one", args: { topic: "x" } }),
    );
    const server = startFakeServer(
      Array.from({ length: 6 }, () => ({ status: 500, json: { error: { message: "boom" } } })),
    );
    try {
      const { code, stderr } = await finish(spawnEval(dir, [
        "--agent",
        "haiku",
        "--cases",
        "cases.jsonl",
        "--backend",
        "openai",
        "--base-url",
        `${server.url}/v1`,
        "--model",
        "m-1",
        "--max-attempts",
        "2",
      ]));
      assert.equal(code, 1, stderr);
      assert.equal(server.requests.length, 2, "two attempts, then the run fails");
    } finally {
      await server.close();
    }
  });
});

Deno.test("eval cli: an agent with an input step is evaluated to its end: a case's answers, a recording's", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-eval-test-" });
  try {
    await copyDir(
      join(REPO_ROOT, ".agent", "release-approval"),
      join(dir, ".agent", "release-approval"),
    );
    const script = ".agent/release-approval/demo.script.yaml";
    // A recording of a run a person approved: its answer is in it (`_answers`).
    const recorded = await runAgentForTest({
      agent: "release-approval",
      cwd: dir,
      script: join(dir, script),
      args: { version: "1.4.0" },
      answers: [{ value: { decision: "next", note: "ship it" }, by: "erin" }],
      record: join(dir, "approved.replay.yaml"),
      env: {},
    });
    assert.equal(recorded.result.completionReason, "completed");
    await Deno.writeTextFile(
      join(dir, "cases.jsonl"),
      lines(
        {
          name: "approved",
          args: { version: "1.4.0" },
          script,
          answers: [{ step: "approve.release", value: { decision: "next" } }],
          expect: { path: ["plan.release", "approve.release", "complete.release"] },
        },
        {
          name: "declined",
          args: { version: "1.4.0" },
          script,
          answers: [{ value: { decision: "abort", note: "freeze" } }],
          expect: { completed: false, path: ["plan.release", "approve.release"] },
        },
        { name: "replayed", args: { version: "1.4.0" }, script: "approved.replay.yaml" },
        { name: "unanswered", args: { version: "1.4.0" }, script },
      ),
    );
    const out = await finish(
      spawnEval(dir, ["--agent", "release-approval", "--cases", "cases.jsonl"]),
    );
    assert.equal(out.code, 1, out.stdout + out.stderr);
    assert.match(out.stdout, /^approved\s+pass\s+1\/1/m);
    assert.match(out.stdout, /^declined\s+pass\s+1\/1/m);
    assert.match(out.stdout, /^replayed\s+pass\s+1\/1/m);
    assert.match(
      out.stdout,
      /^unanswered\s+fail\s+0\/1 .*waits for an answer at step "approve\.release" and no answer was left/m,
    );
    assert.match(out.stdout, /^FAIL: 3 of 4 runs passed/m);

    // A case's answers are checked with the rest of the file: a bad one names its line.
    await Deno.writeTextFile(
      join(dir, "bad.jsonl"),
      lines({ args: { version: "1" }, script, answers: [{ decision: "next" }] }),
    );
    const bad = await finish(
      spawnEval(dir, ["--agent", "release-approval", "--cases", "bad.jsonl"]),
    );
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /bad\.jsonl:1: answers entry 1 has no "value"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
