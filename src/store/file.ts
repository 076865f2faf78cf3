/**
 * `FileRunStore`: the durable run store. Per run, in one directory:
 *
 * - `<runId>.jsonl` — the append-only run log (one event per line, see `log_format.ts`);
 * - `<runId>.checkpoint.json` — the checkpoint, replaced atomically after every iteration
 *   (written to `<runId>.checkpoint.json.tmp`, flushed, renamed over the old one);
 * - `<runId>.lock` — present while a process drives the run (see `file_lock.ts`);
 * - `<runId>.cancel` — a pending cancel request (`requestCancel`), written atomically, removed by
 *   the process driving the run when it takes the request.
 *
 * Writes use the synchronous file APIs on purpose: each asynchronous file operation costs tens of
 * microseconds of thread hand-off, ten times the write itself, and the runner awaits every write
 * before it goes on anyway.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { writeFileAtomic } from "../atomic_write.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { parseCheckpoint } from "./checkpoint_format.ts";
import { type CrashHook, crashHookFromEnv } from "./crash_hook.ts";
import { openAppendLog, writeAll } from "./append_log.ts";
import {
  acquireFileLock,
  DEFAULT_STALE_LOCK_MS,
  type HeldFileLock,
  judgeLock,
} from "./file_lock.ts";
import { formatLogLine, lastGoodSentence, parseRunLog } from "./log_format.ts";
import { sortNewestFirst, summarizeCheckpoint } from "./summary.ts";
import type { RunCheckpoint, RunLock, RunLogEntry, RunStore, RunSummary } from "./types.ts";
import { pathVisible, pathVisibleSync } from "../path_exists.ts";
import { assertRunId, isValidRunId } from "./run_id.ts";

/**
 * How hard a checkpoint is pushed to disk:
 *
 * - `"fsync"` (default): one flush per iteration. The run log is the durable record: the
 *   checkpoint is appended to it as a `store_checkpoint` line and the log is flushed
 *   (`fdatasync`) once; the checkpoint file is then a cache, written like `"process"` does, and
 *   rebuilt from the log when it is missing or older (the directory is flushed once per run, for
 *   the log's own entry). A finished iteration survives a crash of the process **and** of the
 *   machine (power loss).
 * - `"process"`: no flushes, and the old checkpoint is removed just before the temp file is renamed
 *   into its place (renaming over an existing file makes ext4 start writing the new data out at
 *   once, which costs more than the rest of the iteration). A crash in that instant leaves the
 *   complete temp file and no checkpoint; readers then use the temp file, and the next write
 *   promotes it first. A finished iteration survives any crash of the process (kill -9, out of
 *   memory, panic) because the operating system already holds the data; a crash of the machine
 *   itself may lose the last iterations — resume then re-runs them, or reports a truncated log or
 *   damaged checkpoint; it never restarts silently.
 */
export type Durability = "fsync" | "process";

/** Options of {@linkcode FileRunStore}. */
export interface FileRunStoreOptions {
  /** Flush policy of checkpoints (default `"fsync"`). */
  durability?: Durability;
  /**
   * Keep at most this many runs (agent.json `logging.maxFiles`). Applied whenever a run takes its
   * lock: the oldest runs beyond the limit are deleted, except runs that are being driven or were
   * interrupted (resumable) and runs whose files cannot be read. Default: keep every run.
   */
  maxRuns?: number;
  /**
   * A lock whose holder is on another host and whose heartbeat is older than this is stale
   * (default 60 000 ms; the holder refreshes it every quarter of this). On this host a lock is
   * stale as soon as its process is gone.
   */
  staleLockMs?: number;
  /** Receives warnings (stale lock taken over, torn log line dropped, pruning problems). */
  onWarning?: (message: string) => void;
  /**
   * For long-lived readers of many runs (the dashboard): `list()` returns the previous listing
   * when nothing in the directory was added, removed or renamed since (one stat; liveness of
   * running runs re-checked), and otherwise re-reads a finished run only when its lock file shows
   * a process touching it, plus a full pass at most every {@linkcode FULL_LIST_EVERY_MS}. A
   * checkpoint edited in place by hand may show late. The summaries of finished runs are then
   * shared between listings and frozen: copy one before changing it. Default false: every
   * `list()` checks every checkpoint (re-parsing changed ones only) and returns fresh objects.
   */
  listSettledFromCache?: boolean;
}

/**
 * How often `list()` re-checks every run's checkpoint (in between, only runs that can have changed
 * are re-read; see `FileRunStore.list`).
 */
export const FULL_LIST_EVERY_MS = 10_000;

export { DEFAULT_STALE_LOCK_MS };

const LOG_SUFFIX = ".jsonl";
const CHECKPOINT_SUFFIX = ".checkpoint.json";
const TEMP_SUFFIX = ".tmp";
const LOCK_SUFFIX = ".lock";
const CANCEL_SUFFIX = ".cancel";

/** The files of one run. */
export interface RunFiles {
  /** The run log. */
  log: string;
  /** The checkpoint. */
  checkpoint: string;
  /** The checkpoint's temp file (exists only mid-write, or after a crash mid-write). */
  checkpointTemp: string;
  /** The lock file. */
  lock: string;
  /** A pending cancel request (see {@linkcode FileRunStore.requestCancel}). */
  cancel: string;
}

/** The log line type that carries a checkpoint in `"fsync"` mode (never returned by `readLog`). */
const CHECKPOINT_ENTRY = "store_checkpoint";

/** Open handles of a run this process writes. */
interface OpenRun {
  /** The directory was flushed since this process created or opened the run's log. */
  dirSynced?: boolean;
  log?: Deno.FsFile;
  dir?: Deno.FsFile;
  lock?: HeldFileLock;
  /** The first write checked for a temp file left as the only checkpoint. */
  tempChecked?: boolean;
}

/**
 * A {@linkcode RunStore} on disk: one append-only JSONL log, one atomically replaced checkpoint and
 * one lock file per run, all in `dir`. Every run the CLI starts uses it, so any run can be resumed
 * from another process.
 *
 * @example
 * ```ts
 * import { FileRunStore } from "./file.ts";
 *
 * const store = new FileRunStore(await Deno.makeTempDir());
 * const lock = await store.lock("r1");
 * await store.append("r1", { ts: new Date().toISOString(), runId: "r1", type: "run_start" });
 * await store.saveCheckpoint({
 *   version: 1, runId: "r1", agent: "demo", status: "running", logEntries: 1,
 *   startedAt: new Date().toISOString(), updatedAt: new Date().toISOString(), state: {},
 * });
 * await lock.release();
 * console.log((await store.list())[0].runId); // "r1"
 * ```
 */
export class FileRunStore implements RunStore {
  /** The directory holding the runs (absolute). */
  readonly dir: string;
  readonly #durability: Durability;
  readonly #maxRuns?: number;
  readonly #staleLockMs: number;
  readonly #warn: (message: string) => void;
  readonly #open = new Map<string, OpenRun>();
  /** What `loadCheckpoint` returned, to detect a run that moved on before we locked it. */
  readonly #loaded = new Map<string, string>();
  readonly #crash?: CrashHook = crashHookFromEnv();
  /** Summaries by run, keyed by the checkpoint's mtime and size: `list()` re-reads changed ones only. */
  readonly #summaries = new Map<string, { key: string; summary: RunSummary }>();
  /** How far `readLogFrom` has read each log: entries and the byte offset after the last one. */
  readonly #tails = new Map<string, { entries: number; bytes: number }>();
  #dirReady = false;
  #lastFullList = 0;
  readonly #listSettledFromCache: boolean;
  #snapshot?: { dirMtime: number; trusted: boolean; runs: RunSummary[] };
  #order?: string[];

  /**
   * Creates a store over `dir`; nothing is touched on disk until the first write.
   *
   * @param dir where the runs are recorded (created on first write)
   * @param options durability, pruning, stale-lock bound, warnings
   */
  constructor(dir: string, options: FileRunStoreOptions = {}) {
    this.dir = resolve(dir);
    this.#durability = options.durability ?? "fsync";
    if (this.#durability !== "fsync" && this.#durability !== "process") {
      throw new StepflowError(
        "STORE_OPTION_INVALID",
        `FileRunStore durability must be "fsync" or "process", got ${
          JSON.stringify(options.durability)
        }.`,
      );
    }
    if (
      options.maxRuns !== undefined && !(Number.isInteger(options.maxRuns) && options.maxRuns > 0)
    ) {
      throw new StepflowError(
        "STORE_OPTION_INVALID",
        `FileRunStore maxRuns (logging.maxFiles) must be a positive integer, got ${options.maxRuns}.`,
      );
    }
    this.#maxRuns = options.maxRuns;
    this.#staleLockMs = options.staleLockMs ?? DEFAULT_STALE_LOCK_MS;
    this.#listSettledFromCache = options.listSettledFromCache ?? false;
    this.#warn = options.onWarning ?? ((m) => console.warn(`[stepflow] ${m}`));
  }

  /** The file paths of a run (validates the id). */
  files(runId: string): RunFiles {
    assertRunId(runId);
    const base = join(this.dir, runId);
    return {
      log: base + LOG_SUFFIX,
      checkpoint: base + CHECKPOINT_SUFFIX,
      checkpointTemp: base + CHECKPOINT_SUFFIX + TEMP_SUFFIX,
      lock: base + LOCK_SUFFIX,
      cancel: base + CANCEL_SUFFIX,
    };
  }

  /**
   * Records a request to cancel the run: `<runId>.cancel` (who asked and when), written with the
   * one atomic writer. The process driving the run removes it and ends the run `cancelled`.
   */
  async requestCancel(runId: string): Promise<void> {
    const file = this.files(runId).cancel;
    const request = { runId, requestedAt: new Date().toISOString(), pid: Deno.pid };
    try {
      await writeFileAtomic(file, `${JSON.stringify(request)}\n`);
    } catch (error) {
      throw ioError(file, "record the cancel request", error);
    }
  }

  /**
   * Whether a cancel request is pending: removes `<runId>.cancel` and says whether it was there —
   * one system call, so it can be polled while a run is driven.
   */
  async takeCancelRequest(runId: string): Promise<boolean> {
    try {
      await Deno.remove(this.files(runId).cancel);
      return true;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return false;
      throw error;
    }
  }

  /**
   * Appends one entry to the run's log. The first append of a process to a log that ends in a torn
   * line (a crash mid-append) first cuts that line off, with a warning.
   */
  append(runId: string, entry: RunLogEntry): Promise<void> {
    try {
      const files = this.files(runId);
      const bytes = new TextEncoder().encode(formatLogLine(entry));
      const run = this.#run(runId);
      this.#assertLockHeld(runId, run);
      const log = run.log ?? (run.log = this.#openLog(files.log));
      if (this.#crash?.due("append-torn")) {
        writeAll(log, bytes.subarray(0, bytes.length >> 1));
        this.#crash.crash();
      }
      ioStep(files.log, "append to the run log", () => writeAll(log, bytes));
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Records the run's checkpoint. `"fsync"`: the checkpoint file (a cache) is replaced without a
   * flush, then the checkpoint is appended to the run log and the log flushed once — the
   * iteration is durable when that flush returns. `"process"`: the checkpoint file is replaced, no
   * flushes. A crash at any point leaves the old or the new checkpoint, never a mix.
   */
  saveCheckpoint(checkpoint: RunCheckpoint): Promise<void> {
    try {
      const files = this.files(checkpoint.runId);
      const run = this.#run(checkpoint.runId);
      this.#assertLockHeld(checkpoint.runId, run);
      const json = JSON.stringify(checkpoint);
      const bytes = new TextEncoder().encode(json + "\n");
      this.#ensureDir();
      ioStep(files.checkpoint, "write the checkpoint", () => {
        // A crash between removing the checkpoint and the rename leaves the temp file as the only
        // checkpoint file: promote it before it is overwritten.
        if (!run.tempChecked) {
          run.tempChecked = true;
          if (!pathVisibleSync(files.checkpoint) && readTempCheckpoint(files) !== undefined) {
            Deno.renameSync(files.checkpointTemp, files.checkpoint);
          }
        }
        const temp = Deno.openSync(files.checkpointTemp, {
          write: true,
          create: true,
          truncate: true,
        });
        try {
          writeAll(temp, bytes);
        } finally {
          temp.close();
        }
        if (this.#crash?.due("checkpoint-temp")) this.#crash.crash();
        // Renaming over an existing file makes ext4 write the new data out at once (a flush in
        // all but name): remove the old one first. Readers fall back to the complete temp file.
        try {
          Deno.removeSync(files.checkpoint);
        } catch (error) {
          if (!(error instanceof Deno.errors.NotFound)) throw error;
        }
        if (this.#crash?.due("checkpoint-removed")) this.#crash.crash();
        Deno.renameSync(files.checkpointTemp, files.checkpoint);
        if (this.#crash?.due("checkpoint-renamed")) this.#crash.crash();
      });
      if (this.#durability === "fsync") {
        // The one flush of the iteration: the log, ending in this checkpoint, is the record.
        const log = run.log ?? (run.log = this.#openLog(files.log));
        const line = new TextEncoder().encode(
          `{"ts":${JSON.stringify(checkpoint.updatedAt)},"runId":${
            JSON.stringify(checkpoint.runId)
          },"type":"${CHECKPOINT_ENTRY}","checkpoint":${json}}\n`,
        );
        ioStep(files.log, "append the checkpoint to the run log", () => {
          writeAll(log, line);
          log.syncDataSync();
          // Once per run: the log's directory entry (the checkpoint file is only a cache). Windows
          // cannot open a directory to flush it; NTFS journals the entry itself.
          if (!run.dirSynced && Deno.build.os !== "windows") {
            (run.dir ??= Deno.openSync(this.dir, { read: true })).syncSync();
          }
          run.dirSynced = true;
        });
      }
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The run's checkpoint, or undefined when the run is unknown: the newer of the checkpoint file
   * and the last checkpoint recorded in the run log (`"fsync"` mode), so a cache that is missing
   * or older than the log is rebuilt from it. Throws, naming the file and the last good log entry,
   * when the checkpoint file is corrupt, when there is a log but no checkpoint at all, or when the
   * checkpoint counts more log entries than the log holds (a truncated log).
   */
  async loadCheckpoint(runId: string): Promise<RunCheckpoint | undefined> {
    const files = this.files(runId);
    const found = await readCheckpointText(files);
    const { entries: log, checkpoint: logged } = await this.#readLogFile(runId);
    if (found === undefined && logged === undefined) {
      if (!(await pathVisible(files.log))) return undefined;
      throw new StepflowError(
        "RUN_CHECKPOINT_MISSING",
        `Run ${runId} has a run log (${files.log}) but no checkpoint (${files.checkpoint}): its process stopped before the run's first checkpoint, so there is no state to continue from. ${await this
          .#logStanding(runId)} Start the run again.`,
        { details: { runId, file: files.checkpoint } },
      );
    }
    let cached: RunCheckpoint | undefined;
    if (found !== undefined) {
      try {
        cached = parseCheckpoint(found.text, found.file, runId);
      } catch (error) {
        if (!(error instanceof StepflowError)) throw error;
        throw new StepflowError(error.code, `${error.message} ${await this.#logStanding(runId)}`, {
          details: error.details,
        });
      }
    }
    const checkpoint = newer(cached, logged)!;
    if (log.length < checkpoint.logEntries) {
      throw new StepflowError(
        "RUN_LOG_TRUNCATED",
        `Run log ${files.log} holds ${log.length} entries, but checkpoint ${files.checkpoint} was written after ${checkpoint.logEntries}: the log lost entries outside stepflow (truncated or replaced). ${
          lastGoodSentence(log)
        } Restore the log from a backup; resuming would lose history.`,
        {
          details: { runId, file: files.log, entries: log.length, expected: checkpoint.logEntries },
        },
      );
    }
    this.#loaded.set(runId, fingerprint(checkpoint));
    return checkpoint;
  }

  /**
   * The run's log entries in order (empty when the run is unknown). A torn last line is dropped
   * (see `log_format.ts`); any other damage throws `RUN_LOG_CORRUPT` naming the file, the line and
   * the last good entry.
   */
  async readLog(runId: string): Promise<RunLogEntry[]> {
    return (await this.#readLogFile(runId)).entries;
  }

  /** The log's entries without the checkpoint lines, and the last checkpoint line's checkpoint. */
  async #readLogFile(
    runId: string,
  ): Promise<{ entries: RunLogEntry[]; checkpoint?: RunCheckpoint }> {
    const files = this.files(runId);
    let text: string;
    try {
      text = await Deno.readTextFile(files.log);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return { entries: [] };
      throw ioError(files.log, "read", error);
    }
    const all = parseRunLog(text, files.log, runId).entries;
    const entries: RunLogEntry[] = [];
    let last: RunLogEntry | undefined;
    for (const entry of all) {
      if (entry.type === CHECKPOINT_ENTRY) last = entry;
      else entries.push(entry);
    }
    if (!last) return { entries };
    const checkpoint = parseCheckpoint(
      JSON.stringify(last.checkpoint),
      `${files.log} (its last ${CHECKPOINT_ENTRY} line)`,
      runId,
    );
    return { entries, checkpoint };
  }

  /**
   * The run's log entries from index `from` on. Reads only the bytes appended since the previous
   * call for the same run (the offset is remembered per run), so following a live run costs the
   * new lines only. Complete lines only: a line still being written is picked up next time. A log
   * that shrank (replaced outside stepflow) is read again from the start.
   */
  async readLogFrom(runId: string, from: number): Promise<RunLogEntry[]> {
    const files = this.files(runId);
    const known = this.#tails.get(runId);
    let start = 0;
    let count = 0;
    if (known && known.entries <= from) {
      start = known.bytes;
      count = known.entries;
    }
    let bytes: Uint8Array;
    try {
      bytes = await readBytesFrom(files.log, start);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return [];
      throw ioError(files.log, "read", error);
    }
    if (bytes === SHRUNK) {
      this.#tails.delete(runId);
      return this.readLogFrom(runId, from);
    }
    const end = bytes.lastIndexOf(0x0a) + 1;
    const text = new TextDecoder().decode(bytes.subarray(0, end));
    let entries: RunLogEntry[];
    try {
      // The store's own checkpoint lines are not run events (readLog leaves them out too).
      entries = parseRunLog(text, files.log, runId).entries.filter((entry) =>
        entry.type !== CHECKPOINT_ENTRY
      );
    } catch (error) {
      // Damage: read the whole log so the error names the right line and the last good entry.
      if (start > 0) await this.readLog(runId);
      throw error;
    }
    this.#tails.set(runId, { entries: count + entries.length, bytes: start + end });
    return entries.slice(Math.max(0, from - count));
  }

  /**
   * Takes the run's lock; throws `RUN_LOCKED` naming the holder when a live process has it. A lock
   * left by a dead process is taken over with a warning. Throws `RUN_CHANGED` when the run moved on
   * since this store loaded its checkpoint (another process drove it meanwhile). With `maxRuns`, the
   * oldest runs beyond the limit are pruned once the lock is held.
   */
  async lock(runId: string): Promise<RunLock> {
    const files = this.files(runId);
    this.#ensureDir();
    const run = this.#run(runId);
    if (run.lock && !run.lock.lost) {
      throw new StepflowError(
        "RUN_LOCKED",
        `Run ${runId} is already being driven by this process (lock file ${files.lock}).`,
        { details: { runId, file: files.lock } },
      );
    }
    const held = acquireFileLock(files.lock, runId, {
      staleAfterMs: this.#staleLockMs,
      onWarning: this.#warn,
    });
    run.lock = held;
    const release = () => {
      if (run.lock !== held) return Promise.resolve();
      run.log?.close();
      run.dir?.close();
      this.#open.delete(runId);
      held.release();
      return Promise.resolve();
    };
    try {
      await this.#assertUnchanged(runId);
    } catch (error) {
      await release();
      throw error;
    }
    if (this.#maxRuns !== undefined) {
      try {
        await this.prune(this.#maxRuns, runId);
      } catch (error) {
        this.#warn(`pruning old runs in ${this.dir} failed: ${errorMessage(error)}`);
      }
    }
    return { release };
  }

  /**
   * Lists the runs in the directory, newest first, with steps, duration and tokens. A run whose
   * files cannot be read is listed with a `problem` rather than failing the listing.
   */
  list(): Promise<RunSummary[]> {
    const now = Date.now();
    const full = !this.#listSettledFromCache || now - this.#lastFullList >= FULL_LIST_EVERY_MS;
    if (full) this.#lastFullList = now;
    return this.#list(full);
  }

  /**
   * The listing. Outside a full pass (`full`: always, unless `listSettledFromCache`), a
   * run is re-read only when it can have changed: it is new, has a lock file (being driven, or
   * left by a crash), was running or paused, or had a problem. A finished run's checkpoint only
   * changes when a process resumes or redrives it, which takes its lock first — so 10 000 finished
   * runs cost one directory read, not 10 000 stats.
   */
  async #list(full: boolean): Promise<RunSummary[]> {
    // Nothing was added, removed or renamed in the directory since the last listing (checkpoints
    // are only ever replaced by a rename): the listing stands; only liveness can have changed.
    // Trusted only when the directory's mtime was over a second old at that listing, so a
    // change within the same clock tick cannot hide.
    const dirMtime = this.#listSettledFromCache ? mtimeOf(this.dir) : undefined;
    const snapshot = this.#snapshot;
    if (dirMtime !== undefined && snapshot?.dirMtime === dirMtime && snapshot.trusted) {
      const out: RunSummary[] = new Array(snapshot.runs.length);
      for (let i = 0; i < snapshot.runs.length; i++) {
        const run = snapshot.runs[i];
        out[i] = run.status === "running" || run.status === "paused"
          ? { ...run, live: await this.#lockLive(this.files(run.runId).lock) }
          : run;
      }
      return out;
    }
    const ids = new Set<string>();
    const locked = new Set<string>();
    try {
      // Synchronous on purpose: one call per entry of a 20 000-file directory costs a thread
      // hand-off each when asynchronous (twice the time of the whole synchronous read).
      for (const entry of Deno.readDirSync(this.dir)) {
        if (!entry.isFile) continue;
        const name = entry.name;
        const id = name.endsWith(CHECKPOINT_SUFFIX)
          ? name.slice(0, -CHECKPOINT_SUFFIX.length)
          : name.endsWith(LOG_SUFFIX)
          ? name.slice(0, -LOG_SUFFIX.length)
          : undefined;
        if (id !== undefined && isValidRunId(id)) ids.add(id);
        else if (name.endsWith(LOCK_SUFFIX)) locked.add(name.slice(0, -LOCK_SUFFIX.length));
      }
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return [];
      throw ioError(this.dir, "list", error);
    }
    // With listSettledFromCache the summaries of finished runs are shared, frozen objects: a
    // listing of 10 000 runs then allocates next to nothing.
    const shared = this.#listSettledFromCache;
    let out: RunSummary[] = [];
    for (const id of ids) {
      const cached = full || locked.has(id) ? undefined : this.#summaries.get(id)?.summary;
      const settled = cached && !cached.problem && cached.status !== "running" &&
        cached.status !== "paused";
      out.push(settled ? (shared ? cached : { ...cached }) : await this.#summarize(id));
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

  /**
   * Deletes the oldest runs so that at most `keep` remain, and returns the deleted run ids. Never
   * deletes `except`, a run that is being driven or was interrupted (status `running`/`paused`:
   * it can still be resumed), or a run whose files cannot be read.
   *
   * @param keep how many runs to keep (the newest)
   * @param except a run never to delete (the one starting now); it counts as one of the kept
   */
  async prune(keep: number, except?: string): Promise<string[]> {
    const runs = await this.#list(true);
    const removed: string[] = [];
    let kept = except !== undefined ? 1 : 0;
    for (const run of runs) {
      // Unreadable runs are never deleted, and their dates cannot be trusted to rank them.
      if (run.runId === except || run.problem) continue;
      if (kept < keep) {
        kept++;
        continue;
      }
      if (run.status === "running" || run.status === "paused") continue;
      const files = this.files(run.runId);
      let held: HeldFileLock;
      try {
        held = acquireFileLock(files.lock, run.runId, {
          staleAfterMs: this.#staleLockMs,
          onWarning: () => {},
        });
      } catch {
        continue; // somebody is driving it right now
      }
      try {
        for (const path of [files.log, files.checkpoint, files.checkpointTemp]) {
          await Deno.remove(path).catch((error) => {
            if (!(error instanceof Deno.errors.NotFound)) throw error;
          });
        }
        removed.push(run.runId);
      } finally {
        held.release();
      }
    }
    return removed;
  }

  /** Closes every file this store holds open (logs of runs written without a lock). */
  close(): void {
    for (const run of this.#open.values()) {
      run.log?.close();
      run.dir?.close();
      run.lock?.release();
    }
    this.#open.clear();
  }

  #run(runId: string): OpenRun {
    let run = this.#open.get(runId);
    if (!run) this.#open.set(runId, run = {});
    return run;
  }

  #assertLockHeld(runId: string, run: OpenRun): void {
    if (run.lock?.lost) {
      throw new StepflowError(
        "RUN_LOCK_LOST",
        `Run ${runId}: another process took over its lock (${run.lock.path}) after this process stopped refreshing it; this process stops writing so the two cannot interleave.`,
        { details: { runId, file: run.lock.path } },
      );
    }
  }

  #ensureDir(): void {
    if (this.#dirReady) return;
    ioStep(
      this.dir,
      "create the run directory",
      () => Deno.mkdirSync(this.dir, { recursive: true }),
    );
    this.#dirReady = true;
  }

  /** Opens a log for appending; cuts off a torn last line first. */
  #openLog(path: string): Deno.FsFile {
    this.#ensureDir();
    return ioStep(path, "open the run log", () =>
      openAppendLog(path, {
        onTornTail: (bytes) =>
          this.#warn(
            `run log ${path} ended with a torn line (${bytes} bytes written by a crash in the middle of an append); it was cut off before appending.`,
          ),
      }));
  }

  async #assertUnchanged(runId: string): Promise<void> {
    const seen = this.#loaded.get(runId);
    if (seen === undefined) return;
    this.#loaded.delete(runId);
    const files = this.files(runId);
    let now = "";
    try {
      const found = await readCheckpointText(files);
      const cached = found ? parseCheckpoint(found.text, found.file, runId) : undefined;
      const current = newer(cached, (await this.#readLogFile(runId)).checkpoint);
      if (current) now = fingerprint(current);
    } catch {
      // unreadable now: it changed
    }
    if (now !== seen) {
      throw new StepflowError(
        "RUN_CHANGED",
        `Run ${runId} changed while this process was preparing to continue it: another process drove it in the meantime (checkpoint ${files.checkpoint}). Run the command again to continue from its latest state.`,
        { details: { runId, file: files.checkpoint } },
      );
    }
  }

  /** "The run log … is intact up to line N (…)." — for corruption messages. */
  async #logStanding(runId: string): Promise<string> {
    const file = this.files(runId).log;
    try {
      const log = await this.readLog(runId);
      if (log.length === 0) return `The run log ${file} has no entries.`;
      return `The run log ${file} is intact: ${lastGoodSentence(log)}`;
    } catch (error) {
      return `The run log is unreadable too: ${errorMessage(error)}`;
    }
  }

  async #summarize(runId: string): Promise<RunSummary> {
    const files = this.files(runId);
    let summary: RunSummary;
    // A checkpoint is replaced (never edited in place), so inode + mtime + size identify its content
    // well enough for a listing: a settled run whose checkpoint did not change is not parsed again.
    const key = statKey(files.checkpoint);
    const hit = key === undefined ? undefined : this.#summaries.get(runId);
    if (hit && hit.key === key) return { ...hit.summary };
    let cached: RunCheckpoint | undefined;
    try {
      const found = await readCheckpointText(files);
      cached = found ? parseCheckpoint(found.text, found.file, runId) : undefined;
      // The cache alone is read while it is fresh; a missing one, or one of a run that nobody
      // drives any more (it may lag the log after a crash), is checked against the log.
      const open = cached?.status === "running" || cached?.status === "paused";
      const live = open ? await this.#lockLive(files.lock) : undefined;
      const current = cached === undefined || live === false
        ? newer(cached, (await this.#readLogFile(runId)).checkpoint)
        : cached;
      if (!current) throw new Deno.errors.NotFound(files.checkpoint);
      summary = summarizeCheckpoint(current);
      if (current !== cached) {
        summary.live = summary.status === "running" || summary.status === "paused"
          ? await this.#lockLive(files.lock)
          : undefined;
        if (summary.live === undefined) delete summary.live;
        return summary;
      }
      if (!open && key !== undefined) {
        const copy = { ...summary };
        if (this.#listSettledFromCache) Object.freeze(copy);
        this.#summaries.set(runId, { key, summary: copy });
      }
      if (live !== undefined) summary.live = live;
      return summary;
    } catch (error) {
      this.#summaries.delete(runId);
      summary = await this.#summaryFromLog(runId, error);
    }
    if (summary.status === "running" || summary.status === "paused") {
      summary.live = await this.#lockLive(files.lock);
    }
    return summary;
  }

  async #summaryFromLog(runId: string, checkpointError: unknown): Promise<RunSummary> {
    const missing = checkpointError instanceof Deno.errors.NotFound;
    let first: RunLogEntry | undefined;
    let last: RunLogEntry | undefined;
    let problem = missing
      ? "no checkpoint: the process stopped before its first checkpoint"
      : errorMessage(checkpointError);
    try {
      const log = await this.readLog(runId);
      first = log[0];
      last = log[log.length - 1];
    } catch (error) {
      if (missing) problem = errorMessage(error);
    }
    return {
      runId,
      agent: typeof first?.agent === "string" ? first.agent : "",
      status: "running",
      startedAt: first?.ts ?? "",
      updatedAt: last?.ts ?? "",
      problem,
    };
  }

  async #lockLive(path: string): Promise<boolean> {
    try {
      const [text, stat] = await Promise.all([Deno.readTextFile(path), Deno.stat(path)]);
      return judgeLock(text, stat.mtime?.getTime() ?? 0, this.#staleLockMs).live;
    } catch {
      return false;
    }
  }
}

/** `inode:mtime:size` of a file, or undefined when it cannot be stat'ed. */
function statKey(path: string): string | undefined {
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

/** Marks a file that is now shorter than the offset asked for. */
const SHRUNK = new Uint8Array(0);

/** The bytes of a file from `offset` to its end, or {@linkcode SHRUNK}. */
async function readBytesFrom(path: string, offset: number): Promise<Uint8Array> {
  const file = await Deno.open(path, { read: true });
  try {
    const size = (await file.stat()).size;
    if (size < offset) return SHRUNK;
    const out = new Uint8Array(size - offset);
    await file.seek(offset, Deno.SeekMode.Start);
    let off = 0;
    while (off < out.length) {
      const n = await file.read(out.subarray(off));
      if (n === null || n === 0) break;
      off += n;
    }
    return out.subarray(0, off);
  } finally {
    file.close();
  }
}

/** The checkpoint further along (more log entries, then later), or the one that exists. */
function newer(
  a: RunCheckpoint | undefined,
  b: RunCheckpoint | undefined,
): RunCheckpoint | undefined {
  if (!a || !b) return a ?? b;
  if (a.logEntries !== b.logEntries) return a.logEntries > b.logEntries ? a : b;
  return a.updatedAt >= b.updatedAt ? a : b;
}

/** Identifies a checkpoint's progress (changes with every write). */
function fingerprint(checkpoint: RunCheckpoint): string {
  return `${checkpoint.status}|${checkpoint.logEntries}|${checkpoint.updatedAt}`;
}

/**
 * The checkpoint's text and the file it came from: the checkpoint, or — when it is missing — a
 * temp file that parses (complete: it was written in full before the old checkpoint was removed),
 * or undefined.
 */
async function readCheckpointText(
  files: RunFiles,
): Promise<{ text: string; file: string } | undefined> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      return { text: await Deno.readTextFile(files.checkpoint), file: files.checkpoint };
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw ioError(files.checkpoint, "read", error);
    }
    const temp = readTempCheckpoint(files);
    if (temp !== undefined) return { text: temp, file: files.checkpointTemp };
    // The writer may have renamed the temp file between our two reads: look once more.
  }
  return undefined;
}

/** The temp file's text when it holds complete JSON (a torn write never parses), else undefined. */
function readTempCheckpoint(files: RunFiles): string | undefined {
  try {
    const text = Deno.readTextFileSync(files.checkpointTemp);
    JSON.parse(text);
    return text;
  } catch {
    return undefined;
  }
}

function ioStep<T>(path: string, what: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof StepflowError) throw error;
    throw ioError(path, what, error);
  }
}

function ioError(path: string, what: string, error: unknown): StepflowError {
  return new StepflowError(
    "RUN_STORE_IO",
    `Cannot ${what} (${path}): ${
      errorMessage(error)
    }. Check that the run directory (agent.json logging.directory) is writable and the disk is not full.`,
    { cause: error, details: { file: path } },
  );
}
