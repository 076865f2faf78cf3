/**
 * Reading a byte stream chunk by chunk into one reused buffer. The streams Deno gives for a
 * `fetch` body or a child process's output are byte streams whose default reader allocates a
 * fresh 64 KiB buffer for every read; a peer that writes small messages (an event per write, a
 * JSON-RPC line per answer) makes one read per message, and those buffers were most of the
 * garbage of a streamed tool turn. A leaf file: every layer may use it.
 *
 * @module
 */

/** Reads the chunks of a stream; close it with `release` (after `cancel` when left unread). */
export interface ChunkReader {
  /**
   * The next chunk, or `done`. With a byte stream the chunk lies in the reused buffer: use it
   * (decode or copy it) before the next read.
   */
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** Cancels the rest of the stream (never throws). */
  cancel(): Promise<void>;
  /** Releases the stream. */
  release(): void;
}

/** Bytes one read may fill by default. */
export const CHUNK_READ_BYTES = 64 * 1024;

/**
 * A reader of `stream`: into one reused buffer of `bufferBytes` when it is a byte stream, else its
 * default reader (chunks as they come).
 *
 * @example
 * ```ts
 * import { chunkReader } from "./chunk_reader.ts";
 * const reader = chunkReader(new Response("hello").body!);
 * const { value } = await reader.read();
 * console.log(new TextDecoder().decode(value)); // "hello"
 * reader.release();
 * ```
 */
export function chunkReader(
  stream: ReadableStream<Uint8Array>,
  bufferBytes: number = CHUNK_READ_BYTES,
): ChunkReader {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = stream.getReader({ mode: "byob" });
  } catch {
    // Not a byte stream: its chunks are read as they come.
  }
  if (byob) {
    const reader = byob;
    let buffer: ArrayBuffer = new ArrayBuffer(bufferBytes);
    return {
      async read() {
        const result = await reader.read(new Uint8Array(buffer));
        // The buffer was handed to the stream and comes back in the result (or is gone at the end).
        if (result.value) buffer = result.value.buffer as ArrayBuffer;
        return result as ReadableStreamReadResult<Uint8Array>;
      },
      cancel: () => reader.cancel().catch(() => {}),
      release: () => reader.releaseLock(),
    };
  }
  const reader = stream.getReader();
  return {
    read: () => reader.read(),
    cancel: () => reader.cancel().catch(() => {}),
    release: () => reader.releaseLock(),
  };
}
