/**
 * The one line reader of the command lines: a terminal's answers, one question at a time.
 *
 * @module
 */

/** Reads a terminal's answers line by line (see {@linkcode lineReader}). */
export interface LineReader {
  /** The next line without its newline; `undefined` once the stream ended. Rejects on `signal`. */
  next(signal?: AbortSignal): Promise<string | undefined>;
}

/**
 * Reads lines from a stream, one question at a time: what `run-plan` asks before it runs and what
 * `run-agent` asks for an input step's answer.
 *
 * @example
 * ```ts
 * import { lineReader } from "./line_reader.ts";
 * const lines = lineReader(ReadableStream.from([new TextEncoder().encode("yes\nno\n")]));
 * console.log(await lines.next(), await lines.next()); // "yes" "no"
 * ```
 */
export function lineReader(stream: ReadableStream<Uint8Array>): LineReader {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let ended = false;
  // A read a cancelled question left pending: the next question takes its line, not a new read.
  let pending: Promise<ReadableStreamReadResult<string>> | undefined;
  return {
    async next(signal?: AbortSignal): Promise<string | undefined> {
      for (;;) {
        const newline = buffer.indexOf("\n");
        if (newline >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          return line;
        }
        if (ended) {
          const rest = buffer;
          buffer = "";
          return rest === "" ? undefined : rest;
        }
        signal?.throwIfAborted();
        const aborted = signal
          ? new Promise<never>((_, reject) =>
            signal.addEventListener("abort", () => reject(signal.reason), { once: true })
          )
          : undefined;
        pending ??= reader.read();
        const { done, value } = await (aborted ? Promise.race([pending, aborted]) : pending);
        pending = undefined;
        if (done) ended = true;
        else buffer += value;
      }
    },
  };
}
