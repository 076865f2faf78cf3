/** createBackend: names, credentials, local servers, and the messages a user sees. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { UsageError } from "../../src/errors.ts";
import { AnthropicBackend } from "../../src/llm/anthropic.ts";
import { ClaudeCodeBackend } from "../../src/llm/claude_code.ts";
import {
  createBackend,
  DEFAULT_ANTHROPIC_MODEL,
  DEFAULT_OPENAI_MODEL,
} from "../../src/llm/factory.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";

async function usageError(spec: Parameters<typeof createBackend>[0]): Promise<UsageError> {
  const error = await createBackend(spec).then(() => undefined, (e) => e);
  assert.ok(error instanceof UsageError, `expected a UsageError, got ${error}`);
  assert.equal(error.code, "USAGE");
  return error;
}

Deno.test("createBackend: each name builds its backend (case-insensitive)", async () => {
  const claude = await createBackend({ name: "claude-code", model: "sonnet" });
  assert.ok(claude instanceof ClaudeCodeBackend);
  const anthropic = await createBackend({ name: "Anthropic", env: { ANTHROPIC_API_KEY: "k" } });
  assert.ok(anthropic instanceof AnthropicBackend);
  assert.equal(anthropic.model, DEFAULT_ANTHROPIC_MODEL);
  const openai = await createBackend({ name: "OPENAI", env: { OPENAI_API_KEY: "k" } });
  assert.ok(openai instanceof OpenAiBackend);
  assert.equal(openai.model, DEFAULT_OPENAI_MODEL);
  assert.equal(openai.isCompatibleServer, false);

  const dir = await Deno.makeTempDir();
  try {
    const script = join(dir, "script.yaml");
    await Deno.writeTextFile(script, "s1:\n  - output: { ok: true }\n");
    const scripted = await createBackend({ name: "scripted", script });
    assert.ok(scripted instanceof ScriptedBackend);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createBackend: retry, timeout and onRetry reach the backend", async () => {
  const backend = await createBackend({
    name: "openai",
    baseUrl: "http://127.0.0.1:11434/v1",
    model: "llama3.2",
    env: {},
    retry: { maxAttempts: 5 },
    timeoutMs: 1234,
  }) as OpenAiBackend;
  assert.equal(backend.retryPolicy.maxAttempts, 5);
  assert.equal(backend.retryPolicy.initialDelayMs, 500);
  assert.equal(backend.timeoutMs, 1234);
  assert.equal(backend.isCompatibleServer, true);
});

Deno.test("createBackend: an unknown name lists the known ones", async () => {
  const error = await usageError({ name: "gpt" });
  assert.equal(
    error.message,
    'Unknown backend "gpt": use one of claude-code, anthropic, openai, scripted (--backend or behavior.backend in agent.json).',
  );
});

Deno.test("createBackend: anthropic without a key says to set ANTHROPIC_API_KEY", async () => {
  const error = await usageError({ name: "anthropic", env: { ANTHROPIC_API_KEY: "  " } });
  assert.match(error.message, /^The anthropic backend needs an API key: set ANTHROPIC_API_KEY/);
  assert.match(error.message, /--backend claude-code/);
  assert.match(error.message, /--base-url http:\/\/127\.0\.0\.1:11434\/v1/);
  assert.equal(error.details?.variable, "ANTHROPIC_API_KEY");
  // A gateway given by base URL may need no key.
  const gateway = await createBackend({
    name: "anthropic",
    env: { ANTHROPIC_BASE_URL: "http://127.0.0.1:4000" },
  });
  assert.ok(gateway instanceof AnthropicBackend);
});

Deno.test("createBackend: openai without a key names OPENAI_API_KEY and the local-server option", async () => {
  const error = await usageError({ name: "openai", env: {} });
  assert.match(error.message, /^The openai backend needs OPENAI_API_KEY/);
  assert.match(
    error.message,
    /pass --base-url \(or set OPENAI_BASE_URL\): Ollama http:\/\/127\.0\.0\.1:11434\/v1/,
  );
  assert.equal(error.details?.variable, "OPENAI_API_KEY");
  const official = await usageError({
    name: "openai",
    baseUrl: "https://api.openai.com/v1",
    env: {},
  });
  assert.match(official.message, /OPENAI_API_KEY/);
});

Deno.test("createBackend: a local server needs a model name", async () => {
  const error = await usageError({ name: "openai", baseUrl: "http://127.0.0.1:11434/v1", env: {} });
  assert.match(
    error.message,
    /needs a model name for the server at http:\/\/127\.0\.0\.1:11434\/v1: pass --model/,
  );
  assert.match(error.message, /ollama list/);
});

Deno.test("createBackend: a malformed base URL and a missing script are usage errors", async () => {
  const url = await usageError({ name: "openai", baseUrl: "localhost:11434", model: "m", env: {} });
  assert.match(url.message, /--base-url for the openai backend must be an http\(s\) URL/);
  const script = await usageError({ name: "scripted" });
  assert.match(script.message, /--script FILE/);
});

Deno.test("createBackend: a request without any model is a clear error at call time", async () => {
  const backend = new OpenAiBackend({ baseUrl: "http://127.0.0.1:9/v1" });
  await assert.rejects(
    backend.complete({
      kind: "step",
      agent: "a",
      stepId: "s1",
      iteration: 1,
      prompt: "p",
      cwd: ".",
    }),
    (e) => e instanceof UsageError && /needs a model name for step "s1"/.test(e.message),
  );
});
