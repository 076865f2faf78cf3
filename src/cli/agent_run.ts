/**
 * One run of an agent from the command line, end to end: `stepflow run`, `resume`, `redrive` and
 * `answer` (and the old `run-agent` form) all drive it — input, the answer given or asked at a
 * terminal, the backend the run recorded, every wait it reaches, the recording, the summary and
 * the exit code, with the next step printed as a command that works where the user stands.
 *
 * @module
 */
import { resolve } from "node:path";
import type { AgentDefinition } from "../definition/types.ts";
import { StepflowError, UsageError } from "../errors.ts";
import { StepFlowRunner } from "../flow/runner.ts";
import type { RunPermissionAsk, StepFlowResult } from "../flow/types.ts";
import { askPermission } from "./permission_prompt.ts";
import { DEFAULT_BACKEND } from "../llm/agent_backend.ts";
import { defaultModelOf } from "../llm/model_chain.ts";
import { boundDepth } from "../engine/ask_structured.ts";
import type { LlmBackend } from "../llm/types.ts";
import { type CliFlags, type CommandLine, parseCommandLine } from "./args.ts";
import {
  createLineProgress,
  createLiveProgress,
  observeBackend,
  type ProgressRenderer,
} from "./progress.ts";
import { formatResult } from "./summary.ts";
import { PostgresRunStore } from "../store/postgres.ts";
import { submissionOf } from "../worker/submissions.ts";
import { resolveStoreSetting, selectRunStore } from "../store/select.ts";
import type { RunCheckpoint, RunStore } from "../store/types.ts";
import { costOrNull } from "../token_counts.ts";
import { cliPricing } from "./kit/pricing.ts";
import { asNextStep } from "../invocation.ts";
import { writeRecording } from "./replay_flags.ts";
import { answerQueuedRun } from "./answer_queued.ts";
import { backendFromFlags, backendName } from "./kit/backend.ts";
import {
  type BackendChoice,
  mergeBackendChoice,
  recordableChoice,
  recordedBackendChoice,
} from "../llm/backend_choice.ts";
import type { PendingInput } from "../flow/input_request.ts";
import { lineReader } from "./kit/line_reader.ts";
import {
  askAtTerminal,
  continuationFlags,
  formOf,
  parseAnswerValue,
  pendingOf,
  waitingText,
  waitsText,
} from "./waiting_run.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import { STDIN_WAIT_MS } from "./kit/io.ts";
import { SETUP_ERROR_CODES } from "./kit/report_error.ts";
import { type AgentCliContext, agentOfRun, agentOperand, nextCommand } from "./agent_context.ts";

/** Nesting kept by `--json` output; deeper values (stored by older versions) are elided. */
const JSON_OUTPUT_DEPTH = 1_000;

/**
 * Indented JSON for `--json` and `--show --json`. Output is bounded at validation time, but a run
 * recorded before that may hold data nested thousands of levels deep, on which an indented
 * `JSON.stringify` overflows the stack: such values are cut at {@linkcode JSON_OUTPUT_DEPTH} levels.
 */
export function jsonOutput(value: unknown): string {
  return JSON.stringify(boundDepth(value, JSON_OUTPUT_DEPTH), null, 2);
}

/** A run's result as `--json` prints it: a cost no call could be priced for is `null`, never 0. */
function resultJson(result: StepFlowResult): unknown {
  return { ...result, usage: { ...result.usage, costUsd: costOrNull(result.usage) } };
}

/** A checkpoint as `show --json` prints it: its usage's unknown cost `null`, never 0. */
export function withKnownCost(checkpoint: RunCheckpoint): RunCheckpoint {
  const usage = checkpoint.state.usage as Record<string, unknown> | undefined;
  if (!usage || typeof usage !== "object") return checkpoint;
  const costUsd = costOrNull(
    usage as { costUsd?: number; calls?: number; callsWithoutCost?: number },
  );
  return { ...checkpoint, state: { ...checkpoint.state, usage: { ...usage, costUsd } } };
}

/**
 * A resume, redrive or answer continues the run with the parameters it started with: passing
 * others (`--topic …` after `stepflow resume RUN_ID`) is a mistake, said as such.
 */
export function rejectParametersOnContinue(
  argv: readonly string[],
  definition: AgentDefinition,
  action: "resume" | "redrive" | "answer",
): void {
  const declared = Object.entries(definition.agent.parameters ?? {}).map(([key, p]) =>
    p.flag ?? key
  );
  const given = declared.filter((flag) =>
    argv.some((arg) => arg === `--${flag}` || arg.startsWith(`--${flag}=`))
  );
  if (given.length === 0) return;
  throw new UsageError(
    `${
      action === "answer" ? "An answer" : `A ${action}`
    } continues the run with the parameters it started with; remove ${
      given.map((k) => `--${k}`).join(", ")
    } (start a new run to use other values).`,
  );
}

// Long because: one run of the command end to end — input, the answer given or asked, the backend
// the run recorded, the drive and every wait it reaches, the recording, then the exit — read top to
// bottom; each part it calls lives beside it (waiting_run.ts, answer_queued.ts, replay_flags.ts).
export async function runAgentFlow(
  commandLine: CommandLine,
  definition: AgentDefinition,
  ctx: AgentCliContext,
): Promise<number> {
  const { flags, params } = commandLine;
  // Next steps print as commands that work where the user stands (the run's backend needs no flag).
  const render = nextCommand(ctx, flags.store);
  const agent = agentOfRun(definition, ctx.userDir);
  const continuing = flags.resume !== undefined || flags.redrive !== undefined ||
    flags.answer !== undefined;
  // A continued run keeps the {input_text} it started with; an answer may come on stdin instead.
  const inputText = continuing ? undefined : await readStdinText(ctx);
  const given =
    flags.answer !== undefined && (flags.value !== undefined || !ctx.io.isTerminal.stdin)
      ? {
        value: parseAnswerValue(
          flags.value ?? await readStdinText(ctx),
          flags.value !== undefined ? "--value" : "stdin",
        ),
      }
      : undefined;
  // `--json` promises one JSON object and nothing else: it never asks, like a run without a terminal.
  const terminal = ctx.io.isTerminal.stdin && ctx.io.stdin && !flags.json
    ? lineReader(ctx.io.stdin)
    : undefined;
  const ask = terminal
    ? { lines: terminal, write: (t: string) => ctx.io.stderr.write(t), signal: ctx.io.signal }
    : undefined;
  const who = (how: string) => ctx.io.env.USER ? `${how} (${ctx.io.env.USER})` : how;
  let progress = createProgress(flags, ctx);
  let result: StepFlowResult | undefined;
  const started = performance.now();
  let store: RunStore | undefined;
  try {
    // Every CLI run is recorded (file store by default), so any run can be resumed from another
    // process.
    store = selectRunStore(definition, {
      cwd: ctx.userDir,
      env: ctx.io.env,
      onWarning: (message) => progress.warn(message),
      ...(flags.store !== undefined ? { store: flags.store } : {}),
    });
    // A run submitted to the workers is answered here and continued by a worker.
    if (
      flags.answer !== undefined && store instanceof PostgresRunStore &&
      await submissionOf(store, flags.answer) !== undefined
    ) {
      progress.finish(undefined);
      return await answerQueuedRun(store, definition, flags.answer, flags, {
        io: ctx.io,
        stdoutColor: ctx.stdoutColor,
        url: resolveStoreSetting(definition, {
          env: ctx.io.env,
          ...(flags.store !== undefined ? { store: flags.store } : {}),
        }).value,
        ...(given ? { given } : {}),
        ...(ask ? { ask } : {}),
        answeredBy: who,
      });
    }
    // A continued or answered run starts from the backend it recorded; flags given now override.
    const continued = flags.resume ?? flags.redrive ?? flags.answer;
    const { backend, choice } = await selectBackend(
      flags,
      definition,
      ctx,
      progress,
      continued !== undefined ? await recordedChoice(store, continued) : undefined,
    );
    const backendChoice = recordableChoice(choice);
    // --pricing FILE over STEPFLOW_PRICING=FILE, both over agent.json's and the built-in prices.
    const pricing = await cliPricing(flags.pricing, ctx.io.env.STEPFLOW_PRICING, ctx.userDir);
    const budget = {
      ...(flags.budgetUsd !== undefined ? { usd: flags.budgetUsd } : {}),
      ...(flags.budgetTokens !== undefined ? { tokens: flags.budgetTokens } : {}),
    };
    // One runner per drive, each with the progress renderer of that drive.
    const runner = (drive: ProgressRenderer) =>
      new StepFlowRunner(definition, {
        backend: observeBackend(backend, drive),
        events: drive.events,
        allowFallback: flags.allowFallback,
        allowRun: flags.allowRun,
        skipValidators: flags.skipValidators,
        ...(flags.permissionAsks ? { permissionAsks: flags.permissionAsks } : {}),
        onWarning: (message) => drive.warn(message),
        store,
        ...(flags.maxIterations !== undefined ? { maxTotalIterations: flags.maxIterations } : {}),
        ...(flags.maxChildren !== undefined ? { maxChildren: flags.maxChildren } : {}),
        ...(choice.model !== undefined ? { model: choice.model } : {}),
        ...(Object.keys(budget).length ? { budget } : {}),
        ...(pricing ? { pricing } : {}),
        // At a terminal, a tool call that asks is asked here (yes, no, always for this run).
        ...(ask
          ? {
            onPermissionRequest: (request: RunPermissionAsk) =>
              askPermission(request, {
                lines: ask.lines,
                write: ask.write,
                who: who("terminal"),
                ...(drive.hold ? { hold: () => drive.hold!() } : {}),
              }),
          }
          : {}),
      });
    const permissionMode = flags.permissionMode !== undefined
      ? { permissionMode: flags.permissionMode }
      : {};
    const signal = ctx.io.signal ? { signal: ctx.io.signal } : {};
    const answerAtTerminal = async (
      runId: string,
      waiting: PendingInput,
    ): Promise<StepFlowResult> => {
      progress.finish(undefined);
      const form = await formOf(definition, waiting);
      for (;;) {
        const value = await askAtTerminal(waiting, runId, form, ask!);
        progress = createProgress(flags, ctx, progress.startedAt);
        try {
          return await runner(progress).answer(runId, value, {
            answeredBy: flags.answeredBy ?? who("terminal"),
            requestId: waiting.requestId,
            backendChoice,
            ...permissionMode,
            ...signal,
          });
        } catch (error) {
          // A value the form took but the schema refuses (a pattern, a length): ask again.
          if (!(error instanceof StepflowError) || error.code !== "INPUT_ANSWER_INVALID") {
            throw error;
          }
          progress.finish(undefined);
          ctx.io.stderr.write(`${error.message}\n`);
        }
      }
    };
    if (flags.answer !== undefined && given) {
      result = await runner(progress).answer(flags.answer, given.value, {
        answeredBy: flags.answeredBy ?? who("cli"),
        ...(flags.requestId !== undefined ? { requestId: flags.requestId } : {}),
        backendChoice,
        ...permissionMode,
        ...signal,
      });
    } else if (flags.answer !== undefined) {
      // At a terminal without --value: the run's question is asked field by field.
      const waiting = await pendingOf(store, flags.answer, flags.requestId);
      if (!waiting) {
        result = await runner(progress).answer(flags.answer, undefined, signal); // says why
      } else {
        result = await answerAtTerminal(flags.answer, waiting);
      }
    } else {
      result = await runner(progress).run({
        args: params,
        cwd: ctx.userDir,
        backendChoice,
        ...permissionMode,
        ...(inputText !== undefined ? { inputText } : {}),
        ...signal,
        ...(flags.resume !== undefined ? { resume: flags.resume } : {}),
        ...(flags.rerunUnfinishedCall ? { rerunUnfinishedCall: true } : {}),
        ...(flags.redrive !== undefined ? { redrive: flags.redrive } : {}),
        ...(flags.group !== undefined ? { group: flags.group } : {}),
      });
    }
    // At a terminal, every wait is asked at once and the run goes on in this process.
    while (ask && result.completionReason === "waiting" && result.waiting) {
      result = await answerAtTerminal(result.runId, result.waiting);
    }
    if (flags.answer !== undefined && result.runId !== flags.answer) {
      // Another process drives the run: the answer went to its waiting child, driven here.
      progress.warn(
        `run ${flags.answer} is driven by another process; the answer was recorded in its child run ${result.runId}, which went on here (${result.completionReason}); the run takes its result there`,
      );
    }
    if (flags.record !== undefined) {
      await writeRecording(flags.record, store, result.runId, definition, ctx);
    }
  } finally {
    progress.finish(result);
    if (store instanceof PostgresRunStore) await store.close();
  }
  if (result.completionReason === "waiting" && result.waiting) {
    // Nobody at a terminal: say what the run asks and how to answer it, and exit with its own code.
    if (flags.json) ctx.io.stdout.write(`${jsonOutput(resultJson(result))}\n`);
    else {
      const runId = result.runId;
      const answer = (value: string, requestId?: string) =>
        render({
          action: "answer",
          runId,
          agent,
          args: [
            ...(requestId ? ["--request-id", requestId] : []),
            "--value",
            value,
            ...continuationFlags(flags),
          ],
        });
      // A fan-out whose children wait: each question with the command that answers it.
      const waits = result.waits ?? [result.waiting];
      const forms = await Promise.all(
        waits.map((w) => formOf(definition, w).catch(() => undefined)),
      );
      ctx.io.stdout.write(
        waits.length > 1
          ? waitsText(waits, runId, answer, forms)
          : waitingText(result.waiting, runId, answer, forms[0]),
      );
    }
    return EXIT_CODES.waiting;
  }
  if (flags.json) {
    ctx.io.stdout.write(`${jsonOutput(resultJson(result))}\n`);
  } else {
    ctx.io.stdout.write(
      `${
        formatResult(result, {
          agentName: definition.name,
          color: ctx.stdoutColor,
          elapsedMs: performance.now() - started,
        })
      }\n`,
    );
  }
  if (result.success) return EXIT_CODES.success;
  if (result.completionReason === "budget_exceeded") {
    if (!flags.json) {
      // The next step the run's end names: the resume with a raised budget.
      const next = asNextStep(result.error?.details?.next) ??
        { action: "resume", runId: result.runId };
      ctx.io.stderr.write(
        `The run stays resumable: raise its budget and carry on inside the step with: ${
          render(
            next.runId === result.runId && next.agent === undefined ? { ...next, agent } : next,
          )
        }\n`,
      );
    }
    return EXIT_CODES.budgetExceeded;
  }
  if (result.completionReason === "declined") return EXIT_CODES.incomplete; // a person said no
  if (!flags.json) {
    const redrive = render({ action: "redrive", runId: result.runId, agent });
    // A configuration problem fails again on every redrive until the agent's files are fixed.
    ctx.io.stderr.write(
      result.error?.code.startsWith("REPLAY_")
        ? `The run no longer follows the recording in ${flags.script}: record it again with --record FILE${
          result.error.code === "REPLAY_PROMPT_CHANGED"
            ? " (or accept the drift with --replay lenient)"
            : ""
        }.\n`
        : result.error && CONFIGURATION_FAILURE_CODES.has(result.error.code)
        ? `This is a problem in the agent's files, not in the run: fix it, check it with \`${
          render({ action: "validate", agent: agentOperand(definition, ctx.userDir) })
        }\`, then start a new run.\n`
        : result.completionReason === "cancelled"
        ? `Continue it from step "${result.finalStepId}" with: ${redrive}\n`
        : `Restart it from its failed step with: ${redrive}\n`,
    );
  }
  if (result.completionReason === "cancelled" && ctx.io.signal?.aborted) {
    return EXIT_CODES.interrupted;
  }
  // A backend that cannot be used at all (credentials refused, SDK or executable missing) is a
  // setup problem like a missing key, not a flow that failed.
  if (result.error && SETUP_ERROR_CODES.has(result.error.code)) return EXIT_CODES.usage;
  return EXIT_CODES.failed;
}

/** Run failures caused by the agent's own files (prompts, schemas): no redrive can succeed. */
export const CONFIGURATION_FAILURE_CODES = new Set([
  "FAILED_SCHEMA_RESOLUTION",
  "PROMPT_NOT_FOUND",
  "PROMPT_PATH_INVALID",
  "PROMPT_VARIABLES_MISSING",
  "PROMPT_FRONTMATTER_INVALID",
]);

/** Parses the command line against the agent's declared parameters. */
export function parseAgentCommandLine(
  argv: readonly string[],
  definition: AgentDefinition,
  { requireParameters = true }: { requireParameters?: boolean } = {},
): CommandLine {
  const declared = definition.agent.parameters ?? {};
  if (requireParameters) {
    return parseCommandLine(argv, { parameters: declared, agentName: definition.name });
  }
  // --validate / --graph do not run the flow: required parameters may be left out.
  const optional = Object.fromEntries(
    Object.entries(declared).map(([k, p]) => [k, { ...p, required: false }]),
  );
  return parseCommandLine(argv, { parameters: optional, agentName: definition.name });
}

/**
 * `--script` (or `--backend scripted`) → the scripted backend; otherwise `createBackend` with
 * `--backend`/`--model`/`--base-url`, falling back to agent.json `behavior.backend`/`behavior.model`,
 * then {@linkcode DEFAULT_BACKEND}. A resumed or redriven run starts from the choice it recorded
 * (`recorded`); the flags given now override it field by field. Returns the backend and the choice
 * to record.
 */
async function selectBackend(
  flags: CliFlags,
  definition: AgentDefinition,
  ctx: AgentCliContext,
  progress: ProgressRenderer,
  recorded: BackendChoice | undefined,
): Promise<{ backend: LlmBackend; choice: BackendChoice }> {
  const behavior = definition.agent.behavior;
  const given: Partial<BackendChoice> = {};
  if (flags.backend !== undefined) given.backend = flags.backend;
  if (flags.script !== undefined) given.script = resolve(ctx.userDir, flags.script);
  if (flags.model !== undefined) given.model = flags.model;
  if (flags.baseUrl !== undefined) given.baseUrl = flags.baseUrl;
  if (flags.fallbackModel.length > 0) given.fallbackModels = flags.fallbackModel;
  const name = backendName(flags, {
    fallback: recorded?.backend ?? behavior.backend ?? DEFAULT_BACKEND,
  })!;
  const choice = mergeBackendChoice(recorded ?? { backend: name }, given);
  // How calls are made (not recorded with the run): the retry limit, streaming, the replay mode.
  const how = {
    ...(flags.maxAttempts !== undefined ? { maxAttempts: flags.maxAttempts } : {}),
    ...(flags.maxRateLimitWaitMs !== undefined
      ? { maxRateLimitWaitMs: flags.maxRateLimitWaitMs }
      : {}),
    ...(flags.idleTimeoutMs !== undefined ? { idleTimeoutMs: flags.idleTimeoutMs } : {}),
    ...(flags.noStream ? { noStream: true } : {}),
    ...(flags.replay !== undefined ? { replay: flags.replay } : {}),
  };
  const defaultModel = defaultModelOf(behavior.model);
  // Always able to walk model chains (agent.json's, the steps', --fallback-model), with the
  // options of these flags for the entries on other backends.
  const { fallbackModels = [], ...chosen } = choice;
  const backend = await backendFromFlags({ ...chosen, ...how, fallbackModel: fallbackModels }, {
    cwd: ctx.userDir,
    ...(defaultModel !== undefined ? { defaultModel } : {}),
    env: ctx.io.env,
    // Backend retries reach the progress display as the runner's onStepRetry events.
    onWarning: (message) => progress.warn(message),
  });
  return { backend: backend!, choice };
}

/**
 * The backend choice recorded by the run being continued; undefined when it recorded none or its
 * checkpoint cannot be read (the runner then reports what is wrong with the run).
 */
async function recordedChoice(
  store: RunStore,
  runId: string,
): Promise<BackendChoice | undefined> {
  try {
    return recordedBackendChoice((await store.loadCheckpoint(runId))?.state);
  } catch {
    return undefined;
  }
}

function createProgress(
  flags: CliFlags,
  ctx: AgentCliContext,
  startedAt?: number,
): ProgressRenderer {
  const write = (text: string) => ctx.io.stderr.write(text);
  const live = ctx.io.isTerminal.stderr && !flags.verbose && ctx.io.env.TERM !== "dumb";
  return live
    ? createLiveProgress({
      write,
      color: ctx.stderrColor,
      startedAt,
      ...(ctx.io.columns !== undefined ? { columns: ctx.io.columns } : {}),
    })
    : createLineProgress({ write, color: ctx.stderrColor, verbose: flags.verbose, startedAt });
}

/**
 * Piped stdin becomes `{input_text}`. A terminal is never read; an empty or closed stdin gives
 * nothing; a pipe that stays silent for `stdinWaitMs` is left alone (with a note) rather than
 * blocking the run forever.
 */
export async function readStdinText(ctx: AgentCliContext): Promise<string | undefined> {
  const stream = ctx.io.stdin;
  if (!stream || ctx.io.isTerminal.stdin) return undefined;
  const reader = stream.getReader();
  const waitMs = ctx.io.stdinWaitMs ?? STDIN_WAIT_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((r) => timer = setTimeout(() => r("timeout"), waitMs));
  const first = await Promise.race([reader.read(), timeout]);
  clearTimeout(timer);
  if (first === "timeout") {
    reader.cancel().catch(() => {});
    if (ctx.verbose) {
      ctx.io.stderr.write(
        `note: stdin is a pipe but nothing arrived within ${waitMs} ms; running without {input_text}.\n`,
      );
    }
    return undefined;
  }
  if (first.done) return undefined;
  const chunks: Uint8Array[] = [first.value];
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    chunks.push(next.value);
  }
  const decoder = new TextDecoder();
  const text = chunks.map((c) => decoder.decode(c, { stream: true })).join("") + decoder.decode();
  return text.trim() === "" ? undefined : text;
}
