import assert from "node:assert/strict";
import type { StepflowError } from "../../src/errors.ts";
import { createToolRegistry } from "../../src/tools/builtin.ts";
import type { HttpGetResult } from "../../src/tools/builtin_http.ts";

function serve(): { url: string; close: () => Promise<void> } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/json") return Response.json({ items: [1, 2], echo: req.headers.get("x-test") });
    if (path === "/text") return new Response("hello");
    if (path === "/missing") return new Response("no such thing", { status: 404 });
    if (path === "/big") return new Response("x".repeat(5000));
    if (path === "/slow") {
      await new Promise((r) => setTimeout(r, 200));
      return new Response("late");
    }
    return new Response("?", { status: 500 });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

const ctx = { workspaceRoot: "." };
const codeOf = (p: Promise<unknown>) => p.then(() => "none", (e) => (e as StepflowError).code);

Deno.test("http_get is absent unless enabled", () => {
  assert.equal(createToolRegistry().has("http_get"), false);
  assert.equal(createToolRegistry({ enableHttp: true }).has("http_get"), true);
});

Deno.test("http_get returns status, headers and body; JSON bodies are parsed", async () => {
  const { url, close } = serve();
  try {
    const tools = createToolRegistry({ enableHttp: true });
    const json = await tools.invoke("http_get", {
      url: `${url}/json`,
      headers: { "x-test": "yes" },
    }, ctx) as HttpGetResult;
    assert.equal(json.status, 200);
    assert.equal(json.ok, true);
    assert.deepEqual(json.body, { items: [1, 2], echo: "yes" });
    assert.match(json.headers["content-type"], /json/);
    const text = await tools.invoke("http_get", { url: `${url}/text` }, ctx) as HttpGetResult;
    assert.equal(text.body, "hello");
    const forcedText = await tools.invoke(
      "http_get",
      { url: `${url}/json`, responseType: "text" },
      ctx,
    ) as HttpGetResult;
    assert.equal(typeof forcedText.body, "string");
  } finally {
    await close();
  }
});

Deno.test("http_get fails on error statuses unless allowErrorStatus, and bounds size and time", async () => {
  const { url, close } = serve();
  try {
    const tools = createToolRegistry({ enableHttp: true });
    const error = await tools.invoke("http_get", { url: `${url}/missing` }, ctx).catch((
      e: StepflowError,
    ) => e) as StepflowError;
    assert.equal(error.code, "HTTP_STATUS");
    assert.match(error.message, /answered 404/);
    const allowed = await tools.invoke("http_get", {
      url: `${url}/missing`,
      allowErrorStatus: true,
    }, ctx) as HttpGetResult;
    assert.equal(allowed.status, 404);
    assert.equal(allowed.body, "no such thing");
    assert.equal(
      await codeOf(tools.invoke("http_get", { url: `${url}/big`, maxBytes: 100 }, ctx)),
      "HTTP_BODY_TOO_LARGE",
    );
    assert.equal(
      await codeOf(tools.invoke("http_get", { url: `${url}/slow`, timeoutMs: 50 }, ctx)),
      "HTTP_TIMEOUT",
    );
  } finally {
    await close();
  }
});

Deno.test("http_get refuses other schemes and hosts outside allowedHosts", async () => {
  const { url, close } = serve();
  try {
    const open = createToolRegistry({ enableHttp: true });
    assert.equal(
      await codeOf(open.invoke("http_get", { url: "file:///etc/passwd" }, ctx)),
      "TOOL_ARGS_INVALID",
    );
    const limited = createToolRegistry({ enableHttp: { allowedHosts: ["example.org"] } });
    const error = await limited.invoke("http_get", { url: `${url}/text` }, ctx).catch((
      e: StepflowError,
    ) => e) as StepflowError;
    assert.equal(error.code, "HTTP_URL_REFUSED");
    assert.match(error.message, /not allowed/);
  } finally {
    await close();
  }
});

Deno.test("http_get stops when the step is cancelled", async () => {
  const { url, close } = serve();
  try {
    const tools = createToolRegistry({ enableHttp: true });
    const controller = new AbortController();
    const pending = tools.invoke("http_get", { url: `${url}/slow` }, {
      workspaceRoot: ".",
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(new Error("stop")), 20);
    await assert.rejects(pending, /stop/);
  } finally {
    await close();
  }
});
