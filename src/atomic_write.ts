/**
 * The one atomic file writer, shared by every part of stepflow that rewrites a file a user cares
 * about (plan files, PlanSpec plans, tool and QPlan file writes, generated schemas).
 *
 * Temp files are named `.<target name>.<pid>-<random>.tmp` beside the target: the writer's process
 * id in the name tells a temp file left by a crash (its process is gone) from one a live writer
 * owns, so {@linkcode removeStaleTemps} can clean up after crashes without breaking a write in
 * progress.
 *
 * @module
 */
import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { StepflowError } from "./errors.ts";
import { O_NOFOLLOW, openedPath, pinnedFolderPath } from "./opened_path.ts";
import { pidAlive } from "./pid_alive.ts";

/** Options of {@linkcode writeFileAtomic}. */
export interface AtomicWriteOptions {
  /** Flush the data to disk before the rename (default `true`), so a power loss cannot leave an empty file. */
  fsync?: boolean;
  /** Abandons the write (the target is left untouched) when it fires before the rename. */
  signal?: AbortSignal;
  /**
   * The caller resolved the target's folder to its real path and checked it (the workspace, a
   * permission rule): write into that folder and no other. The folder is opened once and must
   * really be `dirname(file)`; on Linux the temporary file is created and renamed through the
   * opened folder, so a folder swapped for a symbolic link after the check cannot redirect the
   * write (elsewhere the temporary file's identity is checked before the rename). A folder that
   * moved is `PATH_CHANGED`, and the folder is not created. The final name is never followed: the
   * rename replaces whatever is there, a symbolic link included.
   */
  resolvedFolder?: boolean;
}

/**
 * Writes `data` to `file` so that readers see either the old content or the new, never half of it:
 * a hidden temporary file in the same folder, written (and fsync'ed), then renamed over the target.
 * The folder is created when missing; the temporary file is removed when anything fails. The first
 * write into a folder in this process first removes the temp files there that crashed writers left
 * (see {@linkcode removeStaleTemps}).
 *
 * @example
 * ```ts
 * import { writeFileAtomic } from "./atomic_write.ts";
 * const dir = await Deno.makeTempDir();
 * await writeFileAtomic(`${dir}/plans/today.md`, "# Plan: today\n");
 * console.log(await Deno.readTextFile(`${dir}/plans/today.md`)); // "# Plan: today\n"
 * ```
 */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const dir = dirname(file);
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  if (options.resolvedFolder) return await writeInResolvedFolder(file, bytes, options);
  await Deno.mkdir(dir, { recursive: true });
  await sweepFolderOnce(dir);
  const temp = join(dir, tempName(file));
  try {
    await writeTemp(temp, bytes, options);
    options.signal?.throwIfAborted();
    await Deno.rename(temp, file);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
}

/** `writeFileAtomic` with `resolvedFolder`: every step goes through the folder the caller checked. */
async function writeInResolvedFolder(
  file: string,
  bytes: Uint8Array,
  options: AtomicWriteOptions,
): Promise<void> {
  const dir = dirname(file);
  const folder = await open(dir, constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | O_NOFOLLOW)
    .catch(async (error) => {
      const code = (error as { code?: string }).code;
      // Gone, or no longer a folder of its own (a link, a file) since it was checked.
      if (code === "ENOENT") throw folderChanged(file, "nothing (it was removed)");
      if (code === "ENOTDIR" || code === "ELOOP") {
        const now = await Deno.realPath(dir).catch(() => undefined);
        throw folderChanged(file, now ? `"${now}"` : "a link or a file");
      }
      throw error;
    });
  try {
    // Through the opened folder where the system names it (Linux), else through its path.
    const base = pinnedFolderPath(folder.fd) ?? dir;
    await checkFolder(folder.fd, dir, file);
    await sweepFolderOnce(dir);
    const name = tempName(file);
    const temp = join(base, name);
    try {
      const identity = await writeTemp(temp, bytes, options);
      if (base === dir) {
        // No descriptor path: the temporary file must be the one in the checked folder.
        const there = await Deno.lstat(join(dir, name)).catch(() => undefined);
        if (!there || there.ino !== identity.ino || there.dev !== identity.dev) {
          const now = await Deno.realPath(dir).catch(() => undefined);
          throw folderChanged(file, now ? `"${now}"` : "nothing (it was removed)");
        }
      }
      options.signal?.throwIfAborted();
      await Deno.rename(temp, join(base, basename(file)));
    } catch (error) {
      await Deno.remove(temp).catch(() => {});
      throw error;
    }
    // The folder itself moved while it was written to: say so (the write landed in it).
    await checkFolder(folder.fd, dir, file);
  } finally {
    await folder.close();
  }
}

/** Refuses (`PATH_CHANGED`) when the folder open as `fd` is not really `dir`. */
async function checkFolder(fd: number, dir: string, file: string): Promise<void> {
  const where = await openedPath(fd) ?? await Deno.realPath(dir);
  if (where !== dir) throw folderChanged(file, `"${where}"`);
}

function folderChanged(file: string, where: string): StepflowError {
  return new StepflowError(
    "PATH_CHANGED",
    `Refused to write "${file}": its folder changed after the path was checked — it now leads to ${where} (a symbolic link swapped in, or the folder moved). Check the path again, then retry.`,
    { details: { path: file, folder: dirname(file), now: where } },
  );
}

/** A fresh temp file name beside `file` (see the module doc for the convention). */
function tempName(file: string): string {
  return `.${basename(file)}.${Deno.pid}-${crypto.randomUUID().slice(0, 8)}.tmp`;
}

/** Creates `temp` (never an existing entry, never through a link), writes and syncs `bytes`. */
async function writeTemp(
  temp: string,
  bytes: Uint8Array,
  options: AtomicWriteOptions,
): Promise<Deno.FileInfo> {
  options.signal?.throwIfAborted();
  const handle = await Deno.open(temp, { write: true, createNew: true, mode: 0o644 });
  try {
    let written = 0;
    while (written < bytes.length) written += await handle.write(bytes.subarray(written));
    if (options.fsync ?? true) await handle.sync();
    return await handle.stat();
  } finally {
    handle.close();
  }
}

/**
 * A temp file whose writer may still be alive is removed only after this long: its process id may
 * have been reused by another process (a write takes milliseconds, not an hour).
 */
export const STALE_TEMP_MS = 60 * 60 * 1000;

/**
 * Removes the temp files that crashed writes of `file` left beside it: those whose writer (the
 * process id in the name) no longer runs, and any older than {@linkcode STALE_TEMP_MS} (also those
 * named before the pid was part of the name). Temp files of this process and of live writers are
 * kept. The plan engines call it when they open a plan under its lock. Problems (a folder that
 * cannot be listed) are ignored: cleanup never fails a run.
 *
 * @returns the paths removed
 * @example
 * ```ts
 * import { removeStaleTemps } from "./atomic_write.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/.plan.json.999999999-0a1b2c3d.tmp`, "{"); // a dead writer's
 * console.log(await removeStaleTemps(`${dir}/plan.json`)); // [ ".../.plan.json.999999999-0a1b2c3d.tmp" ]
 * ```
 */
export function removeStaleTemps(file: string, now: number = Date.now()): Promise<string[]> {
  const prefix = `.${basename(file)}.`;
  return sweep(dirname(file), now, (name) => {
    if (!name.startsWith(prefix) || !name.endsWith(".tmp")) return undefined;
    const owner = TARGET_TEMP_ID.exec(name.slice(prefix.length, -".tmp".length));
    return owner ? { pid: owner[1] === undefined ? undefined : Number(owner[1]) } : undefined;
  });
}

/**
 * The cleanup a process does on its first write into a folder: stale temp files of any target
 * there, in this convention only (`.<name>.<pid>-<8 hex>.tmp`). Once per folder, so writing many
 * files into one folder stays linear.
 */
function sweepFolderOnce(dir: string): Promise<unknown> {
  if (swept.has(dir)) return Promise.resolve();
  if (swept.size >= 4096) swept.clear();
  swept.add(dir);
  return sweep(dir, Date.now(), (name) => {
    const owner = FOLDER_TEMP.exec(name);
    return owner ? { pid: Number(owner[1]) } : undefined;
  });
}

/** Removes the temp files `ours` recognises (with their writer's pid) that are stale. */
async function sweep(
  dir: string,
  now: number,
  ours: (name: string) => { pid?: number } | undefined,
): Promise<string[]> {
  const removed: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile) continue;
      const owner = ours(entry.name);
      if (!owner || owner.pid === Deno.pid) continue;
      const path = join(dir, entry.name);
      try {
        const age = now - ((await Deno.lstat(path)).mtime?.getTime() ?? now);
        if ((owner.pid !== undefined && !pidAlive(owner.pid)) || age > STALE_TEMP_MS) {
          await Deno.remove(path);
          removed.push(path);
        }
      } catch {
        // renamed or removed meanwhile: not ours to worry about
      }
    }
  } catch {
    // an unreadable folder: nothing to clean
  }
  return removed;
}

/** Folders this process already swept. */
const swept = new Set<string>();

/** `<pid>-<8 hex>` (this convention) or `<8 hex>` (before it: owner unknown, age rule only). */
const TARGET_TEMP_ID = /^(?:(\d{1,10})-)?[0-9a-f]{8}$/;

/** A temp file of this convention, of any target. */
const FOLDER_TEMP = /^\..+\.(\d{1,10})-[0-9a-f]{8}\.tmp$/;
