/**
 * Budgets and cost through the command lines: `stepflow run --budget-usd` spawned — exit code 5,
 * the stop's message and the resume command with a raised budget; `runs` (a cost column), `show`
 * (cost per iteration, per step, the budget) and `show --json` (cost per run, step and call, `null`
 * for an unknown cost); `resume RUN --budget-usd N` carrying on; a redrive refused with the same
 * resume; a kill in the middle of a budgeted run and its resume, whose spend starts from what the
 * killed process spent; `--pricing FILE` and `STEPFLOW_PRICING`; a dollar budget refused without
 * prices; `stepflow eval`'s cost per case and per run group.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FileRunStore } from "../../src/store/file.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { CALL_USD, closingAnswer, loopAnswer, looperFiles } from "../flow/budget_fixtures.ts";
import { finish, REPO_ROOT, runCli, spawnCli } from "./helpers.ts";
import { startDashboard } from "../ui/browser.ts";
import { anthropicMessage, startFakeServer } from "../llm/fake_server.ts";

/** A user folder with the looper agent and its script (`repeats` repeat answers, then complete). */
async function workspace(
  repeats: number,
  agent: Record<string, unknown> = {},
): Promise<{ root: string; script: string; runDir: string }> {
  const root = await Deno.makeTempDir({ prefix: "stepflow_budget_cli_" });
  await writeAgent(root, "looper", looperFiles(agent));
  const script = join(root, "script.json");
  await Deno.writeTextFile(
    script,
    JSON.stringify({
      "work.loop": [
        ...Array.from({ length: repeats }, () => loopAnswer("repeat")),
        loopAnswer("complete"),
      ],
      "complete.loop": [closingAnswer],
    }),
  );
  return { root, script, runDir: join(root, "tmp", "logs", "agents", "looper") };
}

async function onlyRun(runDir: string): Promise<string> {
  const runs = await new FileRunStore(runDir).list();
  assert.equal(runs.length, 1);
  return runs[0].runId;
}

const near = (actual: number, expected: number) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${actual} ≠ ${expected}`);

Deno.test("stepflow run --budget-usd: exit 5, what was spent on what, the resume command with a raised budget; runs, show and --json show the cost; resume --budget-usd carries on", async () => {
  const ws = await workspace(5);
  const script = ["--script", ws.script];
  const stopped = await finish(
    spawnCli("stepflow", ["run", "looper", ...script, "--budget-usd", "1"], { userDir: ws.root }),
  );
  assert.equal(stopped.code, 5, stopped.stderr);
  const runId = await onlyRun(ws.runDir);
  assert.match(stopped.stdout, /failed: budget_exceeded at work\.loop after 3 iterations/);
  assert.match(stopped.stdout, /\$1\.0500/);
  assert.match(stopped.stdout, /Top steps: "work\.loop" \$1\.05/);
  assert.match(stopped.stdout, /resume it with a higher budget \(\$2\.00, say\)/);
  assert.doesNotMatch(stopped.stdout + stopped.stderr, /--resume|run-agent/);
  // The next step, printed whole: twice the $1.00 limit (more than 1.5 × the $1.05 spent).
  assert.match(
    stopped.stderr,
    new RegExp(`carry on inside the step with: \\S.* resume ${runId} --budget-usd 2\n`),
  );

  const runs = await runCli(["runs", "looper"], { userDir: ws.root });
  assert.equal(runs.code, 0, runs.stderr);
  assert.match(runs.stdout, /TOKENS IN\/OUT\s+COST\s+STEP/);
  assert.match(runs.stdout, new RegExp(`${runId} .* budget_exceeded .* \\$1\\.0500 +work\\.loop`));
  assert.match(
    runs.stdout,
    new RegExp(
      `Carry on a run its budget stopped with a higher budget: .* resume ${runId} --budget-usd 2$`,
      "m",
    ),
  );
  // A redrive is refused (the run has not failed) with the same resume.
  const redrive = await runCli(["redrive", runId], { userDir: ws.root });
  assert.equal(redrive.code, 2, redrive.stderr);
  assert.match(redrive.stderr, /RUN_NOT_REDRIVABLE|stopped by its budget; it has not failed/);
  assert.match(redrive.stderr, new RegExp(`^Next: .* resume ${runId} --budget-usd 2$`, "m"));

  const show = await runCli(["show", runId], { userDir: ws.root });
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout, /budget_exceeded/);
  assert.match(show.stdout, /\$1\.0500 · budget \$1\.00/);
  assert.match(show.stdout, /Spent by step: work\.loop \$1\.0500 \(3 calls\)/);
  assert.match(show.stdout, /TOKENS\s+COST\s+NOTE/);
  assert.match(show.stdout, /100,000\/10,000\s+\$0\.3500/);
  assert.match(
    show.stdout,
    new RegExp(
      `Stopped by its budget: raise it and carry on inside the step with .* resume ${runId} --budget-usd 2$`,
      "m",
    ),
  );

  // The dashboard: the list's cost, the run page's cost, budget and spend by step, each row's cost,
  // and no Redrive for a run that has not failed: the command that carries it on instead.
  {
    await using ui = await startDashboard(ws.root);
    const list = await (await fetch(ui.url)).text();
    assert.match(list, new RegExp(`${runId}[\\s\\S]*?<td class="num">\\$1\\.05</td>`));
    const page = await (await fetch(`${ui.url}runs/${runId}`)).text();
    assert.match(page, /<span>Cost<\/span>\$1\.05/);
    assert.match(page, /<span>Budget<\/span>\$1\.00/);
    assert.match(page, /<span>Spent by step<\/span>work\.loop \$1\.05 \(3 calls\)/);
    assert.match(page, /100000 \/ 10000 · \$0\.35/);
    assert.doesNotMatch(page, /data-action="redrive"/);
    assert.match(
      page,
      new RegExp(`Stopped by its budget: .*<code>\\S.* resume ${runId} --budget-usd 2</code>`),
    );
  }

  const json = await runCli(["show", runId, "--json"], { userDir: ws.root });
  const shown = JSON.parse(json.stdout);
  assert.deepEqual(shown.checkpoint.state.end.error.details.next, {
    action: "resume",
    runId,
    args: ["--budget-usd", "2"],
  });
  near(shown.cost.costUsd, 3 * CALL_USD);
  assert.equal(shown.cost.calls, 3);
  assert.deepEqual(shown.cost.budget, { usd: 1 });
  assert.equal(shown.cost.modelCalls.length, 3);
  assert.equal(shown.cost.modelCalls[0].priceSource, "built-in prices of 2025-11-30");
  near(shown.cost.steps["work.loop"].costUsd, 3 * CALL_USD);

  // The resumed process's script answers from its start: six more work calls, then the closing
  // one — seven calls on top of the three recorded, $3.50 in all, within the raised $4.00.
  const resumed = await runCli(["resume", runId, ...script, "--budget-usd", "4"], {
    userDir: ws.root,
  });
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.match(
    resumed.stdout,
    /succeeded: completed at complete\.loop after 10 iterations\n.*\$3\.5000/,
  );
});

Deno.test("a model without a price: cost unknown in --show --json (null, never 0) and --runs; a dollar budget is refused, --pricing and STEPFLOW_PRICING price it", async () => {
  const ws = await workspace(0, { behavior: { completionType: "loop", model: "house-model" } });
  const base = ["run", "looper", "--script", ws.script];
  const free = await runCli(base, { userDir: ws.root });
  assert.equal(free.code, 0, free.stderr);
  assert.match(free.stdout, /cost unknown/);
  const runId = await onlyRun(ws.runDir);
  const shown = JSON.parse(
    (await runCli(["show", runId, "--json"], { userDir: ws.root })).stdout,
  );
  assert.equal(shown.cost.costUsd, null);
  assert.equal(shown.checkpoint.state.usage.costUsd, null);
  assert.equal(shown.cost.callsWithoutCost, 2);
  const listed = JSON.parse(
    (await runCli(["runs", "looper", "--json"], { userDir: ws.root })).stdout,
  );
  assert.equal(listed[0].usage.costUsd, null);
  const runs = await runCli(["runs", "looper"], { userDir: ws.root });
  assert.match(runs.stdout, new RegExp(`${runId} .* completed .* \\? +complete\\.loop`));

  // A dollar budget needs the price: refused before anything runs (exit 2).
  const refused = await runCli([...base, "--budget-usd", "5"], { userDir: ws.root });
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /house-model \(step "work\.loop" of agent looper\)/);
  assert.equal((await new FileRunStore(ws.runDir).list()).length, 1, "nothing was recorded");

  const prices = join(ws.root, "prices.json");
  await Deno.writeTextFile(
    prices,
    JSON.stringify({ "house-model": { inputUsdPerMTok: 1, outputUsdPerMTok: 2 } }),
  );
  const priced = await runCli([...base, "--budget-usd", "5", "--pricing", "prices.json"], {
    userDir: ws.root,
  });
  assert.equal(priced.code, 0, priced.stderr);
  // Two calls of 100,000 input and 10,000 output tokens at $1 and $2 per million.
  assert.match(priced.stdout, /\$0\.2400/);
  const fromEnv = await runCli([...base, "--budget-usd", "5"], {
    userDir: ws.root,
    env: { STEPFLOW_PRICING: prices },
  });
  assert.equal(fromEnv.code, 0, fromEnv.stderr);
  const store = new FileRunStore(ws.runDir);
  const latest = (await store.list())[0].runId;
  const line = (await store.readLog(latest)).find((l) => l.type === "model_call")!;
  assert.deepEqual(line.price, {
    model: "house-model",
    source: prices,
    inputUsdPerMTok: 1,
    outputUsdPerMTok: 2,
  });

  const broken = join(ws.root, "broken.json");
  await Deno.writeTextFile(broken, JSON.stringify({ "house-model": { inputUsdPerMTok: -1 } }));
  const invalid = await runCli([...base, "--pricing", "broken.json"], { userDir: ws.root });
  assert.equal(invalid.code, 2);
  assert.match(invalid.stderr, /house-model\.inputUsdPerMTok/);
});

Deno.test("SIGKILL in a budgeted run, then resume: the spend starts from what the killed process spent, and the bound holds", async () => {
  const ws = await workspace(8);
  const base = ["run", "looper", "--script", ws.script, "--budget-usd", "1.2"];
  // Killed while recording iteration 2: its call was made and logged, its checkpoint not.
  const killed = await finish(
    spawnCli("stepflow", base, {
      userDir: ws.root,
      env: { STEPFLOW_TEST_CRASH_AT: "checkpoint-unlogged:3" },
    }),
  );
  assert.equal(killed.signal, "SIGKILL", killed.stderr);
  const runId = await onlyRun(ws.runDir);
  const store = new FileRunStore(ws.runDir);
  const before = (await store.readLog(runId)).filter((l) => l.type === "model_call").length;
  assert.equal(before, 2);

  const resumed = await runCli(["resume", runId, "--script", ws.script], {
    userDir: ws.root,
  });
  assert.equal(resumed.code, 5, resumed.stderr);
  const calls = (await store.readLog(runId)).filter((l) => l.type === "model_call");
  // The resume started from $0.70 (both calls of the killed process), re-ran iteration 2 ($1.05)
  // and made one more call ($1.40 ≥ $1.20): four calls, never more than the budget plus one call.
  assert.equal(calls.length, 4);
  const spent = calls.reduce((s, l) => s + (l.costUsd as number), 0);
  near(spent, 4 * CALL_USD);
  assert.ok(spent <= 1.2 + CALL_USD);
  const state = (await store.loadCheckpoint(runId))!.state as { usage: { costUsd: number } };
  near(state.usage.costUsd, spent);
});

Deno.test("stepflow eval reports the cost of each case and of the run group", async () => {
  const ws = await workspace(0);
  const one = join(ws.root, "one.json");
  await Deno.writeTextFile(
    one,
    JSON.stringify({
      "work.loop": [loopAnswer("repeat"), loopAnswer("complete")],
      "complete.loop": [closingAnswer],
    }),
  );
  await Deno.writeTextFile(
    join(ws.root, "cases.jsonl"),
    [
      { name: "short", script: "script.json" },
      { name: "longer", script: "one.json" },
    ].map((c) => JSON.stringify(c)).join("\n") + "\n",
  );
  const result = await finish(
    new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        join(REPO_ROOT, "src/cli/eval.ts"),
        "--agent",
        "looper",
        "--cases",
        "cases.jsonl",
        "--json",
        "report.json",
        "--group",
        "budget-eval",
      ],
      cwd: REPO_ROOT,
      env: { INIT_CWD: ws.root, NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn(),
  );
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^short\s+pass\s+1\/1\s+2\s+220000\s+\$0\.7000\s/m);
  assert.match(result.stdout, /^longer\s+pass\s+1\/1\s+3\s+330000\s+\$1\.0500\s/m);
  assert.match(result.stdout, /cost of group budget-eval: \$1\.7500/);
  const report = JSON.parse(await Deno.readTextFile(join(ws.root, "report.json")));
  near(report.costUsd, 5 * CALL_USD);
  near(report.cases[0].costUsd, 2 * CALL_USD);
  assert.equal(report.callsWithoutCost, 0);
});

Deno.test("stepflow run on the anthropic backend against a local Messages API server: the last call's max_tokens is lowered to what the budget has left, and the run stops at the budget plus one call", async () => {
  const ws = await workspace(0);
  const answer = (action: string) =>
    anthropicMessage(JSON.stringify({ summary: action, next_action: { action } }), {
      inputTokens: 100_000,
      outputTokens: 10_000,
    });
  const server = startFakeServer(Array.from({ length: 6 }, () => answer("repeat")));
  try {
    const run = await runCli([
      "run",
      "looper",
      "--backend",
      "anthropic",
      "--base-url",
      server.url,
      "--model",
      "claude-sonnet-4-5",
      "--budget-usd",
      "1",
    ], { userDir: ws.root, env: { ANTHROPIC_API_KEY: "sk-ant-test" } });
    assert.equal(run.code, 5, run.stderr + run.stdout);
    // $0.45 a call (100,000 × $3 + 10,000 × $15 per million): $0.90 after two; the third is sent
    // with max_tokens lowered to what $0.10 buys after its prompt's worst case, then no fourth.
    const limits = server.requests.map((r) => r.body.max_tokens as number);
    assert.deepEqual(limits.slice(0, 2), [8192, 8192]);
    assert.equal(limits.length, 3);
    assert.ok(limits[2] < 8192 && limits[2] >= 1024, String(limits[2]));
    const runId = await onlyRun(ws.runDir);
    const state = (await new FileRunStore(ws.runDir).loadCheckpoint(runId))!.state as {
      usage: { costUsd: number };
    };
    near(state.usage.costUsd, 3 * 0.45);
    assert.ok(state.usage.costUsd <= 1 + 0.45);
  } finally {
    await server.close();
  }
});
