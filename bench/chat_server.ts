/**
 * An OpenAI-compatible chat-completions server for the tool-loop benches, on 127.0.0.1, speaking
 * HTTP/1.1 over a raw socket so that how the answer is written is exactly what the bench says:
 *
 * - each turn asks for the next `perTurn` calls of `tool` (ids `call_<n>`, arguments from `args`)
 *   until `calls` tool results came back, then answers `done` — the same model for stepflow and
 *   for a peer framework;
 * - `stream: true` is answered with server-sent chunks as OpenAI writes them (a role chunk, each
 *   call's first piece with its name, its arguments in fragments of 8 characters, the finish
 *   reason, a usage chunk, `[DONE]`), framed as `writes` says: `event` — one HTTP chunk per
 *   event, as a real server frames each event it flushes (the client reads each chunk apart),
 *   written at once; `byte` — one write per byte (`content-length`); `once` — the whole answer
 *   unchunked (`content-length`) in one write;
 * - anything else gets the JSON completion in one write.
 *
 * Run in a process of its own (so its work does not share the measured event loop):
 * `deno run -A bench/chat_server.ts '{"calls":1000,"perTurn":32,"tool":"Read"}'` prints the port.
 *
 * @module
 */

/** How the server plays the model. */
export interface ChatServerScript {
  /** Tool calls in all, before the final answer. */
  calls: number;
  /** Calls per turn. */
  perTurn: number;
  /** The tool every call names. */
  tool: string;
  /** The arguments of call `n` (from 0) as JSON text; default `{"file_path":"files/f<n%16>.txt"}`. */
  args?: "read" | "value";
  /** How a streamed answer is written (default `event`). */
  writes?: "event" | "byte" | "once";
  /** Characters of text of every turn, streamed in pieces of 4 (default: none, `done` at the end). */
  textChars?: number;
}

const encoder = new TextEncoder();

/** The arguments of call `n`. */
function callArgs(script: ChatServerScript, n: number): string {
  return script.args === "value"
    ? JSON.stringify({ value: n })
    : JSON.stringify({ file_path: `files/f${n % 16}.txt` });
}

/** The calls of the next turn, given how many tool results the conversation holds. */
function nextCalls(script: ChatServerScript, done: number): { id: string; args: string }[] {
  const n = Math.max(0, Math.min(script.perTurn, script.calls - done));
  return Array.from({ length: n }, (_, i) => ({
    id: `call_${done + i}`,
    args: callArgs(script, done + i),
  }));
}

/** The text of a turn: `textChars` characters, else `done` for the final answer. */
function answerText(script: ChatServerScript, calls: number): string {
  if (script.textChars) return "x".repeat(script.textChars);
  return calls ? "" : "done";
}

/** The answer to one request body, as the bytes to write (each element one write). */
export function answer(script: ChatServerScript, body: Record<string, unknown>): Uint8Array[] {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  let done = 0;
  for (const m of messages) if ((m as { role?: unknown })?.role === "tool") done++;
  const calls = nextCalls(script, done);
  const base = { id: "chatcmpl-bench", created: 1, model: "bench-model" };
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  if (body.stream !== true) {
    const message = calls.length
      ? {
        role: "assistant",
        content: null,
        tool_calls: calls.map((c) => ({
          id: c.id,
          type: "function",
          function: { name: script.tool, arguments: c.args },
        })),
      }
      : { role: "assistant", content: answerText(script, 0) };
    const json = JSON.stringify({
      ...base,
      object: "chat.completion",
      choices: [{
        index: 0,
        message,
        finish_reason: calls.length ? "tool_calls" : "stop",
        logprobs: null,
      }],
      usage,
    });
    const bytes = encoder.encode(json);
    return [encoder.encode(head("application/json", bytes.length)), bytes];
  }
  const events: string[] = [];
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    events.push(JSON.stringify({
      ...base,
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    }));
  chunk({ role: "assistant", content: "" });
  const text = answerText(script, calls.length);
  for (let i = 0; i < text.length; i += 4) chunk({ content: text.slice(i, i + 4) });
  for (const [index, call] of calls.entries()) {
    chunk({
      tool_calls: [{
        index,
        id: call.id,
        type: "function",
        function: { name: script.tool, arguments: "" },
      }],
    });
    for (let i = 0; i < call.args.length; i += 8) {
      chunk({ tool_calls: [{ index, function: { arguments: call.args.slice(i, i + 8) } }] });
    }
  }
  chunk({}, calls.length ? "tool_calls" : "stop");
  events.push(JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [], usage }));
  events.push("[DONE]");
  const sse = events.map((e) => `data: ${e}\n\n`);
  const writes = script.writes ?? "event";
  if (writes === "event") {
    // Chunked transfer encoding, one chunk per event — as a server that flushes each event frames
    // it — sent at once, as a server faster than its client does (its writes meet in the socket).
    const framed = sse.map((e) => `${encoder.encode(e).length.toString(16)}\r\n${e}\r\n`);
    return [encoder.encode(`${head("text/event-stream")}${framed.join("")}0\r\n\r\n`)];
  }
  const all = encoder.encode(sse.join(""));
  const headBytes = encoder.encode(head("text/event-stream", all.length));
  if (writes === "once") {
    const one = new Uint8Array(headBytes.length + all.length);
    one.set(headBytes);
    one.set(all, headBytes.length);
    return [one];
  }
  const out = [headBytes];
  for (let i = 0; i < all.length; i++) out.push(all.subarray(i, i + 1));
  return out;
}

function head(type: string, length?: number): string {
  return `HTTP/1.1 200 OK\r\ncontent-type: ${type}\r\n${
    length === undefined ? "transfer-encoding: chunked" : `content-length: ${length}`
  }\r\nconnection: keep-alive\r\n\r\n`;
}

/** Serves one connection: requests with a `content-length` body, answered in order. */
async function serveConnection(conn: Deno.TcpConn, script: ChatServerScript): Promise<void> {
  conn.setNoDelay(true);
  const buffer = new Uint8Array(1 << 16);
  let pending: Uint8Array = new Uint8Array(0);
  const decoder = new TextDecoder();
  try {
    for (;;) {
      // The head.
      let end: number;
      while ((end = indexOfHeadEnd(pending)) === -1) {
        const n = await conn.read(buffer);
        if (n === null) return;
        pending = concat(pending, buffer.subarray(0, n));
      }
      const headText = decoder.decode(pending.subarray(0, end));
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(headText)?.[1] ?? 0);
      const chunks: Uint8Array[] = [pending.subarray(end + 4)];
      let have = chunks[0].length;
      while (have < length) {
        const n = await conn.read(buffer);
        if (n === null) return;
        chunks.push(buffer.slice(0, n));
        have += n;
      }
      const all = concatAll(chunks, have);
      pending = all.slice(length);
      const body = JSON.parse(decoder.decode(all.subarray(0, length)));
      for (const bytes of answer(script, body)) {
        for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
      }
    }
  } catch {
    // The client went away.
  } finally {
    try {
      conn.close();
    } catch {
      // closed already
    }
  }
}

function indexOfHeadEnd(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function concatAll(chunks: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** A running bench server in a process of its own. */
export interface ChatServerProcess extends AsyncDisposable {
  /** `http://127.0.0.1:<port>/v1`. */
  baseUrl: string;
  /** The server's process id. */
  pid: number;
}

/** Starts the server with `script` in a child process; dispose of it to stop it. */
export async function startChatServer(script: ChatServerScript): Promise<ChatServerProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname, JSON.stringify(script)],
    stdout: "piped",
    stderr: "inherit",
    stdin: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let line = "";
  while (!line.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("bench chat server: exited before it listened");
    line += value;
  }
  reader.releaseLock();
  const port = Number(line.trim());
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    pid: child.pid,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGTERM");
      } catch {
        // gone already
      }
      await child.status;
      await child.stdout.cancel().catch(() => {});
    },
  };
}

if (import.meta.main) {
  const script = JSON.parse(Deno.args[0]) as ChatServerScript;
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  console.log(listener.addr.port);
  for await (const conn of listener) void serveConnection(conn, script);
}
