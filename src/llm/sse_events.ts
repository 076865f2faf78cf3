/**
 * Server-sent events read straight from a response body: the chat backends' streamed answers.
 *
 * The official SDKs pass each network chunk through several stream and async-generator layers
 * (a promise race, a byte re-buffer, a line decoder and an event decoder, each awaited per event),
 * which cost more than the answer's own parsing: a streamed tool turn of 32 calls took twice as
 * long as the same turn unstreamed. Here the body is read by one reader; each chunk is decoded
 * once and every event it completes is handed over synchronously, with no await per event. A
 * line that arrives in many small chunks (a server writing one byte at a time) is kept as the
 * pieces it came in and searched only in its new part, so the time stays linear in the bytes.
 *
 * @module
 */
import { chunkReader } from "../chunk_reader.ts";

/**
 * Told each complete event: its `event:` field (undefined when there is none) and its `data:`
 * lines joined by `\n`. Returning `true` stops the reading (the rest of the body is cancelled).
 */
export type SseEventHandler = (event: string | undefined, data: string) => boolean | void;

/**
 * Parses a `text/event-stream` text as it arrives, in pieces of any size. Lines end with `\n`,
 * `\r\n` or `\r`; a blank line ends an event; `:` lines are comments; of the fields only `event`
 * and `data` are kept (one space after the colon is dropped).
 *
 * @example
 * ```ts
 * import { SseParser } from "./sse_events.ts";
 * const seen: string[] = [];
 * const parser = new SseParser((event, data) => void seen.push(`${event}=${data}`));
 * parser.push("event: ping\ndata: {}\n\nda");
 * parser.push("ta: [DONE]\n\n");
 * parser.end();
 * console.log(seen); // ["ping={}", "undefined=[DONE]"]
 * ```
 */
export class SseParser {
  readonly #onEvent: SseEventHandler;
  /** The start of a line whose end has not arrived yet, as the pieces it came in. */
  #partial: string[] = [];
  /** The last piece ended with `\r`: a `\n` starting the next one belongs to it. */
  #skipLineFeed = false;
  #event: string | undefined;
  #data: string[] = [];
  #stopped = false;

  /** @param onEvent told each complete event (see {@linkcode SseEventHandler}) */
  constructor(onEvent: SseEventHandler) {
    this.#onEvent = onEvent;
  }

  /** True once the handler asked to stop: nothing more is parsed. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Parses the next piece of the text; complete events go to the handler before it returns. */
  push(text: string): void {
    let at = 0;
    if (this.#skipLineFeed) {
      this.#skipLineFeed = false;
      if (text.charCodeAt(0) === 10) at = 1;
    }
    // Each terminator is searched once: the next `\n` and the next `\r` are kept until passed.
    let lf = text.indexOf("\n", at);
    let cr = text.indexOf("\r", at);
    while (!this.#stopped) {
      if (lf !== -1 && lf < at) lf = text.indexOf("\n", at);
      if (cr !== -1 && cr < at) cr = text.indexOf("\r", at);
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (end === -1) {
        if (at < text.length) this.#partial.push(at === 0 ? text : text.slice(at));
        return;
      }
      const piece = text.slice(at, end);
      let line = piece;
      if (this.#partial.length > 0) {
        this.#partial.push(piece);
        line = this.#partial.join("");
        this.#partial = [];
      }
      at = end + 1;
      if (end === cr) {
        if (at === text.length) this.#skipLineFeed = true;
        else if (text.charCodeAt(at) === 10) at++;
      }
      this.#line(line);
    }
  }

  /** The text ended: a last line without its end, and an event without its blank line, count. */
  end(): void {
    if (this.#stopped) return;
    if (this.#partial.length > 0) {
      const line = this.#partial.join("");
      this.#partial = [];
      this.#line(line);
    }
    if (!this.#stopped) this.#line("");
  }

  #line(line: string): void {
    if (line === "") {
      if (this.#event === undefined && this.#data.length === 0) return;
      const data = this.#data.length === 1 ? this.#data[0] : this.#data.join("\n");
      const event = this.#event;
      this.#event = undefined;
      this.#data = [];
      if (this.#onEvent(event, data) === true) this.#stopped = true;
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ":" a comment
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = "";
    if (colon !== -1) {
      value = line.charCodeAt(colon + 1) === 32 ? line.slice(colon + 2) : line.slice(colon + 1);
    }
    if (field === "data") this.#data.push(value);
    else if (field === "event") this.#event = value;
  }
}

/**
 * Reads `body` to its end (or until the handler stops it), giving each event to `onEvent` as soon
 * as the chunk that completes it arrives. Each chunk touches `idle` (the idle timeout of streamed
 * answers). A body left unread is cancelled, so its connection is not left hanging.
 *
 * A byte stream (what `fetch` gives) is read into one reused buffer (`chunkReader`): a server
 * that sends an event per network write makes one read per event.
 *
 * @throws what reading the body threw (a cut connection, an abort), and what the handler threw
 */
export async function readSseEvents(
  body: ReadableStream<Uint8Array>,
  onEvent: SseEventHandler,
  idle?: { touch(): void },
): Promise<void> {
  const parser = new SseParser(onEvent);
  const decoder = new TextDecoder();
  const reader = chunkReader(body);
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        finished = true;
        const rest = decoder.decode();
        if (rest) parser.push(rest);
        parser.end();
        return;
      }
      idle?.touch();
      parser.push(decoder.decode(value, { stream: true }));
      if (parser.stopped) return;
    }
  } finally {
    if (!finished) await reader.cancel();
    reader.release();
  }
}
