/**
 * The one lock of stepflow: the run store's `<runId>.lock`, and the `<plan file>.lock` that `plan
 * run` (PlanSpec) and `run-plan` (tool plans) hold while they run a plan file. A lock file holds
 * `{ runId, pid, hostname, started, token }`.
 *
 * Exclusion is an OS advisory lock on the open file (`flock`), so a process that dies — even by
 * SIGKILL — loses its lock at once, and the next process takes it over. The JSON inside says who
 * holds it (for the error message) and its modification time is a heartbeat, refreshed while the
 * lock is held. A lock file whose OS lock is free is still honoured when it names a live process on
 * this host, or a process on another host whose heartbeat is younger than the stale bound
 * (file systems that do not share OS locks between hosts); otherwise it is stale and taken over
 * with a warning.
 *
 * @module
 */
import type { ErrorCodeOf } from "../error_codes.ts";
import { StepflowError } from "../errors.ts";
import { assertFileNameFits, fileAccessError } from "../fs_error.ts";
import { pidAlive } from "../pid_alive.ts";
import { writeAll } from "./append_log.ts";

/** What a lock file records. */
export interface LockInfo {
  /** The run (for a plan file: the plan run's id). */
  runId: string;
  /** Process id of the holder. */
  pid: number;
  /** Host name of the holder. */
  hostname: string;
  /** When the holder took the lock (ISO). */
  started: string;
  /** Random token identifying this holding (detects a lost lock). */
  token: string;
}

/** A lock held by this process; `using lock = lockPlanFile(…)` releases it at the end of scope. */
export interface HeldFileLock extends Disposable {
  /** The lock file. */
  readonly path: string;
  /** True once another process took the lock over (our heartbeat lapsed). */
  readonly lost: boolean;
  /** Releases the lock (idempotent): removes the file, then drops the OS lock. */
  release(): void;
}

/** What a lock guards, in the words of its messages and error codes. */
export interface LockSubject {
  /** Code of the error thrown when a live process holds the lock (`RUN_LOCKED`, `PLAN_LOCKED`). */
  code: ErrorCodeOf<"store">;
  /** Code of the error {@linkcode assertLockHeld} throws once the lock was taken over. */
  lostCode: ErrorCodeOf<"store">;
  /** Starts a sentence: `Run r1`, `Plan file /w/plan.json`. */
  title: string;
  /** Inside a sentence: `run r1`, `plan file /w/plan.json`. */
  noun: string;
  /** What the holder does with it: `driven`, `run`. */
  activity: string;
  /** The rule, as a sentence without its full stop: `Only one process may drive a run`. */
  rule: string;
}

/** The subject of a run store lock (the default). */
export function runLockSubject(runId: string): LockSubject {
  return {
    code: "RUN_LOCKED",
    lostCode: "RUN_LOCK_LOST",
    title: `Run ${runId}`,
    noun: `run ${runId}`,
    activity: "driven",
    rule: "Only one process may drive a run",
  };
}

/**
 * The subject of a plan file lock (`plan run`, `run-plan`): errors `PLAN_LOCKED` and
 * `PLAN_LOCK_LOST`.
 */
export function planLockSubject(file: string): LockSubject {
  return {
    code: "PLAN_LOCKED",
    lostCode: "PLAN_LOCK_LOST",
    title: `Plan file ${file}`,
    noun: `plan file ${file}`,
    activity: "run",
    rule: "Only one process may run a plan file at a time",
  };
}

/** The default stale bound: one minute without a heartbeat (refreshed every 15 s). */
export const DEFAULT_STALE_LOCK_MS = 60_000;

/** Options of {@linkcode lockPlanFile}. */
export interface PlanLockOptions {
  /** Recorded as the holder's run id. */
  runId: string;
  /** Receives warnings (stale lock taken over, lock lost). */
  onWarning: (message: string) => void;
  /** The stale bound (default {@linkcode DEFAULT_STALE_LOCK_MS}). */
  staleAfterMs?: number;
}

/**
 * Takes the lock of a plan file for a run (`plan run`, `run-plan`): `<file>.lock`, the same lock as
 * a run store's. Throws `PLAN_LOCKED` naming the holder when a live process runs the plan.
 *
 * @example
 * ```ts
 * import { lockPlanFile } from "./file_lock.ts";
 * const file = `${await Deno.makeTempDir()}/plan.json`;
 * const held = lockPlanFile(file, { runId: "r1", onWarning: console.warn });
 * try {
 *   // … read, run and write the plan …
 * } finally {
 *   held.release();
 * }
 * ```
 */
export function lockPlanFile(file: string, options: PlanLockOptions): HeldFileLock {
  // Refused before anything is created: a name that is too long once suffixed can never be saved.
  assertFileNameFits(file, PLAN_FILE_SUFFIXES);
  return acquireFileLock(`${file}.lock`, options.runId, {
    staleAfterMs: options.staleAfterMs ?? DEFAULT_STALE_LOCK_MS,
    onWarning: options.onWarning,
    subject: planLockSubject(file),
  });
}

/**
 * The names stepflow derives from a plan file's name (its lock, its approvals folder; the temp name
 * of the atomic writer is counted by `fileNameProblem` itself).
 */
export const PLAN_FILE_SUFFIXES: readonly string[] = [".lock", ".approvals", ".history.jsonl"];

/** Options of {@linkcode acquireFileLock}. */
export interface FileLockOptions {
  /** A lock without a heartbeat for this long is stale (ms). */
  staleAfterMs: number;
  /** Receives warnings (stale lock taken over, lock lost). */
  onWarning: (message: string) => void;
  /** What the lock guards (messages, error codes); default {@linkcode runLockSubject}. */
  subject?: LockSubject;
}

/** This host's name, or `"unknown-host"` without the `sys` permission. */
export function hostName(): string {
  try {
    return Deno.hostname();
  } catch {
    return "unknown-host";
  }
}

export { pidAlive };

/** Whether a recorded lock still belongs to a live holder, and why (for messages). */
export interface LockJudgement {
  /** True when the holder is (or may be) alive. */
  live: boolean;
  /** The recorded holder, when the file could be read. */
  info?: LockInfo;
  /** Why the lock is stale or live, in words. */
  reason: string;
}

/**
 * Judges a lock file's content without taking the OS lock (listing, and a free OS lock).
 *
 * @param text the lock file's content
 * @param mtimeMs its modification time (the heartbeat)
 * @param staleAfterMs the stale bound
 */
export function judgeLock(
  text: string,
  mtimeMs: number,
  staleAfterMs: number,
  now: number = Date.now(),
): LockJudgement {
  const info = parseLockInfo(text);
  if (!info) {
    return { live: false, reason: "the lock file is unreadable (a crash while writing it)" };
  }
  const age = Math.max(0, now - mtimeMs);
  const fresh = age < staleAfterMs;
  const ageText = `${Math.round(age / 1000)} s`;
  if (info.hostname === hostName()) {
    if (!pidAlive(info.pid)) {
      return { live: false, info, reason: `process ${info.pid} is no longer running` };
    }
    return fresh ? { live: true, info, reason: `process ${info.pid} is running` } : {
      live: false,
      info,
      reason: `its heartbeat is ${ageText} old (pid ${info.pid} now belongs to another process)`,
    };
  }
  return fresh
    ? { live: true, info, reason: `its heartbeat is ${ageText} old` }
    : { live: false, info, reason: `no heartbeat from host ${info.hostname} for ${ageText}` };
}

function parseLockInfo(text: string): LockInfo | undefined {
  try {
    const value = JSON.parse(text);
    if (
      value && typeof value === "object" && Number.isInteger(value.pid) &&
      typeof value.hostname === "string" && typeof value.started === "string"
    ) return value as LockInfo;
  } catch {
    // unreadable: treated as stale
  }
  return undefined;
}

/**
 * Takes a lock, or throws `RUN_LOCKED` (the subject's code) naming the holder (pid, host, since
 * when). Taking over a stale lock happens under the OS lock, so of two processes racing for one
 * exactly one wins.
 *
 * @example
 * ```ts
 * import { acquireFileLock, planLockSubject } from "./file_lock.ts";
 * const file = `${await Deno.makeTempDir()}/plan.json`;
 * const held = acquireFileLock(`${file}.lock`, "run-1", {
 *   staleAfterMs: 60_000,
 *   onWarning: console.warn,
 *   subject: planLockSubject(file),
 * });
 * held.release();
 * ```
 *
 * @param path the lock file
 * @param runId recorded as the holder's run
 * @param options stale bound, warnings, subject
 */
export function acquireFileLock(
  path: string,
  runId: string,
  options: FileLockOptions,
): HeldFileLock {
  const subject = options.subject ?? runLockSubject(runId);
  for (let attempt = 0; attempt < 5; attempt++) {
    const file = openLockFile(path);
    let keep = false;
    try {
      if (!file.tryLockSync(true)) {
        throw lockedError(path, runId, subject, readJudgement(path, options.staleAfterMs));
      }
      // The holder we waited on may have removed the file between our open and our lock: then we
      // locked a deleted file, and must start over on the path's current file.
      if (!sameFile(file, path)) continue;
      const previous = new TextDecoder().decode(readAll(file));
      if (previous.trim() !== "") {
        const judgement = judgeLock(
          previous,
          file.statSync().mtime?.getTime() ?? 0,
          options.staleAfterMs,
        );
        if (judgement.live) throw lockedError(path, runId, subject, judgement);
        options.onWarning(
          `took over the stale lock of ${subject.noun} (${
            holderText(judgement.info)
          }): ${judgement.reason}.`,
        );
      }
      const info: LockInfo = {
        runId,
        pid: Deno.pid,
        hostname: hostName(),
        started: new Date().toISOString(),
        token: crypto.randomUUID(),
      };
      file.truncateSync(0);
      file.seekSync(0, Deno.SeekMode.Start);
      writeAll(file, new TextEncoder().encode(JSON.stringify(info) + "\n"));
      keep = true;
      return holdLock(file, path, subject, info, options);
    } finally {
      if (!keep) file.close();
    }
  }
  throw new StepflowError(
    subject.code,
    `${subject.title}: its lock file ${path} keeps changing hands; another process is starting or finishing it. Try again.`,
    { details: { runId, file: path } },
  );
}

/**
 * Throws the subject's "lock lost" error (`RUN_LOCK_LOST`, `PLAN_LOCK_LOST`) when another process
 * took the lock over after this one stopped refreshing it: the caller must stop writing.
 */
export function assertLockHeld(lock: HeldFileLock, subject: LockSubject): void {
  if (!lock.lost) return;
  throw new StepflowError(
    subject.lostCode,
    `${subject.title}: another process took over its lock (${lock.path}) after this process stopped refreshing it; this process stops writing so the two cannot interleave.`,
    { details: { file: lock.path } },
  );
}

/**
 * Opens (creating) a lock file; a folder that is read-only, unreadable or missing is `FILE_ACCESS`
 * naming the lock file and the fix, not an unexplained OS error.
 */
function openLockFile(path: string): Deno.FsFile {
  try {
    return Deno.openSync(path, { read: true, write: true, create: true });
  } catch (error) {
    throw fileAccessError(error, { action: "create the lock file", path }) ??
      error;
  }
}

function holdLock(
  file: Deno.FsFile,
  path: string,
  subject: LockSubject,
  info: LockInfo,
  options: FileLockOptions,
): HeldFileLock {
  let lost = false;
  let released = false;
  const beat = () => {
    try {
      const now = new Date();
      const current = parseLockInfo(Deno.readTextFileSync(path));
      if (current?.token !== info.token) {
        lost = true;
        clearInterval(timer);
        options.onWarning(
          `lost the lock of ${subject.noun}: ${
            current ? `${holderText(current)} took it over` : "the lock file was removed"
          } (this process's heartbeat lapsed for ${options.staleAfterMs} ms).`,
        );
        return;
      }
      Deno.utimeSync(path, now, now);
    } catch {
      // A missed heartbeat is retried at the next tick.
    }
  };
  const timer = setInterval(beat, Math.max(250, Math.floor(options.staleAfterMs / 4)));
  Deno.unrefTimer(timer);
  return {
    path,
    get lost() {
      return lost;
    },
    [Symbol.dispose]() {
      this.release();
    },
    release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      let removed = lost;
      try {
        // Remove the file while still holding the OS lock, so nobody can lock it in between.
        if (!lost) Deno.removeSync(path);
        removed = true;
      } catch (error) {
        removed = error instanceof Deno.errors.NotFound;
      } finally {
        file.close();
      }
      if (!removed && Deno.build.os === "windows") {
        // Windows refuses to remove a file that is open: try again now that it is closed.
        try {
          Deno.removeSync(path);
        } catch {
          // a leftover lock file is taken over as stale by the next process
        }
      }
    },
  };
}

function readJudgement(path: string, staleAfterMs: number): LockJudgement {
  try {
    const text = Deno.readTextFileSync(path);
    const judgement = judgeLock(text, Deno.statSync(path).mtime?.getTime() ?? 0, staleAfterMs);
    // The OS lock is held, so the holder is alive whatever the file says.
    return { ...judgement, live: true };
  } catch {
    return { live: true, reason: "another process holds it" };
  }
}

function lockedError(
  path: string,
  runId: string,
  subject: LockSubject,
  judgement: LockJudgement,
): StepflowError {
  const since = judgement.info ? ` since ${judgement.info.started}` : "";
  return new StepflowError(
    subject.code,
    `${subject.title} is already being ${subject.activity} by ${
      holderText(judgement.info)
    }${since} (lock file ${path}). ${subject.rule}: wait for it to finish or stop it. A lock left by a process that died is taken over automatically.`,
    { details: { runId, file: path, holder: judgement.info } },
  );
}

function holderText(info: LockInfo | undefined): string {
  return info ? `pid ${info.pid} on host ${info.hostname}` : "another process";
}

function sameFile(file: Deno.FsFile, path: string): boolean {
  try {
    const a = file.statSync();
    const b = Deno.statSync(path);
    return a.ino === null || (a.ino === b.ino && a.dev === b.dev);
  } catch {
    return false;
  }
}

function readAll(file: Deno.FsFile): Uint8Array {
  const size = file.statSync().size;
  const buf = new Uint8Array(size);
  file.seekSync(0, Deno.SeekMode.Start);
  let off = 0;
  while (off < size) {
    const n = file.readSync(buf.subarray(off));
    if (n === null || n === 0) break;
    off += n;
  }
  return buf.subarray(0, off);
}
