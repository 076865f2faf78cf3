/**
 * Newline-delimited messages out of a byte stream (MCP's stdio framing), in linear time and bounded
 * memory: the pieces of a line are kept as they came and joined once, when its newline arrives.
 * (Joining the whole buffer anew with each chunk, as a naive buffer does, copies a 10 MiB line
 * hundreds of times: seconds of CPU for one large answer.)
 *
 * @module
 */

/** The most one message may hold (the MCP SDK's limit for stdio, 10 MiB). */
export const MAX_STDIO_MESSAGE_BYTES = 10 * 1024 * 1024;

/** A line longer than the splitter's bound: the stream cannot be read further. */
export class LineTooLongError extends Error {
  /** The bound, in bytes. */
  readonly maxBytes: number;

  /** A line that passed `maxBytes` bytes without a newline. */
  constructor(maxBytes: number) {
    super(`A message is longer than ${maxBytes} bytes`);
    this.name = "LineTooLongError";
    this.maxBytes = maxBytes;
  }
}

/**
 * Splits a byte stream into lines (without their `\n`, nor a `\r` before it).
 *
 * @example
 * ```ts
 * import { LineSplitter } from "./line_splitter.ts";
 * const lines = new LineSplitter(100);
 * const encode = (text: string) => new TextEncoder().encode(text);
 * console.log(lines.push(encode('{"a":1}\n{"b"'))); // ['{"a":1}']
 * console.log(lines.push(encode(":2}\n"))); // ['{"b":2}']
 * ```
 */
export class LineSplitter {
  readonly #maxBytes: number;
  readonly #decoder = new TextDecoder();
  #pieces: Uint8Array[] = [];
  #pending = 0;

  /** Lines longer than `maxBytes` bytes are refused ({@linkcode LineTooLongError}). */
  constructor(maxBytes: number = MAX_STDIO_MESSAGE_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /**
   * The lines `chunk` completes, in order.
   *
   * @throws LineTooLongError once the line being read passes the bound (nothing of it is kept)
   */
  push(chunk: Uint8Array): string[] {
    const lines: string[] = [];
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(10, start);
      const end = newline === -1 ? chunk.length : newline;
      if (this.#pending + (end - start) > this.#maxBytes) {
        this.clear();
        throw new LineTooLongError(this.#maxBytes);
      }
      if (newline === -1) break;
      lines.push(this.#line(chunk.subarray(start, newline)));
      start = newline + 1;
    }
    if (start < chunk.length) {
      // A copy: the stream may reuse the chunk's memory.
      this.#pieces.push(chunk.slice(start));
      this.#pending += chunk.length - start;
    }
    return lines;
  }

  /** Forgets a partial line. */
  clear(): void {
    this.#pieces = [];
    this.#pending = 0;
  }

  #line(last: Uint8Array): string {
    let bytes = last;
    if (this.#pieces.length > 0) {
      bytes = new Uint8Array(this.#pending + last.length);
      let at = 0;
      for (const piece of this.#pieces) {
        bytes.set(piece, at);
        at += piece.length;
      }
      bytes.set(last, at);
      this.clear();
    }
    const text = this.#decoder.decode(bytes);
    return text.endsWith("\r") ? text.slice(0, -1) : text;
  }
}
