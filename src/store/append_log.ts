/**
 * The one append-only JSONL writer of stepflow, used by the run log (`<runId>.jsonl`) and the
 * PlanSpec run history (`<plan>.history.jsonl`).
 *
 * A crash in the middle of an append can leave the last line without its newline. Readers drop
 * such a torn last line (it was never acknowledged), but an append written straight onto it would
 * glue the next entry to the fragment and move the damage into the middle of the file, where it is
 * an error. So a log is always opened through {@linkcode openAppendLog}, which cuts a torn tail off
 * first.
 *
 * @module
 */

/** Options of {@linkcode openAppendLog}. */
export interface AppendLogOptions {
  /** Told when a torn last line was cut off: its size in bytes. */
  onTornTail?: (bytes: number) => void;
}

/**
 * Opens (creating it when missing) a JSONL file for appending, after cutting off a torn last line
 * (bytes after the last newline). The caller writes whole lines ending in `\n` with
 * {@linkcode writeAll}.
 *
 * @example
 * ```ts
 * import { openAppendLog, writeAll } from "./append_log.ts";
 * const path = `${await Deno.makeTempDir()}/log.jsonl`;
 * await Deno.writeTextFile(path, '{"a":1}\n{"a":');
 * const log = openAppendLog(path, { onTornTail: (n) => console.log(`cut ${n} bytes`) }); // cut 5 bytes
 * writeAll(log, new TextEncoder().encode('{"a":2}\n'));
 * log.close();
 * console.log(await Deno.readTextFile(path)); // {"a":1}\n{"a":2}\n
 * ```
 */
export function openAppendLog(path: string, options: AppendLogOptions = {}): Deno.FsFile {
  const file = Deno.openSync(path, { read: true, append: true, create: true });
  try {
    const cut = tornTailStart(file);
    if (cut !== undefined) {
      const size = file.statSync().size;
      file.truncateSync(cut);
      options.onTornTail?.(size - cut);
    }
    return file;
  } catch (error) {
    file.close();
    throw error;
  }
}

/**
 * Appends one value as a JSON line to `path` (open, repair a torn tail, write, close). For a log
 * written many times by one process, keep the file of {@linkcode openAppendLog} open instead.
 */
export function appendJsonLine(
  path: string,
  value: unknown,
  options: AppendLogOptions = {},
): void {
  const bytes = new TextEncoder().encode(JSON.stringify(value) + "\n");
  const file = openAppendLog(path, options);
  try {
    writeAll(file, bytes);
  } finally {
    file.close();
  }
}

/** Writes every byte (a single write may be partial). */
export function writeAll(file: Deno.FsFile, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.length) off += file.writeSync(bytes.subarray(off));
}

/** Where a torn last line starts (the byte after the last newline), or undefined when none. */
export function tornTailStart(file: Deno.FsFile): number | undefined {
  const size = file.statSync().size;
  if (size === 0) return undefined;
  const last = new Uint8Array(1);
  file.seekSync(size - 1, Deno.SeekMode.Start);
  if (file.readSync(last) === 1 && last[0] === 0x0a) return undefined;
  const chunk = new Uint8Array(Math.min(size, 64 * 1024));
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - chunk.length);
    const view = chunk.subarray(0, end - start);
    file.seekSync(start, Deno.SeekMode.Start);
    let off = 0;
    while (off < view.length) {
      const n = file.readSync(view.subarray(off));
      if (n === null || n === 0) break;
      off += n;
    }
    const newline = view.lastIndexOf(0x0a);
    if (newline !== -1) return start + newline + 1;
    end = start;
  }
  return 0;
}
