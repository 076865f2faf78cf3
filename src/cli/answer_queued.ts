/**
 * `run-agent --answer RUN_ID` of a run that was submitted to the workers (`--submit`, PostgreSQL
 * store): the answer is recorded here and the run goes back on the queue, where a worker continues
 * it (docs/scaling.md "A waiting run holds no worker"); with `--wait`, this process follows it as
 * `--submit --wait` does. A run that was not submitted is answered and continued in the answering
 * process instead (`run_agent.ts`).
 *
 * @module
 */
import { commandRenderer } from "../invocation.ts";
import { userDirOf } from "./kit/io.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { StepflowError } from "../errors.ts";
import type { RecordedAnswer } from "../flow/input_request.ts";
import type { PostgresRunStore } from "../store/postgres.ts";
import { answerSubmittedRun } from "../worker/answer.ts";
import type { CliFlags } from "./args.ts";
import { followQueuedRun } from "./submit.ts";
import type { CliIo } from "./kit/io.ts";
import { askAtTerminal, formOf, pendingOf, type TerminalAsk } from "./waiting_run.ts";

/** What answering a submitted run needs from `stepflow answer`. */
export interface QueuedAnswerContext {
  /** Streams and cancellation. */
  io: CliIo;
  /** Color on stdout. */
  stdoutColor: boolean;
  /** The store's URL (the queue lives in the same database). */
  url: string;
  /** The answer given with `--value` or on stdin; undefined: ask it at the terminal (`ask`). */
  given?: { value: unknown };
  /** The terminal, when the answer is asked field by field. */
  ask?: TerminalAsk;
  /** Who answered (`--answered-by`, else `cli` or `terminal` with the user's name). */
  answeredBy: (how: "cli" | "terminal") => string;
}

/**
 * Records the answer to the submitted run `runId` and re-queues it; returns the exit code (0
 * recorded; with `--wait`, what following the run returns). Backend flags are ignored with a
 * warning: the worker that continues the run chooses its backend.
 */
export async function answerQueuedRun(
  store: PostgresRunStore,
  definition: AgentDefinition,
  runId: string,
  flags: CliFlags,
  ctx: QueuedAnswerContext,
): Promise<number> {
  const backendFlags = [
    flags.backend !== undefined ? "--backend" : "",
    flags.script !== undefined ? "--script" : "",
    flags.baseUrl !== undefined ? "--base-url" : "",
    flags.model !== undefined ? "--model" : "",
  ].filter(Boolean);
  if (backendFlags.length > 0) {
    // Not refused: the dashboard passes the backend flags of `deno task ui` to every answer.
    ctx.io.stderr.write(
      `warning: run ${runId} was submitted to the workers: a worker continues it on the backend it recorded (with the worker's own flags), so ${
        backendFlags.join(", ")
      } ${backendFlags.length > 1 ? "are" : "is"} ignored here.\n`,
    );
  }
  const before = (await store.readLog(runId)).length;
  const record = (value: unknown, answeredBy: string, requestId?: string) =>
    answerSubmittedRun(store, definition, runId, value, {
      url: ctx.url,
      answeredBy,
      ...(requestId !== undefined ? { requestId } : {}),
    });
  let recorded: RecordedAnswer;
  const waiting = ctx.given ? undefined : await pendingOf(store, runId);
  if (ctx.given || !waiting || !ctx.ask) {
    // Without a waiting request, recording says why it cannot be answered.
    recorded = await record(ctx.given?.value, flags.answeredBy ?? ctx.answeredBy("cli"));
  } else {
    const form = await formOf(definition, waiting);
    for (;;) {
      const value = await askAtTerminal(waiting, runId, form, ctx.ask);
      try {
        recorded = await record(
          value,
          flags.answeredBy ?? ctx.answeredBy("terminal"),
          waiting.requestId,
        );
        break;
      } catch (error) {
        // A value the form took but the schema refuses (a pattern, a length): ask again.
        if (!(error instanceof StepflowError) || error.code !== "INPUT_ANSWER_INVALID") throw error;
        ctx.io.stderr.write(`${error.message}\n`);
      }
    }
  }
  if (flags.wait) {
    ctx.io.stderr.write(
      `answer recorded for run ${runId} (step ${recorded.stepId}); back on the queue, waiting for a worker…\n`,
    );
    return await followQueuedRun(store, runId, flags, ctx, before + 1);
  }
  if (flags.json) {
    ctx.io.stdout.write(`${JSON.stringify({ runId, status: "queued", answer: recorded })}\n`);
  } else {
    ctx.io.stdout.write(
      `Run ${runId}: answer recorded (step ${recorded.stepId}); the run is back on the queue and a worker continues it. Where it is:\n  ${
        commandRenderer({ cwd: userDirOf(ctx.io) }, flags.store)({ action: "show", runId })
      }\n`,
    );
  }
  return 0;
}
