import { StepflowError } from "../errors.ts";
import { sortNewestFirst, summarizeCheckpoint } from "./summary.ts";
import type { RunCheckpoint, RunLock, RunLogEntry, RunStore, RunSummary } from "./types.ts";
import { isOpenStatus } from "../run_statuses.ts";

/**
 * A {@linkcode RunStore} kept in memory: for tests and for runs that need no durability.
 * Checkpoints and log entries are deep-copied through JSON so a stored state can never alias live runner state.
 *
 * @example
 * ```ts
 * import { MemoryRunStore } from "./memory.ts";
 * const store = new MemoryRunStore();
 * const lock = await store.lock("r1");
 * await lock.release();
 * ```
 */
export class MemoryRunStore implements RunStore {
  readonly #logs = new Map<string, string[]>();
  readonly #checkpoints = new Map<string, string>();
  readonly #locks = new Set<string>();
  readonly #cancels = new Set<string>();

  /** Appends one entry. */
  append(runId: string, entry: RunLogEntry): Promise<void> {
    let log = this.#logs.get(runId);
    if (!log) this.#logs.set(runId, log = []);
    // JSON, like the file store (structuredClone recursed and crashed on deeply nested data).
    log.push(JSON.stringify(entry));
    return Promise.resolve();
  }

  /** Replaces the checkpoint. */
  saveCheckpoint(checkpoint: RunCheckpoint): Promise<void> {
    this.#checkpoints.set(checkpoint.runId, JSON.stringify(checkpoint));
    return Promise.resolve();
  }

  /** Returns a copy of the checkpoint. */
  loadCheckpoint(runId: string): Promise<RunCheckpoint | undefined> {
    const raw = this.#checkpoints.get(runId);
    return Promise.resolve(raw === undefined ? undefined : JSON.parse(raw));
  }

  /** Returns a copy of the log. */
  readLog(runId: string): Promise<RunLogEntry[]> {
    return Promise.resolve((this.#logs.get(runId) ?? []).map((line) => JSON.parse(line)));
  }

  /** Returns copies of the log entries from index `from` on. */
  readLogFrom(runId: string, from: number): Promise<RunLogEntry[]> {
    const lines = (this.#logs.get(runId) ?? []).slice(Math.max(0, from));
    return Promise.resolve(lines.map((line) => JSON.parse(line)));
  }

  /** Takes the in-process lock of a run. */
  lock(runId: string): Promise<RunLock> {
    if (this.#locks.has(runId)) {
      return Promise.reject(
        new StepflowError("RUN_LOCKED", `Run ${runId} is already being driven in this process.`),
      );
    }
    this.#locks.add(runId);
    let released = false;
    return Promise.resolve({
      release: () => {
        if (!released) {
          released = true;
          this.#locks.delete(runId);
        }
        return Promise.resolve();
      },
    });
  }

  /** Records a request to cancel the run (taken by the runner driving it). */
  requestCancel(runId: string): Promise<void> {
    this.#cancels.add(runId);
    return Promise.resolve();
  }

  /** Whether a cancel request is pending for the run; removes it. */
  takeCancelRequest(runId: string): Promise<boolean> {
    return Promise.resolve(this.#cancels.delete(runId));
  }

  /** Lists runs, newest first. */
  list(): Promise<RunSummary[]> {
    const out: RunSummary[] = [];
    for (const [runId, raw] of this.#checkpoints) {
      const summary = summarizeCheckpoint(JSON.parse(raw) as RunCheckpoint);
      if (isOpenStatus(summary.status)) {
        summary.live = this.#locks.has(runId);
      }
      out.push(summary);
    }
    return Promise.resolve(sortNewestFirst(out));
  }
}
