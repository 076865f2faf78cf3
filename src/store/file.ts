/**
 * `FileRunStore`: the durable run store. Per run, in one directory:
 *
 * - `<runId>.jsonl` — the append-only run log (one event per line, see `log_format.ts`);
 * - `<runId>.checkpoint.json` — the checkpoint, replaced atomically after every iteration
 *   (written to `<runId>.checkpoint.json.tmp`, flushed, renamed over the old one);
 * - `<runId>.lock` — present while a process drives the run (see `file_lock.ts`).
 *
 * Writes use the synchronous file APIs on purpose: each asynchronous file operation costs tens of
 * microseconds of thread hand-off, ten times the write itself, and the runner awaits every write
 * before it goes on anyway.
 *
 * @module
 */
import { join, resolve } from "node:path";
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

/**
 * How hard a checkpoint is pushed to disk:
 *
 * - `"fsync"` (default): before a checkpoint the log is flushed (`fdatasync`), the temp file is
 *   flushed before it is renamed over the checkpoint, and the directory after. A finished iteration
 *   survives a crash of the process **and** of the machine (power loss).
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
}

export { DEFAULT_STALE_LOCK_MS };

/** Allowed run ids: letters, digits, `_` and `-` (no dots or slashes: ids become file names). */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

const LOG_SUFFIX = ".jsonl";
const CHECKPOINT_SUFFIX = ".checkpoint.json";
const TEMP_SUFFIX = ".tmp";
const LOCK_SUFFIX = ".lock";

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
}

/** Open handles of a run this process writes. */
interface OpenRun {
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
  #dirReady = false;

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
    };
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
   * Replaces the run's checkpoint atomically: temp file, flush, rename, directory flush (the
   * flushes per {@linkcode Durability}). A crash at any point leaves either the old or the new
   * checkpoint, never a mix.
   */
  saveCheckpoint(checkpoint: RunCheckpoint): Promise<void> {
    try {
      const files = this.files(checkpoint.runId);
      const run = this.#run(checkpoint.runId);
      this.#assertLockHeld(checkpoint.runId, run);
      const bytes = new TextEncoder().encode(JSON.stringify(checkpoint) + "\n");
      const fsync = this.#durability === "fsync";
      this.#ensureDir();
      ioStep(files.checkpoint, "write the checkpoint", () => {
        // A crash between removing the checkpoint and the rename ("process") leaves the temp file
        // as the only checkpoint: promote it before it is overwritten.
        if (!run.tempChecked) {
          run.tempChecked = true;
          if (!existsSync(files.checkpoint) && readTempCheckpoint(files) !== undefined) {
            Deno.renameSync(files.checkpointTemp, files.checkpoint);
          }
        }
        // The log lines a checkpoint counts must be on disk before the checkpoint is.
        if (fsync) run.log?.syncDataSync();
        const temp = Deno.openSync(files.checkpointTemp, {
          write: true,
          create: true,
          truncate: true,
        });
        try {
          writeAll(temp, bytes);
          if (fsync) temp.syncDataSync();
        } finally {
          temp.close();
        }
        if (this.#crash?.due("checkpoint-temp")) this.#crash.crash();
        if (!fsync) {
          try {
            Deno.removeSync(files.checkpoint);
          } catch (error) {
            if (!(error instanceof Deno.errors.NotFound)) throw error;
          }
          if (this.#crash?.due("checkpoint-removed")) this.#crash.crash();
        }
        Deno.renameSync(files.checkpointTemp, files.checkpoint);
        if (this.#crash?.due("checkpoint-renamed")) this.#crash.crash();
        // Windows cannot open a directory to flush it; NTFS journals the rename itself.
        if (fsync && Deno.build.os !== "windows") {
          (run.dir ??= Deno.openSync(this.dir, { read: true })).syncSync();
        }
      });
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The run's checkpoint, or undefined when the run is unknown. Throws, naming the file and the
   * last good log entry, when the checkpoint is corrupt, missing beside an existing log, or counts
   * more log entries than the log holds (a truncated log).
   */
  async loadCheckpoint(runId: string): Promise<RunCheckpoint | undefined> {
    const files = this.files(runId);
    const found = await readCheckpointText(files);
    if (found === undefined) {
      if (!(await exists(files.log))) return undefined;
      throw new StepflowError(
        "RUN_CHECKPOINT_MISSING",
        `Run ${runId} has a run log (${files.log}) but no checkpoint (${files.checkpoint}): its process stopped before the run's first checkpoint, so there is no state to continue from. ${await this
          .#logStanding(runId)} Start the run again.`,
        { details: { runId, file: files.checkpoint } },
      );
    }
    let checkpoint: RunCheckpoint;
    try {
      checkpoint = parseCheckpoint(found.text, found.file, runId);
    } catch (error) {
      if (!(error instanceof StepflowError)) throw error;
      throw new StepflowError(error.code, `${error.message} ${await this.#logStanding(runId)}`, {
        details: error.details,
      });
    }
    const log = await this.readLog(runId);
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
    const files = this.files(runId);
    let text: string;
    try {
      text = await Deno.readTextFile(files.log);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return [];
      throw ioError(files.log, "read", error);
    }
    return parseRunLog(text, files.log, runId).entries;
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
  async list(): Promise<RunSummary[]> {
    const ids = new Set<string>();
    try {
      for await (const entry of Deno.readDir(this.dir)) {
        if (!entry.isFile) continue;
        const id = entry.name.endsWith(CHECKPOINT_SUFFIX)
          ? entry.name.slice(0, -CHECKPOINT_SUFFIX.length)
          : entry.name.endsWith(LOG_SUFFIX)
          ? entry.name.slice(0, -LOG_SUFFIX.length)
          : undefined;
        if (id !== undefined && RUN_ID.test(id)) ids.add(id);
      }
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return [];
      throw ioError(this.dir, "list", error);
    }
    const out: RunSummary[] = [];
    for (const id of ids) out.push(await this.#summarize(id));
    return sortNewestFirst(out);
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
    const runs = await this.list();
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
      if (found) now = fingerprint(parseCheckpoint(found.text, found.file, runId));
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
    try {
      const found = await readCheckpointText(files);
      if (!found) throw new Deno.errors.NotFound(files.checkpoint);
      summary = summarizeCheckpoint(parseCheckpoint(found.text, found.file, runId));
    } catch (error) {
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

/** Throws `RUN_ID_INVALID` unless `runId` can safely name files. */
export function assertRunId(runId: string): void {
  if (typeof runId !== "string" || !RUN_ID.test(runId)) {
    throw new StepflowError(
      "RUN_ID_INVALID",
      `Invalid run id ${
        JSON.stringify(runId)
      }: run ids are 1-128 letters, digits, "_" or "-", starting with a letter or digit (they name files). Copy the id from --runs.`,
      { details: { runId } },
    );
  }
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

function existsSync(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
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
