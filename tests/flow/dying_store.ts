/**
 * A store that commits like the PostgreSQL store (appended entries become durable with the next
 * checkpoint) and dies after a given commit: the crash-at-every-commit tests' process death.
 *
 * @module
 */
import type { MemoryRunStore } from "../../src/store/memory.ts";
import type {
  RunCheckpoint,
  RunLock,
  RunLogEntry,
  RunStore,
  RunSummary,
} from "../../src/store/types.ts";

/**
 * Commits appended entries with the next checkpoint (one transaction per iteration), and dies right
 * after its `dieAfter`-th commit: nothing the process does afterwards is recorded.
 */
export class DyingStore implements RunStore {
  commits = 0;
  #pending: RunLogEntry[] = [];
  #dead = false;
  constructor(readonly committed: MemoryRunStore, readonly dieAfter = Infinity) {}

  append(_runId: string, entry: RunLogEntry): Promise<void> {
    if (!this.#dead) this.#pending.push(structuredClone(entry));
    return Promise.resolve();
  }

  async saveCheckpoint(checkpoint: RunCheckpoint): Promise<void> {
    if (this.#dead) throw new Error("the process is dead");
    for (const entry of this.#pending) await this.committed.append(checkpoint.runId, entry);
    this.#pending = [];
    await this.committed.saveCheckpoint(checkpoint);
    if (++this.commits === this.dieAfter) {
      this.#dead = true;
      throw new Error(`killed after commit ${this.commits}`);
    }
  }

  loadCheckpoint(runId: string): Promise<RunCheckpoint | undefined> {
    return this.committed.loadCheckpoint(runId);
  }

  readLog(runId: string): Promise<RunLogEntry[]> {
    return this.committed.readLog(runId);
  }

  lock(runId: string): Promise<RunLock> {
    return this.committed.lock(runId);
  }

  list(): Promise<RunSummary[]> {
    return this.committed.list();
  }
}
