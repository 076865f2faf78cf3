/**
 * The model's streamed text cut into whole lines for a line-per-event view (`--verbose`): pieces
 * arrive a few characters at a time; a line is printed once it ends, or once it is long.
 *
 * @module
 */
import { oneLine } from "./tool_call_line.ts";

/** A line without an end is printed anyway once it reaches this many characters. */
export const STREAMED_LINE_CHARS = 400;

/**
 * Per-step buffers of streamed text, giving back whole lines (blank ones left out, control
 * characters made harmless).
 *
 * @example
 * ```ts
 * import { StreamedLines } from "./streamed_lines.ts";
 * const lines = new StreamedLines();
 * lines.add("fix", "I'll read "); // []
 * lines.add("fix", "it.\nThen"); // ["I'll read it."]
 * lines.flush("fix"); // ["Then"]
 * ```
 */
export class StreamedLines {
  readonly #buffers = new Map<string, string>();

  /** Adds a piece of `key`'s text; returns the lines it completed. */
  add(key: string, piece: string): string[] {
    let buffer = (this.#buffers.get(key) ?? "") + piece;
    const lines: string[] = [];
    for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
      lines.push(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
    }
    while (buffer.length >= STREAMED_LINE_CHARS) {
      lines.push(buffer.slice(0, STREAMED_LINE_CHARS));
      buffer = buffer.slice(STREAMED_LINE_CHARS);
    }
    if (buffer === "") this.#buffers.delete(key);
    else this.#buffers.set(key, buffer);
    return shown(lines);
  }

  /** The rest of `key`'s text (its unfinished line), forgotten. */
  flush(key: string): string[] {
    const rest = this.#buffers.get(key);
    this.#buffers.delete(key);
    return rest === undefined ? [] : shown([rest]);
  }
}

function shown(lines: string[]): string[] {
  return lines.filter((l) => l.trim() !== "").map((l) => oneLine(l, STREAMED_LINE_CHARS).trim());
}
