/**
 * `StepFlowRunner`: the handle that runs an agent's step flow (docs/runner.md).
 *
 * A runner holds what every run of one agent shares — the definition, the options, the event
 * handlers — and nothing of a run: `run()`, `start()` and `answer()` each create one run object
 * (`FlowRun`, `flow_run.ts`, where the loop is: read it top to bottom) and drive it. So a runner
 * may drive several runs at once; `pause()`, `resume()` and `abort()` reach every run it drives
 * (and through them their child runs), `start()` returns a handle for one run.
 *
 * @module
 */
import type { AgentDefinition } from "../definition/types.ts";
import { StepflowError } from "../errors.ts";
import type { ExecutorEvents, RunState } from "../events/types.ts";
import type { AnswerOptions, RecordedAnswer } from "./input_request.ts";
import { FlowRun, type RunSetup } from "./flow_run.ts";
import { recordAnswer } from "./run_open.ts";
import { ChildLimiter } from "./child_limiter.ts";
import {
  answerWhileDriven,
  type DriveRun,
  takenElsewhere,
  waitsMoved,
  wakeParent,
} from "./fan_out_answers.ts";
import type { RunOptions, StepFlowResult, StepFlowRunnerOptions } from "./types.ts";

export type { RunnerState } from "./run_state.ts";

/**
 * One run a runner drives (see {@linkcode StepFlowRunner.start}): its id, its state, its control,
 * and the result its drive ends with.
 *
 * @example
 * ```ts ignore
 * const a = runner.start({ args: { topic: "a" } });
 * const b = runner.start({ args: { topic: "b" } });
 * setTimeout(() => b.abort(), 1_000); // only b
 * const [ra, rb] = await Promise.all([a.result, b.result]);
 * ```
 */
export interface RunHandle {
  /** The run's id: the one given (`runId`, `resume`, `redrive`), else the one chosen for it. */
  readonly runId: string;
  /**
   * `idle` until its drive starts (the run's lock is taken), then `running`, `paused`, `waiting`,
   * or how the drive ended.
   */
  readonly state: RunState;
  /**
   * What the drive ends with: the same as {@linkcode StepFlowRunner.run} (which rejects for misuse
   * only). Await it (or attach a handler): a rejection nobody handles ends the process.
   */
  readonly result: Promise<StepFlowResult>;
  /** Holds the run (and its child runs) before its next backend call. */
  pause(): void;
  /** Continues a paused run and its child runs. */
  resume(): void;
  /** Cancels the call in flight and ends the run `aborted` (its child runs end `cancelled`). */
  abort(): void;
}

/**
 * Runs an agent definition.
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition, StepFlowRunner } from "jsr:@stepflow/core";
 * import { ScriptedBackend } from "jsr:@stepflow/core/llm";
 *
 * const definition = await loadAgentDefinition("issue-solver");
 * const backend = new ScriptedBackend({
 *   "initial.issue": [{ output: { stepId: "initial.issue", next_action: { action: "complete" } } }],
 *   "complete.issue": [{ output: { stepId: "complete.issue", summary: "done" } }],
 * });
 * const result = await new StepFlowRunner(definition, { backend }).run({ args: { topic: "flaky test" } });
 * console.log(result.success, result.completionReason, result.state.history.length);
 * ```
 */
export class StepFlowRunner {
  readonly #def: AgentDefinition;
  readonly #options: StepFlowRunnerOptions;
  readonly #handlers: readonly (ExecutorEvents | undefined)[];
  /** The runs this runner drives now. */
  readonly #runs = new Set<FlowRun>();
  /** How the run that ended last ended (`idle` before any). */
  #last: RunState = "idle";
  /** The cap of fan-out children in flight, shared by every run this runner drives. */
  readonly #limiter: ChildLimiter;

  /**
   * Creates a runner for one agent definition.
   *
   * @param definition a loaded agent (see `loadAgentDefinition`)
   * @param options backend, events, store, limits
   */
  constructor(definition: AgentDefinition, options: StepFlowRunnerOptions = {}) {
    this.#def = definition;
    this.#options = options;
    this.#handlers = Array.isArray(options.events) ? options.events : [options.events];
    this.#limiter = new ChildLimiter(options.maxChildren);
  }

  /**
   * The runner's state: while it drives runs, `paused` when every one of them is paused, else
   * `running`; otherwise how the run that ended last ended (`idle` before the first). Each run's
   * own state is on its {@linkcode RunHandle} and in `onStateChange` (whose `ctx.runId` names it).
   */
  get state(): RunState {
    let driving = false;
    let paused = true;
    for (const run of this.#runs) {
      if (run.state === "running" || run.state === "paused") driving = true;
      if (run.state !== "paused") paused = false;
    }
    return !driving ? this.#last : paused ? "paused" : "running";
  }

  /** Pauses every run this runner drives (and their child runs) before its next backend call. */
  pause(): void {
    for (const run of this.#runs) run.pause();
  }

  /** Resumes every paused run this runner drives (and their child runs). */
  resume(): void {
    for (const run of this.#runs) run.resume();
  }

  /**
   * Aborts every run this runner drives: the calls in flight are cancelled and each run ends
   * `aborted` (their child runs `cancelled`). To stop one run, use its {@linkcode RunHandle}.
   */
  abort(): void {
    for (const run of this.#runs) run.abort();
  }

  /**
   * Starts one run and returns its handle at once: `result` is what {@linkcode StepFlowRunner.run}
   * would return. Any number of runs of one runner may go on at the same time; each is a run of
   * its own (own state, log, checkpoints, lock, child runs).
   *
   * @example
   * ```ts ignore
   * const runs = ["autumn", "winter"].map((topic) => runner.start({ args: { topic } }));
   * console.log(runs.map((r) => r.runId));
   * const results = await Promise.all(runs.map((r) => r.result));
   * ```
   */
  start(options: RunOptions = {}): RunHandle {
    const run = new FlowRun(this.#setup(), options);
    const result = this.#drive(run);
    return {
      runId: run.runId,
      get state() {
        return run.state;
      },
      result,
      pause: () => run.pause(),
      resume: () => run.resume(),
      abort: () => run.abort(),
    };
  }

  /**
   * Runs the flow to its end (or its next wait) and returns the result. It never throws for a
   * flow failure (that is in the result); it throws only for misuse: an unknown `resume` id, a run
   * this runner or another process drives already, a backend that cannot be created.
   */
  async run(options: RunOptions = {}): Promise<StepFlowResult> {
    return await this.start(options).result;
  }

  /**
   * Answers a run that waits at an input step and continues it, in this process, to its next wait
   * or its end (the same result as {@linkcode StepFlowRunner.run}). The answer is checked against
   * the step's schema first: a bad answer is refused with the validator's message and nothing is
   * recorded. Otherwise it is recorded — who answered, when, what — in the same checkpoint that
   * moves the run from `waiting` to `running`, under the run's lock, so of two answers exactly one
   * is recorded and the other is refused.
   *
   * @example
   * ```ts ignore
   * const first = await runner.run({ args: { topic: "release" } });
   * if (first.completionReason === "waiting") {
   *   console.log(first.waiting!.prompt);
   *   const result = await runner.answer(first.runId, { decision: "next" }, { answeredBy: "ops" });
   *   console.log(result.completionReason);
   * }
   * ```
   *
   * @throws {StepflowError} `INPUT_NOT_WAITING` (the run does not wait: it was answered already,
   * runs, or ended; or it waits on another request), `INPUT_ANSWER_INVALID` (the answer does not
   * match the step's schema), `INPUT_WAIT_EXPIRED` (its `waitTimeout` passed), and what `run`
   * throws for a `resume`
   */
  answer(
    runId: string,
    value: unknown,
    options: AnswerOptions & Pick<RunOptions, "signal" | "backendChoice" | "permissionMode"> = {},
  ): Promise<StepFlowResult> {
    const { signal, backendChoice, permissionMode, ...answer } = options;
    return this.run({
      resume: runId,
      answer: { ...answer, value },
      ...(signal ? { signal } : {}),
      ...(backendChoice ? { backendChoice } : {}),
      ...(permissionMode ? { permissionMode } : {}),
    }).catch(async (error) => {
      // A fan-out's child is answered on its own even while another process drives the run.
      const locked = error instanceof StepflowError && error.code === "INPUT_NOT_WAITING" &&
        error.details?.locked === true;
      if (!locked) throw error;
      const child = await answerWhileDriven(
        this.#def,
        this.#options.store,
        runId,
        value,
        { ...answer, ...(signal ? { signal } : {}) },
        this.#driveOf(signal),
        (m) => this.#warn(m),
      );
      if (!child) throw error;
      return child;
    });
  }

  /**
   * Records the answer to a run that waits at an input step without continuing it here: the same
   * checks and the same recording as {@linkcode StepFlowRunner.answer} (schema first, then one
   * checkpoint under the run's lock that records the answer and moves the run to `running`), after
   * which the lock is released and the run is left for another process to continue with
   * `run({ resume })` — a worker, when the run was submitted to the queue (`answerSubmittedRun`
   * of the worker module re-queues it). Returns what was recorded.
   *
   * @example
   * ```ts ignore
   * const recorded = await runner.recordAnswer(runId, { decision: "next" }, { answeredBy: "ops" });
   * console.log(recorded.answeredAt);
   * const result = await runner.run({ resume: runId }); // here, or in any other process
   * ```
   *
   * @throws {StepflowError} what {@linkcode StepFlowRunner.answer} throws before the run goes on
   */
  async recordAnswer(
    runId: string,
    value: unknown,
    options: AnswerOptions = {},
  ): Promise<RecordedAnswer> {
    return await recordAnswer(
      this.#def,
      this.#options.store,
      runId,
      value,
      options,
      (m) => this.#warn(m),
    );
  }

  /** What each run of this runner is made with. */
  #setup(): RunSetup {
    return {
      definition: this.#def,
      options: this.#options,
      handlers: this.#handlers,
      limiter: this.#limiter,
    };
  }

  /**
   * Drives a run of another agent with this runner's options (its store `store`), events and cap:
   * a fan-out child answered here, the parent a child wakes.
   */
  #driveOf(signal: AbortSignal | undefined): DriveRun {
    return (definition, store, runOptions) =>
      this.#drive(
        new FlowRun({
          definition,
          options: { ...this.#options, store },
          handlers: this.#handlers,
          limiter: this.#limiter,
        }, { ...runOptions, ...(signal && !runOptions.signal ? { signal } : {}) }),
      );
  }

  /** Drives `run` as one of this runner's runs (at most one drive per run id at a time). */
  async #drive(run: FlowRun): Promise<StepFlowResult> {
    for (const other of this.#runs) {
      if (other.runId === run.runId) {
        throw new StepflowError(
          "RUN_IN_PROGRESS",
          `This runner is already driving run ${run.runId}; wait for its result (or start another run).`,
          { details: { runId: run.runId } },
        );
      }
    }
    this.#runs.add(run);
    let result: StepFlowResult;
    try {
      result = await run.drive();
    } finally {
      this.#runs.delete(run);
      if (run.state !== "idle") this.#last = run.state;
    }
    return await this.#afterDrive(run, result);
  }

  /**
   * What follows a drive of a run with a fan-out (fan_out_answers.ts): a run that waits on fan-out
   * children looks at them again once its lock is released (one answered meanwhile is driven on
   * at once); a fan-out child that ended on its own wakes its waiting parent.
   */
  async #afterDrive(run: FlowRun, result: StepFlowResult): Promise<StepFlowResult> {
    const definition = run.definition;
    const store = run.store;
    if (
      result.completionReason === "waiting" && await waitsMoved(definition, store, result)
    ) {
      try {
        return await this.#driveOf(run.signal)(definition, store, { resume: result.runId });
      } catch (error) {
        // Another process took the run up (it continues the answered child): this drive is done.
        if (!takenElsewhere(error)) throw error;
        return result;
      }
    }
    // (A runner drives top runs only: a child its parent drives is not driven here.)
    if (result.completionReason !== "waiting") {
      await wakeParent(
        run.parent,
        definition,
        store,
        this.#driveOf(run.signal),
        run.signal,
        (m) => this.#warn(m),
      );
    }
    return result;
  }

  #warn(message: string): void {
    (this.#options.onWarning ?? ((m: string) => console.warn(`[stepflow] ${m}`)))(message);
  }
}
