/**
 * The bounds of the agent tools (`Read`, `Write`, `Edit`, `Glob`, `Grep`, `Bash`) and the one
 * truncation rule they share: a result longer than its limit is cut and ends with
 * `output truncated at N characters; …` and a hint the model can act on.
 *
 * @module
 */

/** The documented limits of the agent tools (see docs/tools.md). */
export const AGENT_TOOL_LIMITS: {
  /** Characters of a `Read` result. */
  readonly readChars: number;
  /** Lines `Read` returns when no `limit` is given. */
  readonly readLines: number;
  /** Characters of one line in a `Read` or `Grep` result; longer lines are cut and marked. */
  readonly lineChars: number;
  /** Characters of a `Glob`, `Grep` or `Bash` result. */
  readonly resultChars: number;
  /** Paths a `Glob` result lists. */
  readonly globFiles: number;
  /** Bytes of a file `Edit` rewrites, `Write` writes or `Grep` searches. */
  readonly fileBytes: number;
  /** Entries `Glob` and `Grep` visit in one call before they stop and say so. */
  readonly walkEntries: number;
  /** Default and maximum `Bash` timeout, in milliseconds. */
  readonly bashTimeoutMs: number;
  /** The largest `timeout` a `Bash` call may ask for, in milliseconds. */
  readonly bashMaxTimeoutMs: number;
  /** Characters of a path or pattern argument. */
  readonly argChars: number;
} = Object.freeze({
  readChars: 100_000,
  readLines: 2_000,
  lineChars: 2_000,
  resultChars: 30_000,
  globFiles: 100,
  fileBytes: 10 * 1024 * 1024,
  walkEntries: 100_000,
  bashTimeoutMs: 120_000,
  bashMaxTimeoutMs: 600_000,
  argChars: 4_096,
});

/**
 * `text` cut at `limit` characters, with the truncation notice and `hint` appended when it was cut.
 *
 * @example
 * ```ts
 * import { truncateOutput } from "./agent_limits.ts";
 * truncateOutput("abcdef", 3, "use offset/limit");
 * // "abc\n… output truncated at 3 characters; use offset/limit"
 * ```
 */
export function truncateOutput(text: string, limit: number, hint: string): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}\n${truncationNotice(limit, hint)}`;
}

/** The line that ends a cut result: `… output truncated at N characters; <hint>`. */
export function truncationNotice(limit: number, hint: string): string {
  return `… output truncated at ${limit} characters; ${hint}`;
}

/** `line` cut at {@linkcode AGENT_TOOL_LIMITS}`.lineChars`, marked when cut. */
export function clipLine(line: string): string {
  const max = AGENT_TOOL_LIMITS.lineChars;
  return line.length <= max ? line : `${line.slice(0, max)}… [line cut at ${max} characters]`;
}

/** The one strict decoder {@linkcode looksBinary} checks with (in streaming mode). */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
/** Strict, used whole (no state kept between calls). */
const strictWhole = new TextDecoder("utf-8", { fatal: true });
/** Invalid bytes past the checked head become U+FFFD. */
const lenient = new TextDecoder();

/** Bytes of a file's head that decide whether it is binary. */
export const BINARY_CHECK_BYTES = 8192;

/**
 * The text of a whole file's `bytes`, or `undefined` when it looks binary (see
 * {@linkcode looksBinary}: a NUL byte, or bytes that are not UTF-8, in its first 8 KiB). A file
 * no longer than the check is checked and decoded in one pass (a search reads thousands of them).
 *
 * @example
 * ```ts
 * import { decodeText } from "./agent_limits.ts";
 * console.log(decodeText(new TextEncoder().encode("héllo"))); // "héllo"
 * console.log(decodeText(new Uint8Array([0x68, 0x00]))); // undefined
 * ```
 */
export function decodeText(bytes: Uint8Array): string | undefined {
  const head = bytes.subarray(0, BINARY_CHECK_BYTES);
  if (head.includes(0)) return undefined;
  if (bytes.length <= BINARY_CHECK_BYTES) {
    try {
      return strictWhole.decode(bytes);
    } catch {
      // Not UTF-8, or a character cut at the very end (which the check forgives): as below.
    }
  }
  return looksBinary(head) ? undefined : lenient.decode(bytes);
}

/**
 * True when `head` (the first bytes of a file) looks binary: it holds a NUL byte or is not UTF-8.
 * A multi-byte character cut at the end of `head` does not count.
 */
export function looksBinary(head: Uint8Array): boolean {
  if (head.includes(0)) return true;
  try {
    strictUtf8.decode(head, { stream: true });
    return false;
  } catch {
    return true;
  } finally {
    // Forget a sequence cut at the end of `head` (the decoder is shared: a search checks
    // thousands of files, and a decoder per file cost more than the check).
    try {
      strictUtf8.decode();
    } catch {
      // it was cut there: that is fine for a head
    }
  }
}
