/**
 * `run-agent --agent NAME … --submit [--wait]`: queues a run for the workers instead of running it
 * here, prints its id, and with `--wait` follows it live until it ends.
 *
 * @module
 */
import { type CommandRenderer, commandRenderer, stepflowCommand } from "../invocation.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { StepflowError, UsageError } from "../errors.ts";
import { formatRunHistory } from "../store/format.ts";
import { PostgresRunStore } from "../store/postgres.ts";
import { resolveStoreSetting } from "../store/select.ts";
import type { RunCheckpoint, RunLogEntry } from "../store/types.ts";
import { followRun, resubmitWithRerun, submitRun } from "../worker/submit.ts";
import type { SubmittedRequest } from "../worker/worker.ts";
import type { CommandLine } from "./args.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import { cliPricing } from "./kit/pricing.ts";
import { type CliIo, userDirOf } from "./kit/io.ts";

/** What `--submit` needs from the CLI. */
export interface SubmitContext {
  /** Streams, environment, cancellation. */
  io: CliIo;
  /** Color on stdout. */
  stdoutColor: boolean;
  /** Reads piped stdin (`{input_text}`). */
  stdin: () => Promise<string | undefined>;
}

/**
 * Queues the run (PostgreSQL store only), prints its id on stdout; with `--wait`, prints each
 * committed step on stderr and the run's history on stdout at the end. Exit code: 0 queued (or,
 * with `--wait`, completed), 1 the run ended without success (or the queue gave it up), 2 usage,
 * 3 a person declined the run at an input step, 4 the run waits for an answer at an input step
 * (answer it with `--answer`).
 */
export async function submitAndFollow(
  commandLine: CommandLine,
  definition: AgentDefinition,
  ctx: SubmitContext,
): Promise<number> {
  const { flags, params } = commandLine;
  // `--resume RUN_ID --rerun-unfinished-call --submit` hands a held run back to the workers.
  const handBack = flags.resume !== undefined && flags.rerunUnfinishedCall;
  const conflicting = [
    flags.resume !== undefined && !handBack ? "--resume" : "",
    flags.redrive !== undefined ? "--redrive" : "",
    flags.backend !== undefined ? "--backend" : "",
    flags.script !== undefined ? "--script" : "",
    flags.baseUrl !== undefined ? "--base-url" : "",
  ].filter(Boolean);
  if (conflicting.length > 0) {
    throw new UsageError(
      `--submit queues a new run for the workers, which choose the backend and resume runs themselves; drop ${
        conflicting.join(", ")
      } (pass --backend/--script to \`${
        stepflowCommand("worker", userDirOf(ctx.io))
      }\`; a run the workers hold goes back to them with resume --rerun-unfinished-call --submit).`,
    );
  }
  const setting = resolveStoreSetting(definition, {
    env: ctx.io.env,
    ...(flags.store !== undefined ? { store: flags.store } : {}),
  });
  if (setting.value === "file") {
    throw new UsageError(
      "--submit needs the PostgreSQL store, where the workers take runs from: pass --store postgres://… (or set STEPFLOW_STORE, or agent.json logging.store).",
    );
  }
  const store = new PostgresRunStore(setting.value, { agent: definition.name });
  try {
    if (handBack) return await handBackRun(store, flags.resume!, setting.value, flags, ctx);
    const request: SubmittedRequest = { args: params };
    const inputText = await ctx.stdin();
    if (inputText !== undefined) request.inputText = inputText;
    if (flags.maxIterations !== undefined) request.maxIterations = flags.maxIterations;
    if (flags.model !== undefined) request.model = flags.model;
    if (flags.fallbackModel.length > 0) request.fallbackModels = [...flags.fallbackModel];
    if (flags.group !== undefined) request.group = flags.group;
    if (flags.permissionMode !== undefined) request.permissionMode = flags.permissionMode;
    // The budget travels with the run, and so do the prices read here (workers may not see files).
    const budget = {
      ...(flags.budgetUsd !== undefined ? { usd: flags.budgetUsd } : {}),
      ...(flags.budgetTokens !== undefined ? { tokens: flags.budgetTokens } : {}),
    };
    if (Object.keys(budget).length) request.budget = budget;
    const pricing = await cliPricing(flags.pricing, ctx.io.env.STEPFLOW_PRICING, userDirOf(ctx.io));
    if (pricing) request.pricing = pricing.flatten();
    const runId = await submitRun(store, definition, request, { url: setting.value });
    if (!flags.wait) {
      ctx.io.stdout.write(
        flags.json ? `${JSON.stringify({ runId, status: "queued" })}\n` : `${runId}\n`,
      );
      return EXIT_CODES.success;
    }
    ctx.io.stderr.write(`queued run ${runId} (agent ${definition.name}); waiting for a worker…\n`);
    return await followQueuedRun(store, runId, flags, ctx);
  } finally {
    await store.close();
  }
}

/**
 * `--resume RUN_ID --rerun-unfinished-call --submit [--wait]`: the run goes back on the queue with
 * the permission to run its unfinished tool call again; prints its id (or follows it).
 */
async function handBackRun(
  store: PostgresRunStore,
  runId: string,
  url: string,
  flags: CommandLine["flags"],
  ctx: SubmitContext,
): Promise<number> {
  const before = (await store.readLog(runId)).length;
  await resubmitWithRerun(store, runId, { url });
  if (!flags.wait) {
    ctx.io.stdout.write(
      flags.json
        ? `${JSON.stringify({ runId, status: "queued", rerunUnfinishedCall: true })}\n`
        : `${runId}\n`,
    );
    return EXIT_CODES.success;
  }
  ctx.io.stderr.write(
    `run ${runId} back on the queue (its unfinished tool call may run again); waiting for a worker…\n`,
  );
  return await followQueuedRun(store, runId, flags, ctx, before);
}

/**
 * `--wait`: follows a queued run (submitted, or answered and put back on the queue) until it ends
 * or waits again — each committed step from entry `skipEntries` on, on stderr; the run's history on
 * stdout — and returns the exit code: 0 completed, 1 ended without success (or the queue gave it
 * up), 3 a person declined it, 4 waits for an answer.
 */
export async function followQueuedRun(
  store: PostgresRunStore,
  runId: string,
  flags: CommandLine["flags"],
  ctx: Pick<SubmitContext, "io" | "stdoutColor">,
  skipEntries = 0,
): Promise<number> {
  let seen = 0;
  const render = commandRenderer({ cwd: userDirOf(ctx.io) }, flags.store);
  let checkpoint: RunCheckpoint;
  try {
    checkpoint = await followRun(store, runId, {
      onWorker: (worker) => {
        if (worker) ctx.io.stderr.write(`  driven by ${worker}\n`);
      },
      onEntry: (entry) => {
        if (seen++ < skipEntries) return;
        const line = describe(entry, render);
        if (line) ctx.io.stderr.write(`  ${line}\n`);
      },
    }, ctx.io.signal ? { signal: ctx.io.signal } : {});
  } catch (error) {
    // The queue gave the run up: it failed without a checkpoint saying so; no worker takes it.
    if (!(error instanceof StepflowError && error.code === "RUN_GIVEN_UP")) throw error;
    ctx.io.stderr.write(`error: ${error.message}\n`);
    if (flags.json) {
      ctx.io.stdout.write(
        `${JSON.stringify({ runId, status: "failed", error: error.message }, null, 2)}\n`,
      );
    }
    return EXIT_CODES.failed;
  }
  if (flags.json) {
    ctx.io.stdout.write(
      `${JSON.stringify({ runId, status: checkpoint.status, checkpoint }, null, 2)}\n`,
    );
  } else {
    const log = await store.readLog(runId);
    ctx.io.stdout.write(
      `${
        formatRunHistory(checkpoint, log, { color: ctx.stdoutColor, runId, commandFor: render })
      }\n`,
    );
  }
  // A run that waits for an answer has not failed: it has its own exit code, as without workers.
  if (checkpoint.status === "waiting") return EXIT_CODES.waiting;
  // Stopped by its budget: resumable, with its own exit code, as without workers.
  if (checkpoint.status === "budget_exceeded") return EXIT_CODES.budgetExceeded;
  // Nor has one a person declined: their "no" has its own code too.
  if (checkpoint.status === "declined") return EXIT_CODES.incomplete;
  return checkpoint.status === "completed" ? 0 : 1;
}

/** One progress line per committed step (and the run's start, resume and end). */
function describe(entry: RunLogEntry, render: CommandRenderer): string | undefined {
  if (entry.type === "step_end") {
    const e = entry.entry as
      | { stepId?: string; transition?: string; nextStepId?: string }
      | undefined;
    const next = e?.nextStepId ? ` → ${e.nextStepId}` : "";
    return `#${entry.iteration} ${e?.stepId ?? entry.stepId} ${e?.transition ?? ""}${next}`;
  }
  if (entry.type === "input_request") {
    return `#${entry.iteration} ${entry.stepId} waits for an answer; answer it with: ${
      render({ action: "answer", runId: entry.runId, args: ["--value", "<json>"] })
    }`;
  }
  if (entry.type === "run_start" || entry.type === "run_resume") {
    return `${entry.type === "run_start" ? "started" : "resumed"} at ${entry.stepId}`;
  }
  if (entry.type === "run_end") return `ended: ${entry.reason}`;
  return undefined;
}
