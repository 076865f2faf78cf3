/**
 * What a plan run tells the world about its steps: progress events (the run's stream and the
 * `onProgress` callback) and the shared step events (`onStepStart`, `onStepLog`, …), with the
 * event info of a step and the order that keeps log lines with the iteration they belong to.
 *
 * @module
 */
import type { EventEmitter } from "../events/emitter.ts";
import type { ExecutorEvents, StepInfo } from "../events/types.ts";
import { EventLog } from "./progress.ts";
import type { LogEntry, Plan, ProgressEvent, Step, StepResult } from "./types.ts";

/** A log line stamped now. */
export function logEntry(level: LogEntry["level"], message: string): LogEntry {
  return { level, message, timestamp: new Date().toISOString() };
}

/** What a progress report carries besides the step's status. */
export interface ProgressExtra {
  result?: StepResult;
  logs?: LogEntry[];
  progress?: number;
}

/** The run a {@linkcode StepReporter} reports on (the live arrays: they grow with recovery). */
export interface ReportedRun {
  runId: string;
  plan: Plan;
  /** The steps by node number. */
  nodes: readonly Step[];
  /** Attempts per node (a step's event `iteration`). */
  attempts: readonly number[];
  emitter: EventEmitter;
  onProgress?: (event: ProgressEvent) => void;
}

/** Reports the steps of one plan run. */
export class StepReporter {
  /** Every progress event from the start of the run; ends when the run ends. */
  readonly log: EventLog<ProgressEvent> = new EventLog<ProgressEvent>();
  readonly #run: ReportedRun;
  #order = 0;

  /** Reports on `run`. */
  constructor(run: ReportedRun) {
    this.#run = run;
  }

  /** Whether anyone listens to `event` (the info of an event is made only then). */
  has(event: keyof ExecutorEvents): boolean {
    return this.#run.emitter.has(event);
  }

  /** Emits a shared event to its handlers, if any. */
  async emit<E extends keyof ExecutorEvents>(
    event: E,
    ...args: Parameters<NonNullable<ExecutorEvents[E]>>
  ): Promise<void> {
    if (this.#run.emitter.has(event)) await this.#run.emitter.emit(event, ...args);
  }

  /** A progress event of node `i` in its current status, with `extra`. */
  progress(i: number, extra?: ProgressExtra): void {
    const { plan, nodes, onProgress } = this.#run;
    const event: ProgressEvent = {
      taskId: plan.taskId,
      planId: plan.id,
      stepId: nodes[i].id,
      status: nodes[i].status,
    };
    if (extra?.progress !== undefined) event.progress = extra.progress;
    if (extra?.result !== undefined) event.result = extra.result;
    if (extra?.logs !== undefined) event.logs = extra.logs;
    this.log.push(event);
    if (extra?.logs !== undefined || extra?.progress !== undefined) this.#emitLog(i, extra);
    if (onProgress) {
      try {
        onProgress(event);
      } catch {
        // A broken progress callback must not break the run.
      }
    }
  }

  /** One log line of node `i`. */
  note(i: number, level: LogEntry["level"], message: string): void {
    this.progress(i, { logs: [logEntry(level, message)] });
  }

  /** A step's event info; log lines keep the order of the step iteration they belong to. */
  info(i: number, order: number = ++this.#order): StepInfo {
    const { runId, plan, nodes, attempts } = this.#run;
    const step = nodes[i];
    return {
      runId,
      stepId: step.id,
      desc: step.description,
      order,
      path: [step.description],
      iteration: attempts[i],
      tool: step.tool,
      planId: plan.id,
    };
  }

  /** The info of a step's end: the start's, with the status the step settled in. */
  endInfo(info: StepInfo, i: number): StepInfo {
    return { ...info, status: this.#run.nodes[i].status };
  }

  /** The log lines (or else the percentage) of a progress report, as shared `onStepLog` events. */
  #emitLog(i: number, extra: ProgressExtra): void {
    if (!this.has("onStepLog")) return;
    const info = this.info(i, this.#order);
    if (extra.logs === undefined) {
      void this.emit("onStepLog", info, `${extra.progress}%`, "info");
      return;
    }
    for (const entry of extra.logs) void this.emit("onStepLog", info, entry.message, entry.level);
  }
}
