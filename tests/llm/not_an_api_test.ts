/**
 * A URL that is not the backend's API — a plain web server, a wrong path — through the official
 * SDK clients over real sockets on 127.0.0.1: a web server that answers POST with its HTML 501
 * (what `python3 -m http.server` sends), a site whose 404 is a page, a Go server's plain-text 404
 * and a page answered with 200. Each fails at once (no retry) with `BACKEND_BAD_RESPONSE` saying
 * that the URL does not answer like the API and what its base URL looks like — not as an outage.
 */
import assert from "node:assert/strict";
import { AnthropicBackend } from "../../src/llm/anthropic.ts";
import { BackendError } from "../../src/llm/backend_error.ts";
import type { ChatApiBackend } from "../../src/llm/chat_backend.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import type { RetryInfo } from "../../src/llm/retry.ts";
import { startFakeServer, stepRequest } from "./fake_server.ts";

/** The body Python's `http.server` sends for a POST (its `send_error(501, …)` page). */
const PYTHON_501 = `<!DOCTYPE HTML>
<html lang="en">
    <head>
        <meta charset="utf-8">
        <title>Error response</title>
    </head>
    <body>
        <h1>Error response</h1>
        <p>Error code: 501</p>
        <p>Message: Unsupported method ('POST').</p>
        <p>Error code explanation: 501 - Server does not support this operation.</p>
    </body>
</html>
`;

/** A static web server: GET serves pages, POST is not implemented (an HTML 501), like Python's. */
function startWebServer(page404 = false) {
  let posts = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    if (request.method === "GET") {
      return new Response("<html><body><h1>Directory listing for /</h1></body></html>", {
        headers: { "content-type": "text/html; charset=utf-8" },
      });
    }
    posts++;
    void request.body?.cancel();
    if (page404) {
      return new Response(
        "<!DOCTYPE html><html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL was not found on this server.</p></body></html>",
        { status: 404, headers: { "content-type": "text/html; charset=iso-8859-1" } },
      );
    }
    return new Response(PYTHON_501, {
      status: 501,
      headers: { "content-type": "text/html;charset=utf-8", connection: "close" },
    });
  });
  const { port } = server.addr as Deno.NetAddr;
  return { url: `http://127.0.0.1:${port}`, posts: () => posts, close: () => server.shutdown() };
}

const FAST_RETRY = { initialDelayMs: 1, maxDelayMs: 5 };

const BACKENDS: {
  name: string;
  make: (baseUrl: string, onRetry: (r: RetryInfo) => void, stream?: boolean) => ChatApiBackend;
  /** The base URL given for a server root. */
  base: (root: string) => string;
  says: RegExp;
}[] = [
  {
    name: "openai",
    make: (baseUrl, onRetry, stream = true) =>
      new OpenAiBackend({ baseUrl, model: "llama3.2", retry: FAST_RETRY, onRetry, stream }),
    base: (root) => `${root}/v1`,
    says: /does not answer like an OpenAI-compatible API: check --base-url \(OPENAI_BASE_URL\)/,
  },
  {
    name: "anthropic",
    make: (baseUrl, onRetry, stream = true) =>
      new AnthropicBackend({
        baseUrl,
        apiKey: "k",
        model: "claude-sonnet-5-5",
        retry: FAST_RETRY,
        onRetry,
        stream,
      }),
    base: (root) => root,
    says:
      /does not answer like the Anthropic Messages API: check --base-url \(ANTHROPIC_BASE_URL\)/,
  },
];

async function failure(backend: ChatApiBackend): Promise<BackendError> {
  const error = await backend.complete(stepRequest()).then(() => undefined, (e) => e);
  assert.ok(error instanceof BackendError, String(error));
  return error;
}

for (const { name, make, base, says } of BACKENDS) {
  for (const stream of [true, false]) {
    Deno.test(`${name}: a web server's HTML 501 is "not the API", at once (stream: ${stream})`, async () => {
      const server = startWebServer();
      try {
        const retries: RetryInfo[] = [];
        const url = base(server.url);
        const error = await failure(make(url, (r) => retries.push(r), stream));
        assert.equal(error.code, "BACKEND_BAD_RESPONSE", error.message);
        assert.equal(error.details.status, 501);
        assert.equal(error.details.attempts, 1, "not retried");
        assert.equal(retries.length, 0);
        assert.equal(server.posts(), 1, "one request, no retry");
        assert.match(error.message, says);
        assert.ok(error.message.includes(url), `names the URL: ${error.message}`);
        assert.match(error.message, /HTTP 501 Error response \(an HTML page\)/);
        assert.doesNotMatch(error.message, /try again later|unavailable|attempts/i);
      } finally {
        await server.close();
      }
    });
  }

  Deno.test(`${name}: a site's HTML 404 page is "not the API", not a wrong model`, async () => {
    const server = startWebServer(true);
    try {
      const error = await failure(make(base(server.url), () => {}));
      assert.equal(error.code, "BACKEND_BAD_RESPONSE", error.message);
      assert.equal(error.details.status, 404);
      assert.equal(server.posts(), 1);
      assert.match(error.message, says);
      assert.doesNotMatch(error.message, /model name|does not know model/);
    } finally {
      await server.close();
    }
  });

  Deno.test(`${name}: plain-text and empty 404s are "not the API"; a JSON 404 stays the API's`, async () => {
    const server = startFakeServer();
    try {
      const backend = make(base(server.url), () => {});
      server.push({ status: 404, raw: "404 page not found", contentType: "text/plain" });
      const text = await failure(backend);
      assert.equal(text.code, "BACKEND_BAD_RESPONSE", text.message);
      assert.match(text.message, /HTTP 404 404 page not found\./);
      assert.match(text.message, says);
      server.push({ status: 405, raw: "", contentType: "text/plain" });
      assert.equal((await failure(backend)).code, "BACKEND_BAD_RESPONSE");
      // The API itself says 404 (an unknown model): its own error, with the model hint.
      server.push({
        status: 404,
        json: { error: { type: "not_found_error", message: "model: llama9" } },
      });
      const api = await failure(backend);
      assert.equal(api.code, "BACKEND_HTTP_ERROR", api.message);
      assert.doesNotMatch(api.message, says);
      // A JSON 501 is the API saying it cannot do this: not retried, not "not the API".
      server.push({ status: 501, json: { error: { message: "tools are not supported" } } });
      const unsupported = await failure(backend);
      assert.equal(unsupported.code, "BACKEND_HTTP_ERROR", unsupported.message);
      assert.equal(unsupported.details.attempts, 1);
      assert.match(unsupported.message, /tools are not supported/);
      assert.equal(server.requests.length, 4, "nothing retried");
    } finally {
      await server.close();
    }
  });

  Deno.test(`${name}: a proxy's HTML 502 is still an outage, retried`, async () => {
    const server = startFakeServer();
    try {
      const page = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>";
      for (let i = 0; i < 3; i++) {
        server.push({ status: 502, raw: page, contentType: "text/html" });
      }
      const error = await failure(make(base(server.url), () => {}));
      assert.equal(error.code, "BACKEND_UNAVAILABLE", error.message);
      assert.equal(error.details.attempts, 3);
    } finally {
      await server.close();
    }
  });

  Deno.test(`${name}: a web page answered with 200 to a streamed request is "not the API"`, async () => {
    const server = startFakeServer();
    try {
      server.push({ raw: "<html><body>Welcome</body></html>", contentType: "text/html" });
      const error = await failure(make(base(server.url), () => {}));
      assert.equal(error.code, "BACKEND_BAD_RESPONSE", error.message);
      assert.match(error.message, /answered with a web page \(text\/html\)/);
      assert.match(error.message, says);
      assert.doesNotMatch(error.message, /--no-stream/);
    } finally {
      await server.close();
    }
  });
}
