/**
 * The dashboard's actions (`deno task ui --allow-actions`): cancel a running run through the
 * store's cancel request, and resume, redrive or answer a run by starting the real CLI
 * (`run-agent --agent NAME --resume|--redrive|--answer RUN_ID`, with `STEPFLOW_STORE` naming a
 * PostgreSQL store) as a child process — the run then shows live like any running run. Each action refuses with the runner's own words when the run's state
 * does not allow it.
 *
 * @module
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { sleep } from "../backoff.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { assertContinuable } from "../flow/continue_check.ts";
import { runStoreFor } from "../store/location.ts";
import { STORE_ENV } from "../store/select.ts";
import { readLogFrom } from "../store/types.ts";
import { decideApproval } from "../plan/file_approver.ts";
import { type PlanFolders, toolPlanFile } from "./plans.ts";
import type { AgentDefinition } from "../definition/types.ts";
import type { DashboardData } from "./source.ts";
import { isOpenStatus } from "../run_statuses.ts";
import { unfinishedCallError } from "../flow/tool_call_resume.ts";
import {
  callLabel,
  confirmedCallIds,
  type UnfinishedCallNotice,
  unfinishedCallNotice,
} from "./unfinished_call.ts";

/** Options of the dashboard's actions; present = actions allowed. */
export interface DashboardActionOptions {
  /**
   * Backend options given to every resumed or redriven run, as flags of `stepflow resume` (e.g.
   * `["--backend", "scripted", "--script", "demo.script.yaml"]`), overriding the backend the run
   * recorded. Default: none (the run goes on with the backend it recorded).
   */
  runAgentArgs?: readonly string[];
  /**
   * The command that starts `stepflow` (default: this Deno running the module's `src/cli/mod.ts`
   * with `-A`, as `deno task stepflow` does); the action's subcommand follows it
   * (`resume RUN_ID --agent NAME …`).
   */
  stepflowCommand?: readonly string[];
  /** Called with every child process started (tests await them). */
  onSpawn?: (child: Deno.ChildProcess) => void;
  /** How long a Resume/Redrive request waits for the child to start the run (default 20 s). */
  startTimeoutMs?: number;
}

/**
 * The dashboard's actions. `rerun` is a resume that re-runs the unfinished tool call a plain
 * resume would stop at (`--resume RUN_ID --rerun-unfinished-call`; for a run the workers hold,
 * with `--submit`), sent with the calls the user confirmed.
 */
export type DashboardAction = "cancel" | "resume" | "redrive" | "rerun";

/** What an action answers: an HTTP status and a sentence for the page. */
export interface ActionOutcome {
  /** 202 started/requested, 200 done, 404 unknown run, 409 refused, 500 failed. */
  status: number;
  /** Shown on the page. */
  message: string;
  /** The error code when refused or failed. */
  code?: string;
}

/**
 * Runs one action on a run. `body` is the action's JSON body: for `rerun`, the confirmation
 * `{ "calls": ["callId", …] }` naming the unfinished calls the page showed.
 *
 * @example
 * ```ts ignore
 * const outcome = await runAction(data, "cancel", "run-1", {});
 * console.log(outcome.status, outcome.message);
 * ```
 */
export async function runAction(
  data: DashboardData,
  action: DashboardAction,
  runId: string,
  options: DashboardActionOptions,
  body?: unknown,
): Promise<ActionOutcome> {
  const store = await data.storeOf(runId);
  if (!store) {
    return { status: 404, message: `No store shown by this dashboard holds a run "${runId}".` };
  }
  try {
    const checkpoint = await store.loadCheckpoint(runId);
    if (!checkpoint) {
      throw refused(`Run ${runId} has no checkpoint yet: there is nothing to act on.`);
    }
    const summary = await data.summaryOf(runId);
    const active = isOpenStatus(checkpoint.status);
    if (action === "cancel") {
      if (checkpoint.status === "waiting") {
        const tool = (checkpoint.state.waiting as { permission?: { tool?: unknown } } | undefined)
          ?.permission?.tool;
        throw refused(
          `Run ${runId} waits ${
            typeof tool === "string"
              ? `for Approve or Deny of a ${tool} call`
              : "for an answer at an input step"
          }; no process drives it, so there is nothing to cancel. Answer it on its page, or leave it.`,
        );
      }
      if (!active) {
        throw refused(`Run ${runId} already ended (${checkpoint.status}); nothing to cancel.`);
      }
      if (summary?.live === false) {
        throw refused(
          `Run ${runId} is not driven by any process (interrupted): nothing to cancel. Resume it, or leave it.`,
        );
      }
      if (!store.requestCancel) {
        throw new StepflowError(
          "UI_ACTION_UNSUPPORTED",
          `The store of run ${runId} cannot record cancel requests; stop the process that drives the run (Ctrl-C).`,
        );
      }
      await store.requestCancel(runId);
      return {
        status: 202,
        message:
          `Cancel requested: the process driving run ${runId} ends it (cancelled) within about a second.`,
      };
    }
    assertContinuable(
      runId,
      checkpoint.status,
      action === "rerun" ? "resume" : action,
      checkpoint.state,
    );
    if (summary?.live) {
      throw refused(`Run ${runId} is being driven by a live process; wait for it or cancel it.`);
    }
    const agent = checkpoint.agent;
    const notice = action === "redrive"
      ? undefined
      : unfinishedCallNotice(checkpoint, summary, await store.readLog(runId));
    if (action === "resume" && notice) {
      // The refusal the resume itself would end with, before any process starts.
      throw notice.held !== undefined
        ? new StepflowError("TOOL_CALL_UNFINISHED", notice.held, { details: { runId } })
        : unfinishedCallError(runId, agent, notice.stepId, notice.calls);
    }
    if (action === "rerun") checkConfirmed(runId, notice, body);
    const loaded = await loadedAgentOf(data, agent, runId, "continued");
    const named = (await data.namedStoreOf(runId))!;
    if (named.runAgentStore === undefined) {
      const agentDir = runStoreFor(loaded.definition, { cwd: data.source.cwd }).dir;
      const storeDir = "dir" in store && typeof store.dir === "string" ? resolve(store.dir) : "";
      if (storeDir !== agentDir) {
        throw refused(
          `stepflow records runs of agent "${agent}" in ${agentDir}, but run ${runId} is in ${
            storeDir || "another store"
          }; continue it with StepFlowRunner over that store.`,
        );
      }
    }
    const how = action !== "rerun" ? action : notice?.held !== undefined ? "handBack" : "rerun";
    return await spawnRunAgent(data, how, runId, agent, options, named.runAgentStore);
  } catch (error) {
    if (error instanceof StepflowError) {
      return {
        status: error.code === "RUN_STORE_IO" ? 500 : 409,
        message: error.message,
        code: error.code,
      };
    }
    throw error;
  }
}

function refused(message: string): StepflowError {
  return new StepflowError("UI_ACTION_REFUSED", message);
}

/**
 * Refuses a re-run unless the run still stops at an unfinished call and the confirmation names
 * exactly its calls: a page shown before the run changed must not re-run a call nobody saw.
 */
function checkConfirmed(
  runId: string,
  notice: UnfinishedCallNotice | undefined,
  body: unknown,
): void {
  if (!notice) {
    throw refused(
      `Run ${runId} has no unfinished tool call to re-run: a plain Resume continues it. Reload the page.`,
    );
  }
  const calls = (typeof body === "object" && body !== null ? body : {}) as { calls?: unknown };
  const confirmed = Array.isArray(calls.calls) && calls.calls.every((c) => typeof c === "string")
    ? [...calls.calls].sort()
    : undefined;
  if (!confirmed) {
    throw refused(
      `A re-run names the calls it confirms: a JSON body { "calls": ["callId", …] }, as the run page sends.`,
    );
  }
  if (JSON.stringify(confirmed) !== JSON.stringify(confirmedCallIds(notice))) {
    throw refused(
      `Run ${runId} now stops at other unfinished calls than the ones confirmed (${
        notice.calls.map(callLabel).join(", ") || "none recorded"
      }); reload the page and check them.`,
    );
  }
}

/** The agent of a run an action continues, or refused when it does not load (`verb`: what fails). */
async function loadedAgentOf(
  data: DashboardData,
  agent: string,
  runId: string,
  verb: "continued" | "answered",
): Promise<{ definition: AgentDefinition }> {
  const loaded = await data.agent(agent);
  if (!loaded.definition) {
    throw refused(
      `Agent "${agent}" of run ${runId} does not load, so the run cannot be ${verb}: ${
        errorMessage(loaded.error)
      }`,
    );
  }
  return { definition: loaded.definition };
}

/**
 * Answers a waiting tool-plan step: records the answer in the request its `run-plan --approvals
 * dashboard` waits on, in one step under the request's lock — the first answer wins (200), every
 * later one is refused (409), whatever the timing (see `src/plan/file_approver.ts`).
 */
export async function answerApproval(
  folders: PlanFolders,
  plan: string,
  stepId: string,
  requestId: string,
  approved: boolean,
): Promise<ActionOutcome> {
  const file = await toolPlanFile(folders, plan);
  if (!file) return { status: 404, message: `No tool plan "${plan}" in ${folders.toolPlans}.` };
  try {
    await decideApproval(file, stepId, requestId, { approved, by: "dashboard" });
  } catch (error) {
    if (error instanceof StepflowError) {
      return {
        status: error.code === "APPROVAL_IO" ? 500 : 409,
        message: error.message,
        code: error.code,
      };
    }
    throw error;
  }
  return {
    status: 200,
    message: approved
      ? `Step "${stepId}" approved: run-plan runs it now.`
      : `Step "${stepId}" denied: run-plan skips it and the steps that depend on it.`,
  };
}

/**
 * Answers a run that waits at an input step: checks that it waits on `requestId`, then starts
 * `run-agent --agent NAME --answer RUN_ID --answered-by dashboard` with the answer on its stdin —
 * the one path by which an answer is recorded (checked against the schema, recorded under the
 * run's lock so the first answer wins) — and answers once the answer is recorded (202: the run
 * goes on, live) or with the child's refusal (409, e.g. the validator's message: nothing was
 * recorded).
 */
export async function answerRun(
  data: DashboardData,
  runId: string,
  body: unknown,
  options: DashboardActionOptions,
): Promise<ActionOutcome> {
  const store = await data.storeOf(runId);
  if (!store) {
    return { status: 404, message: `No store shown by this dashboard holds a run "${runId}".` };
  }
  const { requestId, value } = (typeof body === "object" && body !== null ? body : {}) as {
    requestId?: unknown;
    value?: unknown;
  };
  if (typeof requestId !== "string" || value === undefined) {
    return {
      status: 400,
      message: 'An answer is a JSON body { "requestId": "…", "value": { … } }.',
    };
  }
  try {
    const checkpoint = await store.loadCheckpoint(runId);
    const waiting = checkpoint?.state.waiting as { requestId?: string } | undefined;
    if (checkpoint?.status !== "waiting" || waiting?.requestId !== requestId) {
      throw new StepflowError(
        "INPUT_NOT_WAITING",
        `Run ${runId} cannot take this answer: it no longer waits for it (${
          checkpoint?.status ?? "no checkpoint"
        }; it was answered already, or it moved on). Reload the page.`,
      );
    }
    const agent = checkpoint.agent;
    await loadedAgentOf(data, agent, runId, "answered");
    const named = (await data.namedStoreOf(runId))!;
    return await spawnRunAgent(data, "answer", runId, agent, options, named.runAgentStore, value);
  } catch (error) {
    if (error instanceof StepflowError) {
      return { status: 409, message: error.message, code: error.code };
    }
    throw error;
  }
}

/**
 * Starts `stepflow resume|redrive|answer RUN_ID --agent NAME` (`rerun`: `resume RUN_ID
 * --rerun-unfinished-call`; `handBack`: that with `--submit`, for a run the workers hold) and
 * answers once the run has started (its `run_resume`/`run_redrive` line is in the log; for an
 * answer, its `input_answer` line; a hand-back once the run is queued again: the child exits), or
 * with the child's error when it exits before that.
 */
async function spawnRunAgent(
  data: DashboardData,
  action: "resume" | "redrive" | "answer" | "rerun" | "handBack",
  runId: string,
  agent: string,
  options: DashboardActionOptions,
  runAgentStore: string | undefined,
  answer?: unknown,
): Promise<ActionOutcome> {
  const store = (await data.storeOf(runId))!;
  const before = (await store.readLog(runId)).length;
  const [cmd, ...base] = options.stepflowCommand ?? defaultStepflowCommand();
  const answering = action === "answer" ? ["--answered-by", "dashboard"] : [];
  const rerun = action === "rerun" || action === "handBack";
  const flags = rerun
    ? ["resume", runId, "--rerun-unfinished-call", ...(action === "handBack" ? ["--submit"] : [])]
    : [action, runId];
  const child = new Deno.Command(cmd, {
    args: [
      ...base,
      ...flags,
      "--agent",
      agent,
      ...answering,
      // The workers choose the backend of a run handed back to them (--submit refuses one).
      ...(action === "handBack" ? [] : options.runAgentArgs ?? []),
    ],
    cwd: data.source.cwd,
    // The store goes by environment, not argv: a URL's password stays out of the process list.
    env: {
      INIT_CWD: data.source.cwd,
      NO_COLOR: "1",
      [STORE_ENV]: runAgentStore ?? "file",
    },
    // An answer goes on stdin: out of the process list, and of any size argv would refuse.
    stdin: action === "answer" ? "piped" : "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  options.onSpawn?.(child);
  if (action === "answer") {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(JSON.stringify(answer)));
    await writer.close().catch(() => {});
  }
  const command = `stepflow ${flags.join(" ")}`;
  // A hand-back only queues the run: its child exits once it did.
  const marker = action === "answer"
    ? "input_answer"
    : action === "handBack"
    ? undefined
    : `run_${rerun ? "resume" : action}`;
  let stderr = "";
  const drained = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (chunk) => void (stderr = (stderr + chunk).slice(-4000)) }),
  ).catch(() => {});
  let exited: Deno.CommandStatus | undefined;
  child.status.then((s) => exited = s);
  const deadline = Date.now() + (options.startTimeoutMs ?? 20_000);
  while (Date.now() < deadline) {
    const added = await readLogFrom(store, runId, before).catch(() => []);
    if (marker && added.some((e) => e.type === marker)) {
      return {
        status: 202,
        message: action === "answer"
          ? `Run ${runId}: answer recorded; the run goes on (stepflow answer, pid ${child.pid}).`
          : action === "rerun"
          ? `Run ${runId}: resume started, re-running the unfinished call (stepflow resume, pid ${child.pid}).`
          : `Run ${runId}: ${action} started (stepflow ${action}, pid ${child.pid}).`,
      };
    }
    if (exited) {
      await drained;
      const why = lastLines(stderr);
      // stepflow answer exits 4 when the answered run waits again at its next input step.
      if (action === "answer" && exited.code === 4) {
        return { status: 200, message: `Run ${runId}: answered; it waits again at its next step.` };
      }
      if (exited.success && action === "handBack") {
        return {
          status: 202,
          message:
            `Run ${runId}: handed back to the workers; the one that takes it re-runs the unfinished call.`,
        };
      }
      return exited.success ? { status: 200, message: `Run ${runId}: ${action} finished.` } : {
        status: 409,
        code: "UI_ACTION_FAILED",
        message: `${command} exited with code ${exited.code}${why ? `: ${why}` : ""}`,
      };
    }
    await sleep(50);
  }
  return {
    status: 202,
    message: `Run ${runId}: stepflow ${
      flags[0]
    } (pid ${child.pid}) started but has not written to the run yet.`,
  };
}

function lastLines(text: string): string {
  return text.trim().split("\n").slice(-3).join(" ");
}

/** This Deno running the module's own `stepflow` (`src/cli/mod.ts`) with all permissions. */
function defaultStepflowCommand(): string[] {
  const url = new URL("../cli/mod.ts", import.meta.url);
  return [Deno.execPath(), "run", "-A", url.protocol === "file:" ? fileURLToPath(url) : url.href];
}
