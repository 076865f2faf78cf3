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
import { basename, dirname, join } from "node:path";
import { pidAlive } from "./pid_alive.ts";

/** Options of {@linkcode writeFileAtomic}. */
export interface AtomicWriteOptions {
  /** Flush the data to disk before the rename (default `true`), so a power loss cannot leave an empty file. */
  fsync?: boolean;
  /** Abandons the write (the target is left untouched) when it fires before the rename. */
  signal?: AbortSignal;
}

/**
 * Writes `data` to `file` so that readers see either the old content or the new, never half of it:
 * a hidden temporary file in the same folder, written (and fsync'ed), then renamed over the target.
 * The folder is created when missing; the temporary file is removed when anything fails. The first
 * write of `file` in this process first removes temp files of it that crashed writers left
 * ({@linkcode removeStaleTemps}).
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
  await Deno.mkdir(dir, { recursive: true });
  if (!cleaned.has(file)) await removeStaleTemps(file);
  const temp = join(dir, `.${basename(file)}.${Deno.pid}-${crypto.randomUUID().slice(0, 8)}.tmp`);
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  try {
    options.signal?.throwIfAborted();
    const handle = await Deno.open(temp, { write: true, createNew: true, mode: 0o644 });
    try {
      let written = 0;
      while (written < bytes.length) written += await handle.write(bytes.subarray(written));
      if (options.fsync ?? true) await handle.sync();
    } finally {
      handle.close();
    }
    options.signal?.throwIfAborted();
    await Deno.rename(temp, file);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
}

/**
 * A temp file whose writer may still be alive is removed only after this long: its process id may
 * have been reused by another process (a write takes milliseconds, not an hour).
 */
export const STALE_TEMP_MS = 60 * 60 * 1000;

/**
 * Removes the temp files that crashed writes of `file` left beside it: those whose writer (the
 * process id in the name) no longer runs, and any older than {@linkcode STALE_TEMP_MS}. Temp files
 * of this process and of live writers are kept. Call it when a file is opened for a run (under its
 * lock). Problems (a folder that cannot be listed) are ignored: cleanup never fails a run.
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
export async function removeStaleTemps(file: string, now: number = Date.now()): Promise<string[]> {
  // Remembered so that only the first write of a target pays for the listing; bounded.
  if (cleaned.size >= 4096) cleaned.clear();
  cleaned.add(file);
  const dir = dirname(file);
  const prefix = `.${basename(file)}.`;
  const removed: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile || !entry.name.startsWith(prefix) || !entry.name.endsWith(".tmp")) continue;
      const owner = TEMP_ID.exec(entry.name.slice(prefix.length, -".tmp".length));
      if (!owner) continue; // not one of ours
      const pid = owner[1] === undefined ? undefined : Number(owner[1]);
      if (pid === Deno.pid) continue;
      const path = join(dir, entry.name);
      try {
        const age = now - ((await Deno.lstat(path)).mtime?.getTime() ?? now);
        if ((pid !== undefined && !pidAlive(pid)) || age > STALE_TEMP_MS) {
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

/** Targets this process already cleaned up after. */
const cleaned = new Set<string>();

/** `<pid>-<8 hex>` (this convention) or `<8 hex>` (before it: owner unknown, age rule only). */
const TEMP_ID = /^(?:(\d{1,10})-)?[0-9a-f]{8}$/;
