/**
 * Reading a text file a user named (a plan, a script), with the one error a user should see when it
 * cannot be read: what the file was for, its path, and why (`no such file`, or the system's reason).
 * A read may be bounded: then only a regular file is read, and only up to its size limit.
 *
 * @module
 */
import type { StepflowErrorCode } from "./error_codes.ts";
import { StepflowError } from "./errors.ts";

/** Options of {@linkcode readTextFileOr}. */
export interface ReadTextFileOptions {
  /**
   * The most bytes the file may hold. With a bound, only a regular file is read: a device, a pipe
   * or a socket has no size to check first (`/dev/zero` never ends) and is refused.
   */
  maxBytes?: number;
}

/**
 * The text of `file`, or a {@linkcode StepflowError} with `code` saying
 * `Cannot read <what> <file>: <why><fix>` (details: `{ file }`).
 *
 * @example
 * ```ts ignore
 * import { readTextFileOr } from "./read_text_file.ts";
 * const text = await readTextFileOr("plan.json", "PLAN_FILE_NOT_FOUND", "plan file", ".");
 * const script = await readTextFileOr("a.yaml", "SCRIPT_NOT_FOUND", "script file", ".", {
 *   maxBytes: 16 * 1024 * 1024,
 * });
 * ```
 */
export async function readTextFileOr(
  file: string,
  code: StepflowErrorCode,
  what: string,
  fix = "",
  options: ReadTextFileOptions = {},
): Promise<string> {
  const fail = (why: string) =>
    new StepflowError(code, `Cannot read ${what} ${file}: ${why}${fix}`, { details: { file } });
  try {
    if (options.maxBytes === undefined) return await Deno.readTextFile(file);
    return await readBounded(file, options.maxBytes, what, fail);
  } catch (error) {
    if (error instanceof StepflowError) throw error;
    throw fail(error instanceof Deno.errors.NotFound ? "no such file" : (error as Error).message);
  }
}

/** A regular file of at most `maxBytes`, checked before reading and while reading (it may grow). */
async function readBounded(
  file: string,
  maxBytes: number,
  what: string,
  fail: (why: string) => StepflowError,
): Promise<string> {
  // Checked before opening: opening a pipe waits for a writer.
  const notFile = kindProblem(await Deno.stat(file));
  if (notFile) throw fail(notFile);
  using handle = await Deno.open(file, { read: true });
  const info = await handle.stat(); // the file opened, which a rename could have swapped
  const problem = kindProblem(info) ?? sizeProblem(info.size, maxBytes, what);
  if (problem) throw fail(problem);
  // Read to the end, not to the size stat gave: the file may grow (or be a /proc file of size 0).
  let bytes = new Uint8Array(Math.min(info.size, maxBytes) + 1);
  let filled = 0;
  for (;;) {
    if (filled === bytes.length) {
      if (filled > maxBytes) throw fail(sizeProblem(filled, maxBytes, what, true)!);
      const larger = new Uint8Array(Math.min(bytes.length * 2, maxBytes + 1));
      larger.set(bytes);
      bytes = larger;
    }
    const n = await handle.read(bytes.subarray(filled));
    if (n === null) return new TextDecoder().decode(bytes.subarray(0, filled));
    filled += n;
  }
}

function kindProblem(info: Deno.FileInfo): string | undefined {
  if (info.isFile) return undefined;
  const kind = info.isDirectory
    ? "a folder"
    : info.isFifo
    ? "a pipe"
    : info.isCharDevice || info.isBlockDevice
    ? "a device"
    : info.isSocket
    ? "a socket"
    : "not a regular file";
  return `it is ${kind}, not a file`;
}

/** `size` is the size stat gave, or (`grown`) what was read past the bound before stopping. */
function sizeProblem(
  size: number,
  maxBytes: number,
  what: string,
  grown = false,
): string | undefined {
  if (size <= maxBytes) return undefined;
  const shown = grown ? `over ${maxBytes} bytes` : `${size} bytes`;
  return `it is ${shown}; a ${what} is at most ${formatBytes(maxBytes)}`;
}

function formatBytes(bytes: number): string {
  const mib = bytes / 1024 / 1024;
  return Number.isInteger(mib) ? `${mib} MiB` : `${bytes} bytes`;
}
