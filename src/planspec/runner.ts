/**
 * The PlanSpec run loop: rounds of steps in document order, each step's outcome, and the run's
 * bookkeeping (plan file, lock, history, events). The stages it hands a step to live beside it:
 * `step_context.ts` (what a step is told), `reflection.ts` (a step that did not succeed),
 * `replanning.ts` (end-of-round re-planning and plan commands), `run_context.ts` (what they share
 * and the backend calls), `step_statuses.ts` (which step is next, container statuses).
 *
 * @module
 */
import { removeStaleTemps } from "../atomic_write.ts";
import { renderPromptTemplate } from "../engine/prompt_template.ts";
import { StepflowError } from "../errors.ts";
import { findFileAccessError } from "../fs_error.ts";
import { createEventEmitter, type EventEmitter } from "../events/emitter.ts";
import type { RunState, StepInfo as EventStepInfo } from "../events/types.ts";
import {
  assertLockHeld,
  type HeldFileLock,
  lockPlanFile,
  planLockSubject,
} from "../store/file_lock.ts";
import { applyCommand } from "./commands.ts";
import { appendHistory, type PlanHistoryEntry, readHistory } from "./history.ts";
import { loadPlanPrompts, type PlanPrompts } from "./prompts.ts";
import { reflect } from "./reflection.ts";
import { replanRound } from "./replanning.ts";
import { askStep, oneLine, type PlanRunContext, type StepCounters } from "./run_context.ts";
import {
  PLAN_RUN_STEP_IDS,
  type PlanRunnerOptions,
  type PlanRunResult,
  type PlanRunStatus,
} from "./run_types.ts";
import { type StepOutput, stepOutputSchema } from "./runner_schemas.ts";
import { isVariableName, stepVariables, unavailableInputs } from "./step_context.ts";
import { historyFileFor, readPlanFile, writePlanFile } from "./store.ts";
import { blockedSteps, findNext, markActive, settle } from "./step_statuses.ts";
import { ancestorIds, isComplete, planProgress, walkSteps } from "./tree.ts";
import {
  createPlanCommand,
  type PlanOp,
  type PlanSpec,
  PlanStatus,
  type PlanStep,
} from "./types.ts";
import { planErrors, validatePlan } from "./validate.ts";
import { newRunId } from "../store/run_id.ts";

const MISSING_INPUT = "missing input";

/**
 * Executes a PlanSpec plan with an LLM, in four stages (docs/planspec.md, "The plan runner"):
 *
 * 1. **generation** happens before (`generatePlan`, `plan new`);
 * 2. **step execution**: leaf steps run in document order, each with its task, inputs, outputs and
 *    the run history; the answer is structured output `{status, result, outputs}` (plus `branch`
 *    for `decide` steps, `progress` for iterative subtasks). `OK` marks the step done;
 * 3. **step reflection** on any other status, with the folded plan state: `RETRY`, `ACCEPT`,
 *    `INTERACT` (asks the user, or blocks the step with the question when not interactive), or
 *    `PLAN_CMD` lines (`SKIP` / `REVISE` / `ADD`);
 * 4. **end-of-round re-planning** when a round ends with blocked or unfinished steps: `ADD`,
 *    `REVISE`, `REPLAN <id>` (new children are generated) or `REPLAN ALL` (a new plan), up to
 *    `maxRounds` rounds.
 *
 * The engine marks steps done, blocked and skipped itself; a `decide` step chooses a branch and the
 * other branches are skipped; a `subtask` counts its children in `| Progress: N/M`. With a `file`,
 * the plan is rewritten atomically after every step.
 *
 * Backend calls use the step ids of {@linkcode PLAN_RUN_STEP_IDS}.
 *
 * @example
 * ```ts
 * import { ScriptedBackend } from "../llm/scripted.ts";
 * import { parsePlan, PlanRunner } from "./mod.ts";
 * const plan = parsePlan("Goal: Greet\n## Steps\n1. [act] Write a greeting → greeting\n");
 * const backend = new ScriptedBackend({
 *   "planspec.step.1": [{ output: { status: "OK", result: "wrote it", outputs: { greeting: "hi" } } }],
 * });
 * const result = await new PlanRunner(plan, { backend }).run();
 * console.log(result.status, plan.steps[0].status); // "completed" "done"
 * ```
 */
export class PlanRunner {
  readonly #plan: PlanSpec;
  readonly #options: PlanRunnerOptions;
  readonly #emitter: EventEmitter;
  readonly #runId: string;
  /** The plan file's lock while `run()` runs. */
  #lock?: HeldFileLock;
  readonly #historyFile?: string;
  readonly #history: PlanHistoryEntry[] = [];
  readonly #variables = new Map<string, unknown>();
  #counters = new WeakMap<PlanStep, StepCounters>();
  /** What the stages (reflection, re-planning) see of this run, while `run()` runs. */
  #context?: PlanRunContext;
  /** Re-read the file once the lock is held: another run may have finished in between. */
  #reloadOnRun = false;
  #round = 1;
  #order = 0;
  #executed = 0;
  #state: RunState = "idle";
  #running = false;

  /**
   * Creates a runner for `plan`; nothing runs before {@linkcode PlanRunner.run}.
   *
   * @param plan the plan to run; it is changed in place as the run goes
   * @param options backend, file, limits, events
   */
  constructor(plan: PlanSpec, options: PlanRunnerOptions) {
    this.#plan = plan;
    this.#options = options;
    this.#emitter = createEventEmitter([options.events]);
    this.#runId = options.runId ?? newRunId();
    if (options.historyFile) this.#historyFile = options.historyFile;
    else if (options.file) this.#historyFile = historyFileFor(options.file);
  }

  /**
   * Loads a plan file and creates a runner that rewrites it after every step.
   *
   * @throws {StepflowError} when the file cannot be read or parsed
   */
  static async fromFile(
    file: string,
    options: Omit<PlanRunnerOptions, "file">,
  ): Promise<PlanRunner> {
    const runner = new PlanRunner(await readPlanFile(file), { ...options, file });
    runner.#reloadOnRun = true;
    return runner;
  }

  /** The plan being run (changed in place). */
  get plan(): PlanSpec {
    return this.#plan;
  }

  /** The run id reported in events. */
  get runId(): string {
    return this.#runId;
  }

  /**
   * Runs the plan until it is complete, blocked, failed or aborted. A plan with validation errors
   * is refused before anything runs.
   *
   * @throws {StepflowError} `PLANSPEC_INVALID` for an invalid plan, `PLAN_LOCKED` when another
   * run holds the file, `PLAN_RUNNING` when this runner is already running
   */
  async run(): Promise<PlanRunResult> {
    if (this.#running) {
      throw new StepflowError("PLAN_RUNNING", "This PlanRunner is already running.");
    }
    this.#checkValid();
    const file = this.#options.file;
    const lock = file
      ? lockPlanFile(file, { runId: this.#runId, onWarning: (m) => this.#log(`warning: ${m}`) })
      : undefined;
    this.#lock = lock;
    if (file) {
      try {
        // Under the lock: leftovers of a crashed writer go, and the file read is the latest.
        for (const temp of await removeStaleTemps(file)) {
          this.#log(`removed ${temp}, left by a run that was killed while writing the plan`);
        }
        if (this.#reloadOnRun) {
          Object.assign(this.#plan, await readPlanFile(file));
          this.#checkValid();
        }
      } catch (error) {
        lock?.release();
        throw error;
      }
    }
    this.#running = true;
    let status: PlanRunStatus = "blocked";
    let error: string | undefined;
    let errorCode: string | undefined;
    const ctx = { runId: this.#runId, file: this.#options.file };
    try {
      this.#context = this.#contextFor(await loadPlanPrompts(this.#options.prompts));
      const limit = await this.#resume();
      await this.#emitter.emit("onPlanStart", this.#plan, ctx);
      await this.#setState("running");
      status = await this.#loop(limit);
    } catch (e) {
      if (this.#options.signal?.aborted) {
        status = "aborted";
        error = "the run was aborted";
        await this.#emitter.emit("onAbort", ctx);
      } else {
        status = "failed";
        // A folder or history file that cannot be written says where and how to fix it.
        const known = e instanceof StepflowError ? e : findFileAccessError(e);
        error = known?.message ?? (e as Error)?.message ?? String(e);
        errorCode = known?.code;
      }
    } finally {
      try {
        settle(this.#plan.steps);
        await this.#save();
        await this.#record({ kind: "end", status, ...(error ? { reason: error } : {}) });
      } catch (e) {
        if (status !== "failed") {
          status = "failed";
          const access = findFileAccessError(e);
          error = `could not save the plan: ${access?.message ?? (e as Error).message}`;
          errorCode = access?.code;
        }
      }
      lock?.release();
      this.#lock = undefined;
      this.#running = false;
    }
    await this.#setState(
      status === "completed" ? "completed" : status === "aborted" ? "aborted" : "failed",
    );
    const result: PlanRunResult = {
      status,
      plan: this.#plan,
      progress: planProgress(this.#plan),
      rounds: this.#round,
      stepsExecuted: this.#executed,
      blocked: blockedSteps(this.#plan),
      variables: Object.fromEntries(this.#variables),
    };
    if (error !== undefined) result.error = error;
    if (errorCode !== undefined) result.errorCode = errorCode;
    await this.#emitter.emit("onPlanEnd", this.#plan, { ...ctx, status, error });
    return result;
  }

  #checkValid(): void {
    const errors = planErrors(validatePlan(this.#plan));
    if (errors.length > 0) {
      throw new StepflowError(
        "PLANSPEC_INVALID",
        `${this.#options.file ?? "The plan"} has errors; fix them before running:\n${
          errors.map((e) => `  - ${e}`).join("\n")
        }`,
        { details: { errors, file: this.#options.file } },
      );
    }
  }

  /**
   * Restores context from the history file: variables, the round, and the round budget. A run that
   * ended normally starts a new session (a fresh budget of rounds); a killed one continues its own.
   */
  async #resume(): Promise<number> {
    const maxRounds = this.#options.maxRounds ?? 3;
    if (this.#historyFile) {
      for (const entry of await readHistory(this.#historyFile)) this.#history.push(entry);
    }
    let lastRound = 0;
    let sessionStart = 0;
    let ended = true;
    for (const entry of this.#history) {
      if (entry.round > lastRound) lastRound = entry.round;
      if (entry.kind === "start") {
        sessionStart = entry.round;
        ended = false;
      }
      if (entry.kind === "end") ended = true;
      if (entry.kind === "step" && entry.outputs) {
        for (const [name, value] of Object.entries(entry.outputs)) this.#variables.set(name, value);
      }
    }
    if (this.#history.length === 0 || ended) {
      this.#round = lastRound + 1;
      await this.#record({ kind: "start" });
      await this.#record({ kind: "round" });
      return this.#round + maxRounds - 1;
    }
    this.#round = Math.max(lastRound, 1);
    this.#log(`continuing the interrupted run at round ${this.#round}`);
    return Math.max(sessionStart, 1) + maxRounds - 1;
  }

  async #loop(roundLimit: number): Promise<PlanRunStatus> {
    for (;;) {
      await this.#executeRound();
      settle(this.#plan.steps);
      await this.#save();
      if (isComplete(this.#plan)) return "completed";
      if (this.#round >= roundLimit) {
        this.#log(`round ${this.#round}: not converged and no rounds left`);
        return "blocked";
      }
      const changed = await replanRound(this.#context!);
      this.#unblockInputWaits();
      settle(this.#plan.steps);
      await this.#save();
      if (!changed && findNext(this.#plan.steps) === undefined) {
        this.#log("re-planning changed nothing; stopping");
        return "blocked";
      }
      this.#round++;
      await this.#record({ kind: "round" });
    }
  }

  async #executeRound(): Promise<void> {
    for (;;) {
      this.#options.signal?.throwIfAborted();
      settle(this.#plan.steps);
      const step = findNext(this.#plan.steps);
      if (!step) return;
      const cap = this.#options.maxStepExecutions ??
        Math.max(200, 10 * planProgress(this.#plan).total);
      if (this.#executed >= cap) {
        throw new StepflowError(
          "PLAN_RUN_LIMIT",
          `stopped after ${this.#executed} step executions (maxStepExecutions); the plan keeps changing without converging`,
        );
      }
      await this.#runStep(step);
      settle(this.#plan.steps);
      await this.#save();
    }
  }

  /**
   * Steps the engine blocked for a missing input get another chance after re-planning, when a
   * step that produces that input can run again.
   */
  #unblockInputWaits(): void {
    walkSteps(this.#plan.steps, (s) => {
      if (
        s.status === PlanStatus.BLOCKED && s.result.startsWith(MISSING_INPUT) &&
        unavailableInputs(this.#context!, s).length === 0
      ) {
        s.status = PlanStatus.PENDING;
        s.result = "";
        this.#counters.delete(s);
      }
    });
  }

  /** Executes one leaf (or an undecided decide step), then handles its outcome. */
  async #runStep(step: PlanStep): Promise<void> {
    const counters = this.#countersOf(step);
    counters.attempts++;
    this.#executed++;
    const unavailable = unavailableInputs(this.#context!, step);
    const info = this.#info(step, counters.attempts);
    if (unavailable.length > 0) {
      await this.#emitter.emit("onStepStart", info);
      const result = `${MISSING_INPUT} ${unavailable.join(", ")}`;
      this.#mark(step, "BLOCKED", result);
      await this.#emitter.emit("onStepEnd", info, { status: "BLOCKED", result });
      return;
    }
    markActive(this.#plan, step);
    await this.#save();
    await this.#emitter.emit("onStepStart", info);
    let output: StepOutput;
    try {
      output = await this.#executeStep(step);
    } catch (error) {
      await this.#emitter.emit("onStepError", info, error);
      throw error;
    }
    if (output.status === "OK") {
      const missing = step.outputs.filter((name) =>
        isVariableName(name) && !Object.hasOwn(output.outputs ?? {}, name)
      );
      if (missing.length > 0 && step.stepType !== "decide") {
        output = {
          ...output,
          status: "UNCERTAIN",
          result: `${output.result} (declared outputs not returned: ${missing.join(", ")})`,
        };
      }
    }
    await this.#record({
      kind: "step",
      stepId: step.stepId,
      stepType: step.stepType,
      description: step.description,
      status: output.status,
      result: output.result,
      attempt: counters.attempts,
      ...(output.outputs ? { outputs: output.outputs } : {}),
      ...(output.branch ? { branch: output.branch } : {}),
    });
    if (output.outputs) {
      for (const [name, value] of Object.entries(output.outputs)) this.#variables.set(name, value);
    }
    if (output.status === "OK") this.#complete(step, output);
    await this.#emitter.emit("onStepEnd", info, output);
    if (output.status !== "OK") await reflect(this.#context!, step, output, info);
  }

  /** The engine's bookkeeping for an OK step (or an accepted one). */
  #complete(step: PlanStep, output: StepOutput): void {
    const counters = this.#countersOf(step);
    const result = oneLine(output.result);
    if (step.stepType === "decide" && step.children.length > 0) {
      const chosen = step.children.find((c) => c.stepId === output.branch);
      if (!chosen) {
        this.#mark(step, "BLOCKED", `no branch chosen: ${result}`);
        return;
      }
      for (const branch of step.children) {
        if (branch !== chosen) {
          this.#mark(branch, "SKIP", `not chosen (step ${step.stepId} chose ${chosen.stepId})`);
        }
      }
      step.result = oneLine(`chose ${chosen.stepId}: ${result}`);
      step.status = PlanStatus.ACTIVE;
      counters.attempts = 0;
      return;
    }
    if (step.stepType === "subtask" && step.children.length === 0 && output.progress) {
      step.doneCount = output.progress.done;
      step.totalCount = output.progress.total ?? null;
      const total = step.totalCount;
      if (total !== null && step.doneCount < total) {
        counters.iterations++;
        counters.attempts = 0;
        step.result = result;
        if (counters.iterations >= (this.#options.maxIterations ?? 20)) {
          this.#mark(
            step,
            "BLOCKED",
            `${result} (stopped at ${step.doneCount}/${total} after ${counters.iterations} iterations)`,
          );
        }
        return; // still active: it runs again for the next iterations
      }
    }
    this.#mark(step, "DONE", result);
  }

  async #executeStep(step: PlanStep): Promise<StepOutput> {
    const schema = stepOutputSchema(step);
    const prompt = renderPromptTemplate(
      this.#context!.prompts.step,
      stepVariables(this.#context!, step),
    );
    const needsBranch = step.stepType === "decide" && step.children.length > 0;
    const answer = await askStep(
      this.#context!,
      PLAN_RUN_STEP_IDS.step(step.stepId),
      prompt,
      schema,
      (value) =>
        needsBranch && value.status === "OK" && !value.branch
          ? ["branch: required when status is OK (the id of the chosen branch)"]
          : [],
    );
    if (answer.ok) return answer.value;
    return {
      status: "FAIL",
      result: `the answer did not match the step's output schema: ${answer.errors.join("; ")}`,
    };
  }

  /** The run's state and bookkeeping, as its stages see them. */
  #contextFor(prompts: PlanPrompts): PlanRunContext {
    const round = () => this.#round;
    return {
      plan: this.#plan,
      options: this.#options,
      prompts,
      events: this.#emitter,
      variables: this.#variables,
      history: this.#history,
      get round() {
        return round();
      },
      countersOf: (step) => this.#countersOf(step),
      forgetCounters: (step) => {
        if (step) this.#counters.delete(step);
        else this.#counters = new WeakMap();
      },
      complete: (step, output) => this.#complete(step, output),
      mark: (step, op, result) => this.#mark(step, op, result),
      record: (entry) => this.#record(entry),
      save: () => this.#save(),
      log: (message) => this.#log(message),
    };
  }

  /** Engine-layer status change, through the command protocol. */
  #mark(step: PlanStep, op: Extract<PlanOp, "DONE" | "BLOCKED" | "SKIP">, result: string): void {
    applyCommand(this.#plan, createPlanCommand({ op, stepId: step.stepId, result }));
  }

  #countersOf(step: PlanStep): StepCounters {
    let counters = this.#counters.get(step);
    if (!counters) {
      counters = { attempts: 0, iterations: 0 };
      this.#counters.set(step, counters);
    }
    return counters;
  }

  #info(step: PlanStep, attempt: number): EventStepInfo {
    const ancestors = ancestorIds(step.stepId);
    const info: EventStepInfo = {
      runId: this.#runId,
      stepId: step.stepId,
      desc: step.description || step.stepId,
      order: ++this.#order,
      path: [...ancestors, step.stepId],
      iteration: this.#round,
      type: step.stepType,
      attempt,
    };
    if (ancestors.length > 0) info.parentStepId = ancestors[ancestors.length - 1];
    return info;
  }

  async #record(entry: Omit<PlanHistoryEntry, "round" | "at"> & Partial<PlanHistoryEntry>) {
    const full = { ...entry, round: this.#round, at: new Date().toISOString() } as PlanHistoryEntry;
    this.#history.push(full);
    if (this.#historyFile) {
      await appendHistory(this.#historyFile, full, (m) => this.#log(`warning: ${m}`));
    }
  }

  async #save(): Promise<void> {
    if (!this.#options.file) return;
    if (this.#lock) assertLockHeld(this.#lock, planLockSubject(this.#options.file));
    await writePlanFile(this.#options.file, this.#plan);
  }

  async #setState(state: RunState): Promise<void> {
    const old = this.#state;
    if (old === state) return;
    this.#state = state;
    await this.#emitter.emit("onStateChange", state, old, { runId: this.#runId });
  }

  #log(message: string): void {
    this.#options.onLog?.(message);
  }
}
