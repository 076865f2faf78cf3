/**
 * The file store's listing cache: what `FileRunStore.list()` remembers between listings so a
 * long-lived reader of many runs (the dashboard) does not re-read every checkpoint each time — the
 * summaries of settled runs keyed by their checkpoint's stat, the previous listing with the run
 * directory's mtime, and the newest-first order. The store supplies the two reads it caches: the
 * directory scan and one run's summary.
 *
 * @module
 */
import { sortNewestFirst } from "./summary.ts";
import type { RunSummary } from "./types.ts";
import { isOpenStatus } from "../run_statuses.ts";

/**
 * How often `list()` re-checks every run's checkpoint (in between, only runs that can have changed
 * are re-read; see `FileRunStore.list`).
 */
export const FULL_LIST_EVERY_MS = 10_000;

/** The runs a scan of the run directory found: ids with a log or checkpoint, ids with a lock file. */
export interface RunDirScan {
  /** Runs with a log or a checkpoint. */
  ids: Set<string>;
  /** Runs with a lock file. */
  locked: Set<string>;
}

/** What a {@linkcode RunListing} reads through its store. */
export interface RunListingSource {
  /** The run directory (its mtime says whether anything was added, removed or renamed). */
  dir: string;
  /** Share frozen summaries of settled runs and reuse the previous listing (`listSettledFromCache`). */
  settledFromCache: boolean;
  /** Scans the directory; undefined when it does not exist. */
  scan(): RunDirScan | undefined;
  /** One run's summary, read from its files; `locked`: the run has a lock file. */
  summarize(runId: string, locked: boolean): Promise<RunSummary>;
}

/** The listing cache of one `FileRunStore`. */
export class RunListing {
  readonly #source: RunListingSource;
  /** Summaries by run, keyed by the checkpoint's stat: `list()` re-reads changed ones only. */
  readonly #summaries = new Map<string, { key: string; summary: RunSummary }>();
  #lastFullList = 0;
  #snapshot?: { dirMtime: number; trusted: boolean; runs: RunSummary[] };
  #order?: string[];

  /**
   * Creates an empty cache.
   *
   * @param source the directory, the mode and the store's two reads
   */
  constructor(source: RunListingSource) {
    this.#source = source;
  }

  /** The listing, newest first, with a full pass when one is due (always, unless settled-from-cache). */
  list(): Promise<RunSummary[]> {
    const now = Date.now();
    const full = !this.#source.settledFromCache || now - this.#lastFullList >= FULL_LIST_EVERY_MS;
    if (full) this.#lastFullList = now;
    return this.#list(full);
  }

  /** The listing after re-checking every run's checkpoint (pruning ranks runs on it). */
  listAll(): Promise<RunSummary[]> {
    return this.#list(true);
  }

  /** A copy of the summary remembered for the run under the checkpoint's stat `key`, if any. */
  remembered(runId: string, key: string): RunSummary | undefined {
    const hit = this.#summaries.get(runId);
    return hit && hit.key === key ? { ...hit.summary } : undefined;
  }

  /** Remembers a settled run's summary under its checkpoint's stat `key` (frozen when shared). */
  remember(runId: string, key: string, summary: RunSummary): void {
    const copy = { ...summary };
    if (this.#source.settledFromCache) Object.freeze(copy);
    this.#summaries.set(runId, { key, summary: copy });
  }

  /** Forgets the run's summary (its files could not be read). */
  forget(runId: string): void {
    this.#summaries.delete(runId);
  }

  /**
   * The listing. Outside a full pass (`full`: always, unless `listSettledFromCache`), a
   * run is re-read only when it can have changed: it is new, has a lock file (being driven, or
   * left by a crash), was running or paused, or had a problem. A finished run's checkpoint only
   * changes when a process resumes or redrives it, which takes its lock first — so 10 000 finished
   * runs cost one directory read, not 10 000 stats.
   */
  async #list(full: boolean): Promise<RunSummary[]> {
    const source = this.#source;
    // Nothing was added, removed or renamed in the directory since the last listing (checkpoints
    // are only ever replaced by a rename): the listing stands; only liveness can have changed.
    // Trusted only when the directory's mtime was over a second old at that listing, so a
    // change within the same clock tick cannot hide.
    const dirMtime = source.settledFromCache ? mtimeOf(source.dir) : undefined;
    const snapshot = this.#snapshot;
    if (dirMtime !== undefined && snapshot?.dirMtime === dirMtime && snapshot.trusted) {
      const out: RunSummary[] = new Array(snapshot.runs.length);
      for (let i = 0; i < snapshot.runs.length; i++) {
        const run = snapshot.runs[i];
        // A driven run moves on without touching the directory (its log is appended to).
        out[i] = isOpenStatus(run.status) ? await source.summarize(run.runId, true) : run;
      }
      return out;
    }
    const scan = source.scan();
    if (scan === undefined) return [];
    const { ids, locked } = scan;
    // With listSettledFromCache the summaries of finished runs are shared, frozen objects: a
    // listing of 10 000 runs then allocates next to nothing.
    const shared = source.settledFromCache;
    let out: RunSummary[] = [];
    for (const id of ids) {
      const cached = full || locked.has(id) ? undefined : this.#summaries.get(id)?.summary;
      const settled = cached && !cached.problem && !isOpenStatus(cached.status);
      out.push(
        settled ? (shared ? cached : { ...cached }) : await source.summarize(id, locked.has(id)),
      );
    }
    for (const id of this.#summaries.keys()) if (!ids.has(id)) this.#summaries.delete(id);
    // The same runs as last time are in the same order (a run's start time never changes).
    const order = this.#order;
    if (shared && order && order.length === out.length && order.every((id) => ids.has(id))) {
      const byId = new Map(out.map((run) => [run.runId, run]));
      out = order.map((id) => byId.get(id)!);
    } else {
      sortNewestFirst(out);
      if (shared) this.#order = out.map((run) => run.runId);
    }
    if (dirMtime !== undefined) {
      this.#snapshot = {
        dirMtime,
        trusted: Date.now() - dirMtime > 1000,
        runs: out.slice(),
      };
    }
    return out;
  }
}

/** `inode:mtime:size` of a file, or undefined when it cannot be stat'ed. */
export function statKey(path: string): string | undefined {
  try {
    const info = Deno.statSync(path);
    return `${info.ino ?? 0}:${info.mtime?.getTime() ?? 0}:${info.size}`;
  } catch {
    return undefined;
  }
}

/** A path's mtime in ms, or undefined. */
function mtimeOf(path: string): number | undefined {
  try {
    return Deno.statSync(path).mtime?.getTime();
  } catch {
    return undefined;
  }
}
