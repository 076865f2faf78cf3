/**
 * Opening the file a check resolved — and only that one. A path is judged (the workspace, the
 * permission rules) before the tool opens it; a symbolic link swapped in between must not make the
 * tool read another file. So the file is opened without following a final link (`O_NOFOLLOW`),
 * and the opened file's own path, asked of the kernel, must be the checked one (elsewhere than
 * Linux: its identity must be the checked path's). Anything else is `PATH_CHANGED`.
 *
 * @module
 */
import { constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { StepflowError } from "../errors.ts";
import { O_NOFOLLOW, O_NONBLOCK, openedPath } from "../opened_path.ts";

/** An opened file and what `fstat` says of it. */
export interface OpenedFile {
  /** The open file (close it). */
  handle: FileHandle;
  /** Its size in bytes. */
  size: number;
  /** How many names (hard links) it has. */
  hardLinks: number;
  /** It is a folder (opening one for reading succeeds on most systems). */
  isDirectory: boolean;
}

/**
 * Opens `abs` — a real path a check resolved — for reading (or appending, creating the file when
 * missing), and makes sure the file opened is the one at `abs`. A named pipe does not block the
 * open. Errors of the system (`ENOENT`) are left to the caller, which knows how to word them.
 *
 * @param tool names the tool in messages
 * @param userPath the path as the caller was given it, for messages
 * @throws StepflowError `PATH_CHANGED` when `abs` no longer leads to the file it led to
 *
 * @example
 * ```ts
 * import { openResolved } from "./opened_file.ts";
 * const file = await openResolved(await Deno.realPath("deno.json"), "Read", "deno.json");
 * console.log(file.size);
 * await file.handle.close();
 * ```
 */
export async function openResolved(
  abs: string,
  tool: string,
  userPath: string,
  how: "read" | "append" = "read",
): Promise<OpenedFile> {
  const flags = how === "read"
    ? constants.O_RDONLY | O_NONBLOCK
    : constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT;
  let handle: FileHandle;
  try {
    handle = await open(abs, flags | O_NOFOLLOW, 0o644);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ELOOP" || code === "EMLINK") {
      throw pathChanged(tool, userPath, abs, "a symbolic link");
    }
    throw error;
  }
  try {
    const info = await handle.stat();
    const where = await openedPath(handle.fd);
    if (where === undefined) {
      // No kernel name for it here: the file at `abs` now must be the one opened.
      const real = await Deno.realPath(abs).catch(() => "(gone)");
      const now = real === abs ? await Deno.stat(abs).catch(() => undefined) : undefined;
      if (!now || now.ino !== info.ino || now.dev !== info.dev) {
        throw pathChanged(tool, userPath, abs, real === abs ? "another file" : `"${real}"`);
      }
    } else if (where !== abs) {
      throw pathChanged(tool, userPath, abs, `"${where}"`);
    }
    return {
      handle,
      size: info.size,
      hardLinks: info.nlink,
      isDirectory: info.isDirectory(),
    };
  } catch (error) {
    await handle.close();
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
