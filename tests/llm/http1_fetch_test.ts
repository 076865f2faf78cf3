/**
 * The chat backends' own HTTP/1.1 client (src/llm/http1_fetch.ts) against raw servers on
 * 127.0.0.1 that write exactly the bytes each test names: the three body framings (chunked with
 * extensions and trailers, one byte per write, a burst of events in one write), interim answers,
 * the keep-alive pool (reuse, a server closing an idle connection, `connection: close`, a request
 * sent again after a reused connection turned out closed), aborts, compression, limits, redirects
 * — and failures classified exactly as those of `fetch`, run side by side against the same server.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { chunkReader } from "../../src/chunk_reader.ts";
import { BackendError } from "../../src/llm/backend_error.ts";
import { fetchKeepingErrorBodies } from "../../src/llm/chat_fetch.ts";
import {
  closeIdleHttp1Connections,
  HTTP1_HEAD_MAX_BYTES,
  http1Counters,
  http1Fetch,
  idleHttp1Connections,
} from "../../src/llm/http1_fetch.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import { classifyHttpFailure } from "../../src/llm/retry.ts";
import { streamFailure } from "../../src/llm/stream_failure.ts";
import { stepRequest } from "./fake_server.ts";
import { chunk, type RawConnection, responseHead, startRawServer } from "./raw_http_server.ts";
import { waitFor } from "../store/helpers.ts";

const decoder = new TextDecoder();
const SSE = { "content-type": "text/event-stream", "transfer-encoding": "chunked" };

/** A promise and its resolver. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => resolve = r);
  return { promise, resolve };
}

/** Runs `test` against a raw server, then closes the server and every idle connection. */
async function withServer(
  serve: (connection: RawConnection) => Promise<void>,
  test: (server: { url: string; readonly accepts: number }) => Promise<void>,
): Promise<void> {
  const server = startRawServer(serve);
  try {
    await test(server);
  } finally {
    closeIdleHttp1Connections();
    await server.close();
  }
}

/** Answers every request on the connection with `reply(request, index)`. */
function answering(
  reply: (request: { method: string; target: string }, index: number) => string,
): (connection: RawConnection) => Promise<void> {
  let index = 0;
  return async (connection) => {
    for (let request; (request = await connection.next()) !== null;) {
      await connection.write(reply(request, index++));
    }
  };
}

const OK = (text: string) => responseHead("200 OK", { "content-length": text.length }) + text;

Deno.test("http1: a burst of chunked events is read in a few reads, not one per event", async () => {
  const events = Array.from({ length: 200 }, (_, i) => `data: {"n":${i}}\n\n`);
  const released = signal();
  await withServer(async (connection) => {
    await connection.next();
    await connection.write(responseHead("200 OK", SSE) + chunk(events[0]));
    await released.promise;
    // Every event its own HTTP chunk, all written at once — as a server faster than its client.
    await connection.write(`${events.slice(1).map(chunk).join("")}0\r\n\r\n`);
    await connection.clientClosed();
  }, async (server) => {
    const response = await http1Fetch(`${server.url}/v1/chat/completions`);
    released.resolve();
    const reader = chunkReader(response.body!);
    let reads = 0;
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      reads++;
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    reader.release();
    assert.equal(text, events.join(""));
    assert.ok(reads <= 6, `${reads} reads for ${events.length} events`);
  });
});

Deno.test("http1: a chunked body written one byte per write arrives whole (extensions, trailers), and the connection is kept", async () => {
  const pieces = ["data: one\n\n", "x".repeat(300), "", "data: two\n\n"].filter((p) => p);
  const framed = `${chunk(pieces[0])}${
    pieces[1].length.toString(16).toUpperCase()
  };ext=1;q="a"\r\n${pieces[1]}\r\n${chunk(pieces[2])}0\r\nx-checksum: 1\r\nx-more: 2\r\n\r\n`;
  const readsBefore = http1Counters.bodyReads;
  await withServer(async (connection) => {
    let first = true;
    while ((await connection.next()) !== null) {
      const head = responseHead("200 OK", SSE);
      if (first) await connection.writeBytewise(head + framed, true);
      else await connection.write(head + framed);
      first = false;
    }
  }, async (server) => {
    for (let i = 0; i < 2; i++) {
      const response = await http1Fetch(`${server.url}/s`);
      assert.equal(await response.text(), pieces.join(""));
    }
    assert.equal(server.accepts, 1, "the trailers were read to the end: the connection was reused");
    assert.ok(http1Counters.bodyReads - readsBefore > 10, "the body was read as it trickled in");
  });
});

Deno.test("http1: a content-length body split across writes, and a close-delimited body", async () => {
  const released = signal();
  await withServer(async (connection) => {
    for (let request; (request = await connection.next()) !== null;) {
      if (request.target === "/length") {
        await connection.write(responseHead("200 OK", { "content-length": 11 }) + "hello");
        await released.promise;
        await connection.write(" world");
      } else if (request.target === "/again") {
        await connection.write(OK("again"));
      } else {
        await connection.write("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil ");
        await connection.write("the end");
        connection.close();
        return;
      }
    }
  }, async (server) => {
    const response = await http1Fetch(`${server.url}/length`);
    released.resolve();
    assert.equal(await response.text(), "hello world");
    assert.equal(await (await http1Fetch(`${server.url}/again`)).text(), "again");
    assert.equal(server.accepts, 1);
    for (let i = 0; i < 2; i++) {
      assert.equal(await (await http1Fetch(`${server.url}/close`)).text(), "until the end");
    }
    // The kept-alive connection served the first; the second needed a new one.
    assert.equal(server.accepts, 2, "a close-delimited body's connection is not kept");
    assert.equal(idleHttp1Connections(), 0);
  });
});

Deno.test("http1: interim 1xx answers are passed over; HEAD, 204 and 304 have no body; one connection serves all", async () => {
  await withServer(
    answering((request, index) => {
      if (index === 0) {
        return "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n" +
          responseHead("200 OK", { "content-length": 5, "x-final": "yes" }) + "final";
      }
      if (request.method === "HEAD") return responseHead("200 OK", { "content-length": 1234 });
      if (request.target === "/204") return "HTTP/1.1 204 No Content\r\n\r\n";
      if (request.target === "/304") return responseHead("304 Not Modified", { etag: '"a"' });
      return OK(`n${index}`);
    }),
    async (server) => {
      const first = await http1Fetch(`${server.url}/`);
      assert.equal(first.status, 200);
      assert.equal(first.headers.get("x-final"), "yes");
      assert.equal(first.headers.get("link"), null, "the interim answer's headers are not kept");
      assert.equal(await first.text(), "final");
      const head = await http1Fetch(`${server.url}/`, { method: "HEAD" });
      assert.equal(head.body, null);
      assert.equal(head.headers.get("content-length"), "1234");
      assert.equal((await http1Fetch(`${server.url}/204`)).body, null);
      assert.equal((await http1Fetch(`${server.url}/304`)).status, 304);
      for (let i = 4; i < 8; i++) {
        assert.equal(await (await http1Fetch(`${server.url}/n`)).text(), `n${i}`);
      }
      assert.equal(server.accepts, 1, "every request went over one kept-alive connection");
    },
  );
});

Deno.test("http1: an idle connection the server closes is dropped; the next request opens a new one", async () => {
  await withServer(async (connection) => {
    await connection.next();
    await connection.write(OK("once"));
    connection.close();
  }, async (server) => {
    assert.equal(await (await http1Fetch(`${server.url}/`)).text(), "once");
    // The idle watch sees the server's close and drops the connection.
    await waitFor(
      "the closed connection to leave the pool",
      () => Promise.resolve(idleHttp1Connections() === 0 || undefined),
    );
    assert.equal(await (await http1Fetch(`${server.url}/`)).text(), "once");
    assert.equal(server.accepts, 2);
  });
});

Deno.test("http1: a request that meets a reused connection closing before any answer is sent once more on a new one", async () => {
  const resentBefore = http1Counters.resent;
  await withServer(async (connection) => {
    await connection.next();
    await connection.write(OK("first"));
    // Took the next request, but closes as if its keep-alive timeout had just passed.
    if ((await connection.next()) !== null) connection.close();
  }, async (server) => {
    assert.equal(await (await http1Fetch(`${server.url}/`)).text(), "first");
    assert.equal(
      await (await http1Fetch(`${server.url}/`, { method: "POST", body: "{}" })).text(),
      "first",
    );
    assert.equal(server.accepts, 2);
    assert.equal(http1Counters.resent - resentBefore, 1);
  });
});

Deno.test("http1: connection: close is honoured — the client closes it and opens a new one", async () => {
  const closedByClient = signal();
  await withServer(async (connection) => {
    await connection.next();
    await connection.write(
      responseHead("200 OK", { "content-length": 3, connection: "close" }) + "bye",
    );
    await connection.clientClosed();
    closedByClient.resolve();
  }, async (server) => {
    assert.equal(await (await http1Fetch(`${server.url}/`)).text(), "bye");
    await closedByClient.promise;
    assert.equal(await (await http1Fetch(`${server.url}/`)).text(), "bye");
    assert.equal(server.accepts, 2);
  });
});

Deno.test("http1: the request is written as fetch writes it", async () => {
  const seen: { head: string; headers: Record<string, string>; body: string }[] = [];
  await withServer(async (connection) => {
    for (let request; (request = await connection.next()) !== null;) {
      seen.push({ ...request, body: decoder.decode(request.body) });
      await connection.write(OK("ok"));
    }
  }, async (server) => {
    await (await http1Fetch(`${server.url}/v1/chat?x=1&y=%20#fragment`, {
      method: "post",
      headers: { "content-type": "application/json", authorization: "Bearer k", host: "evil" },
      body: '{"a":"é"}',
    })).text();
    await (await http1Fetch(new URL(`${server.url}/get`), {
      headers: [["accept-encoding", "gzip"], ["user-agent", "mine/1"]],
    })).text();
    await (await http1Fetch(
      new Request(`${server.url}/blob`, {
        method: "PUT",
        body: new Blob(["from a blob"]),
      }),
    )).text();
    await (await http1Fetch(`${server.url}/empty`, { method: "POST" })).text();
    const [post, get, put, empty] = seen;
    assert.match(post.head, /^POST \/v1\/chat\?x=1&y=%20 HTTP\/1\.1\r\n/);
    assert.equal(post.headers.host, `127.0.0.1:${new URL(server.url).port}`);
    assert.equal(post.headers["content-type"], "application/json");
    assert.equal(post.headers.authorization, "Bearer k");
    assert.equal(
      post.headers["content-length"],
      String(new TextEncoder().encode(post.body).length),
    );
    assert.equal(post.body, '{"a":"é"}');
    assert.equal(post.headers["accept-encoding"], "identity", "no compression asked for");
    assert.equal(post.headers.connection, "keep-alive");
    assert.match(post.headers["user-agent"], /^Deno\//);
    assert.equal(post.headers.accept, "*/*");
    assert.match(get.head, /^GET \/get HTTP\/1\.1\r\n/);
    assert.equal(get.headers["accept-encoding"], "gzip", "the caller's choice is kept");
    assert.equal(get.headers["user-agent"], "mine/1");
    assert.equal(get.headers["content-length"], undefined);
    assert.equal(put.body, "from a blob");
    assert.equal(empty.headers["content-length"], "0");
  });
});

Deno.test("http1: a gzip or deflate answer is decoded; another encoding is a clear error", async () => {
  const compressed = async (text: string, format: CompressionFormat) =>
    new Uint8Array(
      await new Response(new Blob([text]).stream().pipeThrough(new CompressionStream(format)))
        .arrayBuffer(),
    );
  const gzip = await compressed("hello, compressed world", "gzip");
  const deflate = await compressed("deflated", "deflate");
  await withServer(async (connection) => {
    for (let request; (request = await connection.next()) !== null;) {
      if (request.target === "/br") {
        await connection.write(
          responseHead("200 OK", { "content-encoding": "br", "content-length": 3 }) + "xyz",
        );
        continue;
      }
      const [body, encoding] = request.target === "/deflate"
        ? [deflate, "deflate"]
        : [gzip, "gzip"];
      await connection.write(
        responseHead(
          "200 OK",
          request.target === "/transfer-gzip"
            ? { "transfer-encoding": "gzip, chunked" }
            : { "content-encoding": encoding, "transfer-encoding": "chunked" },
        ),
      );
      await connection.write(`${body.length.toString(16)}\r\n`);
      await connection.write(body);
      await connection.write("\r\n0\r\n\r\n");
    }
  }, async (server) => {
    assert.equal(await (await http1Fetch(`${server.url}/gzip`)).text(), "hello, compressed world");
    assert.equal(await (await http1Fetch(`${server.url}/deflate`)).text(), "deflated");
    assert.equal(
      await (await http1Fetch(`${server.url}/transfer-gzip`)).text(),
      "hello, compressed world",
      "a transfer coding before chunked is undone too",
    );
    const error = await http1Fetch(`${server.url}/br`).then(() => undefined, (e) => e);
    assert.ok(error instanceof TypeError, String(error));
    assert.match(String(error.cause), /compressed as "br".*accept-encoding: identity/);
  });
});

Deno.test("http1: a head over the limit, a bad chunk size and an endless chunk line are errors, never a hang", async () => {
  await withServer(async (connection) => {
    const request = await connection.next();
    if (request?.target === "/big-head") {
      await connection.write(`HTTP/1.1 200 OK\r\nx-big: ${"a".repeat(HTTP1_HEAD_MAX_BYTES)}\r\n`);
    } else if (request?.target === "/bad-size") {
      await connection.write(responseHead("200 OK", SSE) + "zz\r\nabc\r\n");
    } else if (request?.target === "/endless-line") {
      await connection.write(responseHead("200 OK", SSE) + chunk("ok") + "1".repeat(20_000));
    } else if (request?.target === "/bad-header") {
      await connection.write("HTTP/1.1 200 \x01odd\r\nbad name: x\r\ncontent-length: 0\r\n\r\n");
    } else if (request?.target === "/odd-reason") {
      await connection.write(
        "HTTP/1.1 200 \x01odd\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
      );
    } else if (request?.target === "/not-http") {
      await connection.write("SSH-2.0-OpenSSH_9.6\r\n\r\n");
    }
    await connection.clientClosed();
  }, async (server) => {
    const big = await http1Fetch(`${server.url}/big-head`).then(() => undefined, (e) => e);
    assert.ok(big instanceof TypeError, String(big));
    assert.match(
      String(big.cause),
      new RegExp(`head is larger than ${HTTP1_HEAD_MAX_BYTES} bytes`),
    );
    const badHeader = await http1Fetch(`${server.url}/bad-header`).then(() => undefined, (e) => e);
    assert.ok(badHeader instanceof TypeError, String(badHeader));
    assert.match(String(badHeader.cause), /invalid header in the answer/);
    const oddReason = await http1Fetch(`${server.url}/odd-reason`);
    assert.equal(oddReason.status, 200, "a reason phrase the Response refuses is dropped");
    assert.equal(await oddReason.text(), "ok");
    const notHttp = await http1Fetch(`${server.url}/not-http`).then(() => undefined, (e) => e);
    assert.ok(notHttp instanceof TypeError, String(notHttp));
    assert.match(String(notHttp.cause), /invalid HTTP status line "SSH-2\.0/);
    for (
      const [path, message] of [
        ["/bad-size", /invalid chunk size line "zz"/],
        ["/endless-line", /chunk-size or trailer line is longer than/],
      ] as const
    ) {
      const response = await http1Fetch(`${server.url}${path}`);
      const error = await response.text().then(() => undefined, (e) => e);
      assert.ok(error instanceof TypeError, String(error));
      assert.match(error.message, /^error reading a body from connection: /);
      assert.match(error.message, message);
    }
  });
});

Deno.test("http1: redirects are followed as fetch follows them (307 keeps the method and body, 303 turns to GET, at most 20)", async () => {
  const seen: string[] = [];
  await withServer(
    answering((request) => {
      seen.push(`${request.method} ${request.target}`);
      if (request.target === "/old") {
        return responseHead("307 Temporary Redirect", { location: "/new", "content-length": 0 });
      }
      if (request.target === "/see-other") {
        return responseHead("303 See Other", { location: "/new", "content-length": 0 });
      }
      if (request.target === "/loop") {
        return responseHead("302 Found", { location: "/loop", "content-length": 0 });
      }
      return OK(`${request.method} at ${request.target}`);
    }),
    async (server) => {
      const kept = await http1Fetch(`${server.url}/old`, { method: "POST", body: "{}" });
      assert.equal(await kept.text(), "POST at /new");
      assert.ok(kept.redirected);
      const turned = await http1Fetch(`${server.url}/see-other`, { method: "POST", body: "{}" });
      assert.equal(await turned.text(), "GET at /new");
      assert.equal(turned.url, `${server.url}/new`);
      assert.deepEqual(seen, ["POST /old", "POST /new", "POST /see-other", "GET /new"]);
      const loop = await http1Fetch(`${server.url}/loop`).then(() => undefined, (e) => e);
      assert.ok(loop instanceof TypeError, String(loop));
      assert.match(String(loop.cause), /too many redirects/);
      assert.equal(seen.length, 4 + 21, "the first request and 20 redirects");
      assert.equal(server.accepts, 1, "each leg went over the kept-alive connection");
    },
  );
});

Deno.test("http1: an abort before the answer rejects with the signal's reason and closes the connection", async () => {
  const requested = signal();
  const closed = signal();
  await withServer(async (connection) => {
    await connection.next();
    requested.resolve();
    await connection.clientClosed();
    closed.resolve();
  }, async (server) => {
    const controller = new AbortController();
    const pending = http1Fetch(`${server.url}/`, { signal: controller.signal });
    await requested.promise;
    const reason = new Error("the caller gave up");
    controller.abort(reason);
    assert.equal(await pending.then(() => undefined, (e) => e), reason);
    await closed.promise;
    // An abort already signalled is the reason at once, as with fetch.
    const before = new AbortController();
    before.abort();
    const early = await http1Fetch(`${server.url}/`, { signal: before.signal }).then(
      () => undefined,
      (e) => e,
    );
    assert.equal(early?.name, "AbortError");
  });
});

Deno.test("http1: an abort while the body is read errors the body with the signal's reason and closes the connection", async () => {
  const closed = signal();
  await withServer(async (connection) => {
    await connection.next();
    await connection.write(responseHead("200 OK", SSE) + chunk("data: first\n\n"));
    await connection.clientClosed();
    closed.resolve();
  }, async (server) => {
    const controller = new AbortController();
    const response = await http1Fetch(`${server.url}/`, { signal: controller.signal });
    const reader = response.body!.getReader();
    assert.equal(decoder.decode((await reader.read()).value), "data: first\n\n");
    const next = reader.read();
    controller.abort();
    const error = await next.then(() => undefined, (e) => e);
    assert.equal(error, controller.signal.reason);
    assert.equal(error.name, "AbortError");
    await closed.promise;
    assert.equal(idleHttp1Connections(), 0);
  });
});

Deno.test("http1: a body left unread and cancelled closes its connection", async () => {
  const closed = signal();
  await withServer(async (connection) => {
    await connection.next();
    await connection.write(responseHead("200 OK", SSE) + chunk("data: a\n\n"));
    await connection.clientClosed();
    closed.resolve();
  }, async (server) => {
    const response = await http1Fetch(`${server.url}/`);
    await response.body!.cancel();
    await closed.promise;
    assert.equal(idleHttp1Connections(), 0);
  });
});

Deno.test("http1: response header bytes beyond ASCII read as fetch reads them", async () => {
  const head = new Uint8Array([
    ...new TextEncoder().encode("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-latin: caf"),
    0xe9,
    ...new TextEncoder().encode("\r\nx-utf8: caf"),
    0xc3,
    0xa9,
    ...new TextEncoder().encode("\r\n\r\nok"),
  ]);
  await withServer(async (connection) => {
    while ((await connection.next()) !== null) await connection.write(head);
  }, async (server) => {
    const viaFetch = await fetch(server.url);
    const own = await http1Fetch(server.url);
    for (const name of ["x-latin", "x-utf8"]) {
      assert.equal(own.headers.get(name), viaFetch.headers.get(name), name);
    }
    await viaFetch.text();
    assert.equal(await own.text(), "ok");
  });
});

/** What `fetch` and this client each threw, for one failure scenario. */
async function bothFail(
  serve: (connection: RawConnection) => Promise<void>,
  phase: "request" | "body",
  init?: RequestInit,
): Promise<{ fetch: unknown; http1: unknown }> {
  const out: Record<string, unknown> = {};
  for (const [name, client] of [["fetch", fetch], ["http1", http1Fetch]] as const) {
    await withServer(serve, async (server) => {
      try {
        const response = await client(`${server.url}/v1/chat/completions`, init);
        assert.equal(phase, "body", `${name}: the answer's head arrived`);
        await response.arrayBuffer();
        assert.fail(`${name}: the body was read whole`);
      } catch (error) {
        if (error instanceof assert.AssertionError) throw error;
        out[name] = error;
      }
    });
  }
  return out as { fetch: unknown; http1: unknown };
}

Deno.test("http1: failures are the errors fetch gives, classified alike by the retry policy", async () => {
  // A port nothing listens on.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const url = `http://127.0.0.1:${closedPort}/v1/chat/completions`;
  const refused = {
    fetch: await fetch(url).then(() => undefined, (e) => e),
    http1: await http1Fetch(url).then(() => undefined, (e) => e),
  };
  const scenarios: [string, { fetch: unknown; http1: unknown }][] = [
    ["a refused connection", refused],
    [
      "a close before the answer",
      await bothFail(async (c) => {
        await c.next();
        c.close();
      }, "request"),
    ],
    [
      "an answer that is not HTTP",
      await bothFail(async (c) => {
        await c.next();
        await c.write("HELLO\r\n\r\n");
        c.close();
      }, "request"),
    ],
  ];
  for (const [what, errors] of scenarios) {
    const before = classifyHttpFailure(errors.fetch);
    const now = classifyHttpFailure(errors.http1);
    assert.equal(now.kind, before.kind, `${what}: ${now.reason} / ${before.reason}`);
    assert.equal(now.retryable, before.retryable, what);
    assert.equal(now.kind, "network", what);
  }
  assert.equal(
    classifyHttpFailure(refused.http1).reason,
    classifyHttpFailure(refused.fetch).reason,
    "a refused connection is reported word for word as before",
  );
  // Mid-body: the stream reader turns the error into a retried StreamInterrupted.
  const mid = [
    await bothFail(async (c) => {
      await c.next();
      await c.write(responseHead("200 OK", { "content-length": 100 }) + "only part");
      c.close();
    }, "body"),
    await bothFail(async (c) => {
      await c.next();
      await c.write(responseHead("200 OK", SSE) + chunk("data: x\n\n"));
      c.close();
    }, "body"),
    await bothFail(async (c) => {
      await c.next();
      await c.write(responseHead("200 OK", SSE) + "zz\r\n");
      await c.clientClosed();
    }, "body"),
    // A reset: the request's body left unread when the server closes.
    await bothFail(
      async (c) => {
        await c.next(true);
        await c.write(responseHead("200 OK", SSE) + chunk("data: x\n\n"));
        await new Promise((resolve) => setTimeout(resolve, 20));
        c.close();
      },
      "body",
      { method: "POST", body: "x".repeat(100_000) },
    ),
  ];
  for (const errors of mid) {
    assert.ok(errors.fetch instanceof TypeError, String(errors.fetch));
    assert.ok(errors.http1 instanceof TypeError, String(errors.http1));
    assert.equal(
      streamFailure(errors.http1, 0).retryable,
      streamFailure(errors.fetch, 0).retryable,
    );
    assert.equal(classifyHttpFailure(errors.http1).kind, classifyHttpFailure(errors.fetch).kind);
  }
});

Deno.test("http1: the openai backend streams through it — the text arrives live, before the answer's end", async () => {
  const base = { id: "c1", object: "chat.completion.chunk", created: 1, model: "m" };
  const event = (delta: Record<string, unknown>, finish: string | null = null) =>
    `data: ${
      JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })
    }\n\n`;
  const firstText = signal();
  let endWritten = false;
  const seen: { text: string; endWritten: boolean }[] = [];
  const connectionsBefore = http1Counters.connections;
  await withServer(async (connection) => {
    await connection.next();
    await connection.write(
      responseHead("200 OK", SSE) + chunk(event({ role: "assistant", content: "" })) +
        chunk(event({ content: "Hel" })),
    );
    await Promise.race([firstText.promise, new Promise((r) => setTimeout(r, 30_000))]);
    endWritten = true;
    await connection.write(
      chunk(event({ content: "lo" })) + chunk(event({}, "stop")) + chunk("data: [DONE]\n\n") +
        "0\r\n\r\n",
    );
    await connection.clientClosed();
  }, async (server) => {
    const backend = new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "m" });
    const answer = await backend.complete(stepRequest(), {
      onText: (text) => {
        seen.push({ text, endWritten });
        firstText.resolve();
      },
    });
    assert.equal(answer.text, "Hello");
    assert.deepEqual(seen, [{ text: "Hel", endWritten: false }, { text: "lo", endWritten: true }]);
    assert.equal(http1Counters.connections - connectionsBefore, 1, "went over this client");
  });
});

Deno.test("http1: the openai backend — a stream reset mid-way on every attempt is BACKEND_STREAM_INTERRUPTED, as with fetch", async () => {
  const base = { id: "c1", object: "chat.completion.chunk", created: 1, model: "m" };
  const text = `data: ${
    JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: "part" } }] })
  }\n\n`;
  let pieces = 0;
  await withServer(async (connection) => {
    // The request's body is left unread: closing then resets the connection.
    await connection.next(true);
    const attempt = pieces;
    await connection.write(responseHead("200 OK", SSE) + chunk(text));
    await waitFor("a piece of the answer", () => Promise.resolve(pieces > attempt || undefined));
    connection.close();
  }, async (server) => {
    const backend = new OpenAiBackend({
      baseUrl: `${server.url}/v1`,
      model: "m",
      retry: { initialDelayMs: 1, maxDelayMs: 5 },
    });
    const error = await backend.complete(stepRequest(), { onText: () => void pieces++ }).then(
      () => undefined,
      (e) => e,
    );
    assert.ok(error instanceof BackendError, String(error));
    assert.equal(error.code, "BACKEND_STREAM_INTERRUPTED", error.message);
    assert.equal(error.details.attempts, 3);
    assert.match(error.message, /the stream broke off: error reading a body from connection/);
  });
});

const CLIENT = fileURLToPath(new URL("./fixtures/http1_client.ts", import.meta.url));

/** Runs the one-request program with `env`; its JSON line, and when its exit was seen. */
async function runClient(url: string, env: Record<string, string>, permissions = ["-A"]) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...permissions, CLIENT, url],
    env: {
      ...env,
      // Only the variables named count: none of the machine's own.
      ...Object.fromEntries(
        ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"]
          .filter((name) => !(name in env)).map((name) => [name, ""]),
      ),
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = await child.output();
  const exitedAt = Date.now();
  const stderr = decoder.decode(output.stderr);
  assert.equal(output.code, 0, stderr);
  const line = JSON.parse(decoder.decode(output.stdout)) as {
    status: number;
    text: string;
    connections: number;
    idle: number;
    finishedAt: number;
  };
  return { ...line, exitedAt };
}

Deno.test("http1: a proxy variable sends http: through fetch; NO_PROXY naming the host, or none, through this client — and the program exits with a connection kept alive", async () => {
  const proxied: string[] = [];
  const proxy = startRawServer(async (connection) => {
    for (let request; (request = await connection.next()) !== null;) {
      proxied.push(request.target);
      await connection.write(OK("via the proxy"));
    }
  });
  try {
    // The server keeps every connection open: only the client may end it.
    await withServer(answering(() => OK("direct")), async (server) => {
      const url = `${server.url}/v1/models`;
      const viaProxy = await runClient(url, { HTTP_PROXY: proxy.url });
      assert.equal(viaProxy.text, "via the proxy");
      assert.equal(viaProxy.connections, 0);
      assert.deepEqual(proxied, [url], "the proxy got the absolute URL");
      const bypass = await runClient(url, {
        HTTP_PROXY: proxy.url,
        NO_PROXY: "localhost,127.0.0.1",
      });
      assert.equal(bypass.text, "direct");
      assert.equal(bypass.connections, 1);
      const plain = await runClient(url, {});
      assert.equal(plain.text, "direct");
      assert.equal(plain.idle, 1, "its connection was kept alive when the program ended");
      // The kept-alive connection (idle 4 s before it is closed) does not hold the program.
      assert.ok(
        plain.exitedAt - plain.finishedAt < 3_000,
        `exited ${plain.exitedAt - plain.finishedAt} ms after its request`,
      );
      // Without the permission to read the variables, nothing is asked: fetch routes it.
      const unreadable = await runClient(url, {}, ["--allow-net", "--allow-read"]);
      assert.equal(unreadable.text, "direct");
      assert.equal(unreadable.connections, 0);
      assert.equal(proxied.length, 1);
    });
  } finally {
    await proxy.close();
  }
});

Deno.test("http1: the chat backends' fetch keeps error bodies' messages over this client", async () => {
  await withServer(
    answering(() =>
      responseHead("500 Internal Server Error", {
        "content-type": "application/json",
        "transfer-encoding": "chunked",
      }) + chunk('{"message":') + chunk('"model not loaded"}') + "0\r\n\r\n"
    ),
    async (server) => {
      const backend = new OpenAiBackend({
        baseUrl: `${server.url}/v1`,
        model: "m",
        retry: { maxAttempts: 1 },
      });
      const error = await backend.complete(stepRequest()).then(() => undefined, (e) => e);
      assert.ok(error instanceof BackendError, String(error));
      assert.equal(error.code, "BACKEND_UNAVAILABLE");
      assert.match(error.message, /HTTP 500 model not loaded/);
      const direct = await fetchKeepingErrorBodies(`${server.url}/v1/x`);
      assert.equal(direct.status, 500);
      assert.equal(await direct.text(), '{"message":"model not loaded"}');
    },
  );
});

Deno.test("http1: a Request object is sent as it says — its method, headers and body — over the own client", async () => {
  const seen: { method: string; type?: string; body: string }[] = [];
  await withServer(async (connection) => {
    for (let request; (request = await connection.next()) !== null;) {
      seen.push({
        method: request.method,
        type: request.headers["content-type"],
        body: decoder.decode(request.body),
      });
      await connection.write(OK("fine"));
    }
  }, async (server) => {
    const request = new Request(`${server.url}/r`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: '{"a":1}',
    });
    const response = await http1Fetch(request);
    assert.equal(await response.text(), "fine");
    assert.equal(server.accepts, 1, "sent by the own client");
    assert.deepEqual(seen, [{ method: "PUT", type: "application/json", body: '{"a":1}' }]);
  });
});
