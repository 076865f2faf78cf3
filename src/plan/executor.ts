/**
 * The DAG executor of tool plans (docs/tool-plans.md, "Executor"):
 *
 * - scheduling by in-degree counting (`scheduler.ts`) — each step is queued once, when its last
 *   dependency settles — so a run is O(V+E), not a repeated scan of every step;
 * - ready steps run in parallel up to `concurrency` (default 4);
 * - `$step` references resolved in the arguments of each step just before it runs;
 * - approval gates (`approvals.ts`): a step waiting for its approver gives its slot back
 *   (independent steps go on) and approvals are asked concurrently; denial → `skipped`, and the
 *   step's dependents are skipped;
 * - per-step `onError`: `fail`, `continue`, `retry=N` with exponential backoff, `recover` (LLM);
 * - cancellation; progress as an `AsyncIterable<ProgressEvent>` plus the shared step events.
 *
 * @module
 */
import { backoffDelay, sleep } from "../backoff.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { createEventEmitter, type EventEmitter } from "../events/emitter.ts";
import type { ExecutorEvents, RunState, StepInfo } from "../events/types.ts";
import type { LlmBackend } from "../llm/types.ts";
import { stepFromNew } from "./new_step.ts";
import { parseOnError } from "./on_error.ts";
import { EventLog } from "./progress.ts";
import { askRecovery } from "./recovery.ts";
import { mayHaveRefs, type RefLookup, resolveRefs } from "./refs.ts";
import { PlanSchema } from "./schema.ts";
import { STEP_STATUSES } from "./types.ts";
import { BLOCK, NO_POISON, SKIP, StepScheduler } from "./scheduler.ts";
import { type ApprovalOutcome, approvalReason, askApprover, autoApproves } from "./approvals.ts";
import { checkSteps, PlanValidationError } from "./validate.ts";
import type {
  ApprovalRequest,
  Approver,
  ErrorStrategy,
  ExecutionStatus,
  ExecutionSummary,
  LogEntry,
  OnErrorSetting,
  Plan,
  PlanToolContext,
  PlanToolRegistry,
  ProgressEvent,
  RecoveryDecision,
  Step,
  StepResult,
  StepStatus,
} from "./types.ts";
import { newRunId } from "../store/run_id.ts";

/** Options of {@linkcode executePlan} and {@linkcode startPlan}. */
export interface ExecutePlanOptions {
  /** The tools steps may call (a `ToolRegistry`). */
  tools: PlanToolRegistry;
  /** Workspace root handed to tools (default: the current directory). */
  workspaceRoot?: string;
  /** How many steps may run at once (default 4). */
  concurrency?: number;
  /** Asked before a step that needs approval runs. Without it, such steps are denied (skipped). */
  approver?: Approver;
  /** `true` approves everything; a list approves those tools without asking. */
  autoApprove?: boolean | readonly string[];
  /** The LLM backend used by `onError: "recover"` (required when a step uses it). */
  backend?: LlmBackend;
  /** Model override for recovery calls. */
  model?: string;
  /** Recovery rounds per step when `onError` is plain `"recover"` (default 2). */
  maxRecoveries?: number;
  /** Base delay before the first retry in ms, doubled for each further retry (default 1000). */
  retryBackoffMs?: number;
  /** Upper bound of one retry delay in ms (default 30 000). */
  maxBackoffMs?: number;
  /** `onError` of steps that set none (default `"fail"`). */
  defaultOnError?: OnErrorSetting;
  /** Handlers of the shared step events (onPlanStart, onStepStart, onStepRetry, …). */
  events?: ExecutorEvents | readonly ExecutorEvents[];
  /** Cancels the run. */
  signal?: AbortSignal;
  /** Run id (default: a random UUID). */
  runId?: string;
  /** Called with every progress event, as it happens. */
  onProgress?: (event: ProgressEvent) => void;
  /**
   * Saves the plan. Called after every step settles (calls never overlap; changes made while a save
   * runs are saved right after it) and once at the end.
   */
  persist?: (plan: Plan) => void | Promise<void>;
  /** Extra fields for every tool context. */
  toolContext?: Record<string, unknown>;
  /** Validate the plan first (default true). Turn off only for plans validated already. */
  validate?: boolean;
  /**
   * Steps found `running` were started by an earlier run that stopped (killed, crashed) before
   * their outcome was saved: the tool may have done its work. Such a step runs again on its own
   * only when its tool is declared `idempotent`; others run again when this is `true` or lists
   * their ids — otherwise {@linkcode startPlan} throws `PLAN_STEP_INTERRUPTED` before anything runs.
   */
  rerunInterrupted?: boolean | readonly string[];
}

/** A run in progress (see {@linkcode startPlan}). */
export interface PlanRun {
  /** The run id. */
  readonly runId: string;
  /** The live plan: statuses and results change as the run goes. */
  readonly plan: Plan;
  /** Every progress event from the start of the run; ends when the run ends. */
  readonly progress: AsyncIterable<ProgressEvent>;
  /** Resolves when the run has ended (it never rejects for step failures). */
  readonly summary: Promise<ExecutionSummary>;
  /** Cancels the run: no new step starts, running tools get an aborted signal. */
  cancel(reason?: string): void;
}

type Outcome = "completed" | "failed" | "stop" | "skipped" | "waiting" | "interrupted" | "abort";

/**
 * Runs a plan to the end.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { ToolRegistry } from "../tools/registry.ts";
 * import { executePlan } from "./executor.ts";
 * import { parsePlan } from "./schema.ts";
 *
 * const tools = new ToolRegistry().register({
 *   name: "add",
 *   description: "Adds two numbers",
 *   inputSchema: z.object({ a: z.number(), b: z.number() }),
 *   execute: ({ a, b }) => a + b,
 * });
 * const plan = parsePlan({
 *   id: "p1", taskId: "t1", version: 1, createdAt: new Date().toISOString(),
 *   steps: [
 *     { id: "one", description: "1 + 2", tool: "add", args: { a: 1, b: 2 } },
 *     { id: "two", description: "3 + 4", tool: "add", args: { a: "$one", b: 4 }, dependsOn: ["one"] },
 *   ],
 * });
 * const summary = await executePlan(plan, { tools });
 * console.log(summary.status, summary.plan.steps[1].result?.value); // "completed" 7
 * ```
 */
export function executePlan(plan: Plan, options: ExecutePlanOptions): Promise<ExecutionSummary> {
  try {
    return startPlan(plan, options).summary;
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Starts a plan and returns a handle with the live plan, the progress stream, the summary and
 * `cancel()`. The given plan is not modified: the run works on a copy (`run.plan`). Steps that are
 * `completed` or `skipped` already are kept (that is how a stopped run continues); every other step
 * runs.
 *
 * @throws PlanValidationError when the plan is invalid (before anything runs)
 * @throws StepflowError `PLAN_RECOVER_NO_BACKEND` when a step uses `recover` without a backend
 * @throws StepflowError `PLAN_STEP_INTERRUPTED` when a step was left `running` by an earlier run
 *   and its tool is not idempotent (see `rerunInterrupted`)
 *
 * @example
 * ```ts ignore
 * const run = startPlan(plan, { tools, concurrency: 8 });
 * for await (const event of run.progress) console.log(event.stepId, event.status);
 * const summary = await run.summary;
 * ```
 */
export function startPlan(plan: Plan, options: ExecutePlanOptions): PlanRun {
  return new Execution(plan, options).start();
}

class Execution {
  readonly plan: Plan;
  readonly runId: string;
  readonly #o: ExecutePlanOptions;
  readonly #tools: PlanToolRegistry;
  readonly #root: string;
  readonly #limit: number;
  readonly #emitter: EventEmitter;
  readonly #log = new EventLog<ProgressEvent>();
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
  #order = 0;
  #persisting: Promise<void> | undefined;
  #persistAgain = false;
  /** Save generations: requested (state changed) and durably written. */
  #saveRequested = 0;
  #saveWritten = 0;
  readonly #saveWaiters: {
    generation: number;
    resolve: () => void;
    reject: (error: unknown) => void;
  }[] = [];
  /** Interrupted steps that run again, with the reason (logged when the run starts). */
  readonly #reruns = new Map<string, string>();
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
    const strategy = parseOnError(options.defaultOnError);
    if (!strategy) {
      throw new StepflowError(
        "USAGE",
        `defaultOnError ${
          JSON.stringify(options.defaultOnError)
        } is not a failure strategy ("fail", "continue", "retry=N", "recover").`,
      );
    }
    this.#defaultStrategy = strategy;

    if (options.validate === false) {
      this.plan = { ...plan, steps: plan.steps.map((s) => ({ ...s })) };
    } else {
      // Parsing copies the plan, so the caller's object is never modified.
      const parsed = PlanSchema.safeParse(plan);
      if (!parsed.success) {
        throw new PlanValidationError(
          parsed.error.issues.map((i) => ({
            code: "PLAN_SCHEMA" as const,
            message: `${i.path.join(".")}: ${i.message}`,
          })),
        );
      }
      this.plan = parsed.data;
      const problems = checkSteps(this.plan.steps, this.#tools);
      if (problems.length > 0) throw new PlanValidationError(problems);
    }
    if (!options.backend) {
      const needs = this.plan.steps.find((s) =>
        (s.onError === undefined ? this.#defaultStrategy : parseOnError(s.onError))?.kind ===
          "recover"
      );
      if (needs) {
        throw new StepflowError(
          "PLAN_RECOVER_NO_BACKEND",
          `Step "${needs.id}" uses onError "recover", which asks an LLM, but no backend was given. Pass a backend (CLI: --backend …), or change its onError.`,
          { details: { stepId: needs.id } },
        );
      }
    }
    this.#checkInterrupted(options.rerunInterrupted ?? false);
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
        if (this.#emitter.has("onStepEnd")) {
          void this.#emit("onStepEnd", { ...this.#info(i), status }, this.#nodes[i].result);
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
      progress: this.#log,
      summary: this.#summary,
      cancel: (reason?: string) => this.#cancel(reason ?? "cancelled"),
    };
  }

  async #run(): Promise<void> {
    const ctx = { runId: this.runId, planId: this.plan.id, taskId: this.plan.taskId };
    await this.#emit("onStateChange", "running", "idle", ctx);
    await this.#emit("onPlanStart", this.plan, ctx);
    this.#init();
    this.#pump();
  }

  #init(): void {
    const first = this.#addSteps(this.plan.steps);
    for (let i = first; i < this.#nodes.length; i++) {
      const why = this.#reruns.get(this.#nodes[i].id);
      if (why !== undefined) this.#progress(i, { logs: [log("warn", why)] });
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
    }
    return this.#scheduler.add(steps);
  }

  /**
   * A step saved as `running` was started by a run that stopped before saving its outcome. Re-run
   * it only when that is safe (idempotent tool) or allowed; otherwise stop before anything runs.
   */
  #checkInterrupted(allowed: boolean | readonly string[]): void {
    const refused: Step[] = [];
    for (const step of interruptedSteps(this.plan)) {
      const note =
        `was running when an earlier run stopped (its outcome was not saved): running it again`;
      if (this.#tools.descriptor(step.tool)?.idempotent === true) {
        this.#reruns.set(step.id, `${note} (${step.tool} is idempotent)`);
      } else if (allowed === true || (Array.isArray(allowed) && allowed.includes(step.id))) {
        this.#reruns.set(
          step.id,
          `${note} although ${step.tool} is not idempotent: its effect may happen twice (re-run allowed)`,
        );
      } else refused.push(step);
    }
    if (refused.length > 0) throw interruptedError(refused);
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
    let decision: ApprovalOutcome;
    try {
      decision = await this.#approve(i, args, reason);
    } finally {
      this.#awaitingApproval--;
      await new Promise<void>((resolve) => {
        this.#slotWaiters.push(resolve);
        this.#pump();
      });
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
    this.#schedulePersist();
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
      const info = this.#info(i);
      if (this.#emitter.has("onStepStart")) await this.#emitter.emit("onStepStart", info);
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
              await this.#emit("onStepEnd", this.#endInfo(info, i), step.result);
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
            await this.#saveNow();
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
        if (this.#emitter.has("onStepEnd")) {
          await this.#emitter.emit("onStepEnd", this.#endInfo(info, i), step.result);
        }
        return "completed";
      } catch (error) {
        if (signal.aborted) return "interrupted";
        const message = errorMessage(error);
        await this.#emit("onStepError", info, error);
        const strategy = this.#strategy(step);
        if (strategy.kind === "retry" && retries < strategy.count) {
          retries++;
          const delay = backoffDelay(retries, {
            initialMs: strategy.backoffMs ?? this.#o.retryBackoffMs ?? 1000,
            maxMs: this.#o.maxBackoffMs,
          });
          this.#progress(i, {
            logs: [
              log(
                "warn",
                `attempt ${retries} failed (retry ${retries}/${strategy.count} in ${delay} ms): ${message}`,
              ),
            ],
          });
          await this.#emit("onStepRetry", info, retries, error);
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
                await this.#emit("onStepEnd", this.#endInfo(info, i), step.result);
              }
              return outcome;
            }
          } else {
            this.#progress(i, {
              logs: [log("error", `no recovery left (${max} used)`)],
            });
          }
        }
        this.#fail(i, error);
        await this.#emit("onStepEnd", this.#endInfo(info, i), step.result);
        return strategy.kind === "continue" ? "failed" : "stop";
      }
    }
  }

  /** `autoApprove` covers the step: approved without asking (and without giving the slot up). */
  #autoApproved(i: number, step: Step, reason: string): { approved: true } | undefined {
    if (!autoApproves(this.#o.autoApprove, step.tool)) return undefined;
    this.#progress(i, { logs: [log("info", `approved automatically (${reason})`)] });
    return { approved: true };
  }

  /** Asks the approver about node `i` (see {@linkcode askApprover}). */
  #approve(i: number, args: Record<string, unknown>, reason: string): Promise<ApprovalOutcome> {
    const step = this.#nodes[i];
    const request: ApprovalRequest = {
      planId: this.plan.id,
      stepId: step.id,
      description: step.description,
      tool: step.tool,
      args,
      reason,
    };
    return askApprover(
      this.#o.approver,
      request,
      this.#controller.signal,
      (level, message) => this.#progress(i, { logs: [log(level, message)] }),
    );
  }

  async #recover(
    i: number,
    error: string,
  ): Promise<"retry" | "skipped" | "waiting" | "abort" | "failed"> {
    const step = this.#nodes[i];
    const attempt = this.#recoveries[i];
    this.#progress(i, {
      logs: [log("warn", `failed: ${error}; asking for a recovery (round ${attempt})`)],
    });
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
      this.#progress(i, { logs: [log("error", message)] });
      return "failed";
    }
    const reason = decision.reason ? `: ${decision.reason}` : "";
    switch (decision.action) {
      case "retry":
        if (decision.args) this.#changeArgs(i, decision.args);
        this.#progress(i, {
          logs: [log("info", `recovery: retry${decision.args ? " with new args" : ""}${reason}`)],
        });
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
        this.#progress(i, {
          logs: [log("info", `recovery: inserted ${added.join(", ")} before ${step.id}${reason}`)],
        });
        return "waiting";
      }
    }
  }

  /** Validates a recovery decision against the plan as it would be after applying it. */
  #checkDecision(i: number, decision: RecoveryDecision): string[] {
    if (decision.action === "skip" || decision.action === "abort") return [];
    const step = this.#nodes[i];
    const candidate = this.plan.steps.map((s) =>
      s === step ? { ...s, args: decision.args ?? s.args } : s
    );
    if (decision.action === "insert") {
      const newSteps = (decision.steps ?? []).map((s, k) => stepFromNew(s, k + 1));
      const at = candidate.findIndex((s) => s.id === step.id);
      candidate[at] = {
        ...candidate[at],
        dependsOn: [...step.dependsOn, ...newSteps.map((s) => s.id)],
      };
      candidate.splice(at, 0, ...newSteps);
    }
    return checkSteps(candidate, this.#tools).map((p) => p.message);
  }

  #changeArgs(i: number, args: Record<string, unknown>): void {
    this.#nodes[i].args = args;
    this.#hasRefs[i] = mayHaveRefs(args);
    this.#bumpVersion();
  }

  #insertSteps(i: number, decision: RecoveryDecision): string[] {
    const step = this.#nodes[i];
    if (decision.args) this.#changeArgs(i, decision.args);
    const newSteps = (decision.steps ?? []).map((s, k) => stepFromNew(s, k + 1));
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
    const started = this.#startedAt[i];
    const result: StepResult = {
      ok,
      duration: started === 0 ? 0 : Math.round((performance.now() - started) * 1000) / 1000,
      timestamp: new Date().toISOString(),
    };
    if (value !== undefined) result.value = value;
    if (error !== undefined) result.error = error;
    if (this.#attempts[i] > 0) result.attempts = this.#attempts[i];
    return result;
  }

  #setStatus(i: number, status: StepStatus, withResult = false): void {
    const step = this.#nodes[i];
    if (step.status === status && !withResult) return;
    step.status = status;
    this.#progress(i, withResult ? { result: step.result } : undefined);
  }

  #progress(
    i: number,
    extra?: { result?: StepResult; logs?: LogEntry[]; progress?: number },
  ): void {
    const step = this.#nodes[i];
    const event: ProgressEvent = {
      taskId: this.plan.taskId,
      planId: this.plan.id,
      stepId: step.id,
      status: step.status,
    };
    if (extra?.progress !== undefined) event.progress = extra.progress;
    if (extra?.result !== undefined) event.result = extra.result;
    if (extra?.logs !== undefined) event.logs = extra.logs;
    this.#log.push(event);
    if (extra?.logs !== undefined || extra?.progress !== undefined) this.#emitLog(i, extra);
    if (this.#o.onProgress) {
      try {
        this.#o.onProgress(event);
      } catch {
        // A broken progress callback must not break the run.
      }
    }
  }

  /** The log lines (or else the percentage) of a progress report, as shared `onStepLog` events. */
  #emitLog(i: number, extra: { logs?: LogEntry[]; progress?: number }): void {
    if (!this.#emitter.has("onStepLog")) return;
    const info = this.#info(i, this.#order);
    if (extra.logs === undefined) {
      void this.#emit("onStepLog", info, `${extra.progress}%`, "info");
      return;
    }
    for (const entry of extra.logs) void this.#emit("onStepLog", info, entry.message, entry.level);
  }

  /** The info of a step's end: the start's, with the status the step settled in. */
  #endInfo(info: StepInfo, i: number): StepInfo {
    return { ...info, status: this.#nodes[i].status };
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
        this.#progress(
          i,
          message ? { progress: p, logs: [log("info", message)] } : { progress: p },
        );
      },
      log: (message: string) => this.#progress(i, { logs: [log("info", message)] }),
    };
  }

  /** A step's event info; log lines keep the order of the step iteration they belong to. */
  #info(i: number, order = ++this.#order): StepInfo {
    const step = this.#nodes[i];
    return {
      runId: this.runId,
      stepId: step.id,
      desc: step.description,
      order,
      path: [step.description],
      iteration: this.#attempts[i],
      tool: step.tool,
      planId: this.plan.id,
    };
  }

  #cancel(reason: unknown): void {
    if (this.#cancelled || this.#finished) return;
    this.#cancelled = true;
    this.#stopping = true;
    this.#firstError ??= `Cancelled${reason === undefined ? "" : `: ${errorMessage(reason)}`}`;
    this.#controller.abort(reason);
    void this.#emit("onAbort", { runId: this.runId, planId: this.plan.id, reason: String(reason) });
    // Nothing running: finish now (otherwise the last running step finishes the run).
    if (this.#running === 0 && this.#nodes.length > 0) this.#pump();
  }

  #schedulePersist(): void {
    const persist = this.#o.persist;
    if (!persist) return;
    this.#saveRequested++;
    if (this.#persisting) {
      this.#persistAgain = true;
      return;
    }
    this.#persisting = (async () => {
      // Yield first: whoever scheduled this save registers its waiter before it can complete.
      await null;
      do {
        this.#persistAgain = false;
        const generation = this.#saveRequested;
        let failure: unknown = undefined;
        try {
          await persist(this.plan);
        } catch (error) {
          failure = error;
          const message = errorMessage(error);
          console.warn(`[stepflow] saving the plan failed: ${message}`);
        }
        this.#saveWritten = generation;
        this.#wakeSaveWaiters(failure);
      } while (this.#persistAgain);
      this.#persisting = undefined;
    })();
  }

  /**
   * Saves the current state and waits until a save that includes it has been written; rejects
   * when that save failed (the caller must not go on as if it were recorded).
   */
  #saveNow(): Promise<void> {
    if (!this.#o.persist) return Promise.resolve();
    this.#schedulePersist();
    const generation = this.#saveRequested;
    return new Promise((resolve, reject) => {
      this.#saveWaiters.push({ generation, resolve, reject });
    });
  }

  #wakeSaveWaiters(failure: unknown): void {
    const waiters = this.#saveWaiters;
    for (let k = waiters.length - 1; k >= 0; k--) {
      if (waiters[k].generation > this.#saveWritten) continue;
      const waiter = waiters.splice(k, 1)[0];
      if (failure === undefined) waiter.resolve();
      else waiter.reject(failure);
    }
  }

  async #finish(): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    this.#finalStatuses();
    const steps = {} as Record<StepStatus, string[]>;
    for (const s of STEP_STATUSES) steps[s] = [];
    for (const step of this.plan.steps) steps[step.status].push(step.id);
    let status: ExecutionStatus;
    if (this.#cancelled) status = "cancelled";
    else if (this.#aborted) status = "aborted";
    else if (
      steps.failed.length || steps.blocked.length || steps.pending.length || steps.ready.length ||
      steps.running.length
    ) {
      status = "failed";
    } else status = "completed";
    const summary: ExecutionSummary = {
      runId: this.runId,
      planId: this.plan.id,
      taskId: this.plan.taskId,
      status,
      ok: status === "completed",
      steps,
      durationMs: Math.round((performance.now() - this.#startTime) * 1000) / 1000,
      startedAt: this.#startIso,
      finishedAt: new Date().toISOString(),
      maxParallel: this.#maxParallel,
      plan: this.plan,
    };
    if (status !== "completed") {
      summary.error = this.#firstError ??
        (steps.pending.length
          ? `${steps.pending.length} step(s) could not start (${
            steps.pending.slice(0, 5).join(", ")
          })`
          : "the plan did not complete");
    }
    // Wait for a save in flight, then save the final state.
    if (this.#o.persist) {
      await this.#persisting;
      this.#schedulePersist();
      await this.#persisting;
    }
    const ctx = {
      runId: this.runId,
      planId: this.plan.id,
      taskId: this.plan.taskId,
      status,
      summary,
    };
    await this.#emit("onStateChange", status as RunState, "running", ctx);
    await this.#emit("onPlanEnd", this.plan, ctx);
    this.#log.close();
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

  async #emit<E extends keyof ExecutorEvents>(
    event: E,
    ...args: Parameters<NonNullable<ExecutorEvents[E]>>
  ): Promise<void> {
    if (this.#emitter.has(event)) await this.#emitter.emit(event, ...args);
  }
}

/**
 * The steps an earlier run left `running`: started (the tool may have done its work) but no
 * outcome saved, because the process was killed or crashed. Idempotent tools included.
 *
 * @example
 * ```ts ignore
 * const left = interruptedSteps(plan, tools).filter((s) => !tools.descriptor(s.tool)?.idempotent);
 * ```
 */
export function interruptedSteps(plan: Plan): Step[] {
  return plan.steps.filter((s) => s.status === "running");
}

/**
 * The `PLAN_STEP_INTERRUPTED` error for interrupted steps whose tools are not idempotent: names
 * each step and tool and says how to go on.
 */
export function interruptedError(steps: readonly Step[]): StepflowError {
  const list = steps.map((s) => `"${s.id}" (${s.tool})`).join(", ");
  const one = steps.length === 1;
  return new StepflowError(
    "PLAN_STEP_INTERRUPTED",
    `Step ${list} ${
      one ? "was" : "were"
    } running when an earlier run stopped (killed or crashed) before the outcome was saved: the tool may have done its work already, and ${
      one ? `${steps[0].tool} is` : "these tools are"
    } not declared idempotent, so running again could repeat the effect. Check the effect, then re-run anyway (CLI: --yes; API: rerunInterrupted), or set the step's status in the plan file to "completed" (keep the effect) or "pending" (run it again).`,
    { details: { steps: steps.map((s) => ({ id: s.id, tool: s.tool })) } },
  );
}

function log(level: LogEntry["level"], message: string): LogEntry {
  return { level, message, timestamp: new Date().toISOString() };
}
