/**
 * The child run of an agent step: started once, continued thereafter. The child's run id is put in
 * the parent's state and checkpointed before the child starts (`record`), so a parent killed at any
 * moment and resumed continues that same child — from its own checkpoint, or from nothing when it
 * never wrote one — and never starts a second one. A child that already ended gives its recorded
 * result; a child that waits for an answer gives its request (the parent then waits on it), and an
 * answer given to the parent is recorded in the child. The child's usage is added to the parent's
 * as it grows (each drive adds only what is new).
 *
 * The child is recorded as a run of its own agent: in the store its parent's store gives for that
 * agent (`RunStore.forAgent`; the file store of an agent gives the child agent's own folder), so
 * `stepflow runs CHILD` lists it and `stepflow show ID` shows it. The link says where
 * (`store: "agent"`); a link without it — a child started before this, or one whose agent shares
 * the parent's store — is continued in the parent's store, where it is.
 *
 * @module
 */
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import { StepflowError } from "../errors.ts";
import type { RunCheckpoint, RunStore } from "../store/types.ts";
import { newRunId } from "../store/run_id.ts";
import type { RecordedAnswer } from "./input_request.ts";
import type { ChildRunLink, RunnerState } from "./run_state.ts";
import type { ParentRunLink, RunOptions, RunUsage, StepFlowResult } from "./types.ts";
import { addUsageBeyond, type SpendLedger } from "./spend_ledger.ts";
import { attachChildAccount } from "./run_spend.ts";

/** How deep agent steps nest by default (`StepFlowRunnerOptions.maxAgentDepth`). */
export const DEFAULT_MAX_AGENT_DEPTH = 8;

/** What drives a child run: a run of the child's agent (the parent's options, no events). */
export interface ChildRunner {
  /** Drives the child run as `options` say (`StepFlowRunner.run`). */
  run(options: RunOptions): Promise<StepFlowResult>;
}

/** What {@linkcode driveChild} needs from the parent run. */
export interface ChildRunContext {
  /** The parent's state (its `child` link is set and cleared here). */
  state: RunnerState;
  /** The agent step. */
  step: FlowStep;
  /** The child's parameters. */
  args: Record<string, unknown>;
  /** The parent's store (the child is recorded in the store it gives for the child's agent). */
  store?: RunStore;
  /** The parent's signal: a stopped parent stops its child. */
  signal: AbortSignal;
  /** `maxAgentDepth`. */
  maxDepth: number;
  /** The parent's agent name. */
  parentAgent: string;
  /** A runner of the child's agent, recording it in `store` (the child's, see `childStore`). */
  runner(definition: AgentDefinition, store: RunStore | undefined): ChildRunner;
  /** Logs the child's start and checkpoints the parent's state (with the link) before it starts. */
  record(link: ChildRunLink): Promise<void>;
  /**
   * The parent's spend ledger: the child's spend is added to it (and to the link) as it happens,
   * and the child's calls are checked against the parent's budget too.
   */
  spend?: SpendLedger;
}

/** Runs or continues the agent step's child run; returns how its drive ended. */
export async function driveChild(ctx: ChildRunContext): Promise<StepFlowResult> {
  const { state, step } = ctx;
  const child = step.child;
  if (!child) {
    throw new StepflowError(
      "AGENT_STEP_FAILED",
      `Agent step "${step.id}": its agent "${step.agent}" was not loaded with the parent; load the parent with loadAgentDefinition.`,
      { details: { stepId: step.id } },
    );
  }
  const depth = (state.parent?.depth ?? 0) + 1;
  if (depth > ctx.maxDepth) {
    throw new StepflowError(
      "AGENT_STEP_DEPTH",
      `Agent step "${step.id}" of run ${state.runId} would start a child ${depth} agent steps below the top run, beyond maxAgentDepth ${ctx.maxDepth}. Flatten the agents, or raise maxAgentDepth.`,
      { details: { stepId: step.id, depth, maxAgentDepth: ctx.maxDepth } },
    );
  }
  let link = state.child?.stepId === step.id ? state.child : undefined;
  if (!link) {
    // Recorded as a run of its own agent, in the store the parent's store gives for it.
    const own = ctx.store?.forAgent?.(child) ?? ctx.store;
    link = {
      stepId: step.id,
      runId: newRunId(),
      agent: child.name,
      usage: zeroUsage(),
      ...(own !== ctx.store ? { store: "agent" as const } : {}),
    };
    state.child = link;
    await ctx.record(link);
  }
  const answer = state.answer?.stepId === step.id ? state.answer : undefined;
  if (answer) delete state.answer;
  const parent: ParentRunLink = {
    runId: state.runId,
    agent: ctx.parentAgent,
    stepId: step.id,
    depth,
  };
  const store = childStore(ctx.store, link, child, state.runId);
  const result = await driveLinkedChild({
    // Each drive of the child adds its spend to the parent's ledger as it happens.
    runner: accountedRunner(ctx.runner(child, store), ctx.spend, step.id, link.usage),
    store,
    runId: link.runId,
    args: ctx.args,
    cwd: state.cwd,
    signal: ctx.signal,
    parent,
    ...(state.backendChoice ? { backendChoice: state.backendChoice } : {}),
    ...(state.permissionMode ? { permissionMode: state.permissionMode } : {}),
    ...(answer ? { answer } : {}),
  });
  // The child's spend reached the parent as it happened (its ledger's account); what is left is
  // what no ledger told the parent (a child run of another process, read from its checkpoint).
  addUsageBeyond(state.usage, result.usage, link.usage);
  link.usage = { ...result.usage };
  // An unfinished child stays linked (a resume or an answer continues it), and so does a child
  // stopped with its parent (a redrive of the parent redrives it) or by a budget (a resume of the
  // parent continues it); an ended one does not, so the step's next iteration (a retry, a loop
  // back) starts a new child.
  if (
    result.completionReason !== "waiting" && result.completionReason !== "budget_exceeded" &&
    !ctx.signal.aborted
  ) {
    delete state.child;
  }
  return result;
}

/**
 * The store a linked child run is recorded in: its own agent's (`RunStore.forAgent`) when the link
 * says so, else the parent's. A link that says "its agent's" with a parent store that cannot say
 * where that is (a file store made for one folder, not for an agent) is refused rather than
 * continued in the wrong place: a child not found there would be started a second time.
 *
 * @throws {StepflowError} `AGENT_STEP_CHILD_STORE`
 */
export function childStore(
  store: RunStore | undefined,
  link: ChildRunLink,
  child: AgentDefinition,
  parentRunId: string,
): RunStore | undefined {
  if (link.store !== "agent") return store;
  const own = store?.forAgent?.(child);
  if (own === undefined || own === store) {
    throw new StepflowError(
      "AGENT_STEP_CHILD_STORE",
      `Run ${parentRunId}: its agent step "${link.stepId}" started child run ${link.runId} as a run of agent "${child.name}", recorded in that agent's own store, but this runner's store cannot say where that is (a store made for one folder). Continue the run with the store of its agent (runStoreFor(definition) or selectRunStore(definition), as the stepflow command does).`,
      { details: { runId: parentRunId, stepId: link.stepId, childRunId: link.runId } },
    );
  }
  return own;
}

/**
 * `runner` whose drives count their spend in the parent's ledger `spend` as it happens (on
 * `counted`, the parent's record of what it counted of that child), so every call of the child is
 * checked against the parent's budget too; `runner` itself when the parent keeps no ledger.
 */
export function accountedRunner(
  runner: ChildRunner,
  spend: SpendLedger | undefined,
  stepId: string,
  counted: RunUsage,
): ChildRunner {
  if (!spend) return runner;
  return {
    run: (options) => runner.run(attachChildAccount(options, spend.childAccount(stepId, counted))),
  };
}

/** A linked child run to start or continue: {@linkcode driveLinkedChild}. */
export interface LinkedChild {
  /** Runs the child's agent, recorded in `store`. */
  runner: ChildRunner;
  /** Where the child is recorded. */
  store: RunStore | undefined;
  /** The child's run id (recorded by the parent before the child starts). */
  runId: string;
  /** The child's parameters (used when it starts). */
  args: Record<string, unknown>;
  /** The child's working folder (the parent's). */
  cwd: string;
  /** The parent's signal: a stopped parent stops its child. */
  signal: AbortSignal;
  /** The parent the child belongs to. */
  parent: ParentRunLink;
  /** How the parent's backend was chosen (the child records the same). */
  backendChoice?: RunOptions["backendChoice"];
  /** The parent's permission mode. */
  permissionMode?: RunOptions["permissionMode"];
  /** An answer recorded in the parent for the child's wait (agent steps). */
  answer?: RecordedAnswer;
  /** Passed to a resume of the child (the parent's `--rerun-unfinished-call`). */
  rerunUnfinishedCall?: RunOptions["rerunUnfinishedCall"];
  /** A child that ended failed is redriven (a fan-out's failed item, when its step runs again). */
  redriveFailed?: boolean;
}

/**
 * Starts or continues a linked child run and returns how its drive ended: started under its id
 * when it has no checkpoint yet; its recorded result when it ended (redriven when it was stopped
 * with its parent, or failed and `redriveFailed`); resumed with the answer when one was given;
 * else resumed — and a child that still waits for its answer gives its request without a drive.
 */
export async function driveLinkedChild(child: LinkedChild): Promise<StepFlowResult> {
  const { runner, runId, signal } = child;
  const checkpoint = await childCheckpoint(child.store, runId);
  if (!checkpoint) {
    return await runner.run({
      runId,
      args: child.args,
      cwd: child.cwd,
      signal,
      parent: child.parent,
      ...(child.backendChoice ? { backendChoice: child.backendChoice } : {}),
      ...(child.permissionMode ? { permissionMode: child.permissionMode } : {}),
    });
  }
  const ended = endedResult(checkpoint);
  // Stopped by a budget (its own or the parent's): it carries on inside its step.
  if (checkpoint.status === "budget_exceeded") return await runner.run({ resume: runId, signal });
  if (
    ended &&
    (STOPPED.has(ended.completionReason) || (child.redriveFailed && !ended.success))
  ) {
    // Stopped with its parent (cancel, Ctrl-C, the run time limit): it goes on where it stopped.
    return await runner.run({ redrive: runId, signal });
  }
  if (ended) return ended;
  const answer = child.answer;
  if (answer) {
    return await runner.run({
      resume: runId,
      signal,
      answer: { value: answer.value, answeredBy: answer.answeredBy, requestId: answer.requestId },
    });
  }
  try {
    return await runner.run({
      resume: runId,
      signal,
      ...(child.rerunUnfinishedCall ? { rerunUnfinishedCall: child.rerunUnfinishedCall } : {}),
    });
  } catch (error) {
    // Still waiting for its answer: the parent waits on the same request.
    if (error instanceof StepflowError && error.code === "INPUT_WAITING") {
      return waitingResult(checkpoint);
    }
    throw error;
  }
}

/**
 * The child's checkpoint; undefined when it has none yet — also when it was killed after its log
 * began but before its first checkpoint (`RUN_CHECKPOINT_MISSING`): it then starts again under the
 * same id, its new lines following the old ones.
 */
export async function childCheckpoint(
  store: RunStore | undefined,
  runId: string,
): Promise<RunCheckpoint | undefined> {
  try {
    return await store?.loadCheckpoint(runId);
  } catch (error) {
    if (error instanceof StepflowError && error.code === "RUN_CHECKPOINT_MISSING") return undefined;
    throw error;
  }
}

type CheckpointState = Partial<RunnerState>;

/** How a child stopped with its parent ends (the parent's redrive redrives it). */
const STOPPED: ReadonlySet<string> = new Set(["cancelled", "aborted", "timeout"]);

/** The result of a child run that ended, from its checkpoint; undefined while it has not. */
export function endedResult(checkpoint: RunCheckpoint): StepFlowResult | undefined {
  const state = checkpoint.state as CheckpointState;
  const end = state.end;
  if (!end) return undefined;
  const result = baseResult(checkpoint, end.reason, end.stepId);
  result.success = end.reason === "completed";
  if (end.output !== undefined) result.output = end.output;
  if (end.error && end.reason !== "completed") result.error = end.error;
  if (end.declined) result.declined = end.declined;
  return result;
}

/** The result of a child run that waits, from its checkpoint (its request, and all of them). */
export function waitingResult(checkpoint: RunCheckpoint): StepFlowResult {
  const state = checkpoint.state as CheckpointState;
  const result = baseResult(checkpoint, "waiting", state.currentStepId ?? "");
  if (state.waiting) result.waiting = state.waiting;
  if (state.waits) result.waits = state.waits;
  return result;
}

function baseResult(
  checkpoint: RunCheckpoint,
  reason: StepFlowResult["completionReason"],
  stepId: string,
): StepFlowResult {
  const state = checkpoint.state as CheckpointState;
  return {
    success: false,
    runId: checkpoint.runId,
    finalStepId: stepId,
    completionReason: reason,
    iterations: state.iteration ?? 0,
    state: { history: [], handoff: state.handoff ?? {} },
    usage: { ...zeroUsage(), ...state.usage },
  };
}

/** A usage with every count 0. */
export function zeroUsage(): RunUsage {
  return { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0, callsWithoutUsage: 0 };
}
