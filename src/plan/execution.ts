/**
 * One run of a tool plan: the state machine behind {@linkcode startPlan} (executor.ts). It hands
 * ready steps to the scheduler's slots, runs each step (references, approval, the tool, its
 * failure strategy), applies recovery decisions, and finishes with the summary.
 *
 * Long because: one run's state machine — slots, approvals, retries, recovery and the final
 * statuses all read and change the same per-step state. What stands alone lives beside it: saving
 * (plan_saver.ts), events (step_reporter.ts), results (step_result.ts), the summary
 * (execution_summary.ts), interrupted steps (interrupted.ts) and the checks before a run
 * (execute_options.ts).
 *
 * @module
 */
import { backoffDelay, sleep } from "../backoff.ts";
import { errorMessage } from "../errors.ts";
import { createEventEmitter, type EventEmitter } from "../events/emitter.ts";
import type { ExecutorEvents, RunState } from "../events/types.ts";
import { newRunId } from "../store/run_id.ts";
import { type ApprovalOutcome, approvalReason, askApprover, autoApproves } from "./approvals.ts";
import {
  checkedPlan,
  defaultStrategyOf,
  type ExecutePlanOptions,
  type PlanRun,
} from "./execute_options.ts";
import { summarizeRun } from "./execution_summary.ts";
import { interruptedReruns } from "./interrupted.ts";
import { parseOnError } from "./on_error.ts";
import { PlanSaver } from "./plan_saver.ts";
import { stepResult } from "./step_result.ts";
import { logEntry, StepReporter } from "./step_reporter.ts";
import { askRecovery, insertedSteps, stepsAfterDecision } from "./recovery.ts";
import { mayHaveRefs, type RefLookup, resolveRefs } from "./refs.ts";
import { BLOCK, NO_POISON, SKIP, StepScheduler } from "./scheduler.ts";
import { checkSteps } from "./validate.ts";
import type {
  ErrorStrategy,
  ExecutionSummary,
  Plan,
  PlanToolContext,
  PlanToolRegistry,
  RecoveryDecision,
  Step,
  StepResult,
  StepStatus,
} from "./types.ts";

/** How one attempt at a step ended, for the scheduler. */
type Outcome = "completed" | "failed" | "stop" | "skipped" | "waiting" | "interrupted" | "abort";

/** One run of a plan (see {@linkcode startPlan}). */
export class Execution {
  readonly plan: Plan;
  readonly runId: string;
  readonly #o: ExecutePlanOptions;
  readonly #tools: PlanToolRegistry;
  readonly #root: string;
  readonly #limit: number;
  readonly #emitter: EventEmitter;
  readonly #report: StepReporter;
  readonly #controller = new AbortController();
  readonly #defaultStrategy: ErrorStrategy;

  readonly #scheduler: StepScheduler;
  /** The scheduler's nodes: the steps by node number. */
  readonly #nodes: Step[];
  // Per node (append-only: recovery may add nodes).
  readonly #hasRefs: boolean[] = [];
  readonly #attempts: number[] = [];
  readonly #recoveries: number[] = [];
  readonly #startedAt: number[] = [];
  /** Per step: milliseconds spent waiting for approvals (kept out of its duration). */
  readonly #approvalWait: number[] = [];

  #running = 0;
  /** Steps waiting for their approver: they hold no slot. */
  #awaitingApproval = 0;
  /** Approved steps waiting for a slot, served before newly ready steps. */
  readonly #slotWaiters: (() => void)[] = [];
  #maxParallel = 0;
  #stopping = false;
  #aborted = false;
  #cancelled = false;
  #firstError: string | undefined;
  readonly #saver: PlanSaver;
  /** Interrupted steps that run again, with the reason (logged when the run starts). */
  readonly #reruns: Map<string, string>;
  #finished = false;
  #startTime = 0;
  #startIso = "";
  #resolve!: (summary: ExecutionSummary) => void;
  readonly #summary: Promise<ExecutionSummary>;
  readonly #lookup: RefLookup;

  constructor(plan: Plan, options: ExecutePlanOptions) {
    this.#o = options;
    this.#tools = options.tools;
    this.runId = options.runId ?? newRunId();
    this.#root = options.workspaceRoot ?? Deno.cwd();
    this.#limit = Math.max(1, Math.floor(options.concurrency ?? 4));
    this.#emitter = createEventEmitter(
      Array.isArray(options.events)
        ? options.events
        : [options.events as ExecutorEvents | undefined],
    );
    this.#defaultStrategy = defaultStrategyOf(options);
    this.plan = checkedPlan(plan, options, this.#defaultStrategy);
    this.#reruns = interruptedReruns(this.plan, this.#tools, options.rerunInterrupted ?? false);
    this.#scheduler = new StepScheduler({
      ready: (i) => this.#setStatus(i, "ready"),
      blocked: (i) => this.#setStatus(i, "blocked"),
      passedOn: (i, status, culprit) => {
        this.#settleWith(
          i,
          status,
          status === "skipped"
            ? `Skipped because step "${culprit}" was skipped`
            : `Blocked because step "${culprit}" failed`,
        );
        // Settled without running: an end without a start tells event consumers why.
        if (this.#report.has("onStepEnd")) {
          const info = { ...this.#report.info(i), status };
          void this.#report.emit("onStepEnd", info, this.#nodes[i].result);
        }
      },
    });
    this.#nodes = this.#scheduler.nodes;
    this.#lookup = (id) => {
      const i = this.#scheduler.byId.get(id);
      if (i === undefined) return { found: false };
      const step = this.#nodes[i];
      if (step.status !== "completed" || !step.result?.ok) return { found: false };
      return { found: true, value: step.result.value };
    };
    this.#report = new StepReporter({
      runId: this.runId,
      plan: this.plan,
      nodes: this.#nodes,
      attempts: this.#attempts,
      emitter: this.#emitter,
      onProgress: options.onProgress,
    });
    this.#saver = new PlanSaver(this.plan, options.persist);
    this.#summary = new Promise((resolve) => (this.#resolve = resolve));
  }

  start(): PlanRun {
    const signal = this.#o.signal;
    if (signal) {
      if (signal.aborted) this.#cancel(signal.reason);
      else signal.addEventListener("abort", () => this.#cancel(signal.reason), { once: true });
    }
    this.#startTime = performance.now();
    this.#startIso = new Date().toISOString();
    void this.#run();
    return {
      runId: this.runId,
      plan: this.plan,
      progress: this.#report.log,
      summary: this.#summary,
      cancel: (reason?: string) => this.#cancel(reason ?? "cancelled"),
    };
  }

  async #run(): Promise<void> {
    const ctx = { runId: this.runId, planId: this.plan.id, taskId: this.plan.taskId };
    await this.#report.emit("onStateChange", "running", "idle", ctx);
    await this.#report.emit("onPlanStart", this.plan, ctx);
    this.#init();
    this.#pump();
  }

  #init(): void {
    const first = this.#addSteps(this.plan.steps);
    for (let i = first; i < this.#nodes.length; i++) {
      const why = this.#reruns.get(this.#nodes[i].id);
      if (why !== undefined) this.#report.note(i, "warn", why);
    }
    this.#scheduler.admit(first);
  }

  /** Adds steps to the scheduler and their per-node state: the start of a run and recovery's insertions. */
  #addSteps(steps: readonly Step[]): number {
    for (const step of steps) {
      this.#hasRefs.push(mayHaveRefs(step.args));
      this.#attempts.push(step.result?.attempts ?? 0);
      this.#recoveries.push(0);
      this.#startedAt.push(0);
      this.#approvalWait.push(0);
    }
    return this.#scheduler.add(steps);
  }

  #pump(): void {
    // Approved steps first (they were ready before the newly queued ones); after a stop every
    // waiter gets through at once, to find out that it must not start.
    while (
      this.#slotWaiters.length > 0 && (this.#stopping || this.#running < this.#limit)
    ) {
      this.#takeSlot();
      this.#slotWaiters.shift()!();
    }
    while (!this.#stopping && this.#running < this.#limit) {
      const i = this.#scheduler.next();
      if (i === undefined) break;
      this.#takeSlot();
      this.#runStep(i).then(
        (outcome) => this.#settle(i, outcome),
        (error) => {
          // Only a bug in the executor itself ends up here; record it on the step.
          this.#fail(i, error);
          this.#settle(i, "stop");
        },
      );
    }
    if (
      this.#running === 0 && this.#awaitingApproval === 0 && this.#slotWaiters.length === 0 &&
      (this.#stopping || !this.#scheduler.hasQueued)
    ) {
      void this.#finish();
    }
  }

  #takeSlot(): void {
    this.#running++;
    if (this.#running > this.#maxParallel) this.#maxParallel = this.#running;
  }

  /**
   * Waits for the approver without holding a slot: the slot goes back to the pool while a person
   * decides, and the step queues for one again once the answer is in. Returns false when the run
   * stopped meanwhile (the step must not start then).
   */
  async #approveWithoutSlot(
    i: number,
    args: Record<string, unknown>,
    reason: string,
  ): Promise<ApprovalOutcome | undefined> {
    this.#running--;
    this.#awaitingApproval++;
    this.#pump();
    const asked = performance.now();
    let decision: ApprovalOutcome;
    try {
      const step = this.#nodes[i];
      decision = await askApprover(
        this.#o.approver,
        {
          planId: this.plan.id,
          stepId: step.id,
          description: step.description,
          tool: step.tool,
          args,
          reason,
        },
        this.#controller.signal,
        (level, message) => this.#report.note(i, level, message),
      );
    } finally {
      this.#awaitingApproval--;
      await new Promise<void>((resolve) => {
        this.#slotWaiters.push(resolve);
        this.#pump();
      });
      // The person's answer and the queue for a slot after it: neither is the tool's time.
      this.#approvalWait[i] += performance.now() - asked;
    }
    return this.#stopping ? undefined : decision;
  }

  #settle(i: number, outcome: Outcome): void {
    this.#running--;
    switch (outcome) {
      case "completed":
        this.#scheduler.settle(i, NO_POISON);
        break;
      case "skipped":
        this.#scheduler.settle(i, SKIP);
        break;
      case "failed":
        this.#scheduler.settle(i, BLOCK);
        break;
      case "stop":
      case "abort":
        this.#stopping = true;
        if (outcome === "abort") this.#aborted = true;
        this.#scheduler.settle(i, BLOCK);
        break;
      case "waiting":
        // Recovery inserted steps before this one; it runs again when they are done.
        break;
      case "interrupted":
        this.#scheduler.requeue(i);
        this.#setStatus(i, "pending");
        break;
    }
    this.#saver.schedule();
    this.#pump();
  }

  async #runStep(i: number): Promise<Outcome> {
    const step = this.#nodes[i];
    const signal = this.#controller.signal;
    if (this.#startedAt[i] === 0) this.#startedAt[i] = performance.now();
    let approvedArgs: unknown = undefined;
    let retries = 0;
    for (;;) {
      this.#attempts[i]++;
      const info = this.#report.info(i);
      await this.#report.emit("onStepStart", info);
      let args: Record<string, unknown> = step.args;
      const ctx = this.#toolContext(i);
      try {
        if (this.#hasRefs[i]) args = resolveRefs(step.args, this.#lookup, step.id);
        if (approvedArgs !== step.args) {
          const reason = await approvalReason(step, args, this.#tools, ctx);
          if (reason !== undefined) {
            const decision = this.#autoApproved(i, step, reason) ??
              await this.#approveWithoutSlot(i, args, reason);
            if (signal.aborted || decision === undefined) return "interrupted";
            if (!decision.approved) {
              const why = decision.reason ? ` (${decision.reason})` : "";
              this.#settleWith(i, "skipped", `User denied approval${why}`);
              await this.#report.emit("onStepEnd", this.#report.endInfo(info, i), step.result);
              return "skipped";
            }
          }
          approvedArgs = step.args;
        }
        signal.throwIfAborted();
        if (step.status !== "running") {
          // `running` in the plan file means "the tool may have started": saved (atomically)
          // before the tool runs, so a crash from here on is seen by the next run.
          this.#setStatus(i, "running");
          try {
            await this.#saver.saveNow();
          } catch (error) {
            const message = errorMessage(error);
            throw new Error(
              `the step could not be recorded as started, so its tool was not run (saving the plan failed: ${message})`,
              { cause: error },
            );
          }
          signal.throwIfAborted();
        }
        const value = await this.#tools.invoke(step.tool, args, ctx);
        if (signal.aborted) return "interrupted";
        this.#settleWith(i, "completed", undefined, value);
        await this.#report.emit("onStepEnd", this.#report.endInfo(info, i), step.result);
        return "completed";
      } catch (error) {
        if (signal.aborted) return "interrupted";
        const message = errorMessage(error);
        await this.#report.emit("onStepError", info, error);
        const strategy = this.#strategy(step);
        if (strategy.kind === "retry" && retries < strategy.count) {
          retries++;
          const delay = backoffDelay(retries, {
            initialMs: strategy.backoffMs ?? this.#o.retryBackoffMs ?? 1000,
            maxMs: this.#o.maxBackoffMs,
          });
          this.#report.note(
            i,
            "warn",
            `attempt ${retries} failed (retry ${retries}/${strategy.count} in ${delay} ms): ${message}`,
          );
          await this.#report.emit("onStepRetry", info, retries, error);
          try {
            await sleep(delay, signal);
          } catch {
            return "interrupted";
          }
          continue;
        }
        if (strategy.kind === "recover") {
          const max = strategy.maxAttempts ?? this.#o.maxRecoveries ?? 2;
          if (this.#recoveries[i] < max) {
            this.#recoveries[i]++;
            const outcome = await this.#recover(i, message);
            if (signal.aborted) return "interrupted";
            if (outcome === "retry") {
              retries = 0;
              continue;
            }
            if (outcome !== "failed") {
              if (outcome !== "waiting") {
                await this.#report.emit("onStepEnd", this.#report.endInfo(info, i), step.result);
              }
              return outcome;
            }
          } else {
            this.#report.note(i, "error", `no recovery left (${max} used)`);
          }
        }
        this.#fail(i, error);
        await this.#report.emit("onStepEnd", this.#report.endInfo(info, i), step.result);
        return strategy.kind === "continue" ? "failed" : "stop";
      }
    }
  }

  /** `autoApprove` covers the step: approved without asking (and without giving the slot up). */
  #autoApproved(i: number, step: Step, reason: string): { approved: true } | undefined {
    if (!autoApproves(this.#o.autoApprove, step.tool)) return undefined;
    this.#report.note(i, "info", `approved automatically (${reason})`);
    return { approved: true };
  }

  async #recover(
    i: number,
    error: string,
  ): Promise<"retry" | "skipped" | "waiting" | "abort" | "failed"> {
    const step = this.#nodes[i];
    const attempt = this.#recoveries[i];
    this.#report.note(i, "warn", `failed: ${error}; asking for a recovery (round ${attempt})`);
    let decision: RecoveryDecision;
    try {
      decision = await askRecovery({
        plan: this.plan,
        step: { ...step, status: "failed", result: this.#result(i, false, undefined, error) },
        error,
        attempt,
        backend: this.#o.backend!,
        tools: this.#tools,
        cwd: this.#root,
        model: this.#o.model,
        signal: this.#controller.signal,
        check: (d) => {
          const problems = this.#checkDecision(i, d);
          return problems.length ? { ok: false, problems } : { ok: true };
        },
      });
    } catch (failure) {
      if (this.#controller.signal.aborted) return "failed";
      const message = errorMessage(failure);
      this.#report.note(i, "error", message);
      return "failed";
    }
    const reason = decision.reason ? `: ${decision.reason}` : "";
    switch (decision.action) {
      case "retry":
        if (decision.args) this.#changeArgs(i, decision.args);
        this.#report.note(
          i,
          "info",
          `recovery: retry${decision.args ? " with new args" : ""}${reason}`,
        );
        return "retry";
      case "skip":
        this.#settleWith(i, "skipped", `Skipped by recovery${reason}`);
        return "skipped";
      case "abort":
        this.#settleWith(i, "failed", `${error} (recovery aborted the run${reason})`);
        this.#firstError ??= `Step "${step.id}" failed and recovery aborted the run${reason}`;
        return "abort";
      case "insert": {
        const added = this.#insertSteps(i, decision);
        this.#report.note(
          i,
          "info",
          `recovery: inserted ${added.join(", ")} before ${step.id}${reason}`,
        );
        return "waiting";
      }
    }
  }

  /** Validates a recovery decision against the plan as it would be after applying it. */
  #checkDecision(i: number, decision: RecoveryDecision): string[] {
    if (decision.action === "skip" || decision.action === "abort") return [];
    return checkSteps(stepsAfterDecision(this.plan.steps, this.#nodes[i], decision), this.#tools)
      .map((p) => p.message);
  }

  #changeArgs(i: number, args: Record<string, unknown>): void {
    this.#nodes[i].args = args;
    this.#hasRefs[i] = mayHaveRefs(args);
    this.#bumpVersion();
  }

  #insertSteps(i: number, decision: RecoveryDecision): string[] {
    const step = this.#nodes[i];
    if (decision.args) this.#changeArgs(i, decision.args);
    const newSteps = insertedSteps(decision);
    const at = this.plan.steps.indexOf(step);
    this.plan.steps.splice(at, 0, ...newSteps);
    this.plan.steps.forEach((s, k) => (s.order = k + 1));
    step.dependsOn = [...step.dependsOn, ...newSteps.map((s) => s.id)];
    this.#bumpVersion();
    // Add the new nodes, make the failed step wait for them, then start them.
    const first = this.#addSteps(newSteps);
    this.#scheduler.waitFor(i, first);
    this.#setStatus(i, "blocked");
    this.#scheduler.admit(first);
    return newSteps.map((s) => s.id);
  }

  #bumpVersion(): void {
    this.plan.version++;
    this.plan.updatedAt = new Date().toISOString();
  }

  #strategy(step: Step): ErrorStrategy {
    return step.onError === undefined
      ? this.#defaultStrategy
      : parseOnError(step.onError) ?? this.#defaultStrategy;
  }

  #fail(i: number, error: unknown): void {
    const message = errorMessage(error);
    this.#firstError ??= `Step "${this.#nodes[i].id}" failed: ${message}`;
    this.#settleWith(i, "failed", message);
  }

  #settleWith(i: number, status: StepStatus, error?: string, value?: unknown): void {
    const step = this.#nodes[i];
    step.result = this.#result(i, status === "completed", value, error);
    this.#setStatus(i, status, true);
  }

  #result(i: number, ok: boolean, value: unknown, error: string | undefined): StepResult {
    const timing = {
      startedAt: this.#startedAt[i],
      approvalWait: this.#approvalWait[i],
      attempts: this.#attempts[i],
    };
    return stepResult(timing, ok, value, error);
  }

  #setStatus(i: number, status: StepStatus, withResult = false): void {
    const step = this.#nodes[i];
    if (step.status === status && !withResult) return;
    step.status = status;
    this.#report.progress(i, withResult ? { result: step.result } : undefined);
  }

  #toolContext(i: number): PlanToolContext {
    const step = this.#nodes[i];
    return {
      ...this.#o.toolContext,
      workspaceRoot: this.#root,
      signal: this.#controller.signal,
      stepId: step.id,
      planId: this.plan.id,
      runId: this.runId,
      reportProgress: (percent: number, message?: string) => {
        if (step.status !== "running") return;
        const p = Math.max(0, Math.min(100, percent));
        this.#report.progress(
          i,
          message ? { progress: p, logs: [logEntry("info", message)] } : { progress: p },
        );
      },
      log: (message: string) => this.#report.note(i, "info", message),
    };
  }

  #cancel(reason: unknown): void {
    if (this.#cancelled || this.#finished) return;
    this.#cancelled = true;
    this.#stopping = true;
    this.#firstError ??= `Cancelled${reason === undefined ? "" : `: ${errorMessage(reason)}`}`;
    this.#controller.abort(reason);
    void this.#report.emit("onAbort", {
      runId: this.runId,
      planId: this.plan.id,
      reason: String(reason),
    });
    // Nothing running: finish now (otherwise the last running step finishes the run).
    if (this.#running === 0 && this.#nodes.length > 0) this.#pump();
  }

  async #finish(): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    this.#finalStatuses();
    const summary = summarizeRun({
      runId: this.runId,
      plan: this.plan,
      cancelled: this.#cancelled,
      aborted: this.#aborted,
      firstError: this.#firstError,
      durationMs: Math.round((performance.now() - this.#startTime) * 1000) / 1000,
      startedAt: this.#startIso,
      maxParallel: this.#maxParallel,
    });
    const status = summary.status;
    // Wait for a save in flight, then save the final state.
    await this.#saver.flush();
    const ctx = {
      runId: this.runId,
      planId: this.plan.id,
      taskId: this.plan.taskId,
      status,
      summary,
    };
    await this.#report.emit("onStateChange", status as RunState, "running", ctx);
    await this.#report.emit("onPlanEnd", this.plan, ctx);
    this.#report.log.close();
    this.#resolve(summary);
  }

  /**
   * After a stop: steps whose dependencies failed become `blocked`; steps that simply did not get to
   * run go back to `pending`, so a later run picks them up.
   */
  #finalStatuses(): void {
    const n = this.#nodes.length;
    const blocked = this.#scheduler.blockedAfterStop();
    for (let i = 0; i < n; i++) {
      if (this.#scheduler.settled(i)) continue;
      if (blocked[i]) {
        const culprit = this.#scheduler.culprit(i);
        this.#nodes[i].result = this.#result(
          i,
          false,
          undefined,
          culprit
            ? `Blocked because step "${culprit}" failed`
            : "Blocked because a dependency failed",
        );
        this.#setStatus(i, "blocked", true);
      } else {
        this.#setStatus(i, "pending");
      }
    }
  }
}
