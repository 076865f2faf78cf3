/**
 * The run store contract: an append-only event log plus an atomically replaced checkpoint per run.
 * The runner owns what a checkpoint's `state` holds; stores treat it as opaque JSON.
 *
 * @module
 */

/** One line of a run log. */
export interface RunLogEntry {
  /** ISO timestamp. */
  ts: string;
  /** The run. */
  runId: string;
  /** Event type, e.g. `run_start`, `step_start`, `step_end`, `step_error`, `run_end`. */
  type: string;
  /** Step concerned, when any. */
  stepId?: string;
  /** Iteration concerned, when any. */
  iteration?: number;
  /** Event-specific fields (intent, handoff, usage, error, …). */
  [field: string]: unknown;
}

import type { RunStatus } from "../run_statuses.ts";
import type { NextStep } from "../invocation.ts";

// The one list of run states is in ../run_statuses.ts.
export type { RunStatus };

/** The durable snapshot of a run, replaced after every iteration. */
export interface RunCheckpoint {
  /**
   * Checkpoint format version: 2 when `state` takes large handoff values from the run log
   * (`handoffInLog`, `latestHandoffInLog`), else 1.
   */
  version: 1 | 2;
  /** The run. */
  runId: string;
  /** Agent (or executor) name. */
  agent: string;
  /** Run status at the time of writing. */
  status: RunStatus;
  /** When the run started (ISO). */
  startedAt: string;
  /** When this checkpoint was written (ISO). */
  updatedAt: string;
  /** Number of log entries written before this checkpoint (lets resume detect a torn log). */
  logEntries: number;
  /** The executor's own resumable state (plain JSON). */
  state: Record<string, unknown>;
}

/** A held run lock. */
export interface RunLock {
  /** Releases the lock (idempotent). */
  release(): Promise<void>;
}

/** A summary line of one run, for listings. */
export interface RunSummary {
  /** The run. */
  runId: string;
  /** Agent name. */
  agent: string;
  /** Status; `queued` for a run submitted to the worker queue that no worker started yet. */
  status: RunStatus | "queued";
  /** Start time (ISO). */
  startedAt: string;
  /** Last update (ISO). */
  updatedAt: string;
  /** The group the run was started in (the state's `group`: `RunOptions.group`), when any. */
  group?: string;
  /**
   * Recorded iterations (history entries) so far. Read from the checkpoint state's `historyLength`
   * when the executor records one.
   */
  steps?: number;
  /** Iterations executed (the state's `iteration`), when recorded. */
  iterations?: number;
  /** Wall time from the start to the last checkpoint, in milliseconds. */
  durationMs?: number;
  /**
   * Token usage so far (the state's `usage`), when recorded; `callsWithoutUsage` counts the backend
   * calls that reported no usage (their tokens are unknown, not in the totals).
   */
  usage?: {
    inputTokens: number;
    outputTokens: number;
    /** Of `inputTokens`, those read from the prompt cache (absent when none were). */
    cacheReadTokens?: number;
    /** Of `inputTokens`, those written to the prompt cache (absent when none were). */
    cacheWriteTokens?: number;
    /**
     * Cost in US dollars of the calls that could be priced; `null` when none could (unknown, never
     * 0); absent when no call was made.
     */
    costUsd?: number | null;
    /** Model calls made (absent in checkpoints written before it was listed). */
    calls?: number;
    callsWithoutUsage?: number;
    /** Calls whose cost is unknown (no usage, or no price for the model): `costUsd` is a lower bound. */
    callsWithoutCost?: number;
  };
  /** The step the run is at (running, paused) or ended on. */
  stepId?: string;
  /** For a child run (an agent step of another run started it): the parent run's id. */
  parentRunId?: string;
  /** Why the run ended (the state's `end.reason`), once it ended. */
  completionReason?: string;
  /**
   * The error the run ended with (the state's `end.error`), on one line: `CODE: message`, at most
   * 300 characters. Absent for a run that completed.
   */
  endError?: string;
  /**
   * The next step the run's end names (its end error's `details.next`, a `NextStep`): for a run
   * its budget stopped, the resume with a raised budget. The CLI prints it as a command line.
   */
  endNext?: NextStep;
  /**
   * For a `running` or `paused` run: true while a live process holds its lock, false when nobody
   * drives it any more (an interrupted run, resumable with `--resume`). Absent when unknown.
   */
  live?: boolean;
  /** Who holds a live run's lease (`host:pid` of the worker), for stores with leases. */
  worker?: string;
  /** Why the run's files could not be read completely (corrupt checkpoint, no checkpoint yet). */
  problem?: string;
  /**
   * Why a `failed` run failed when its checkpoint does not say (the run queue gave it up: what
   * happened, the attempts, the last error and the fix).
   */
  error?: string;
  /**
   * For a `waiting` run: what it waits for — the step, and `tool` when a tool call of that step
   * waits for permission (Approve/Deny) rather than an input step for an answer. Read from the
   * state's `waiting` request; `answers` when it waits on several (a fan-out's waiting children).
   */
  waitingFor?: { stepId: string; tool?: string; answers?: number };
}

/**
 * Where runs are recorded. Implementations: `MemoryRunStore` (tests, default), the file store and
 * the PostgreSQL store.
 *
 * @example
 * ```ts
 * import { MemoryRunStore } from "./memory.ts";
 * const store = new MemoryRunStore();
 * await store.append("r1", { ts: new Date().toISOString(), runId: "r1", type: "run_start" });
 * console.log((await store.readLog("r1")).length); // 1
 * ```
 */
export interface RunStore {
  /**
   * Appends one entry to the run's log. An entry is durable once the next `saveCheckpoint` returns:
   * stores may buffer it until then and write both together (one flush or one transaction per
   * iteration).
   */
  append(runId: string, entry: RunLogEntry): Promise<void>;
  /** Replaces the run's checkpoint atomically. */
  saveCheckpoint(checkpoint: RunCheckpoint): Promise<void>;
  /** The run's checkpoint, or undefined when the run is unknown. Corrupt data throws. */
  loadCheckpoint(runId: string): Promise<RunCheckpoint | undefined>;
  /** The run's log entries in order. Corrupt data throws, naming the last good entry. */
  readLog(runId: string): Promise<RunLogEntry[]>;
  /** Takes the exclusive lock of a run; throws `RUN_LOCKED` when another live holder has it. */
  lock(runId: string): Promise<RunLock>;
  /** Lists known runs, newest first. */
  list(): Promise<RunSummary[]>;
  /**
   * Optional: the run's log entries from index `from` on (0-based; `from` = the number of entries
   * the caller already has). Lets a reader follow a live run (the dashboard's live view) without
   * re-reading the whole log each time. A store without it is read through
   * {@linkcode readLogFrom}, which falls back to `readLog(runId).slice(from)`.
   */
  readLogFrom?(runId: string, from: number): Promise<RunLogEntry[]>;
  /**
   * Optional: records a request to cancel the run, for whichever process drives it (the
   * dashboard's Cancel). The runner driving the run takes the request with
   * {@linkcode RunStore.takeCancelRequest} (about once a second) and ends the run `cancelled`, as
   * Ctrl-C does; the run can be resumed. A store without these two methods cannot cancel a run
   * from another process: stop the process that drives it (Ctrl-C) instead.
   */
  requestCancel?(runId: string): Promise<void>;
  /**
   * Optional: whether a cancel request is pending for the run, removing it (so a request is
   * honoured once). The runner also calls it when it takes a run's lock, to drop a request no
   * process was driving the run to see.
   */
  takeCancelRequest?(runId: string): Promise<boolean>;
  /**
   * Optional: the store that records the runs of another agent `agent`, in the same place as
   * this one — for an agent step's child run, recorded as a run of its own agent (listed and shown
   * with that agent's runs). The file store made for an agent (`runStoreFor`, `selectRunStore`)
   * answers the child agent's own folder (`logging.directory`, with its `logging.maxFiles`); a
   * store that answers itself, or has no such method, records the child beside its parent (the
   * PostgreSQL store: one database holds every agent's runs, each row naming its agent).
   */
  forAgent?(agent: AgentLoggingSource): RunStore;
}

/** What locating an agent's runs depends on: its name and agent.json `logging`. */
export interface AgentLoggingSource {
  /** The agent's name. */
  name: string;
  /** agent.json (only `logging` is read). */
  agent: { logging?: { directory?: string; maxFiles?: number } };
}

/**
 * The log entries of a run from index `from` on: the store's own `readLogFrom` when it has one,
 * else the whole log sliced (correct for every store, slower for long logs).
 *
 * @example
 * ```ts
 * import { MemoryRunStore, readLogFrom } from "./mod.ts";
 * const store = new MemoryRunStore();
 * for (const type of ["run_start", "step_start", "step_end"]) {
 *   await store.append("r1", { ts: new Date().toISOString(), runId: "r1", type });
 * }
 * console.log((await readLogFrom(store, "r1", 1)).map((e) => e.type)); // ["step_start", "step_end"]
 * ```
 */
export function readLogFrom(
  store: RunStore,
  runId: string,
  from: number,
): Promise<RunLogEntry[]> {
  if (store.readLogFrom) return store.readLogFrom(runId, from);
  return store.readLog(runId).then((log) => log.slice(Math.max(0, from)));
}
