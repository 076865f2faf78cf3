import { z } from "zod";
import { removeStaleTemps } from "../atomic_write.ts";
import { StepflowError } from "../errors.ts";
import { isSpanOf } from "../unicode_span.ts";
import { createEventEmitter, type EventEmitter } from "../events/emitter.ts";
import type { ExecutorEvents, RunState, StepInfo as EventStepInfo } from "../events/types.ts";
import {
  type AnswerReading,
  askStructured,
  readJsonAnswer,
  rejectAnswer,
  SCHEMA_MISMATCH,
} from "../engine/ask_structured.ts";
import type { LlmBackend, LlmRequest, LlmResponse } from "../llm/types.ts";
import {
  assertLockHeld,
  type HeldFileLock,
  lockPlanFile,
  planLockSubject,
} from "../store/file_lock.ts";
import { applyCommand, formatPlanCommand, parsePlanCommands } from "./commands.ts";
import { requestPlan } from "./generate.ts";
import { appendHistory, type PlanHistoryEntry, readHistory } from "./history.ts";
import { parseStepLines } from "./parse.ts";
import { renderPromptTemplate } from "../engine/prompt_template.ts";
import { loadPlanPrompts, type PlanPrompts } from "./prompts.ts";
import {
  type Reflection,
  ReflectionSchema,
  type StepOutput,
  stepOutputSchema,
} from "./runner_schemas.ts";
import { serializePlan } from "./serialize.ts";
import { historyFileFor, readPlanFile, writePlanFile } from "./store.ts";
import { isComplete, planProgress, replaceChildren, walkSteps } from "./tree.ts";
import {
  createPlanCommand,
  type PlanCommand,
  type PlanOp,
  type PlanProgress,
  type PlanSpec,
  PlanStatus,
  type PlanStep,
} from "./types.ts";
import { planErrors, validatePlan } from "./validate.ts";

/** Step ids under which the runner calls the backend (the keys of a scripted backend's script). */
export const PLAN_RUN_STEP_IDS = {
  /** `planspec.step.<id>`: executing step `<id>` (decide steps too; re-asks reuse the key). */
  step: (stepId: string): string => `planspec.step.${stepId}`,
  /** `planspec.reflect.<id>`: reflecting on step `<id>` after a non-OK status. */
  reflect: (stepId: string): string => `planspec.reflect.${stepId}`,
  /** `planspec.replan`: end-of-round re-planning. */
  replan: "planspec.replan",
  /** `planspec.children.<id>`: writing new children after `REPLAN <id>`. */
  children: (stepId: string): string => `planspec.children.${stepId}`,
  /** `planspec.regenerate`: writing a new plan after `REPLAN ALL`. */
  regenerate: "planspec.regenerate",
} as const;

/** How a plan run ended. */
export type PlanRunStatus = "completed" | "blocked" | "failed" | "aborted";

/** Options of {@linkcode PlanRunner}. */
export interface PlanRunnerOptions {
  /** The LLM backend for every stage (step, reflection, re-planning, regeneration). */
  backend: LlmBackend;
  /**
   * The plan file. When set, it is rewritten atomically after every step and every plan change,
   * locked for the run, and a run history is kept beside it, so a killed run continues where it
   * stopped when run again.
   */
  file?: string;
  /** The history file (default `<file without .md>.history.jsonl`; none without `file`). */
  historyFile?: string;
  /** Event handlers (`onPlanStart`, `onStepStart`, `onStepEnd`, `onStepRetry`, …). */
  events?: ExecutorEvents;
  /** Rounds per run before giving up on convergence (default 3). */
  maxRounds?: number;
  /** Executions of one step (first try + retries) before it is blocked (default 3). */
  maxAttempts?: number;
  /** Iterations of an iterative (childless) subtask before it is blocked (default 20). */
  maxIterations?: number;
  /**
   * Step executions in one run before it stops as failed, a guard against plans that keep changing
   * without converging (default: 10 per step of the plan, at least 200).
   */
  maxStepExecutions?: number;
  /** Whether the user can be asked questions (`INTERACT`); needs {@linkcode ask}. */
  interactive?: boolean;
  /** Asks the user; returns the answer, or undefined / `""` when there is none. */
  ask?: (question: string, step: PlanStep) => Promise<string | undefined>;
  /** Prompt overrides (default: the built-in `prompts/planspec/*.md`). */
  prompts?: Partial<PlanPrompts>;
  /** Model override passed to the backend. */
  model?: string;
  /** Working directory passed to the backend (default `Deno.cwd()`). */
  cwd?: string;
  /** Cancels the run between and during calls. */
  signal?: AbortSignal;
  /** Run id reported in events (default a random UUID). */
  runId?: string;
  /** History entries shown to the model (default 20). */
  historyLimit?: number;
  /** Characters of one variable value shown to the model (default 2000). */
  valueLimit?: number;
  /** Progress messages (reflections, re-planning, ignored commands); default: none. */
  onLog?: (message: string) => void;
}

/** What {@linkcode PlanRunner.run} returns. */
export interface PlanRunResult {
  /** `completed` (every step done or skipped), `blocked` (rounds used up or nothing left to try),
   * `failed` (backend or file error, or the execution guard), `aborted` (signal). */
  status: PlanRunStatus;
  /** The plan as it ended (the same object the runner holds). */
  plan: PlanSpec;
  /** Step counts at the end. */
  progress: PlanProgress;
  /** The last round run. */
  rounds: number;
  /** Step executions in this run. */
  stepsExecuted: number;
  /** The blocked steps and why. */
  blocked: { stepId: string; result: string }[];
  /** Output values produced so far, by variable name. */
  variables: Record<string, unknown>;
  /** The error, for `failed` and `aborted`. */
  error?: string;
}

interface StepCounters {
  attempts: number;
  iterations: number;
}

const DONE_LIKE = new Set<string>([PlanStatus.DONE, PlanStatus.SKIPPED]);
const MISSING_INPUT = "missing input";

/**
 * Executes a PlanSpec plan with an LLM, in the seed's four stages:
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
  readonly #backend: LlmBackend;
  readonly #emitter: EventEmitter;
  readonly #runId: string;
  /** The plan file's lock while `run()` runs. */
  #lock?: HeldFileLock;
  readonly #historyFile?: string;
  readonly #history: PlanHistoryEntry[] = [];
  readonly #variables = new Map<string, unknown>();
  #counters = new WeakMap<PlanStep, StepCounters>();
  #prompts?: PlanPrompts;
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
    this.#backend = options.backend;
    this.#emitter = createEventEmitter([options.events]);
    this.#runId = options.runId ?? crypto.randomUUID();
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
    const ctx = { runId: this.#runId, file: this.#options.file };
    try {
      this.#prompts = await loadPlanPrompts(this.#options.prompts);
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
        error = (e as Error)?.message ?? String(e);
      }
    } finally {
      try {
        settle(this.#plan.steps);
        await this.#save();
        await this.#record({ kind: "end", status, ...(error ? { reason: error } : {}) });
      } catch (e) {
        if (status !== "failed") {
          status = "failed";
          error = `could not save the plan: ${(e as Error).message}`;
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
      const changed = await this.#replanRound();
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
        this.#unavailableInputs(s).length === 0
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
    const unavailable = this.#unavailableInputs(step);
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
        isVariableName(name) && !(name in (output.outputs ?? {}))
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
    if (output.status !== "OK") await this.#reflect(step, output, info);
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
    const prompt = renderPromptTemplate(this.#prompts!.step, this.#stepVariables(step));
    const needsBranch = step.stepType === "decide" && step.children.length > 0;
    const answer = await this.#structured(
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

  /**
   * A structured call on the shared re-ask path: the JSON answer parsed by `schema`, then checked
   * by `extraCheck`, re-asked once when either finds a problem.
   */
  async #structured<T>(
    stepId: string,
    prompt: string,
    schema: z.ZodType<T>,
    extraCheck: (value: T) => string[] = () => [],
  ): Promise<{ ok: true; value: T } | { ok: false; errors: string[] }> {
    const request = this.#request(stepId, prompt);
    request.outputSchema = z.toJSONSchema(schema) as Record<string, unknown>;
    const asked = await askStructured({
      request,
      call: (req) => this.#backend.complete(req, { signal: this.#options.signal }),
      read: (response) => readTyped(response, schema, extraCheck),
    });
    if (asked.ok) return { ok: true, value: asked.value };
    return { ok: false, errors: asked.errors.length > 0 ? asked.errors : [asked.reason] };
  }

  async #text(stepId: string, prompt: string): Promise<string> {
    const response = await this.#backend.complete(this.#request(stepId, prompt), {
      signal: this.#options.signal,
    });
    return response.text;
  }

  #request(stepId: string, prompt: string): LlmRequest {
    const request: LlmRequest = {
      kind: "step",
      agent: "planspec",
      stepId,
      iteration: this.#round,
      prompt,
      cwd: this.#options.cwd ?? Deno.cwd(),
    };
    if (this.#options.model) request.model = this.#options.model;
    return request;
  }

  /** Step reflection: decide what to do about a non-OK step. */
  async #reflect(step: PlanStep, output: StepOutput, info: EventStepInfo): Promise<void> {
    const counters = this.#countersOf(step);
    const maxAttempts = this.#options.maxAttempts ?? 3;
    const failure = oneLine(`${output.status}: ${output.result}`);
    const canInteract = this.#canInteract();
    step.expanded = true;
    let planState: string;
    try {
      planState = serializePlan(this.#plan, { fold: true });
    } finally {
      delete step.expanded;
    }
    const answer = await this.#structured(
      PLAN_RUN_STEP_IDS.reflect(step.stepId),
      renderPromptTemplate(this.#prompts!.reflect, {
        goal: this.#goalText(),
        step_id: step.stepId,
        description: step.description,
        status: output.status,
        result: output.result,
        plan_state: planState,
        can_interact: canInteract ? "yes" : "no",
        attempt: String(counters.attempts),
        max_attempts: String(maxAttempts),
        history: this.#historyText(),
      }),
      ReflectionSchema,
    );
    if (!answer.ok) {
      this.#mark(step, "BLOCKED", `${failure} (reflection gave no usable decision)`);
      await this.#record({
        kind: "reflection",
        stepId: step.stepId,
        errors: answer.errors,
      });
      this.#log(`step ${step.stepId}: reflection unusable (${answer.errors.join("; ")}); blocked`);
      return;
    }
    const reflection: Reflection = answer.value;
    const decision = reflection.decision;
    this.#log(`step ${step.stepId}: ${output.status} → ${decision} (${reflection.reason})`);
    const entry: PlanHistoryEntry = {
      kind: "reflection",
      round: this.#round,
      at: "",
      stepId: step.stepId,
      decision,
      reason: reflection.reason,
    };
    switch (decision) {
      case "RETRY":
        await this.#record(entry);
        if (counters.attempts >= maxAttempts) {
          this.#mark(step, "BLOCKED", `${failure} (gave up after ${counters.attempts} attempts)`);
        } else {
          await this.#emitter.emit("onStepRetry", info, counters.attempts, failure);
        }
        return;
      case "ACCEPT":
        await this.#record(entry);
        this.#complete(step, output);
        return;
      case "INTERACT": {
        const question = (reflection.question ?? "").trim() || reflection.reason;
        entry.question = question;
        await this.#record(entry);
        await this.#interact(step, question, failure, counters.attempts >= maxAttempts);
        return;
      }
      case "PLAN_CMD": {
        const text = Array.isArray(reflection.commands)
          ? reflection.commands.join("\n")
          : reflection.commands ?? "";
        const commands = this.#parseCommands(text);
        if (commands.length === 0) {
          await this.#record(entry);
          this.#mark(step, "BLOCKED", `${failure} (reflection gave no usable PLAN_CMD)`);
          return;
        }
        const before = new Set<PlanStep>();
        walkSteps(this.#plan.steps, (s) => void before.add(s));
        const applied = await this.#applyLlmCommands(commands, entry);
        if (applied.regenerated) return;
        if (step.status !== PlanStatus.ACTIVE) return; // skipped, revised or re-planned
        if (addedBefore(this.#plan, step, before) && counters.attempts < maxAttempts) {
          step.status = PlanStatus.PENDING; // runs again after the inserted steps
          return;
        }
        this.#mark(step, "BLOCKED", failure);
        return;
      }
    }
  }

  async #interact(
    step: PlanStep,
    question: string,
    failure: string,
    exhausted: boolean,
  ): Promise<void> {
    if (!this.#canInteract()) {
      this.#mark(step, "BLOCKED", oneLine(`needs input: ${question}`));
      return;
    }
    const answer = (await this.#options.ask!(question, step))?.trim() ?? "";
    await this.#record({ kind: "interact", stepId: step.stepId, question, answer });
    if (answer === "") {
      this.#mark(step, "BLOCKED", oneLine(`needs input: ${question} (no answer)`));
    } else if (exhausted) {
      this.#mark(step, "BLOCKED", `${failure} (gave up after the attempt limit)`);
    }
    // Otherwise the step stays active and runs again with the answer in its history.
  }

  #canInteract(): boolean {
    return this.#options.interactive === true && typeof this.#options.ask === "function";
  }

  #parseCommands(text: string): PlanCommand[] {
    return parsePlanCommands(text, {
      onIgnored: (_n, line, reason) => this.#log(`ignored ${line}: ${reason}`),
    });
  }

  /**
   * Applies LLM-layer commands. `REPLAN ALL` regenerates the whole plan (other commands of the
   * batch referred to the old plan and are dropped); `REPLAN <id>` clears a container and
   * generates its new children; view commands are ignored.
   */
  async #applyLlmCommands(
    commands: PlanCommand[],
    entry: PlanHistoryEntry,
  ): Promise<{ changed: boolean; regenerated: boolean }> {
    const all = commands.find((c) => c.op === "REPLAN" && c.stepId === "ALL");
    if (all) {
      entry.commands = [formatPlanCommand(all)];
      const ok = await this.#regenerateAll(all.result || entry.reason || "");
      if (!ok.ok) entry.errors = [ok.error];
      await this.#record(entry);
      return { changed: ok.ok, regenerated: ok.ok };
    }
    const applied: string[] = [];
    const errors: string[] = [];
    for (const cmd of commands) {
      if (cmd.op === "EXPAND" || cmd.op === "COLLAPSE") {
        this.#log(`ignored ${cmd.op} ${cmd.stepId}: view commands are not part of re-planning`);
        continue;
      }
      const target = cmd.op === "REVISE" ? findById(this.#plan, cmd.stepId) : undefined;
      const error = applyCommand(this.#plan, cmd);
      if (error !== "") {
        errors.push(error);
        this.#log(`command failed: ${error}`);
        continue;
      }
      applied.push(formatPlanCommand(cmd));
      this.#log(`applied ${formatPlanCommand(cmd).split("\n")[0].slice(10)}`);
      if (target) this.#counters.delete(target);
      if (cmd.op === "REPLAN") {
        const regenerated = await this.#regenerateChildren(cmd.stepId, cmd.result);
        if (regenerated !== "") errors.push(regenerated);
      }
    }
    entry.commands = applied;
    if (errors.length > 0) entry.errors = errors;
    await this.#record(entry);
    await this.#save();
    return { changed: applied.length > 0, regenerated: false };
  }

  /** Phase 2 of `REPLAN <id>`: new children for the container. Returns an error or `""`. */
  async #regenerateChildren(stepId: string, reason: string): Promise<string> {
    const container = findById(this.#plan, stepId);
    if (!container) return `REPLAN ${stepId}: step vanished`;
    const prompt = renderPromptTemplate(this.#prompts!.children, {
      goal: this.#goalText(),
      plan_state: serializePlan(this.#plan, { fold: true }),
      step_id: stepId,
      step_type: container.stepType,
      description: container.description,
      reason: reason || "(no reason given)",
    });
    const asked = await askStructured({
      request: this.#request(PLAN_RUN_STEP_IDS.children(stepId), prompt),
      call: (req) => this.#backend.complete(req, { signal: this.#options.signal }),
      read: (response) => this.#readChildren(response.text, stepId),
      expected: `the corrected sub-steps of step ${stepId}, one step line each ` +
        `("${stepId}.1. [act] description → outputs")`,
    });
    if (asked.ok) {
      replaceChildren(this.#plan, stepId, asked.value);
      this.#log(`step ${stepId}: ${asked.value.length} new sub-step(s) written`);
      await this.#save();
      return "";
    }
    const errors = asked.errors.length > 0 ? asked.errors : [asked.reason];
    const message = `REPLAN ${stepId}: new children invalid after a re-ask: ${errors.join("; ")}`;
    this.#mark(container, "BLOCKED", oneLine(message));
    this.#log(message);
    return message;
  }

  /** The new children of container `stepId` in an answer, checked against the whole plan. */
  #readChildren(text: string, stepId: string): AnswerReading<PlanStep[]> {
    const parsed = parseChildren(text, stepId);
    if (typeof parsed === "string") {
      return { ok: false, rejection: rejectAnswer(CHILDREN_REJECTED, [parsed]) };
    }
    const check = planErrors(validatePlan({ ...this.#plan, steps: parsed }));
    if (check.length > 0) return { ok: false, rejection: rejectAnswer(CHILDREN_REJECTED, check) };
    return { ok: true, value: parsed };
  }

  /** `REPLAN ALL`: a new plan replaces the current one (in place). */
  async #regenerateAll(reason: string): Promise<{ ok: true } | { ok: false; error: string }> {
    const prompt = renderPromptTemplate(this.#prompts!.regenerate, {
      goal: this.#goalText(),
      reason: reason || "(no reason given)",
      plan_state: serializePlan(this.#plan, { fold: true }),
      history: this.#historyText(),
    });
    try {
      const generated = await requestPlan(
        prompt,
        PLAN_RUN_STEP_IDS.regenerate,
        {
          backend: this.#backend,
          model: this.#options.model,
          cwd: this.#options.cwd,
          signal: this.#options.signal,
          iteration: this.#round,
        },
      );
      Object.assign(this.#plan, generated.plan);
      this.#counters = new WeakMap();
      this.#log(`plan regenerated (REPLAN ALL): ${planProgress(this.#plan).total} steps`);
      await this.#save();
      return { ok: true };
    } catch (error) {
      if (error instanceof StepflowError && error.code === "PLAN_GENERATION_INVALID") {
        this.#log(`REPLAN ALL failed, keeping the current plan: ${error.message}`);
        return { ok: false, error: error.message };
      }
      throw error;
    }
  }

  /** End-of-round re-planning. Returns true when the plan changed. */
  async #replanRound(): Promise<boolean> {
    const issues = unresolved(this.#plan);
    this.#log(`round ${this.#round} not converged (${issues.length} issue(s)); re-planning`);
    const text = await this.#text(
      PLAN_RUN_STEP_IDS.replan,
      renderPromptTemplate(this.#prompts!.replan, {
        goal: this.#goalText(),
        round: String(this.#round),
        max_rounds: String(this.#options.maxRounds ?? 3),
        issues: issues.join("\n"),
        plan_state: serializePlan(this.#plan, { fold: true }),
        history: this.#historyText(),
      }),
    );
    const entry: PlanHistoryEntry = { kind: "replan", round: this.#round, at: "" };
    const commands = this.#parseCommands(text);
    if (commands.length === 0) {
      entry.commands = [];
      await this.#record(entry);
      return false;
    }
    const applied = await this.#applyLlmCommands(commands, entry);
    return applied.changed;
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

  /**
   * Inputs that can no longer arrive: not produced yet, and every step declaring them as output is
   * blocked or skipped. Inputs nobody declares (given data) are left to the model.
   */
  #unavailableInputs(step: PlanStep): string[] {
    if (step.inputs.length === 0) return [];
    const wanted = new Set(step.inputs.filter((name) => !this.#variables.has(name)));
    if (wanted.size === 0) return [];
    const producers = new Map<string, PlanStep[]>();
    walkSteps(this.#plan.steps, (s) => {
      if (s === step) return;
      for (const name of s.outputs) {
        if (wanted.has(name)) producers.set(name, [...(producers.get(name) ?? []), s]);
      }
    });
    const missing: string[] = [];
    for (const [name, list] of producers) {
      if (
        list.every((p) => p.status === PlanStatus.BLOCKED || p.status === PlanStatus.SKIPPED)
      ) {
        missing.push(
          `${name} (${list.map((p) => `step ${p.stepId} is ${p.status}`).join(", ")})`,
        );
      }
    }
    return missing;
  }

  #stepVariables(step: PlanStep): Record<string, string> {
    const limit = this.#options.valueLimit ?? 2000;
    let inputs: string;
    if (step.inputs.length > 0) {
      inputs = step.inputs.map((name) =>
        this.#variables.has(name)
          ? `- ${name}: ${truncate(valueText(this.#variables.get(name)), limit)}`
          : `- ${name}: (not produced by an earlier step; use what you know or report LACK_OF_INFO)`
      ).join("\n");
    } else if (this.#variables.size > 0) {
      inputs = "No inputs are declared; the values produced so far are:\n" +
        [...this.#variables].map(([name, value]) =>
          `- ${name}: ${truncate(valueText(value), limit)}`
        ).join("\n");
    } else {
      inputs = "(none)";
    }
    return {
      goal: this.#goalText(),
      constraints: this.#plan.constraints.length > 0
        ? this.#plan.constraints.map((c) => `- ${c}`).join("\n")
        : "(none)",
      step_id: step.stepId,
      step_type: step.stepType,
      description: step.description,
      detail: step.detail.join("\n"),
      task_kind: taskKind(step),
      inputs,
      outputs: step.outputs.length > 0
        ? step.outputs.map((name) => `- ${name}`).join("\n")
        : "(none declared)",
      history: this.#historyText(),
    };
  }

  #goalText(): string {
    return [this.#plan.goal, ...this.#plan.goalDetail].join("\n");
  }

  #historyText(): string {
    const limit = this.#options.historyLimit ?? 20;
    const shown: string[] = [];
    for (let i = this.#history.length - 1; i >= 0 && shown.length < limit; i--) {
      const line = historyLine(this.#history[i], this.#options.valueLimit ?? 2000);
      if (line) shown.push(line);
    }
    return shown.length === 0 ? "(nothing yet)" : shown.reverse().join("\n");
  }

  #info(step: PlanStep, attempt: number): EventStepInfo {
    const parentId = step.stepId.includes(".")
      ? step.stepId.slice(0, step.stepId.lastIndexOf("."))
      : undefined;
    const parts = step.stepId.split(".");
    const info: EventStepInfo = {
      runId: this.#runId,
      stepId: step.stepId,
      desc: step.description || step.stepId,
      order: ++this.#order,
      path: parts.map((_p, i) => parts.slice(0, i + 1).join(".")),
      iteration: this.#round,
      type: step.stepType,
      attempt,
    };
    if (parentId) info.parentStepId = parentId;
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

/** The next step to execute in document order: a pending or active leaf, or an undecided decide. */
export function findNext(steps: PlanStep[]): PlanStep | undefined {
  for (const step of steps) {
    if (DONE_LIKE.has(step.status) || step.status === PlanStatus.BLOCKED) continue;
    if (step.children.length === 0) return step;
    if (step.stepType === "decide" && !isDecided(step)) return step;
    const inner = findNext(step.children);
    if (inner) return inner;
  }
  return undefined;
}

/** A decide step has chosen once a branch left `pending` or its result records the choice. */
function isDecided(step: PlanStep): boolean {
  return step.result.startsWith("chose ") ||
    step.children.some((c) => c.status !== PlanStatus.PENDING);
}

/**
 * Derives container statuses from their children (post-order): all children finished → done (or
 * blocked when one is blocked, skipped when all are); some started → active. A `subtask`'s
 * `| Progress` counts its done children. Explicitly skipped containers stay skipped.
 */
export function settle(steps: PlanStep[]): void {
  for (const step of steps) {
    if (step.children.length === 0) continue;
    settle(step.children);
    if (step.status === PlanStatus.SKIPPED) continue;
    let open = 0;
    let started = 0;
    let done = 0;
    let blocked = 0;
    for (const child of step.children) {
      if (child.status === PlanStatus.PENDING) open++;
      else if (child.status === PlanStatus.ACTIVE) {
        open++;
        started++;
      } else {
        started++;
        if (child.status === PlanStatus.DONE) done++;
        else if (child.status === PlanStatus.BLOCKED) blocked++;
      }
    }
    if (step.stepType === "subtask") {
      step.doneCount = done;
      step.totalCount = step.children.length;
    }
    if (open === 0) {
      step.status = blocked > 0
        ? PlanStatus.BLOCKED
        : done > 0
        ? PlanStatus.DONE
        : PlanStatus.SKIPPED;
      if (blocked > 0 && step.stepType === "subtask") {
        step.result = `${blocked} sub-step(s) blocked`;
      } else if (step.stepType === "subtask" && step.result.endsWith("sub-step(s) blocked")) {
        step.result = "";
      }
    } else if (started > 0) {
      step.status = PlanStatus.ACTIVE;
    }
  }
}

function markActive(plan: PlanSpec, step: PlanStep): void {
  step.status = PlanStatus.ACTIVE;
  const parts = step.stepId.split(".");
  let siblings = plan.steps;
  for (let i = 0; i < parts.length - 1; i++) {
    const ancestor = siblings[Number(parts[i]) - 1];
    if (!ancestor) break;
    if (ancestor.status === PlanStatus.PENDING) ancestor.status = PlanStatus.ACTIVE;
    siblings = ancestor.children;
  }
}

function findById(plan: PlanSpec, stepId: string): PlanStep | undefined {
  let found: PlanStep | undefined;
  walkSteps(plan.steps, (s) => {
    if (!found && s.stepId === stepId) found = s;
  });
  return found;
}

/** True when a step not in `before` now comes before `step` in document order. */
function addedBefore(plan: PlanSpec, step: PlanStep, before: Set<PlanStep>): boolean {
  let seenStep = false;
  let added = false;
  walkSteps(plan.steps, (s) => {
    if (s === step) seenStep = true;
    else if (!seenStep && !before.has(s)) added = true;
  });
  return added;
}

function blockedSteps(plan: PlanSpec): { stepId: string; result: string }[] {
  const out: { stepId: string; result: string }[] = [];
  walkSteps(plan.steps, (s) => {
    if (s.status === PlanStatus.BLOCKED) out.push({ stepId: s.stepId, result: s.result });
  });
  return out;
}

function unresolved(plan: PlanSpec): string[] {
  const issues: string[] = [];
  walkSteps(plan.steps, (s) => {
    if (s.children.length > 0 && s.status !== PlanStatus.BLOCKED) return;
    if (s.status === PlanStatus.BLOCKED) {
      issues.push(`- step ${s.stepId} [${s.stepType}] is blocked: ${s.result || "(no reason)"}`);
    } else if (s.status === PlanStatus.PENDING || s.status === PlanStatus.ACTIVE) {
      issues.push(`- step ${s.stepId} [${s.stepType}] is still ${s.status}`);
    }
  });
  return issues.length > 0 ? issues : ["- (no blocked or unfinished step is listed)"];
}

/** Why new children were rejected, as the re-ask says it. */
const CHILDREN_REJECTED = "your sub-steps could not be used";

/**
 * Reads a JSON answer the shared way, then parses it with a zod schema (the parsed value, with
 * unknown keys dropped, is what the run uses) and checks it with `extraCheck`.
 */
function readTyped<T>(
  response: LlmResponse,
  schema: z.ZodType<T>,
  extraCheck: (value: T) => string[],
): AnswerReading<T> {
  const read = readJsonAnswer(response);
  if (!read.ok) return read;
  const parsed = schema.safeParse(read.value);
  const errors = parsed.success
    ? extraCheck(parsed.data)
    : parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
  if (errors.length > 0) return { ok: false, rejection: rejectAnswer(SCHEMA_MISMATCH, errors) };
  return { ok: true, value: parsed.data! };
}

/** Parses the children an LLM wrote for container `stepId`, numbered `<id>.k` or from 1. */
function parseChildren(text: string, stepId: string): PlanStep[] | string {
  const body = text.replace(/```[^\n]*\n?/g, "");
  try {
    const steps = parseStepLines(body, stepId);
    if (steps.length > 0) return steps;
  } catch {
    // Maybe numbered from 1: tried below.
  }
  try {
    const steps = parseStepLines(body, "");
    if (steps.length > 0) return steps;
    return `no step lines found; write lines like "${stepId}.1. [act] description → outputs"`;
  } catch (error) {
    return (error as Error).message;
  }
}

function taskKind(step: PlanStep): string {
  switch (step.stepType) {
    case "reason":
      return "This is a reasoning step: analyze, infer, extract, summarize or verify.";
    case "act":
      return "This is an action step: carry out the action or computation and report what was done.";
    case "decide":
      if (step.children.length === 0) {
        return "This is a decision step: decide and report the decision as the result.";
      }
      return "This is a decision step. Its branches are:\n" +
        step.children.map((c) => `- ${c.stepId}: ${c.description}`).join("\n") +
        "\nChoose exactly one branch and return its id in `branch`; the other branches are skipped.";
    case "subtask": {
      const progress = step.totalCount === null
        ? `${step.doneCount} iteration(s) done, total unknown`
        : `${step.doneCount}/${step.totalCount} iterations done`;
      return `This is an iterative subtask (${progress}). Do the next iteration(s) and report ` +
        "`progress` as {done, total} (total null when unknown); the step runs again until done " +
        "reaches total.";
    }
    default:
      return "";
  }
}

function historyLine(entry: PlanHistoryEntry, valueLimit: number): string | undefined {
  switch (entry.kind) {
    case "step": {
      let line = `- [round ${entry.round}] step ${entry.stepId} (${entry.stepType}) ${
        JSON.stringify(entry.description ?? "")
      }: ${entry.status} — ${entry.result ?? ""}`;
      if (entry.branch) line += ` (chose ${entry.branch})`;
      if (entry.outputs && Object.keys(entry.outputs).length > 0) {
        line += `\n  outputs: ${truncate(JSON.stringify(entry.outputs), valueLimit)}`;
      }
      return line;
    }
    case "reflection":
      return `- [round ${entry.round}] reflection on step ${entry.stepId}: ${
        entry.decision ?? "no decision"
      }${entry.reason ? ` — ${entry.reason}` : ""}${
        entry.commands?.length ? `\n  ${entry.commands.join("\n  ")}` : ""
      }${entry.question ? `\n  question: ${entry.question}` : ""}`;
    case "interact":
      return `- [round ${entry.round}] the user was asked ${
        JSON.stringify(entry.question)
      } about step ${entry.stepId} and answered: ${entry.answer || "(no answer)"}`;
    case "replan":
      return `- [round ${entry.round}] end-of-round re-planning: ${
        entry.commands?.length ? entry.commands.join("; ") : "no change"
      }`;
    default:
      return undefined;
  }
}

/**
 * Output names that look like variables are required from an OK step. Others (decide branches
 * write `→ <what to do>`, as in the seed's examples) describe a consequence, not a value.
 */
function isVariableName(name: string): boolean {
  return isSpanOf(name, "[\\p{L}\\p{N}_.-]", "[\\p{L}_]");
}

function valueText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value) ?? String(value);
}

function truncate(text: string, limit: number): string {
  return text.length <= limit
    ? text
    : `${text.slice(0, limit)}… (${text.length - limit} more chars)`;
}

/** Plan results are one line (the full text stays in the history). */
function oneLine(text: string, limit = 300): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length <= limit ? line : line.slice(0, limit - 1) + "…";
}
