/**
 * Opening the file a check resolved — and only that one. A path is judged (the workspace, the
 * permission rules) before the tool opens it; a symbolic link swapped in between must not make the
 * tool read another file. So the file is opened without following a final link (`O_NOFOLLOW`),
 * and the opened file's own path, asked of the kernel, must be the checked one (elsewhere than
 * Linux: its identity must be the checked path's). Anything else is `PATH_CHANGED`.
 *
 * @module
 */
import fs from "node:fs";
import { StepflowError } from "../errors.ts";
import {
  O_NOFOLLOW,
  O_NONBLOCK,
  openedPathSync,
  type OpenedStat,
  statOpened,
} from "../opened_path.ts";

const { constants } = fs;

/**
 * A file opened by {@linkcode openResolved}: what `fstat` said of it, and the few ways the tools
 * use it. Close it.
 */
export class OpenedFile {
  /** The descriptor. */
  readonly fd: number;
  /** Its size in bytes when it was opened. */
  readonly size: number;
  /** How many names (hard links) it has. */
  readonly hardLinks: number;
  /** It is a folder (opening one for reading succeeds on most systems). */
  readonly isDirectory: boolean;
  /** It is a regular file. */
  readonly isFile: boolean;
  #closed = false;

  /** @param fd an open descriptor, @param info its `fstat` */
  constructor(fd: number, info: OpenedStat) {
    this.fd = fd;
    this.size = info.size;
    this.hardLinks = info.nlink;
    this.isDirectory = info.isDirectory;
    this.isFile = info.isFile;
  }

  /** Reads the next bytes into `buffer`; resolves to how many (0 at the end). */
  read(buffer: Uint8Array): Promise<number> {
    return new Promise((done, fail) =>
      fs.read(this.fd, buffer, 0, buffer.length, null, (error, n) => error ? fail(error) : done(n))
    );
  }

  /**
   * The rest of the file — at most `limit + 1` bytes, so a caller sees that it is longer. Read at
   * once (the tools read whole files of at most 10 MiB this way; `Read` streams with `read`): a
   * search reading thousands of small files makes no round trip per file.
   */
  readAll(limit: number = Number.MAX_SAFE_INTEGER): Uint8Array {
    const chunks: Uint8Array[] = [];
    let total = 0;
    // One read for a file that did not grow; then in steps.
    let want = Math.min(this.size, limit) + 1;
    for (;;) {
      const chunk = new Uint8Array(Math.min(want, 1 << 20));
      const n = fs.readSync(this.fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      chunks.push(chunk.subarray(0, n));
      total += n;
      // A short read of a regular file is its end; a file that grew is read on in steps.
      if (total > limit || n < chunk.length) break;
      want = Math.min(limit + 1 - total, 64 * 1024);
    }
    if (chunks.length === 1) return chunks[0];
    const all = new Uint8Array(total);
    let at = 0;
    for (const chunk of chunks) {
      all.set(chunk, at);
      at += chunk.length;
    }
    return all;
  }

  /** Writes all of `bytes` (at the end, for a file opened to append). */
  async append(bytes: Uint8Array): Promise<void> {
    for (let at = 0; at < bytes.length;) {
      at += await new Promise<number>((done, fail) =>
        fs.write(
          this.fd,
          bytes,
          at,
          bytes.length - at,
          null,
          (error, n) => error ? fail(error) : done(n),
        )
      );
    }
  }

  /** Closes it (once). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    fs.closeSync(this.fd);
  }
}

/**
 * Opens `abs` — a real path a check resolved — for reading (or appending, creating the file when
 * missing), and makes sure the file opened is the one at `abs`. A named pipe does not block the
 * open. Errors of the system (`ENOENT`) are left to the caller, which knows how to word them.
 *
 * The open and its checks are a few system calls made at once (no round trip each): a search
 * opening thousands of files pays little for them.
 *
 * @param tool names the tool in messages
 * @param userPath the path as the caller was given it, for messages
 * @throws StepflowError `PATH_CHANGED` when `abs` no longer leads to the file it led to
 *
 * @example
 * ```ts
 * import { openResolved } from "./opened_file.ts";
 * const file = await openResolved(await Deno.realPath("deno.json"), "Read", "deno.json");
 * const text = new TextDecoder().decode(file.readAll());
 * file.close();
 * ```
 */
// deno-lint-ignore require-await
export async function openResolved(
  abs: string,
  tool: string,
  userPath: string,
  how: "read" | "append" = "read",
): Promise<OpenedFile> {
  const flags = how === "read"
    ? constants.O_RDONLY | O_NONBLOCK
    : constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT;
  let fd: number;
  try {
    fd = fs.openSync(abs, flags | O_NOFOLLOW, 0o644);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ELOOP" || code === "EMLINK") {
      throw pathChanged(tool, userPath, abs, "a symbolic link");
    }
    throw error;
  }
  try {
    const info = statOpened(fd);
    const where = openedPathSync(fd);
    if (where === undefined) {
      // No kernel name for it here: the file at `abs` now must be the one opened.
      let real: string | undefined;
      try {
        real = fs.realpathSync(abs);
      } catch {
        real = undefined;
      }
      const now = real === abs ? fs.statSync(abs, { throwIfNoEntry: false }) : undefined;
      if (!now || now.ino !== info.ino || now.dev !== info.dev) {
        throw pathChanged(tool, userPath, abs, real && real !== abs ? `"${real}"` : "another file");
      }
    } else if (where !== abs) {
      throw pathChanged(tool, userPath, abs, `"${where}"`);
    }
    return new OpenedFile(fd, info);
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}

/**
 * `PATH_CHANGED`: `userPath` led to `abs` when it was checked and to `now` when it was opened.
 *
 * @example
 * ```ts
 * import { pathChanged } from "./opened_file.ts";
 * pathChanged("Read", "src/a.ts", "/repo/src/a.ts", '"/repo/.env"').code; // "PATH_CHANGED"
 * ```
 */
export function pathChanged(
  tool: string,
  userPath: string,
  abs: string,
  now: string,
): StepflowError {
  return new StepflowError(
    "PATH_CHANGED",
    `${tool}: "${userPath}" changed after it was checked: it was "${abs}", and opening it reached ${now} (a symbolic link swapped in on the way, or the file replaced). Nothing was read or written. Call again to have the path checked anew.`,
    { details: { path: userPath, checked: abs, now } },
  );
}
