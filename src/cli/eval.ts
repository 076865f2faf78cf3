/**
 * `deno task eval`: runs an agent over a file of cases and reports how many passed.
 *
 *     deno task eval --agent NAME --cases FILE.jsonl [--backend …] [--concurrency N] [--runs K]
 *                    [--min-pass R] [--json FILE] [--group NAME]
 *
 * Each case (one JSON object per line) gives the agent's args and stdin, optionally a script or
 * recording, and what it expects: the path, intents, output and handoff fields, a judge prompt, a
 * command run on the workspace. Every run is recorded in the agent's run store like any other,
 * all in one group (a new one per eval unless `--group` names it), which the report prints with
 * the commands that list them together.
 * Exit codes: 0 the pass rate reached `--min-pass`; 1 it did not; 2 usage or setup error; 130
 * interrupted with Ctrl-C (what was measured is printed first).
 *
 * @module
 */
import { resolve } from "node:path";
import { writeFileAtomic } from "../atomic_write.ts";
import { loadAgentDefinition } from "../definition/load.ts";
import { UsageError } from "../errors.ts";
import { DEFAULT_BACKEND } from "../llm/agent_backend.ts";
import { defaultModelOf } from "../llm/model_chain.ts";
import { loadScriptFile } from "../llm/script_file.ts";
import type { LlmBackend } from "../llm/types.ts";
import { commandRenderer } from "../invocation.ts";
import { agentOperand } from "./agent_context.ts";
import { PostgresRunStore } from "../store/postgres.ts";
import { assertRunGroup, newRunGroup } from "../store/run_group.ts";
import { cliPricing } from "./kit/pricing.ts";
import { selectRunStore } from "../store/select.ts";
import { type EvalCase, loadEvalCases } from "./eval/cases.ts";
import { formatEvalReport, summarize } from "./eval/report.ts";
import { type EvalRunOutcome, runEval } from "./eval/run_eval.ts";
import { RUN_AGENT_FLAGS } from "./args.ts";
import { BACKEND_FLAGS, backendFromFlags, backendName } from "./kit/backend.ts";
import { displayPath } from "./kit/display_path.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import {
  declaredHelpLines,
  defineFlags,
  parseCommandFlags,
  parsePositiveInt,
} from "./kit/flags.ts";
import { listenForInterrupt } from "./kit/interrupt.ts";
import { exitProcess, startTelemetryExport } from "./kit/telemetry_export.ts";
import { type CliIo, colorOn, fullIo, processIo, userDirOf } from "./kit/io.ts";
import { reportError } from "./kit/report_error.ts";

/** Every flag of `eval`, in `--help` order: its type, parser and help rows follow from it. */
export const EVAL_FLAGS = defineFlags({
  agent: { type: "string", value: "NAME", description: "Agent to evaluate" },
  cases: {
    type: "string",
    value: "FILE",
    description: "Case file: JSON Lines, one case per line (docs/testing.md#evaluations)",
  },
  ...BACKEND_FLAGS,
  replay: {
    ...RUN_AGENT_FLAGS.replay,
    description: "Recordings as scripts: strict (default) fails on a changed prompt, lenient warns",
  },
  runs: {
    type: "string",
    value: "K",
    description: "Runs per case (default 1): pass rates",
    parse: parsePositiveInt("--runs"),
    default: 1,
  },
  concurrency: {
    type: "string",
    value: "N",
    description: "Runs at once (default 1)",
    parse: parsePositiveInt("--concurrency"),
    default: 1,
  },
  minPass: {
    type: "string",
    value: "R",
    description: "Lowest passing share of runs, 0–1 or a percentage (default 1: every run)",
    parse: parseMinPass,
    default: 1,
  },
  json: { type: "string", value: "FILE", description: "Also write the report as JSON" },
  group: {
    type: "string",
    value: "NAME",
    description: "Group the runs are recorded in (default: eval-<time>-<hex>, new per eval)",
  },
  store: RUN_AGENT_FLAGS.store,
  maxIterations: {
    ...RUN_AGENT_FLAGS.maxIterations,
    description: "Upper bound on iterations of each run",
  },
  allowRun: RUN_AGENT_FLAGS.allowRun,
  skipValidators: { type: "boolean", description: "Do not run step validators" },
  pricing: RUN_AGENT_FLAGS.pricing,
  help: { type: "boolean", short: "h", description: "Show this help" },
});

const USAGE = `Usage: stepflow eval --agent NAME --cases FILE.jsonl [options]

Runs the agent on every case, checks what each case expects, prints a table and a summary.

Options:
${declaredHelpLines(EVAL_FLAGS).join("\n")}

Exit codes: 0 the pass rate reached --min-pass, 1 it did not, 2 usage or setup error,
            130 interrupted with Ctrl-C, 143 with SIGTERM (the runs measured so far are reported
            first).

Examples:
  stepflow eval --agent haiku --cases tests/haiku.cases.jsonl --min-pass 90%
  stepflow eval --agent haiku --cases tests/haiku.cases.jsonl --script tests/haiku.replay.yaml`;

/** A parsed `--min-pass`: `0.8`, `80%`. */
export function parseMinPass(raw: string): number {
  const percent = raw.trim().endsWith("%");
  const n = Number(percent ? raw.trim().slice(0, -1) : raw);
  const value = percent ? n / 100 : n;
  if (raw.trim() === "" || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new UsageError(
      `--min-pass expects a share between 0 and 1 or a percentage (0.8, 80%), got "${raw}".`,
    );
  }
  return value;
}

/**
 * Runs the eval CLI with `argv` (without the program name) and returns the exit code; errors are
 * printed on `io.stderr`, never thrown.
 */
export async function evalMain(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  const full = fullIo(io);
  try {
    return await evaluate(argv, full);
  } catch (error) {
    return reportError(error, full.stderr, {
      prefix: "error:",
      color: colorOn(full, "stderr"),
      ...(full.signal ? { signal: full.signal } : {}),
    });
  }
}

async function evaluate(argv: readonly string[], io: CliIo): Promise<number> {
  const { flags } = parseCommandFlags(argv, EVAL_FLAGS, {
    positionals: false,
    hint: "\nRun with --help for every flag.",
  });
  if (flags.help) {
    io.stdout.write(`${USAGE}\n`);
    return EXIT_CODES.success;
  }
  const { agent, cases: casesFile, replay, minPass, runs, concurrency, maxIterations } = flags;
  if (agent === undefined || casesFile === undefined) {
    throw new UsageError(
      `Missing ${
        [agent === undefined ? "--agent NAME" : "", casesFile === undefined ? "--cases FILE" : ""]
          .filter(Boolean).join(" and ")
      }: say which agent to evaluate on which cases.\nRun with --help for every flag.`,
    );
  }
  const jsonFile = flags.json;
  if (flags.group !== undefined) assertRunGroup(flags.group, "--group");
  const group = flags.group ?? newRunGroup("eval");
  backendName(flags); // --script with another --backend is a usage error, as in run-agent
  const userDir = userDirOf(io);
  const definition = await loadAgentDefinition(agent, { cwd: userDir });
  const casesPath = resolve(userDir, casesFile);
  const cases = await loadEvalCases(
    casesPath,
    definition,
    displayPath(casesPath, userDir),
    userDir,
  );
  const warn = (m: string) => io.stderr.write(`warning: ${m}\n`);
  const backendFor = async (c: EvalCase): Promise<LlmBackend> => {
    const script = c.script ??
      (flags.script !== undefined ? resolve(userDir, flags.script) : undefined);
    if (script !== undefined) {
      return await loadScriptFile(script, {
        env: io.env,
        onWarning: warn,
        ...(replay ? { replay } : {}),
      });
    }
    return (await backendFromFlags(
      {
        ...(flags.backend !== undefined ? { backend: flags.backend } : {}),
        ...(flags.model !== undefined ? { model: flags.model } : {}),
        ...(flags.baseUrl !== undefined ? { baseUrl: flags.baseUrl } : {}),
        ...(flags.maxAttempts !== undefined ? { maxAttempts: flags.maxAttempts } : {}),
        ...(flags.noStream ? { noStream: true } : {}),
      },
      {
        cwd: userDir,
        fallback: definition.agent.behavior.backend ?? DEFAULT_BACKEND,
        ...(defaultModelOf(definition.agent.behavior.model) !== undefined
          ? { defaultModel: defaultModelOf(definition.agent.behavior.model) }
          : {}),
        env: io.env,
        onWarning: warn,
      },
    ))!;
  };
  // A backend that cannot be used at all (missing key, missing script) stops here, not per run.
  for (const c of cases) await backendFor(c);

  const store = selectRunStore(definition, {
    cwd: userDir,
    env: io.env,
    onWarning: warn,
    ...(flags.store !== undefined ? { store: flags.store } : {}),
  });
  const planned = cases.length * runs;
  io.stderr.write(
    `Evaluating agent "${definition.name}" on ${cases.length} case${
      cases.length === 1 ? "" : "s"
    } × ${runs} run${runs === 1 ? "" : "s"} (${concurrency} at once)…\n`,
  );
  const pricing = await cliPricing(flags.pricing, io.env.STEPFLOW_PRICING, userDir);
  const started = performance.now();
  let outcomes: EvalRunOutcome[];
  try {
    outcomes = await runEval({
      definition,
      cases,
      runs,
      concurrency,
      backendFor,
      store,
      group,
      cwd: userDir,
      runner: {
        allowRun: flags.allowRun,
        skipValidators: flags.skipValidators,
        ...(maxIterations !== undefined ? { maxTotalIterations: maxIterations } : {}),
        ...(flags.model !== undefined ? { model: flags.model } : {}),
        ...(pricing ? { pricing } : {}),
      },
      ...(io.signal ? { signal: io.signal } : {}),
      onRunEnd: (o, done, total) => io.stderr.write(`${progressLine(o, done, total)}\n`),
    });
  } finally {
    if (store instanceof PostgresRunStore) await store.close();
  }
  const interrupted = io.signal?.aborted === true;
  const summary = summarize(definition.name, cases, outcomes, {
    group,
    minPass,
    planned,
    interrupted,
    durationMs: performance.now() - started,
  });
  io.stdout.write(`${formatEvalReport(summary)}\n`);
  io.stdout.write(
    `${whereToSee(agentOperand(definition, userDir), group, flags.store, userDir)}\n`,
  );
  if (jsonFile !== undefined) {
    const path = resolve(userDir, jsonFile);
    await writeFileAtomic(path, `${JSON.stringify({ ...summary, outcomes }, null, 2)}\n`);
    io.stderr.write(`Report written to ${displayPath(path, userDir)}.\n`);
  }
  if (interrupted) return EXIT_CODES.interrupted;
  return summary.ok ? EXIT_CODES.success : EXIT_CODES.failed;
}

/**
 * Where the eval's runs are seen together: `stepflow runs` of the group, and the dashboard filtered
 * to it — as commands that work where the user stands (a `--store` given is repeated, a PostgreSQL
 * password shown as `***`).
 */
function whereToSee(agent: string, group: string, store: string | undefined, userDir: string) {
  const render = commandRenderer({ cwd: userDir }, store);
  return [
    `Runs recorded in group ${group}. List them with:`,
    `  ${render({ action: "runs", agent, args: ["--run-group", group] })}`,
    `or see them at http://127.0.0.1:8420/?group=${group} in the dashboard, started with:`,
    `  ${render({ action: "ui" })}`,
  ].join("\n");
}

/** `[####------] 3/10 name #1 pass (2 steps, 0.4s)`: one line per finished run. */
function progressLine(o: EvalRunOutcome, done: number, total: number): string {
  const width = 20;
  const filled = Math.round((done / total) * width);
  const bar = `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
  const verdict = o.cancelled ? "cancelled" : o.passed ? "pass" : "FAIL";
  const why = !o.passed && !o.cancelled && o.failures[0] ? ` — ${o.failures[0]}` : "";
  return `${bar} ${done}/${total} ${o.caseName} #${o.run} ${verdict} (${o.steps} step${
    o.steps === 1 ? "" : "s"
  }, ${(o.durationMs / 1000).toFixed(1)}s)${why}`;
}

/**
 * Runs `eval` on the real process: Ctrl-C or SIGTERM cancel the runs in flight and still report;
 * OTLP export when the environment asks for it, flushed at exit.
 */
export async function evalCli(argv: readonly string[] = Deno.args): Promise<never> {
  await startTelemetryExport();
  using interrupt = listenForInterrupt({
    message: "\nStopping the eval: cancelling the runs in flight… (press Ctrl-C again to quit)\n",
  });
  return await exitProcess(
    interrupt.exitCode(await evalMain(argv, { ...processIo(), signal: interrupt.signal })),
  );
}

if (import.meta.main) await evalCli();
