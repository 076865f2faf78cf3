/**
 * The server-sent-events reader the chat backends read streamed answers with: the same events
 * however the text is cut into chunks (one byte at a time, a `\r\n` split between two chunks), the
 * SSE rules the official clients follow (comments, multi-line data, `\r` line ends, a last event
 * without its blank line), a stop that cancels the rest of the body, and a body read from a real
 * socket one byte per write.
 */
import assert from "node:assert/strict";
import { readSseEvents, SseParser } from "../../src/llm/sse_events.ts";

type Seen = [string | undefined, string][];

function parseInPieces(text: string, size: number): Seen {
  const seen: Seen = [];
  const parser = new SseParser((event, data) => void seen.push([event, data]));
  for (let i = 0; i < text.length; i += size) parser.push(text.slice(i, i + size));
  parser.end();
  return seen;
}

const STREAM = [
  ": a comment, then an event with a name",
  "event: message_start",
  'data: {"type":"message_start"}',
  "",
  "data:no space after the colon",
  "",
  "data: first line",
  "data: second line",
  "id: 7",
  "retry: 1000",
  "",
  "event: ping",
  "",
  "data: [DONE]",
  "",
].join("\n");

const EXPECTED: Seen = [
  ["message_start", '{"type":"message_start"}'],
  [undefined, "no space after the colon"],
  [undefined, "first line\nsecond line"],
  ["ping", ""],
  [undefined, "[DONE]"],
];

Deno.test("SSE: the same events whatever the chunks, down to one character at a time", () => {
  for (const size of [1, 2, 3, 7, 64, STREAM.length]) {
    assert.deepEqual(parseInPieces(STREAM, size), EXPECTED, `pieces of ${size}`);
  }
});

Deno.test("SSE: \\r\\n and \\r end lines too, also when \\r\\n is split between chunks", () => {
  for (const end of ["\r\n", "\r"]) {
    const text = STREAM.replaceAll("\n", end);
    for (const size of [1, 2, 5, text.length]) {
      assert.deepEqual(parseInPieces(text, size), EXPECTED, `${JSON.stringify(end)} / ${size}`);
    }
  }
});

Deno.test("SSE: a last event without its blank line still counts; a last line without its end too", () => {
  assert.deepEqual(parseInPieces("data: a\n\ndata: b\n", 3), [[undefined, "a"], [undefined, "b"]]);
  assert.deepEqual(parseInPieces("data: a\n\ndata: b", 3), [[undefined, "a"], [undefined, "b"]]);
});

Deno.test("SSE: a long event arriving one character at a time is whole", () => {
  const big = "x".repeat(200_000);
  assert.deepEqual(parseInPieces(`data: ${big}\n\n`, 1), [[undefined, big]]);
});

Deno.test("SSE: a handler that returns true stops the parsing", () => {
  const seen: string[] = [];
  const parser = new SseParser((_event, data) => {
    seen.push(data);
    return data === "stop";
  });
  parser.push("data: a\n\ndata: stop\n\ndata: after\n\n");
  parser.end();
  assert.deepEqual(seen, ["a", "stop"]);
  assert.equal(parser.stopped, true);
});

Deno.test("SSE: readSseEvents reads a socket written one byte per write, and cancels the rest after a stop", async () => {
  const body = new TextEncoder().encode(
    'data: {"n":1}\n\ndata: {"n":2}\r\n\r\ndata: [DONE]\n\ndata: {"n":3}\n\n',
  );
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const served = (async () => {
    const conn = await listener.accept();
    conn.setNoDelay(true);
    const request = new Uint8Array(4096);
    await conn.read(request);
    const head =
      `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`;
    await conn.write(new TextEncoder().encode(head));
    try {
      for (let i = 0; i < body.length; i++) await conn.write(body.subarray(i, i + 1));
    } catch {
      // The client stopped reading after [DONE] and closed the connection.
    }
    conn.close();
  })();
  const response = await fetch(`http://127.0.0.1:${listener.addr.port}/`);
  const seen: string[] = [];
  await readSseEvents(response.body!, (_event, data) => {
    seen.push(data);
    return data === "[DONE]";
  });
  assert.deepEqual(seen, ['{"n":1}', '{"n":2}', "[DONE]"]);
  await served;
  listener.close();
});

Deno.test("SSE: readSseEvents passes on a body that breaks off", async () => {
  let sent = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(new TextEncoder().encode("data: a\n\ndata: b"));
        return;
      }
      controller.error(new Error("connection reset"));
    },
  });
  const seen: string[] = [];
  await assert.rejects(
    readSseEvents(body, (_event, data) => void seen.push(data)),
    /connection reset/,
  );
  assert.deepEqual(seen, ["a"]);
});
