/**
 * The eval loop: every case run `runs` times through the real runner (recorded in the agent's run
 * store like any run), `concurrency` at a time; each run checked against the case's expectations
 * (path, intents, output, handoff, a judge call, a command on the workspace). Cancelling stops
 * new runs and cancels those in flight; what finished is kept.
 *
 * @module
 */
import { cp } from "node:fs/promises";
import type { AgentDefinition } from "../../definition/types.ts";
import { errorMessage } from "../../errors.ts";
import { CHECK_RESPONSE_SCHEMA, interpretCheck } from "../../flow/check.ts";
import { StepFlowRunner } from "../../flow/runner.ts";
import type { RunUsage, StepFlowResult, StepFlowRunnerOptions } from "../../flow/types.ts";
import { meterBackend } from "../../flow/metered_backend.ts";
import { runPriceTable } from "../../flow/run_spend.ts";
import { SpendLedger } from "../../flow/spend_ledger.ts";
import type { LlmBackend, LlmResponse } from "../../llm/types.ts";
import type { RunStore } from "../../store/types.ts";
import {
  assertCompleted,
  assertHandoff,
  assertIntents,
  assertOutput,
  assertPath,
} from "../../testing/assertions.ts";
import { runToolCalls, testCall, type TestRun } from "../../testing/run.ts";
import { answersPermissions, answerWaits, scriptAnswers } from "../../testing/answers.ts";
import { recordedCalls } from "../../llm/replay_file.ts";
import { createRunCommandTool } from "../../tools/builtin_command.ts";
import type { EvalCase } from "./cases.ts";

/** The step id of judge calls (a script answers them under `eval.judge#check`). */
export const JUDGE_STEP_ID = "eval.judge";

/** How long an expectation's command may run. */
export const EVAL_COMMAND_TIMEOUT_MS = 300_000;

/** The outcome of one run of one case. */
export interface EvalRunOutcome {
  /** The case's name. */
  caseName: string;
  /** 1-based number of this run of the case. */
  run: number;
  /** `true` when every expectation held. */
  passed: boolean;
  /** `true` when the eval was cancelled while this run was in flight (not counted). */
  cancelled: boolean;
  /** Why it failed (one line per expectation that did not hold). */
  failures: string[];
  /** The recorded run's id. */
  runId?: string;
  /** How the run ended. */
  completionReason?: string;
  /** Iterations. */
  steps: number;
  /** Tokens in and out (the judge's included). */
  tokens: { input: number; output: number; unknownCalls: number };
  /** Cost in US dollars of the calls that could be priced (the judge's included). */
  costUsd: number;
  /** Model calls (the judge's included). */
  calls: number;
  /** Calls whose cost is unknown (no usage, or no price for the model): `costUsd` is a lower bound. */
  unknownCostCalls: number;
  /** Wall time of the run and its checks. */
  durationMs: number;
}

/** Options of {@linkcode runEval}. */
export interface EvalOptions {
  /** The agent. */
  definition: AgentDefinition;
  /** The cases. */
  cases: EvalCase[];
  /** Runs per case (default 1). */
  runs?: number;
  /** Runs at once (default 1). */
  concurrency?: number;
  /** A fresh backend for one run of a case (scripts keep their place, so one per run). */
  backendFor(c: EvalCase): Promise<LlmBackend>;
  /** The agent's run store: eval runs are recorded like any other. */
  store: RunStore;
  /** The group every run of this eval is started in (`RunOptions.group`): listed together. */
  group?: string;
  /** The run's working directory when a case has no workspace. */
  cwd: string;
  /** More runner options (allowRun, skipValidators, maxTotalIterations, model). */
  runner?: Omit<StepFlowRunnerOptions, "backend" | "store" | "events">;
  /** Cancels the eval. */
  signal?: AbortSignal;
  /** Told after each run, with how many are done of how many. */
  onRunEnd?(outcome: EvalRunOutcome, done: number, total: number): void;
}

/** Runs the eval; resolves with every finished run's outcome, in case then run order. */
export async function runEval(options: EvalOptions): Promise<EvalRunOutcome[]> {
  const runs = options.runs ?? 1;
  const jobs = options.cases.flatMap((c) =>
    Array.from({ length: runs }, (_, i) => ({ c, run: i + 1 }))
  );
  const outcomes: EvalRunOutcome[] = new Array(jobs.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < jobs.length && !options.signal?.aborted) {
      const index = next++;
      const { c, run } = jobs[index];
      const outcome = await runCase(c, run, options);
      outcomes[index] = outcome;
      done++;
      options.onRunEnd?.(outcome, done, jobs.length);
    }
  };
  const width = Math.max(1, Math.min(options.concurrency ?? 1, jobs.length));
  await Promise.all(Array.from({ length: width }, worker));
  return outcomes.filter((o) => o !== undefined);
}

async function runCase(c: EvalCase, run: number, options: EvalOptions): Promise<EvalRunOutcome> {
  const started = performance.now();
  const outcome: EvalRunOutcome = {
    caseName: c.name,
    run,
    passed: false,
    cancelled: false,
    failures: [],
    steps: 0,
    tokens: { input: 0, output: 0, unknownCalls: 0 },
    costUsd: 0,
    calls: 0,
    unknownCostCalls: 0,
    durationMs: 0,
  };
  const workspace = c.workspace
    ? await Deno.makeTempDir({ prefix: "stepflow-eval-workspace-" })
    : undefined;
  try {
    if (workspace) await cp(c.workspace!, workspace, { recursive: true });
    const cwd = workspace ?? options.cwd;
    const backend = await options.backendFor(c);
    const answers = c.answers ?? scriptAnswers(backend);
    const runner = new StepFlowRunner(options.definition, {
      onWarning: () => {},
      // A tool call's permission among the answers is waited for and answered, not refused.
      ...(answersPermissions(answers) ? { permissionAsks: "wait" as const } : {}),
      ...options.runner,
      backend,
      store: options.store,
    });
    const first = await runner.run({
      args: c.params,
      cwd,
      ...(options.group !== undefined ? { group: options.group } : {}),
      ...(c.stdin !== undefined ? { inputText: c.stdin } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    outcome.runId = first.runId;
    // The run's waits (an input step, a permission) take the case's answers, else its script's.
    let result = first;
    let answered = 0;
    try {
      ({ result, used: answered } = await answerWaits(runner, first, answers, {
        by: "eval",
        source: c.answers ? `case "${c.name}"` : c.script ?? "the script",
        ...(options.signal ? { signal: options.signal } : {}),
      }));
    } catch (error) {
      if (options.signal?.aborted) throw error;
      outcome.failures.push(firstLine(errorMessage(error)));
    }
    outcome.runId = result.runId;
    outcome.completionReason = result.completionReason;
    outcome.steps = result.iterations;
    addUsage(outcome, result.usage);
    if (result.completionReason === "cancelled" && options.signal?.aborted) {
      outcome.cancelled = true;
      return outcome;
    }
    const log = await options.store.readLog(result.runId);
    const calls = recordedCalls(log).map(testCall);
    const testRun: TestRun = {
      agent: options.definition.name,
      result,
      history: result.state.history,
      events: [],
      calls,
      toolCalls: runToolCalls(backend, log, calls),
      log,
      drifts: [],
      warnings: [],
      answered,
    };
    outcome.failures.push(...structuralFailures(c, testRun));
    if (c.expect.judge !== undefined) {
      outcome.failures.push(
        ...await judge(c, result, options, backend, cwd, outcome),
      );
    }
    if (c.expect.command !== undefined) {
      outcome.failures.push(...await command(c.expect.command, cwd, options.signal));
    }
    outcome.passed = outcome.failures.length === 0;
    if (options.signal?.aborted) outcome.cancelled = true;
  } catch (error) {
    if (options.signal?.aborted) outcome.cancelled = true;
    else outcome.failures.push(`the run could not be made: ${firstLine(errorMessage(error))}`);
  } finally {
    outcome.durationMs = performance.now() - started;
    if (workspace) await Deno.remove(workspace, { recursive: true }).catch(() => {});
  }
  return outcome;
}

/** The expectations read from the run itself, through the test kit's assertions. */
function structuralFailures(c: EvalCase, run: TestRun): string[] {
  const e = c.expect;
  const checks: (() => void)[] = [];
  if (e.completed !== false) checks.push(() => assertCompleted(run));
  else if (run.result.completionReason === "completed") {
    return ["expected the run not to complete, but it completed"];
  }
  if (e.path) checks.push(() => assertPath(run, e.path!));
  if (e.intents) checks.push(() => assertIntents(run, e.intents!.map((i) => i ?? undefined)));
  if (e.output) checks.push(() => assertOutput(run, e.output!));
  for (const [stepId, fields] of Object.entries(e.handoff ?? {})) {
    checks.push(() => assertHandoff(run, stepId, fields));
  }
  const failures: string[] = [];
  for (const check of checks) {
    try {
      check();
    } catch (error) {
      failures.push(firstLine(errorMessage(error)));
    }
  }
  return failures;
}

/** The judge: a check call that sees the case's final output and answers ok or ng. */
async function judge(
  c: EvalCase,
  result: StepFlowResult,
  options: EvalOptions,
  backend: LlmBackend,
  cwd: string,
  outcome: EvalRunOutcome,
): Promise<string[]> {
  const agent = options.definition.name;
  const signal = options.signal;
  // The judge's call is priced like the run's (the same table, the same ledger rules).
  const spent: RunUsage = { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 };
  const metered = meterBackend(
    backend,
    new SpendLedger({
      state: { runId: "eval-judge", agent, usage: spent },
      prices: runPriceTable(options.definition, options.runner?.pricing),
    }),
  );
  const shown = result.output !== undefined
    ? JSON.stringify(result.output, null, 2)
    : result.state.history.at(-1)?.answer?.text ?? "(no output)";
  let response: LlmResponse;
  try {
    response = await metered.complete({
      kind: "check",
      agent,
      stepId: JUDGE_STEP_ID,
      iteration: result.iterations + 1,
      prompt: `${c.expect.judge}\n\nThe agent's final output:\n${shown.slice(0, 50_000)}\n\n` +
        `Answer {"result": "ok"} when it does, or {"result": "ng", "message": "why not"}.`,
      outputSchema: { ...CHECK_RESPONSE_SCHEMA },
      cwd,
    }, signal ? { signal } : {});
  } catch (error) {
    return [`the judge call failed: ${firstLine(errorMessage(error))}`];
  }
  addUsage(outcome, spent);
  const verdict = interpretCheck(response);
  return verdict.result === "ok" ? [] : [`judge: ng — ${firstLine(verdict.message)}`];
}

/** The case's command in the workspace: exit 0 passes. */
async function command(cmd: string, cwd: string, signal?: AbortSignal): Promise<string[]> {
  const tool = createRunCommandTool({
    allowedCommands: ["sh"],
    timeoutMs: EVAL_COMMAND_TIMEOUT_MS,
    workspaceRoot: cwd,
  });
  try {
    const r = await tool.execute(
      { command: "sh", args: ["-c", cmd], allowFailure: true },
      { workspaceRoot: cwd, ...(signal ? { signal } : {}), stepId: "eval.command" },
    );
    if (r.success) return [];
    const said = firstLine(`${r.stderr.trim()}\n${r.stdout.trim()}`.trim());
    return [`command \`${cmd}\` exited ${r.code}${said ? `: ${said}` : ""}`];
  } catch (error) {
    return [`command \`${cmd}\` could not run: ${firstLine(errorMessage(error))}`];
  }
}

function addUsage(outcome: EvalRunOutcome, usage: RunUsage): void {
  outcome.tokens.input += usage.inputTokens;
  outcome.tokens.output += usage.outputTokens;
  outcome.tokens.unknownCalls += usage.callsWithoutUsage ?? 0;
  outcome.costUsd += usage.costUsd;
  outcome.calls += usage.calls;
  outcome.unknownCostCalls += usage.callsWithoutCost ?? 0;
}

function firstLine(text: string): string {
  const line = text.split("\n").find((l) => l.trim() !== "") ?? "";
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
