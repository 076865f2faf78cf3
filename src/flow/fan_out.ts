/**
 * The fan-out step (an agent step with `forEach`, docs/agents.md "Fan-out steps"): one child run of
 * the step's agent per item, up to `concurrency` at once (and the runner-wide `maxChildren`), each
 * recorded before it starts, so the step survives a crash of its process with no item given a
 * second child and no finished child's work lost (docs/durable-runs.md, "Fan-out steps").
 *
 * {@linkcode runFanOut} is the step's iteration: it reads the items, takes up the fan-out a
 * checkpoint marks (its children from the run log: `store/fan_out_lines.ts`) or begins one, then
 * drives the items — new children, continued children, `onItemError` — until every item ended, the
 * step fails, the run stops, or only children that wait for an answer are left (the step then
 * returns one wait listing them all). A child answered meanwhile (it is recorded in the child: see
 * `run_open.ts`) is noticed by polling the waiting children's checkpoints, and driven here.
 *
 * Long because: the scheduler's state (the items, the children in flight, the stop, the waits)
 * is shared by its parts — starting a batch, settling a child, polling the waiting ones — which
 * are methods of one class, read top to bottom from `run()`.
 *
 * @module
 */
import { dirname } from "node:path";
import { DEFAULT_CONCURRENCY } from "../definition/fan_out_limits.ts";
import type { FlowStep } from "../definition/types.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import type { EventEmitter } from "../events/emitter.ts";
import type { FanOutReport, StepInfo } from "../events/types.ts";
import { sleep } from "../backoff.ts";
import { newRunId } from "../store/run_id.ts";
import { fanOutAt, type FanOutRecord } from "../store/fan_out_lines.ts";
import { readLogFrom, type RunStore } from "../store/types.ts";
import type { ChildLimiter } from "./child_limiter.ts";
import { type ChildQueue, FanOutSuspended, type QueuedChild } from "./child_queue.ts";
import {
  accountedRunner,
  childCheckpoint,
  type ChildRunner,
  childStore,
  driveLinkedChild,
  endedResult,
  zeroUsage,
} from "./child_run.ts";
import { addUsageBeyond, BudgetExceeded, type SpendLedger } from "./spend_ledger.ts";
import {
  fanOutHandoff,
  fanOutItems,
  type FanOutResult,
  itemLabel,
  itemOutput,
} from "./fan_out_items.ts";
import type { PendingInput } from "./input_request.ts";
import type { FanOutMark, RunnerState } from "./run_state.ts";
import { setWaits, TERMINAL_STATUS, waitsOf } from "./run_state.ts";
import { pendingRequest, type WaitFor } from "./run_wait.ts";
import type { StepResult } from "./step_handler.ts";
import { childArgs } from "./step_agent.ts";
import type { ParentRunLink, RunOptions, RunUsage, StepFlowResult } from "./types.ts";

/** How often a fan-out looks at children that wait for an answer, or that another process drives. */
export const FAN_OUT_POLL_MS = 500;

/**
 * A child's drive could not even start or ended in a way that is not the item's (its resume refused
 * to rerun a tool call, its store failed): the fan-out lets its other children finish, then the
 * parent's drive stops with `cause` (the run stays interrupted, as a resume refused at its start).
 */
export class FanOutHalted extends Error {
  /** Wraps the child's error (`cause`). */
  constructor(cause: unknown) {
    super(`a child of a fan-out step could not go on: ${errorMessage(cause)}`, { cause });
  }
}

/** What {@linkcode runFanOut} needs from the run it belongs to. */
export interface FanOutContext {
  /** The run's state (its `fanOut` mark, handoff, usage and waits change here). */
  state: RunnerState;
  /** The fan-out step (`step.child` is its agent). */
  step: FlowStep;
  /** The iteration's event info. */
  info: StepInfo;
  /** The run's store (its children are recorded in the store it gives for their agent). */
  store: RunStore | undefined;
  /** The run's signal: a stopped run stops its children. */
  signal: AbortSignal;
  /** Resolves when the run is not paused. */
  waitIfPaused(): Promise<void>;
  /** The runner-wide cap of children in flight. */
  limiter: ChildLimiter;
  /** Appends a line to the run's log. */
  log(fields: { type: string; [k: string]: unknown }): Promise<void>;
  /** The position of the run log's next line. */
  lines(): number;
  /** Checkpoints the run (`running`): everything logged before it is durable. */
  flush(): Promise<void>;
  /** The run's events. */
  events: EventEmitter;
  /**
   * A runner of the step's agent recording in `store`, whose runs report the step each is at to
   * `onStep` (the running items' steps in progress views).
   */
  childRunner(store: RunStore | undefined, onStep: (stepId: string) => void): ChildRunner;
  /** The run's agent and folder (the children's parent link). */
  parentAgent: string;
  /** The run's agent folder. */
  parentDir: string;
  /** `maxAgentDepth`. */
  maxDepth: number;
  /** A resume's `rerunUnfinishedCall`, passed to the children it resumes. */
  rerunUnfinishedCall?: RunOptions["rerunUnfinishedCall"];
  /** How often waiting children are looked at (default {@linkcode FAN_OUT_POLL_MS}). */
  pollMs?: number;
  /**
   * The run's spend ledger: each child's spend is added to it as it happens, and every call of a
   * child is checked against the run's budget (a spent budget starts no more children).
   */
  spend?: SpendLedger;
  /** The workers' queue: the children run there, not here (`child_queue.ts`). */
  childQueue?: ChildQueue;
}

/** Runs (or continues) a fan-out step's iteration; see the module documentation. */
export async function runFanOut(ctx: FanOutContext): Promise<StepResult> {
  const { step, state } = ctx;
  const agent = step.child;
  if (!agent) {
    throw new StepflowError(
      "AGENT_STEP_FAILED",
      `Fan-out step "${step.id}": its agent "${step.agent}" was not loaded with the parent; load the parent with loadAgentDefinition.`,
      { details: { stepId: step.id } },
    );
  }
  const depth = (state.parent?.depth ?? 0) + 1;
  if (depth > ctx.maxDepth) {
    throw new StepflowError(
      "AGENT_STEP_DEPTH",
      `Fan-out step "${step.id}" of run ${state.runId} would start children ${depth} agent steps below the top run, beyond maxAgentDepth ${ctx.maxDepth}. Flatten the agents, or raise maxAgentDepth.`,
      { details: { stepId: step.id, depth, maxAgentDepth: ctx.maxDepth } },
    );
  }
  const items = fanOutItems(step, state);
  if (items.length === 0) {
    delete state.fanOut;
    return settled(step, [], zeroUsage());
  }
  const fanOut = new FanOut(ctx, items, depth);
  return await fanOut.run();
}

/** Where one item stands. */
type ItemPhase = "queued" | "running" | "waiting" | "busy" | "done" | "stopped";

/** One item of the fan-out and its children. */
interface ItemSlot {
  index: number;
  value: unknown;
  label: string;
  phase: ItemPhase;
  /** The child to continue (the latest), or none yet. */
  child?: { runId: string; attempt: number; store?: "agent"; startedAt: string };
  /** Children of the item so far (the attempt of the next new one is this plus 1). */
  attempts: number;
  /**
   * What the run counted of each of its children (by child run id; a running child's grows as it
   * spends): the item's usage is the sum.
   */
  usage: Map<string, RunUsage>;
  /** When it is `waiting`: its child's requests. */
  waits?: PendingInput[];
  /** When it is `done`. */
  result?: FanOutResult;
  /** The step its running child is at. */
  at?: string;
  /** Stops its running child (onItemError `fail`). */
  abort?: AbortController;
  /** The child ended failed (or cancelled) and is redriven when the step runs again. */
  redrive?: boolean;
}

/** The scheduler of one fan-out iteration. */
class FanOut {
  readonly #ctx: FanOutContext;
  readonly #items: ItemSlot[];
  readonly #depth: number;
  readonly #concurrency: number;
  readonly #running = new Map<number, Promise<void>>();
  readonly #queue: number[] = [];
  #mark!: FanOutMark;
  /** The first item failure that fails the step (onItemError `fail`, or retries used up). */
  #failure?: StepflowError;
  /** An error that stops the parent's drive (a child that cannot go on by itself). */
  #halt?: unknown;
  /** The run's budget (or an ancestor's) is spent: no more children start, the run stops. */
  #budgetSpent = false;
  #wake: () => void = () => {};
  /** A child ended while nobody waited for it (the next wait returns at once). */
  #woken = false;
  /** Serialises the run's log lines and checkpoints (children end at any moment). */
  #journal: Promise<void> = Promise.resolve();

  constructor(ctx: FanOutContext, values: readonly unknown[], depth: number) {
    this.#ctx = ctx;
    this.#depth = depth;
    this.#concurrency = ctx.step.concurrency ?? DEFAULT_CONCURRENCY;
    this.#items = values.map((value, index) => ({
      index,
      value,
      label: itemLabel(value),
      phase: "queued",
      attempts: 0,
      usage: new Map(),
    }));
  }

  /** The iteration: take up or begin the fan-out, drive every item, settle the step. */
  async run(): Promise<StepResult> {
    await this.#open();
    await this.#report();
    if (this.#ctx.childQueue) return await this.#runOnWorkers(this.#ctx.childQueue);
    for (;;) {
      await this.#ctx.waitIfPaused();
      if (this.#stopped) break;
      await this.#startBatch();
      if (this.#running.size > 0) {
        await this.#nextChange();
        continue;
      }
      if (this.#queue.length > 0) continue;
      // Nothing runs here: children that wait or run elsewhere may have moved on meanwhile.
      const open = this.#open_();
      if (open.length === 0) break;
      if (await this.#poll(open)) continue;
      if (!open.some((s) => s.phase === "busy")) break; // every one waits for an answer
      await this.#sleep();
    }
    await Promise.allSettled(this.#running.values());
    await this.#journal;
    return this.#settle();
  }

  /**
   * The iteration when the children run on the workers (`child_queue.ts`): each linked child is
   * looked at (ended: settled here; waiting: listed; else still out), new children are linked and
   * queued — the queue sends them to the workers `concurrency` at a time — and while any is out,
   * the drive stops ({@linkcode FanOutSuspended}) until the workers wake the run again.
   */
  async #runOnWorkers(queue: ChildQueue): Promise<StepResult> {
    const ctx = this.#ctx;
    const fanOut = {
      parentRunId: ctx.state.runId,
      stepId: ctx.step.id,
      concurrency: this.#concurrency,
    };
    const noticed = { ended: [] as string[], waiting: [] as string[] };
    const queued: QueuedChild[] = [];
    let out = 0;
    while (this.#queue.length > 0 && !this.#stopped) {
      const slot = this.#items[this.#queue.shift()!];
      // A failed item of a step run again (a redrive, an onError retry): a new child, on the
      // workers — its failed child stays as it ended.
      if (slot.redrive) {
        delete slot.redrive;
        delete slot.child;
      }
      if (!slot.child) {
        let args: Record<string, unknown>;
        try {
          args = childArgs(ctx.step, ctx.state, { value: slot.value });
        } catch (error) {
          await this.#itemEnded(slot, undefined, error);
          continue;
        }
        await this.#link(slot);
        queued.push(this.#queuedChild(slot, args));
        slot.phase = "running";
        out++;
        continue;
      }
      const checkpoint = await childCheckpoint(linkedStore(ctx, slot), slot.child.runId);
      const ended = checkpoint ? endedResult(checkpoint) : undefined;
      if (ended) {
        noticed.ended.push(slot.child.runId);
        await this.#itemEnded(slot, ended); // a retry puts the item back in the queue
      } else if (checkpoint?.status === "waiting") {
        noticed.waiting.push(slot.child.runId);
        slot.phase = "waiting";
        slot.waits = waitsOf(
          checkpoint.state as { waiting?: PendingInput; waits?: PendingInput[] },
        );
      } else {
        // Queued, or driven by a worker (one killed meanwhile: taken over as any run is). One never
        // started is queued again: when the step failed before its turn, its job was cancelled
        // (the queue takes it up again; one still pending or out stays as it is).
        if (!checkpoint) {
          queued.push(
            this.#queuedChild(slot, childArgs(ctx.step, ctx.state, { value: slot.value })),
          );
        }
        slot.phase = "running";
        out++;
      }
    }
    // Every link durable before its child is queued: a resume never queues a second one.
    await this.#write(() => ctx.flush());
    if (queued.length > 0) await queue.enqueue(fanOut, queued);
    if (noticed.ended.length + noticed.waiting.length > 0) await queue.noticed(fanOut, noticed);
    await this.#report();
    if (this.#failure) {
      // The first failure stops the rest: none queued starts, the ones out are cancelled.
      await queue.cancel(fanOut);
      this.#mark.failed = true;
      return this.#settle();
    }
    if (out > 0) {
      await this.#noteWaits();
      throw new FanOutSuspended(ctx.step.id, out);
    }
    return this.#settle();
  }

  /** An item's child as the queue records it. */
  #queuedChild(slot: ItemSlot, args: Record<string, unknown>): QueuedChild {
    const { state, step } = this.#ctx;
    return {
      runId: slot.child!.runId,
      agent: step.child!,
      position: slot.index,
      args,
      parent: this.#parentLink(slot),
      ...(state.backendChoice ? { backendChoice: state.backendChoice } : {}),
      ...(state.permissionMode ? { permissionMode: state.permissionMode } : {}),
    };
  }

  // -----------------------------------------------------------------------------------------------
  // Taking up the fan-out
  // -----------------------------------------------------------------------------------------------

  /** Begins the fan-out, or takes up the one the checkpoint marks (from its log lines). */
  async #open(): Promise<void> {
    const { state, step } = this.#ctx;
    const total = this.#items.length;
    const mark = state.fanOut?.stepId === step.id ? state.fanOut : undefined;
    if (!mark) {
      const startLine = this.#ctx.lines();
      await this.#ctx.log({
        type: "fanout_start",
        stepId: step.id,
        agent: step.child!.name,
        total,
        concurrency: this.#concurrency,
        onItemError: policyText(step),
      });
      this.#mark = state.fanOut = { stepId: step.id, startLine, total, counted: {} };
      this.#queue.push(...this.#items.map((s) => s.index));
      return;
    }
    this.#mark = mark;
    mark.counted ??= {};
    if (mark.total !== total) {
      throw new StepflowError(
        "FANOUT_ITEMS_CHANGED",
        `Fan-out step "${step.id}" of run ${state.runId} began over ${mark.total} items, but forEach ${step.forEach} now holds ${total}; its children cannot be matched to the items again. Start a new run.`,
        { details: { stepId: step.id, recorded: mark.total, now: total } },
      );
    }
    const store = this.#ctx.store;
    const record = store
      ? fanOutAt(await readLogFrom(store, state.runId, mark.startLine), 0)
      : undefined;
    this.#takeUp(record, mark.failed === true);
    // A step run again after it failed redrives its failed items (a redrive, an onError retry).
    delete mark.failed;
  }

  /** Each item's place from the log: done, to continue, to start, or failed for good. */
  #takeUp(record: FanOutRecord | undefined, again: boolean): void {
    const policy = this.#ctx.step.onItemError ?? { kind: "fail" as const };
    for (const slot of this.#items) {
      const children = record?.items.get(slot.index)?.children ?? [];
      slot.attempts = children.length;
      for (const c of children) this.#takeUpUsage(slot, c.childRunId, c.end?.usage);
      const last = children[children.length - 1];
      if (!last) {
        this.#queue.push(slot.index);
        continue;
      }
      slot.child = {
        runId: last.childRunId,
        attempt: last.attempt,
        ...(last.store ? { store: last.store } : {}),
        startedAt: last.startedAt,
      };
      const end = last.end;
      if (end?.status === "completed") {
        slot.phase = "done";
        slot.result = result(slot, "completed", end.output ?? null, null);
        continue;
      }
      if (!end || STOPPED.has(end.status)) {
        this.#queue.push(slot.index); // continued (a stopped child is redriven)
        continue;
      }
      // The child failed.
      if (policy.kind === "retry" && slot.attempts <= policy.count) {
        delete slot.child; // a new child
        this.#queue.push(slot.index);
      } else if (policy.kind === "continue") {
        slot.phase = "done";
        slot.result = result(slot, end.status, null, end.error ?? failedError(end.status));
      } else if (again) {
        slot.redrive = true;
        this.#queue.push(slot.index);
      } else {
        // The step failed on this item before the run stopped: it fails again, starting nothing.
        slot.phase = "done";
        slot.result = result(slot, end.status, null, end.error ?? failedError(end.status));
        this.#failure ??= this.#itemFailed(slot);
      }
    }
  }

  /**
   * What the run counted of one child of a taken-up fan-out: an ended child's usage from its end
   * line — what of it the checkpoint had not counted yet (it ended after the checkpoint) is added
   * to the run's usage now; an unfinished child's count from the checkpoint (its next drive adds
   * what it spent beyond that).
   */
  #takeUpUsage(slot: ItemSlot, runId: string, ended: Parameters<typeof usageOf>[0] | undefined) {
    const counted = this.#mark.counted;
    const before = ownCount(counted, runId);
    if (!ended) {
      slot.usage.set(runId, before ?? zeroUsage());
      return;
    }
    const usage = usageOf(ended);
    if (before) addUsageBeyond(this.#ctx.state.usage, usage, before);
    delete counted[runId];
    slot.usage.set(runId, usage);
  }

  // -----------------------------------------------------------------------------------------------
  // Starting children
  // -----------------------------------------------------------------------------------------------

  get #stopped(): boolean {
    return this.#ctx.signal.aborted || this.#failure !== undefined || this.#halt !== undefined ||
      this.#budgetSpent;
  }

  /**
   * True when the run's budget (or an ancestor's) leaves nothing for a new child: none starts. With
   * children running, their calls in flight may hold what is left: the next one starts when they
   * end and it is still there; with none running, the fan-out stops for the budget.
   */
  #noBudget(): boolean {
    if (this.#ctx.spend?.exhausted() === undefined) return false;
    if (this.#running.size === 0) this.#budgetSpent = true;
    return true;
  }

  /**
   * Starts as many queued items as `concurrency` and the runner's cap allow: each new child's id
   * is logged, then one checkpoint makes every link durable, then the children start.
   */
  async #startBatch(): Promise<void> {
    const limiter = this.#ctx.limiter;
    const batch: ItemSlot[] = [];
    while (
      this.#queue.length > 0 && this.#running.size + batch.length < this.#concurrency &&
      !this.#stopped && !this.#noBudget()
    ) {
      if (!limiter.tryAcquire()) {
        if (this.#running.size + batch.length > 0) break; // one of ours gives its place back
        try {
          await limiter.acquire(this.#ctx.signal);
        } catch {
          break; // the run stopped
        }
      }
      batch.push(this.#items[this.#queue.shift()!]);
    }
    if (batch.length === 0) return;
    const starting: { slot: ItemSlot; args: Record<string, unknown> }[] = [];
    let linked = false;
    for (const slot of batch) {
      let args: Record<string, unknown>;
      try {
        args = childArgs(this.#ctx.step, this.#ctx.state, { value: slot.value });
      } catch (error) {
        // No child can start for this item (a required parameter it does not give).
        limiter.release();
        await this.#itemEnded(slot, undefined, error);
        continue;
      }
      if (!slot.child) {
        await this.#link(slot);
        linked = true;
      }
      starting.push({ slot, args });
    }
    // Durable before any of them starts: a resume continues these children, never new ones.
    if (linked) await this.#write(() => this.#ctx.flush());
    for (const { slot, args } of starting) this.#launch(slot, args);
    if (starting.length > 0) await this.#report();
  }

  /** Links a new child to the item: its id logged (`fanout_child`), durable at the next flush. */
  async #link(slot: ItemSlot): Promise<void> {
    slot.attempts++;
    const own = this.#ctx.store?.forAgent?.(this.#ctx.step.child!) ?? this.#ctx.store;
    slot.child = {
      runId: newRunId(),
      attempt: slot.attempts,
      ...(own !== this.#ctx.store ? { store: "agent" as const } : {}),
      startedAt: new Date().toISOString(),
    };
    // Counted from nothing, in the checkpoint that makes its link durable.
    this.#countedOf(slot);
    await this.#write(() =>
      this.#ctx.log({
        type: "fanout_child",
        stepId: this.#ctx.step.id,
        index: slot.index,
        childRunId: slot.child!.runId,
        agent: this.#ctx.step.child!.name,
        attempt: slot.child!.attempt,
        item: slot.label,
        ...(slot.child!.store ? { store: slot.child!.store } : {}),
      })
    );
  }

  /** Drives one item's child (a place is taken); settles the item when the drive ends. */
  #launch(slot: ItemSlot, args: Record<string, unknown>): void {
    slot.phase = "running";
    delete slot.at;
    delete slot.waits;
    const abort = slot.abort = new AbortController();
    const drive = this.#drive(slot, args, abort.signal).then(
      (child) => this.#childEnded(slot, child),
      (error) => this.#childThrew(slot, error),
    ).finally(() => {
      this.#ctx.limiter.release();
      this.#running.delete(slot.index);
      delete slot.abort;
      this.#woken = true;
      this.#wake();
    });
    this.#running.set(slot.index, drive);
  }

  /** Starts or continues the item's child run. */
  #drive(slot: ItemSlot, args: Record<string, unknown>, own: AbortSignal): Promise<StepFlowResult> {
    const ctx = this.#ctx;
    const state = ctx.state;
    const link = slot.child!;
    const store = linkedStore(ctx, slot);
    const parent = this.#parentLink(slot);
    const redriveFailed = slot.redrive === true;
    delete slot.redrive;
    const runner = ctx.childRunner(store, (stepId) => {
      slot.at = stepId;
      void this.#report();
    });
    return driveLinkedChild({
      // Its spend reaches the run's usage and budget as it happens.
      runner: accountedRunner(runner, ctx.spend, ctx.step.id, this.#countedOf(slot)),
      store,
      runId: link.runId,
      args,
      cwd: state.cwd,
      signal: AbortSignal.any([ctx.signal, own]),
      parent,
      ...(state.backendChoice ? { backendChoice: state.backendChoice } : {}),
      ...(state.permissionMode ? { permissionMode: state.permissionMode } : {}),
      ...(ctx.rerunUnfinishedCall ? { rerunUnfinishedCall: ctx.rerunUnfinishedCall } : {}),
      ...(redriveFailed ? { redriveFailed } : {}),
    });
  }

  /** The parent link of an item's child. */
  #parentLink(slot: ItemSlot): ParentRunLink {
    const ctx = this.#ctx;
    return {
      runId: ctx.state.runId,
      agent: ctx.parentAgent,
      stepId: ctx.step.id,
      depth: this.#depth,
      item: slot.index,
      agentDir: ctx.parentDir,
      agentRoot: agentRootOf(ctx.step, ctx.parentDir),
    };
  }

  // -----------------------------------------------------------------------------------------------
  // Settling children
  // -----------------------------------------------------------------------------------------------

  /** A child's drive ended: it waits, it completed, or it did not (onItemError decides). */
  async #childEnded(slot: ItemSlot, child: StepFlowResult): Promise<void> {
    if (child.completionReason === "waiting") {
      slot.phase = "waiting";
      slot.waits = child.waits ?? (child.waiting ? [child.waiting] : []);
      await this.#noteWaits();
      await this.#ctx.events.emit(
        "onStepLog",
        this.#ctx.info,
        `item ${slot.index + 1} (${slot.label}): child run ${child.runId} waits for an answer`,
        "info",
      );
      await this.#report({
        kind: "waiting",
        index: slot.index,
        item: slot.label,
        runId: child.runId,
      });
      return;
    }
    await this.#itemEnded(slot, child);
  }

  /** The drive of a child threw: another process drives it, or it cannot go on by itself. */
  #childThrew(slot: ItemSlot, error: unknown): void {
    if (
      error instanceof StepflowError &&
      (error.code === "RUN_LOCKED" || error.code === "RUN_CHANGED")
    ) {
      // Answered and driven elsewhere (or moved on just now): looked at again until it ends.
      slot.phase = "busy";
      return;
    }
    slot.phase = "stopped";
    this.#halt ??= this.#halted(slot, error);
  }

  /** A child's error that stops the run's drive, saying which item it is and how to go on. */
  #halted(slot: ItemSlot, error: unknown): unknown {
    if (!(error instanceof StepflowError)) return error;
    const { state, step, parentAgent } = this.#ctx;
    const rerun = error.code === "TOOL_CALL_UNFINISHED";
    // The next step is the parent's resume (which continues its children), as data.
    const next = {
      action: "resume",
      runId: state.runId,
      agent: parentAgent,
      ...(rerun ? { args: ["--rerun-unfinished-call"] } : {}),
    };
    return new StepflowError(
      error.code,
      `${error.message}\nThat child run is item ${
        slot.index + 1
      } (${slot.label}) of fan-out step "${step.id}" of run ${state.runId}; its other children went on. Resume run ${state.runId}${
        rerun ? " with the unfinished call re-run" : ""
      } to continue it and its children.`,
      { cause: error, details: { ...error.details, next } },
    );
  }

  /**
   * Records how an item's child ended (`fanout_child_end`, its usage added to the run's) and what
   * comes next for the item: done, a new child (`retry=N`), or the step's failure.
   */
  async #itemEnded(
    slot: ItemSlot,
    child: StepFlowResult | undefined,
    thrown?: unknown,
  ): Promise<void> {
    const ctx = this.#ctx;
    const status = child ? TERMINAL_STATUS[child.completionReason] : "failed";
    const error = child
      ? child.success ? null : child.error ?? failedError(status)
      : { code: codeOf(thrown), message: errorMessage(thrown) };
    const endedAt = new Date().toISOString();
    if (child && slot.child) {
      const output = child.success ? itemOutput(ctx.step, child.output) : undefined;
      await this.#write(async () => {
        await ctx.log({
          type: "fanout_child_end",
          stepId: ctx.step.id,
          index: slot.index,
          childRunId: child.runId,
          attempt: slot.child!.attempt,
          status,
          completionReason: child.completionReason,
          ...(output !== undefined ? { output } : {}),
          ...(error ? { error } : {}),
          usage: { ...child.usage },
          startedAt: slot.child!.startedAt,
          endedAt,
        });
        this.#countEnded(slot, child);
      });
      if (child.success) {
        slot.phase = "done";
        slot.result = result(slot, "completed", output ?? null, null);
        await this.#ended(slot, status, child);
        return;
      }
    }
    // Stopped by a budget (the run's, or its own): it continues inside its step on a resume.
    if (child?.completionReason === "budget_exceeded") this.#budgetSpent = true;
    // Stopped with the run, or by the step itself (another item failed): not this item's failure.
    if (
      ctx.signal.aborted || (status === "cancelled" && this.#failure) ||
      child?.completionReason === "budget_exceeded"
    ) {
      slot.phase = "stopped";
      await this.#ended(slot, status, child);
      return;
    }
    const policy = ctx.step.onItemError ?? { kind: "fail" as const };
    if (policy.kind === "retry" && slot.attempts <= policy.count && child) {
      delete slot.child;
      slot.phase = "queued";
      this.#queue.unshift(slot.index);
      await ctx.events.emit(
        "onStepLog",
        ctx.info,
        `item ${
          slot.index + 1
        } (${slot.label}): child run ${child.runId} ${status}; retrying with a new child (retry ${slot.attempts} of ${policy.count})`,
        "warn",
      );
      await this.#ended(slot, status, child);
      return;
    }
    slot.phase = "done";
    slot.result = result(slot, status, null, error ?? failedError(status));
    await this.#ended(slot, status, child);
    if (policy.kind !== "continue" && !this.#failure) {
      this.#failure = this.#itemFailed(slot);
      // The first failure cancels the running children and starts no more.
      for (const other of this.#items) other.abort?.abort();
    }
  }

  /** Tells progress views that an item's child ended. */
  async #ended(slot: ItemSlot, status: string, child: StepFlowResult | undefined): Promise<void> {
    const started = slot.child ? Date.parse(slot.child.startedAt) : Date.now();
    await this.#report({
      kind: "ended",
      index: slot.index,
      item: slot.label,
      status,
      ...(child ? { runId: child.runId, usage: { ...child.usage } } : {}),
      durationMs: Math.max(0, Date.now() - started),
      ...(slot.result?.error ? { error: slot.result.error.message } : {}),
    });
  }

  // -----------------------------------------------------------------------------------------------
  // Waiting children
  // -----------------------------------------------------------------------------------------------

  /** Items whose child waits for an answer, or runs in another process. */
  #open_(): ItemSlot[] {
    return this.#items.filter((s) => s.phase === "waiting" || s.phase === "busy");
  }

  /**
   * Looks at children that wait or run elsewhere: one answered since (it is `running` with the
   * answer recorded), or ended, or driven elsewhere and free again, is queued to go on here.
   * Returns whether any was.
   */
  async #poll(open: readonly ItemSlot[]): Promise<boolean> {
    let moved = false;
    for (const slot of open) {
      if (slot.phase === "busy") {
        slot.phase = "queued";
        this.#queue.push(slot.index);
        moved = true;
        continue;
      }
      const store = linkedStore(this.#ctx, slot);
      const checkpoint = await childCheckpoint(store, slot.child!.runId).catch(() => undefined);
      const waits = checkpoint?.status === "waiting"
        ? waitsOf(checkpoint.state as { waiting?: PendingInput; waits?: PendingInput[] })
        : [];
      const same = waits.length > 0 && waits.length === slot.waits?.length &&
        waits.every((w, i) => w.requestId === slot.waits![i].requestId);
      if (same) continue;
      slot.phase = "queued";
      this.#queue.push(slot.index);
      moved = true;
    }
    if (moved) await this.#noteWaits();
    return moved;
  }

  /**
   * Keeps the run's list of waiting children current in its state (and checkpoint), so an answer
   * given through this run reaches the right child while the run is driven.
   */
  async #noteWaits(): Promise<void> {
    const state = this.#ctx.state;
    const waits = this.#items.flatMap((s) => s.phase === "waiting" ? this.#pending(s) : []);
    const before = waitsOf(state).map((w) => w.requestId).join(" ");
    if (before === waits.map((w) => w.requestId).join(" ")) return;
    setWaits(state, waits);
    await this.#write(() => this.#ctx.flush());
  }

  /** An item's waits as this run's requests (as the loop records a child's wait). */
  #pending(slot: ItemSlot): PendingInput[] {
    const now = new Date();
    return this.#childWaits(slot).map((wait) => pendingRequest(wait, this.#ctx.step, now));
  }

  /** An item's waits as waits of this run. */
  #childWaits(slot: ItemSlot): WaitFor[] {
    return (slot.waits ?? []).map((request) => ({
      kind: "child" as const,
      runId: slot.child!.runId,
      request,
      item: slot.index,
      ...(slot.child!.store ? { store: slot.child!.store } : {}),
    }));
  }

  // -----------------------------------------------------------------------------------------------
  // The end of the iteration
  // -----------------------------------------------------------------------------------------------

  /** The step's result: its failure, the run's stop, a wait on the waiting children, or its handoff. */
  #settle(): StepResult {
    const ctx = this.#ctx;
    const { step, state } = ctx;
    const usage = this.#childUsage();
    if (this.#halt !== undefined) throw new FanOutHalted(this.#halt);
    const record = { fanOut: this.#summary(usage) };
    if (this.#failure) {
      this.#mark.failed = true;
      setWaits(state, []);
      return { record, error: this.#failure };
    }
    if (ctx.signal.aborted) {
      setWaits(state, []);
      return { record, error: ctx.signal.reason ?? new Error("run stopped") };
    }
    if (this.#budgetSpent) {
      setWaits(state, []);
      return { record, error: this.#budgetStop() };
    }
    const waiting = this.#items.filter((s) => s.phase === "waiting");
    if (waiting.length > 0) {
      const waits = waiting.flatMap((slot) => this.#childWaits(slot));
      return { outcome: { kind: "wait", waits: waits as [WaitFor, ...WaitFor[]] } };
    }
    delete state.fanOut;
    setWaits(state, []);
    return settled(step, this.#items.map((s) => s.result!), usage);
  }

  #summary(usage: RunUsage) {
    const done = this.#items.filter((s) => s.phase === "done");
    const completed = done.filter((s) => s.result?.status === "completed").length;
    return {
      agent: this.#ctx.step.child!.name,
      total: this.#items.length,
      completed,
      failed: done.length - completed,
      usage,
    };
  }

  // -----------------------------------------------------------------------------------------------
  // Usage, progress, the journal
  // -----------------------------------------------------------------------------------------------

  /** Every child's usage, summed (each child once: its latest total). */
  #childUsage(): RunUsage {
    const total = zeroUsage();
    for (const slot of this.#items) {
      for (const usage of slot.usage.values()) addUsageBeyond(total, usage, zeroUsage());
    }
    return total;
  }

  /**
   * What the run counted of the item's current child: the object the child's drives add their
   * spend to (with the run's usage, in one step), kept in the fan-out's mark while the child has
   * not ended — so every checkpoint says how much of the child's spend its usage holds.
   */
  #countedOf(slot: ItemSlot): RunUsage {
    const runId = slot.child!.runId;
    let counted = slot.usage.get(runId);
    if (!counted) slot.usage.set(runId, counted = zeroUsage());
    this.#mark.counted[runId] = counted;
    return counted;
  }

  /**
   * A child ended: what its result says it spent beyond what reached the run as it happened (a
   * child another process drove, read from its checkpoint) is added to the run's usage.
   */
  #countEnded(slot: ItemSlot, child: StepFlowResult): void {
    const counted = slot.usage.get(child.runId) ?? zeroUsage();
    addUsageBeyond(this.#ctx.state.usage, child.usage, counted);
    slot.usage.set(child.runId, { ...child.usage });
    delete this.#mark.counted[child.runId];
  }

  async #report(change?: FanOutReport["change"]): Promise<void> {
    // A report walks every item: only when someone listens (a library run of 10,000 items that
    // nobody watches does not pay it per child).
    if (!this.#ctx.events.has("onFanOut")) return;
    let completed = 0, failed = 0, waiting = 0;
    const active: FanOutReport["active"] = [];
    for (const s of this.#items) {
      if (s.phase === "done") s.result?.status === "completed" ? completed++ : failed++;
      else if (s.phase === "waiting") waiting++;
      else if (s.phase === "running" && s.child) {
        active.push({
          index: s.index,
          item: s.label,
          runId: s.child.runId,
          ...(s.at ? { stepId: s.at } : {}),
        });
      }
    }
    const report: FanOutReport = {
      agent: this.#ctx.step.child!.name,
      total: this.#items.length,
      completed,
      failed,
      running: active.length,
      waiting,
      active,
      ...(change ? { change } : {}),
    };
    await this.#ctx.events.emit("onFanOut", this.#ctx.info, report);
  }

  /** Runs `write` after every write before it (children end at any moment). */
  #write(write: () => Promise<void>): Promise<void> {
    const next = this.#journal.then(write);
    this.#journal = next.catch(() => {});
    return next;
  }

  /** Resolves when a child's drive ends (or at once when one ended since the last call). */
  async #nextChange(): Promise<void> {
    const polling = this.#open_().length > 0;
    if (!this.#woken) {
      await new Promise<void>((resolve) => {
        const timer = polling
          ? setTimeout(resolve, this.#ctx.pollMs ?? FAN_OUT_POLL_MS)
          : undefined;
        this.#wake = () => {
          if (timer !== undefined) clearTimeout(timer);
          resolve();
        };
      });
    }
    this.#wake = () => {};
    this.#woken = false;
    const open = this.#open_();
    if (open.length > 0 && !this.#stopped) await this.#poll(open);
  }

  async #sleep(): Promise<void> {
    await sleep(this.#ctx.pollMs ?? FAN_OUT_POLL_MS, this.#ctx.signal).catch(() => {});
  }

  /** The stop of a spent budget: the run ends `budget_exceeded`, and a resume continues here. */
  #budgetStop(): BudgetExceeded {
    const open = this.#items.filter((s) => s.phase !== "done");
    const started = open.filter((s) => s.child !== undefined).length;
    return new BudgetExceeded(
      this.#ctx.spend?.exhausted(),
      `Fan-out step "${this.#ctx.step.id}" stopped for the budget with ${
        this.#items.length - open.length
      } of ${this.#items.length} items done: ${started} child run${
        started === 1 ? "" : "s"
      } to continue inside their step, ${
        open.length - started
      } not started; a resume with a higher budget carries them on.`,
    );
  }

  #itemFailed(slot: ItemSlot): StepflowError {
    const ctx = this.#ctx;
    const error = slot.result?.error;
    const attempts = slot.attempts > 1 ? ` (after ${slot.attempts} children)` : "";
    return new StepflowError(
      "FANOUT_ITEM_FAILED",
      `Fan-out step "${ctx.step.id}": item ${slot.index + 1} (${slot.label}) failed${attempts}${
        slot.child ? ` in child run ${slot.child.runId}` : ""
      }: ${
        error ? `${error.code}: ${error.message}` : slot.result?.status
      }. The running children were cancelled and no more were started; the step's onError decides what the run does (a redrive runs the failed and unfinished items again, keeping the completed ones).`,
      {
        details: {
          stepId: ctx.step.id,
          item: slot.index,
          ...(slot.child ? { childRunId: slot.child.runId } : {}),
        },
      },
    );
  }
}

/** The statuses of a child stopped with its parent (or by its step): it is redriven, not failed. */
const STOPPED: ReadonlySet<string> = new Set(["cancelled", "timeout", "budget_exceeded"]);

/** The step's result once every item ended: `results` and `counts` handed off, then `next`. */
function settled(step: FlowStep, results: FanOutResult[], usage: RunUsage): StepResult {
  const handoff = fanOutHandoff(results);
  const record = {
    fanOut: {
      agent: step.child!.name,
      total: handoff.counts.total,
      completed: handoff.counts.completed,
      failed: handoff.counts.failed,
      usage,
    },
  };
  const next = step.transitions.next?.target;
  return {
    record,
    handoff: { ...handoff },
    response: { text: "", structuredOutput: handoff },
    outcome: next !== undefined
      ? { kind: "goto", stepId: next, transition: "next" }
      : { kind: "end", reason: "completed", transition: "complete", output: handoff },
  };
}

function result(
  slot: ItemSlot,
  status: string,
  output: unknown,
  error: { code: string; message: string } | null,
): FanOutResult {
  return { item: slot.value, status, output, error, runId: slot.child?.runId ?? null };
}

function failedError(status: string): { code: string; message: string } {
  return { code: "AGENT_STEP_FAILED", message: `the child run ended ${status}` };
}

function codeOf(error: unknown): string {
  return error instanceof StepflowError ? error.code : "AGENT_STEP_FAILED";
}

function policyText(step: FlowStep): string {
  const p = step.onItemError ?? { kind: "fail" };
  return p.kind === "retry" ? `retry=${p.count}` : p.kind;
}

function usageOf(
  u: {
    inputTokens: number;
    outputTokens: number;
    costUsd?: number;
    calls?: number;
    callsWithoutUsage?: number;
  },
): RunUsage {
  return {
    inputTokens: u.inputTokens,
    outputTokens: u.outputTokens,
    costUsd: u.costUsd ?? 0,
    calls: u.calls ?? 0,
    callsWithoutUsage: u.callsWithoutUsage ?? 0,
  };
}

/** The run's count of child `runId`, when the checkpoint has one (run ids are ours, but read safely). */
function ownCount(counted: Record<string, RunUsage>, runId: string): RunUsage | undefined {
  return Object.hasOwn(counted, runId) ? counted[runId] : undefined;
}

/** The store an item's child is recorded in (its link says: its agent's own, or the run's). */
function linkedStore(ctx: FanOutContext, slot: ItemSlot): RunStore | undefined {
  const link = slot.child!;
  return childStore(
    ctx.store,
    {
      stepId: ctx.step.id,
      runId: link.runId,
      agent: ctx.step.child!.name,
      usage: zeroUsage(),
      ...(link.store ? { store: link.store } : {}),
    },
    ctx.step.child!,
    ctx.state.runId,
  );
}

/**
 * The agent root the parent was loaded with, as far as its fan-out step tells: the folder its agent
 * named by name is in, else the folder of the parent's own (the usual `.agent/<name>` layout).
 */
function agentRootOf(step: FlowStep, parentDir: string): string {
  const byName = step.agent !== undefined && !/[\\/]/.test(step.agent) &&
    !step.agent.startsWith(".");
  return dirname(byName && step.child ? step.child.dir : parentDir);
}
