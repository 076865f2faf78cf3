import assert from "node:assert/strict";
import { agentBackend, DEFAULT_BACKEND } from "../../src/llm/agent_backend.ts";
import { UsageError } from "../../src/errors.ts";

Deno.test("agentBackend: an agent that names no backend runs on DEFAULT_BACKEND (claude-code)", async () => {
  assert.equal(DEFAULT_BACKEND, "claude-code");
  // Building a claude-code backend loads no SDK and starts nothing: that happens on its first call.
  assert.equal((await agentBackend({})).name, "claude-code");
});

Deno.test("agentBackend: behavior.backend names the backend; an unknown one is a usage error", async () => {
  await assert.rejects(
    () => agentBackend({ backend: "nonsense", model: "m" }),
    (e: unknown) =>
      e instanceof UsageError && /Unknown backend "nonsense"/.test(e.message) &&
      /behavior\.backend in agent\.json/.test(e.message),
  );
});
