/**
 * File-system errors as a user's situation, not a bug: a folder that is read-only or unreadable, a
 * symbolic-link loop, a name too long, a full disk. {@linkcode fileAccessError} turns the operating
 * system's error (`Permission denied (os error 13): open '/w/plans/x.json.lock'`) into a
 * `FILE_ACCESS` error that says what could not be done, where, and how to fix it; every command
 * line reports it as exit 2. {@linkcode fileNameProblem} refuses, up front, a file whose name would
 * be too long once stepflow adds its suffixes (`.lock`, the atomic writer's temp name).
 *
 * @module
 */
import { basename, dirname } from "node:path";
import { StepflowError } from "./errors.ts";

/** What an operating-system error code means for the user, and the fix. */
interface OsErrorText {
  what: string;
  fix: string;
}

/** The OS errors that are the user's situation (by `error.code`), in words. */
const OS_ERRORS: Readonly<Record<string, OsErrorText>> = {
  EACCES: {
    what: "permission denied",
    fix:
      "give the user that runs stepflow read and write access to it and to its folder (`ls -ld` shows owner and mode), or work in a folder that user owns",
  },
  EPERM: {
    what: "operation not permitted",
    fix: "give the user that runs stepflow the rights it needs there, or work in another folder",
  },
  EROFS: {
    what: "the file system is read-only",
    fix: "work in a folder on a writable file system",
  },
  ELOOP: {
    what: "a symbolic link loop (a link that leads back to itself)",
    fix: "point the link at a real file or folder, or give the real path",
  },
  ENAMETOOLONG: {
    what: "a name longer than the file system allows (255 bytes per file name)",
    fix: "use a shorter name",
  },
  ENOTDIR: {
    what: "a part of the path is a file, not a folder",
    fix: "give a path whose every part but the last is a folder",
  },
  EISDIR: {
    what: "it is a folder, where a file was expected",
    fix: "give the path of a file",
  },
  ENOENT: {
    what: "no such file or folder",
    fix: "check the path (relative paths resolve against the folder the command was started from)",
  },
  ENOSPC: { what: "no space left on the device", fix: "free disk space" },
  EDQUOT: { what: "the disk quota is exhausted", fix: "free space or raise the quota" },
  EMFILE: {
    what: "too many open files",
    fix: "raise the limit of open files (`ulimit -n`)",
  },
  ENFILE: {
    what: "too many open files on this system",
    fix: "close other programs or raise the system's limit",
  },
  ENXIO: {
    what: "no such device (a special file that cannot be opened this way)",
    fix: "give the path of a regular file or folder",
  },
  EBUSY: { what: "the file or device is busy", fix: "try again once it is free" },
  ETXTBSY: { what: "the file is busy", fix: "try again once it is free" },
  EXDEV: {
    what: "the target is on another file system",
    fix: "use a folder on the same file system",
  },
  EIO: {
    what: "an input/output error",
    fix: "check the disk or the network file system",
  },
};

/** The OS error code (`EACCES`, `ELOOP`, …) of an error thrown by a file operation, if any. */
export function osErrorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && Object.hasOwn(OS_ERRORS, code) ? code : undefined;
}

/**
 * A `FILE_ACCESS` error for an OS error of a file operation: `Cannot <action> <path>: <what>
 * (<CODE>). Fix: <fix>.` — or `undefined` when `error` is no such error. The path is the one
 * given, else the one the OS error names.
 *
 * @example
 * ```ts
 * import { fileAccessError } from "./fs_error.ts";
 * try {
 *   Deno.readDirSync("/no/such/folder");
 * } catch (error) {
 *   console.log(fileAccessError(error, { action: "list" })?.message);
 *   // Cannot list /no/such/folder: no such file or folder (ENOENT). Fix: check the path (…).
 * }
 * ```
 */
export function fileAccessError(
  error: unknown,
  context: { action?: string; path?: string } = {},
): StepflowError | undefined {
  const code = osErrorCode(error);
  if (!code) return undefined;
  const { what, fix } = OS_ERRORS[code];
  const path = context.path ?? pathInMessage(String((error as Error).message ?? ""));
  const action = context.action ?? "use";
  return new StepflowError(
    "FILE_ACCESS",
    `Cannot ${action}${path ? ` ${path}` : ""}: ${what} (${code}). Fix: ${fix}.`,
    { details: { path, osError: code }, cause: error },
  );
}

/**
 * The first `FILE_ACCESS`-worthy OS error in an error or its causes, as a `FILE_ACCESS` error
 * (an error that already is one is returned as it is); `undefined` when there is none.
 */
export function findFileAccessError(error: unknown): StepflowError | undefined {
  for (let e = error, depth = 0; e && depth < 8; e = (e as Error).cause, depth++) {
    if (e instanceof StepflowError && e.code === "FILE_ACCESS") return e;
    const converted = fileAccessError(e);
    if (converted) return converted;
  }
  return undefined;
}

/** The path a Deno OS error names (`open '/a/b'`, `rename '/a' -> '/b'`: the last one). */
function pathInMessage(message: string): string | undefined {
  const quoted = [...message.matchAll(/'([^']+)'/g)];
  return quoted.length > 0 ? quoted[quoted.length - 1][1] : undefined;
}

/** The most bytes a file name may have on the file systems stepflow runs on (NAME_MAX). */
export const NAME_MAX_BYTES = 255;

/**
 * How many bytes the atomic writer adds to a name for its temp file:
 * `.<name>.<pid>-<8 hex>.tmp`, with a pid of up to 7 digits (Linux's largest is 4194304).
 */
export const TEMP_NAME_EXTRA_BYTES = 1 + 1 + 7 + 1 + 8 + 4;

/**
 * Why `file` cannot work as a file stepflow writes — its name, or the name with one of `suffixes`
 * (or the atomic writer's temp name) is longer than {@linkcode NAME_MAX_BYTES} — or `undefined`
 * when it can.
 *
 * @example
 * ```ts
 * import { fileNameProblem } from "./fs_error.ts";
 * console.log(fileNameProblem("plans/release.json", [".lock"])); // undefined
 * console.log(fileNameProblem(`plans/${"x".repeat(250)}.json`, [".lock"]) !== undefined); // true
 * ```
 */
export function fileNameProblem(file: string, suffixes: readonly string[]): string | undefined {
  const name = basename(file);
  const bytes = new TextEncoder().encode(name).length;
  const extra = Math.max(TEMP_NAME_EXTRA_BYTES, ...suffixes.map((s) => s.length));
  if (bytes + extra <= NAME_MAX_BYTES) return undefined;
  const longest = extra === TEMP_NAME_EXTRA_BYTES
    ? "the temp file it is saved through"
    : `"${suffixes.find((s) => s.length === extra)}"`;
  return `the file name ${
    JSON.stringify(name.length > 60 ? `${name.slice(0, 40)}…${name.slice(-12)}` : name)
  } in ${
    dirname(file)
  } is ${bytes} bytes; with ${longest} it would be longer than the ${NAME_MAX_BYTES} bytes a file name may have. Rename it to at most ${
    NAME_MAX_BYTES - extra
  } bytes`;
}

/**
 * Throws `FILE_NAME_TOO_LONG` when {@linkcode fileNameProblem} finds one (before anything is
 * written, so nothing partial is left behind).
 */
export function assertFileNameFits(file: string, suffixes: readonly string[]): void {
  const problem = fileNameProblem(file, suffixes);
  if (problem === undefined) return;
  throw new StepflowError("FILE_NAME_TOO_LONG", `Cannot use ${file}: ${problem}.`, {
    details: { file },
  });
}
