/**
 * Atomic file writes, shared by every part of stepflow that rewrites a file a user cares about
 * (plan files, PlanSpec plans, tool and QPlan file writes, generated schemas).
 *
 * @module
 */
import { basename, dirname, join } from "node:path";

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
 * The folder is created when missing; the temporary file is removed when anything fails.
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
  const temp = join(dir, `.${basename(file)}.${crypto.randomUUID().slice(0, 8)}.tmp`);
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
