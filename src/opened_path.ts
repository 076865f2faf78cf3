/**
 * Where a file opened by descriptor really is, asked of the kernel — the check that holds however
 * the links on its path are swapped after the path was resolved. On Linux `/proc/self/fd/<fd>`
 * names the opened file itself; elsewhere there is no such name and callers compare identities
 * (device and inode) instead.
 *
 * @module
 */
import { constants, fstatSync, readlinkSync } from "node:fs";
import { readlink } from "node:fs/promises";

/** `O_NOFOLLOW` where the system has it (0 elsewhere): opening a symbolic link fails (`ELOOP`). */
export const O_NOFOLLOW: number = constants.O_NOFOLLOW ?? 0;

/** `O_NONBLOCK` where the system has it: opening a named pipe does not wait for a writer. */
export const O_NONBLOCK: number = constants.O_NONBLOCK ?? 0;

/** Whether `/proc/self/fd` names opened files here and may be read, and written through (asked once). */
let procFd: { read: boolean; write: boolean } | undefined;

/**
 * The absolute path of the file or folder open as `fd`, as the kernel knows it now — or
 * `undefined` where the system cannot say (no `/proc`, or reading it is not permitted).
 *
 * @example
 * ```ts
 * import { open } from "node:fs/promises";
 * import { openedPath } from "./opened_path.ts";
 * const handle = await open("deno.json");
 * console.log(await openedPath(handle.fd)); // "/home/me/project/deno.json" on Linux
 * await handle.close();
 * ```
 */
export async function openedPath(fd: number): Promise<string | undefined> {
  if (!procFdAvailable().read) return undefined;
  return await readlink(procFdPath(fd));
}

/**
 * {@linkcode openedPath}, asked at once: reading a `/proc` link is a single cheap system call that
 * never waits on a disk, so a search checking each file it opens makes no round trip for it.
 *
 * @example
 * ```ts
 * import { openSync } from "node:fs";
 * import { openedPathSync } from "./opened_path.ts";
 * console.log(openedPathSync(openSync("deno.json", "r"))); // "/home/me/project/deno.json" on Linux
 * ```
 */
export function openedPathSync(fd: number): string | undefined {
  return procFdAvailable().read ? readlinkSync(procFdPath(fd)) : undefined;
}

/** What {@linkcode statOpened} says of an open file. */
export interface OpenedStat {
  /** Size in bytes. */
  size: number;
  /** How many names (hard links) it has. */
  nlink: number;
  /** A regular file. */
  isFile: boolean;
  /** A folder. */
  isDirectory: boolean;
  /** Device and inode: its identity. */
  dev: number;
  /** Inode number. */
  ino: number;
}

/**
 * `fstat` of the file open as `fd` — through its `/proc` name where there is one (the cheaper call
 * here), else `fstat` itself.
 *
 * @example
 * ```ts
 * import { openSync } from "node:fs";
 * import { statOpened } from "./opened_path.ts";
 * console.log(statOpened(openSync("deno.json", "r")).size);
 * ```
 */
export function statOpened(fd: number): OpenedStat {
  if (procFdAvailable().read) {
    const info = Deno.statSync(procFdPath(fd));
    return {
      size: info.size,
      nlink: info.nlink ?? 1,
      isFile: info.isFile,
      isDirectory: info.isDirectory,
      dev: info.dev,
      ino: info.ino ?? 0,
    };
  }
  const info = fstatSync(fd);
  return {
    size: info.size,
    nlink: info.nlink,
    isFile: info.isFile(),
    isDirectory: info.isDirectory(),
    dev: info.dev,
    ino: info.ino,
  };
}

/**
 * The path that reaches the folder open as `fd` through the descriptor itself (`/proc/self/fd/7`),
 * or `undefined` where there is none: names below it resolve inside that very folder, wherever it
 * is and whatever links are swapped on its old path.
 */
export function pinnedFolderPath(fd: number): string | undefined {
  return procFdAvailable().write ? procFdPath(fd) : undefined;
}

function procFdPath(fd: number): string {
  return `/proc/self/fd/${fd}`;
}

function procFdAvailable(): { read: boolean; write: boolean } {
  if (procFd === undefined) {
    procFd = { read: false, write: false };
    const granted = (name: "read" | "write") =>
      Deno.permissions.querySync({ name, path: "/proc/self/fd" }).state === "granted";
    try {
      if (Deno.build.os === "linux" && granted("read")) {
        const read = Deno.statSync("/proc/self/fd").isDirectory;
        procFd = { read, write: read && granted("write") };
      }
    } catch {
      // no /proc here: callers compare identities instead
    }
  }
  return procFd;
}
