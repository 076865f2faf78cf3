/**
 * `FileRunStore`: the durable run store. Per run, in one directory:
 *
 * - `<runId>.jsonl` — the append-only run log (one event per line, see `log_format.ts`), the
 *   durable record: every checkpoint is appended to it as a `store_checkpoint` line;
 * - `<runId>.checkpoint.json` — a cache of the log's last checkpoint, replaced atomically (written
 *   to `<runId>.checkpoint.json.tmp`, renamed into place) — in `"fsync"` mode only now and then,
 *   and rebuilt from the log when it is missing, torn or older;
 * - `<runId>.lock` — present while a process drives the run (see `file_lock.ts`);
 * - `<runId>.cancel` — a pending cancel request (`requestCancel`), written atomically, removed by
 *   the process driving the run when it takes the request.
 *
 * Writes use the synchronous file APIs on purpose: each asynchronous file operation costs tens of
 * microseconds of thread hand-off, ten times the write itself, and the runner awaits every write
 * before it goes on anyway.
 *
 * What a listing remembers between calls is `file_listing.ts`'s.
 *
 * Long because: the rest (~1,000 lines) is one concept: the write path and the read path of the
 * same three files (log, checkpoint cache, temp file) share their recovery rules — a reader repairs
 * exactly what a crashed writer can leave — and splitting them would put those rules in two places.
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
import { summarizeCheckpoint } from "./summary.ts";
import { FULL_LIST_EVERY_MS, type RunDirScan, RunListing, statKey } from "./file_listing.ts";
import type {
  AgentLoggingSource,
  RunCheckpoint,
  RunLock,
  RunLogEntry,
  RunStore,
  RunSummary,
} from "./types.ts";
import { pathVisible, pathVisibleSync } from "../path_exists.ts";
import { assertRunId, isValidRunId } from "./run_id.ts";
import { isNotEnded, isOpenStatus } from "../run_statuses.ts";

/**
 * How hard a checkpoint is pushed to disk. The checkpoint file is always written without a flush (temp file, old file removed, rename:
 * renaming over an existing file makes ext4 start writing the new data out at once, which costs
 * more than the rest of the iteration). A crash between the removal and the rename leaves the
 * complete temp file; readers use it, and the next write promotes it first.
 *
 * - `"fsync"` (default): the run log is the durable record. Each checkpoint is appended to it as a
 *   `store_checkpoint` line, then the log is flushed (`fdatasync`): exactly one append and one
 *   flush per iteration (the directory is flushed once per run, for the log's own entry). The
 *   checkpoint file is a cache of the log's last checkpoint, rewritten at a process's first
 *   checkpoint, every {@linkcode FileRunStoreOptions.cacheEvery} checkpoints, when the status
 *   leaves `running` and when the lock is released; readers catch up from the log and rebuild a
 *   cache that is missing, torn or older. A finished iteration survives a crash of the process
 *   **and** of the machine (power loss).
 * - `"process"`: no flushes; the checkpoint file is the checkpoint, replaced after every one. A
 *   finished iteration survives any crash of the process (kill -9, out of memory, panic) because
 *   the operating system already holds the data; a crash of the machine itself may lose the last
 *   iterations — resume then re-runs them, or reports a truncated log or damaged checkpoint; it
 *   never restarts silently.
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
  /**
   * `"fsync"` mode: rewrite the checkpoint file (a cache of the log's last checkpoint) every this
   * many checkpoints, besides the first one a process writes, every one whose status is not
   * `running`, and the last one when the lock is released (default
   * {@linkcode DEFAULT_CACHE_EVERY}). Readers catch up from the log, so this bounds how much of
   * the log a listing reads, not what it shows.
   */
  cacheEvery?: number;
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
  /**
   * Where the runs of another agent are recorded (see `RunStore.forAgent`): `runStoreFor` sets it
   * to that agent's own folder. Default: this store (a store made for one folder keeps an agent
   * step's child run beside its parent).
   */
  forAgent?: (agent: AgentLoggingSource) => RunStore;
}

export { FULL_LIST_EVERY_MS };

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
  /** The log's length in bytes (set when it is opened, advanced by every write). */
  logBytes?: number;
  /** Checkpoints saved since the cache was last written (undefined: none yet this session). */
  sinceCache?: number;
  /** The latest checkpoint when the cache does not hold it yet (`"fsync"` mode). */
  pendingCache?: PendingCache;
}

/** A checkpoint waiting to be written to the cache, and the log's length after its line. */
interface PendingCache {
  json: string;
  logBytes: number;
}

/**
 * The key a `"fsync"` cache adds to the checkpoint: the log's length in bytes right after the
 * `store_checkpoint` line it copies. Readers parse the log from there on to catch up; it is never
 * part of the checkpoint they return.
 */
const LOG_BYTES_KEY = "storeLogBytes";

/** Default of {@linkcode FileRunStoreOptions.cacheEvery}. */
export const DEFAULT_CACHE_EVERY = 100;

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
  readonly #cacheEvery: number;
  readonly #warn: (message: string) => void;
  readonly #open = new Map<string, OpenRun>();
  /** What `loadCheckpoint` returned, to detect a run that moved on before we locked it. */
  readonly #loaded = new Map<string, string>();
  readonly #crash?: CrashHook = crashHookFromEnv();
  /** How far `readLogFrom` has read each log: entries and the byte offset after the last one. */
  readonly #tails = new Map<string, { entries: number; bytes: number }>();
  #dirReady = false;
  /** The listing cache (`list()`). */
  readonly #listing: RunListing;
  readonly #forAgent?: (agent: AgentLoggingSource) => RunStore;

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
    if (
      options.cacheEvery !== undefined &&
      !(Number.isInteger(options.cacheEvery) && options.cacheEvery > 0)
    ) {
      throw new StepflowError(
        "STORE_OPTION_INVALID",
        `FileRunStore cacheEvery must be a positive integer, got ${options.cacheEvery}.`,
      );
    }
    this.#cacheEvery = options.cacheEvery ?? DEFAULT_CACHE_EVERY;
    this.#staleLockMs = options.staleLockMs ?? DEFAULT_STALE_LOCK_MS;
    this.#forAgent = options.forAgent;
    this.#listing = new RunListing({
      dir: this.dir,
      settledFromCache: options.listSettledFromCache ?? false,
      scan: () => this.#scanDir(),
      summarize: (runId, locked) => this.#summarize(runId, locked),
    });
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
   * The store that records the runs of `agent` (an agent step's child run): the one the
   * `forAgent` option gives (`runStoreFor`: that agent's own folder), else this store.
   */
  forAgent(agent: AgentLoggingSource): RunStore {
    return this.#forAgent?.(agent) ?? this;
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
      const log = this.#log(files, run);
      if (this.#crash?.due("append-torn")) {
        writeAll(log, bytes.subarray(0, bytes.length >> 1));
        this.#crash.crash();
      }
      ioStep(files.log, "append to the run log", () => writeAll(log, bytes));
      run.logBytes! += bytes.length;
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Records the run's checkpoint. `"fsync"`: appends it to the run log as a `store_checkpoint`
   * line and flushes the log (`fdatasync`) — the iteration's one flush, after which it is durable;
   * the checkpoint file is a cache of that line, rewritten without a flush at the first checkpoint
   * of a session, every {@linkcode FileRunStoreOptions.cacheEvery} checkpoints, when the status
   * leaves `running`, and when the lock is released. `"process"`: the checkpoint file is the
   * checkpoint, replaced every time, no flushes. A crash at any point leaves the old or the new
   * checkpoint, never a mix.
   */
  saveCheckpoint(checkpoint: RunCheckpoint): Promise<void> {
    try {
      const files = this.files(checkpoint.runId);
      const run = this.#run(checkpoint.runId);
      this.#assertLockHeld(checkpoint.runId, run);
      // A checkpoint read under our own lock is outdated by our own write, not by another process.
      this.#loaded.delete(checkpoint.runId);
      const json = JSON.stringify(checkpoint);
      if (this.#durability === "fsync") this.#logCheckpoint(files, run, checkpoint, json);
      if (this.#crash?.due("checkpoint-logged")) this.#crash.crash();
      const pending = { json, logBytes: run.logBytes ?? 0 };
      run.sinceCache = (run.sinceCache ?? this.#cacheEvery) + 1;
      // Not every iteration: the cache's unlink and rename would ride in the journal commit of the
      // next flush and double its cost (see docs/performance.md).
      if (
        this.#durability === "process" || checkpoint.status !== "running" ||
        run.sinceCache >= this.#cacheEvery
      ) {
        this.#writeCache(files, run, pending);
      } else {
        run.pendingCache = pending;
      }
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Appends the checkpoint to the run log and flushes the log: the iteration's one flush, after
   * which the log, ending in this checkpoint, is the durable record.
   */
  #logCheckpoint(files: RunFiles, run: OpenRun, checkpoint: RunCheckpoint, json: string): void {
    const log = this.#log(files, run);
    if (this.#crash?.due("checkpoint-unlogged")) this.#crash.crash();
    const line = new TextEncoder().encode(
      `{"ts":${JSON.stringify(checkpoint.updatedAt)},"runId":${
        JSON.stringify(checkpoint.runId)
      },"type":"${CHECKPOINT_ENTRY}","checkpoint":${json}}\n`,
    );
    if (this.#crash?.due("checkpoint-torn")) {
      writeAll(log, line.subarray(0, line.length >> 1));
      this.#crash.crash();
    }
    ioStep(files.log, "append the checkpoint to the run log", () => {
      writeAll(log, line);
      run.logBytes! += line.length;
      log.syncDataSync();
      // Once per run: the log's directory entry (the checkpoint file is only a cache). Windows
      // cannot open a directory to flush it; NTFS journals the entry itself.
      if (!run.dirSynced && Deno.build.os !== "windows") {
        (run.dir ??= Deno.openSync(this.dir, { read: true })).syncSync();
      }
      run.dirSynced = true;
    });
  }

  /**
   * Replaces the checkpoint file (the cache) with `pending`, recording in `"fsync"` mode the log's
   * length after that checkpoint's line so readers catch up from there. No flush: a cache lost or
   * torn by a power cut is rebuilt from the log.
   */
  #writeCache(files: RunFiles, run: OpenRun, pending: PendingCache): void {
    run.pendingCache = undefined;
    run.sinceCache = 0;
    const text = this.#durability === "fsync"
      ? `${pending.json.slice(0, -1)},"${LOG_BYTES_KEY}":${pending.logBytes}}\n`
      : `${pending.json}\n`;
    const bytes = new TextEncoder().encode(text);
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
    const { checkpoint: found, log } = await this.#checkpointOf(runId, this.#warn);
    if (found === undefined) {
      if (!(await pathVisible(files.log))) return undefined;
      throw new StepflowError(
        "RUN_CHECKPOINT_MISSING",
        `Run ${runId} has a run log (${files.log}) but no checkpoint (${files.checkpoint}): its process stopped before the run's first checkpoint, so there is no state to continue from. ${await this
          .#logStanding(runId)} Start the run again.`,
        { details: { runId, file: files.checkpoint } },
      );
    }
    const checkpoint = found;
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
   * The newer of the checkpoint file (the cache) and the log's last `store_checkpoint` line, and
   * the log's entries. A torn or invalid cache gives way to the log's checkpoint when the log has
   * one (stepflow writes the cache only after the log line, so the log is never behind it), with
   * a warning through `warn`; without one it is an error naming the file and the log's standing.
   */
  async #checkpointOf(
    runId: string,
    warn?: (message: string) => void,
  ): Promise<{ checkpoint?: RunCheckpoint; log: RunLogEntry[] }> {
    const found = await readCheckpointText(this.files(runId));
    const { entries: log, checkpoint: logged } = await this.#readLogFile(runId);
    let cached: RunCheckpoint | undefined;
    if (found !== undefined) {
      try {
        cached = parseCache(found.text, found.file, runId).checkpoint;
      } catch (error) {
        if (!(error instanceof StepflowError)) throw error;
        if (logged === undefined) {
          throw new StepflowError(
            error.code,
            `${error.message} ${await this.#logStanding(runId)}`,
            { details: error.details },
          );
        }
        warn?.(
          `${error.message} The file is only a cache of the run log's checkpoints: the run continues from the log's last one (${logged.logEntries} entries, ${logged.updatedAt}).`,
        );
      }
    }
    return { checkpoint: newer(cached, logged), log };
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
      this.#flushCache(runId, run);
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
   * files cannot be read is listed with a `problem` rather than failing the listing. What a
   * listing remembers for the next one is `file_listing.ts`'s.
   */
  list(): Promise<RunSummary[]> {
    return this.#listing.list();
  }

  /** The runs in the directory (undefined when it does not exist). */
  #scanDir(): RunDirScan | undefined {
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
      if (error instanceof Deno.errors.NotFound) return undefined;
      throw ioError(this.dir, "list", error);
    }
    return { ids, locked };
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
    const runs = await this.#listing.listAll();
    const removed: string[] = [];
    let kept = except !== undefined ? 1 : 0;
    for (const run of runs) {
      // Unreadable runs are never deleted, and their dates cannot be trusted to rank them.
      if (run.runId === except || run.problem) continue;
      if (kept < keep) {
        kept++;
        continue;
      }
      // Runs that have not ended are kept: a waiting run is as unfinished as an interrupted one.
      if (isNotEnded(run.status)) continue;
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
    for (const [runId, run] of this.#open) {
      this.#flushCache(runId, run);
      run.log?.close();
      run.dir?.close();
      run.lock?.release();
    }
    this.#open.clear();
  }

  /**
   * Writes the checkpoint the cache lags behind, if any (the lock is being released). A failure
   * only costs readers a longer catch-up from the log: it is a warning.
   */
  #flushCache(runId: string, run: OpenRun): void {
    const pending = run.pendingCache;
    if (!pending || run.lock?.lost) return;
    try {
      this.#writeCache(this.files(runId), run, pending);
    } catch (error) {
      this.#warn(`run ${runId}: the checkpoint cache was not updated: ${errorMessage(error)}`);
    }
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

  /** The run's open log; opened for appending (a torn last line cut off first) on first use. */
  #log(files: RunFiles, run: OpenRun): Deno.FsFile {
    if (run.log) return run.log;
    const path = files.log;
    this.#ensureDir();
    const log = ioStep(path, "open the run log", () =>
      openAppendLog(path, {
        onTornTail: (bytes) =>
          this.#warn(
            `run log ${path} ended with a torn line (${bytes} bytes written by a crash in the middle of an append); it was cut off before appending.`,
          ),
      }));
    run.logBytes = ioStep(path, "open the run log", () => log.statSync().size);
    return run.log = log;
  }

  async #assertUnchanged(runId: string): Promise<void> {
    const seen = this.#loaded.get(runId);
    if (seen === undefined) return;
    this.#loaded.delete(runId);
    const files = this.files(runId);
    let now = "";
    try {
      const current = (await this.#checkpointOf(runId)).checkpoint;
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

  /**
   * A run's summary for a listing. `locked`: the run has a lock file, so a process may be moving
   * it on (or died doing so) and a settled-looking cache is checked against the log too.
   */
  async #summarize(runId: string, locked = true): Promise<RunSummary> {
    const files = this.files(runId);
    let summary: RunSummary;
    // A checkpoint is replaced (never edited in place), so inode + mtime + size identify its content
    // well enough for a listing: a settled run whose checkpoint did not change is not parsed again.
    const key = statKey(files.checkpoint);
    const hit = key === undefined || locked ? undefined : this.#listing.remembered(runId, key);
    if (hit) return hit;
    try {
      const { cached, current } = await this.#currentCheckpoint(runId, locked);
      if (!current) throw new Deno.errors.NotFound(files.checkpoint);
      summary = summarizeCheckpoint(current);
      if (isOpenStatus(summary.status)) {
        summary.live = await this.#lockLive(files.lock);
      } else if (current === cached && key !== undefined) {
        this.#listing.remember(runId, key, summary);
      }
      return summary;
    } catch (error) {
      this.#listing.forget(runId);
      summary = await this.#summaryFromLog(runId, error);
    }
    if (isOpenStatus(summary.status)) {
      summary.live = await this.#lockLive(files.lock);
    }
    return summary;
  }

  /**
   * The run's current checkpoint for a listing, and the cache's when it was read: the cache,
   * caught up with the log's later `store_checkpoint` lines. A `"fsync"` cache says where in the
   * log it was taken, so only the bytes after it are read; a cache written every checkpoint
   * (`"process"`) is trusted while its run is settled or driven, and checked against the whole log
   * when its process is gone. A torn or invalid cache is replaced by the log's checkpoint when
   * the log has one.
   */
  async #currentCheckpoint(
    runId: string,
    locked: boolean,
  ): Promise<{ cached?: RunCheckpoint; current?: RunCheckpoint }> {
    const files = this.files(runId);
    const found = await readCheckpointText(files);
    let cache: Cache | undefined;
    try {
      cache = found && parseCache(found.text, found.file, runId);
    } catch (error) {
      const logged = (await this.#readLogFile(runId)).checkpoint;
      if (!logged) throw error;
      return { current: logged };
    }
    if (!cache) return { current: (await this.#readLogFile(runId)).checkpoint };
    const cached = cache.checkpoint;
    const open = isOpenStatus(cached.status);
    if (cache.logBytes !== undefined) {
      // A settled run's log grows only under its lock, whose release rewrites the cache.
      if (!open && !locked) return { cached, current: cached };
      const after = await this.#checkpointAfter(runId, cache.logBytes);
      const logged = after ? after.checkpoint : (await this.#readLogFile(runId)).checkpoint;
      return { cached, current: newer(cached, logged) };
    }
    if (open && !(await this.#lockLive(files.lock))) {
      return { cached, current: newer(cached, (await this.#readLogFile(runId)).checkpoint) };
    }
    return { cached, current: cached };
  }

  /**
   * The last checkpoint line among the log's complete lines after byte `logBytes` (where a
   * `"fsync"` cache was taken): `{ checkpoint }` (undefined when there is none after it), or
   * undefined when the log does not continue that cache (shorter, not at a line boundary, or
   * damaged after it) and must be read whole.
   */
  async #checkpointAfter(
    runId: string,
    logBytes: number,
  ): Promise<{ checkpoint?: RunCheckpoint } | undefined> {
    const file = this.files(runId).log;
    if (logBytes === 0) return undefined;
    let bytes: Uint8Array;
    try {
      bytes = await readBytesFrom(file, logBytes - 1);
    } catch {
      return undefined;
    }
    if (bytes === SHRUNK || bytes[0] !== 0x0a) return undefined;
    const end = bytes.lastIndexOf(0x0a) + 1;
    if (end <= 1) return {};
    let last: RunLogEntry | undefined;
    try {
      const text = new TextDecoder().decode(bytes.subarray(1, end));
      for (const entry of parseRunLog(text, file, runId).entries) {
        if (entry.type === CHECKPOINT_ENTRY) last = entry;
      }
      if (!last) return {};
      return {
        checkpoint: parseCheckpoint(
          JSON.stringify(last.checkpoint),
          `${file} (its last ${CHECKPOINT_ENTRY} line)`,
          runId,
        ),
      };
    } catch {
      return undefined;
    }
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

/** The checkpoint file, parsed: a checkpoint, and the log length a `"fsync"` cache was taken at. */
interface Cache {
  checkpoint: RunCheckpoint;
  logBytes?: number;
}

/** Parses the checkpoint file; the `"fsync"` cache's log length is taken out of the checkpoint. */
function parseCache(text: string, file: string, runId: string): Cache {
  const checkpoint = parseCheckpoint(text, file, runId);
  if (!Object.hasOwn(checkpoint, LOG_BYTES_KEY)) return { checkpoint };
  const record = checkpoint as unknown as Record<string, unknown>;
  const logBytes = record[LOG_BYTES_KEY];
  delete record[LOG_BYTES_KEY];
  return Number.isSafeInteger(logBytes) && (logBytes as number) > 0
    ? { checkpoint, logBytes: logBytes as number }
    : { checkpoint };
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
