/**
 * Real-backend overhead, no network: one call of the `anthropic` and `openai` backends (official SDK
 * client + retry wrapper + conversation history + JSON extraction) against a local fake server, next
 * to a bare `fetch` of the same reply (the baseline); one `claude-code` call (Agent SDK + a spawned
 * fake Claude Code process); and the conversation store of a long run.
 */
import { AnthropicBackend } from "../src/llm/anthropic.ts";
import { ClaudeCodeBackend } from "../src/llm/claude_code.ts";
import { ConversationStore } from "../src/llm/conversation.ts";
import { ModelChainBackend } from "../src/llm/model_chain.ts";
import type { LlmBackend } from "../src/llm/types.ts";
import { OpenAiBackend } from "../src/llm/openai.ts";
import { fakeClaude } from "../tests/llm/fake_claude.ts";
import {
  anthropicMessage,
  type FakeReply,
  openAiCompletion,
  startFakeServer,
  stepRequest,
  VERDICT_SCHEMA,
} from "../tests/llm/fake_server.ts";

const ANSWER = JSON.stringify({ verdict: "ok", reason: "x".repeat(400) });

/** A server that answers every request with the same reply. */
function endlessServer(reply: FakeReply) {
  const server = startFakeServer();
  const refill = () => {
    if (server.remaining() < 100) {
      server.push(...Array.from({ length: 1000 }, () => reply));
    }
    server.requests.length = 0;
  };
  refill();
  return { server, refill };
}

const anthropicServer = endlessServer(anthropicMessage(ANSWER));
const openAiServer = endlessServer(openAiCompletion(ANSWER));
const anthropic = new AnthropicBackend({
  apiKey: "k",
  baseUrl: anthropicServer.server.url,
  model: "claude-sonnet-5-5",
});
const openai = new OpenAiBackend({ baseUrl: `${openAiServer.server.url}/v1`, model: "m" });
const request = stepRequest({ outputSchema: VERDICT_SCHEMA, systemPrompt: "You are a bench." });

Deno.bench({
  name: "fetch of the same reply (baseline)",
  group: "chat call",
  baseline: true,
  async fn() {
    anthropicServer.refill();
    const res = await fetch(`${anthropicServer.server.url}/v1/messages`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    });
    await res.json();
  },
});

Deno.bench({
  name: "anthropic backend call",
  group: "chat call",
  async fn() {
    anthropicServer.refill();
    await anthropic.complete(request);
  },
});

Deno.bench({
  name: "openai backend call",
  group: "chat call",
  async fn() {
    openAiServer.refill();
    await openai.complete(request);
  },
});

const fake = await fakeClaude(
  Array.from({ length: 5000 }, () => ({ structured_output: { verdict: "ok" } })),
);
const claude = new ClaudeCodeBackend(fake.options);
Deno.bench({
  name: "claude-code call (spawns the fake Claude Code)",
  group: "claude-code",
  n: 30,
  async fn() {
    await claude.complete({ ...request, cwd: fake.dir });
  },
});

Deno.bench({
  name: "conversation: 100 turns appended and read in a 40-turn window",
  group: "conversation",
  fn() {
    const store = new ConversationStore();
    for (let i = 0; i < 50; i++) {
      store.get("run");
      store.append("run", [{ role: "user", content: "q" }, { role: "assistant", content: "a" }]);
    }
  },
});

globalThis.addEventListener("unload", () => {
  void anthropicServer.server.close();
  void openAiServer.server.close();
  Deno.removeSync(fake.dir, { recursive: true });
});

// The model-chain walker around a backend (run-agent, workers and the runner's own backend always
// have one): a call with one model goes straight through; a chain whose first entry answers adds
// the annotation of who answered. Measured against the bare backend in one group (target: a few µs
// per call, nothing next to a model call).
const bare: LlmBackend = { name: "bare", complete: () => Promise.resolve({ text: "ok" }) };
const wrapped = new ModelChainBackend(bare, {
  fallbacks: [],
  build: () => Promise.reject(new Error("not used")),
});
const chained = stepRequest({
  model: "m1",
  modelChain: ["m1", "m2", { backend: "openai", model: "m3" }],
});
const chainWithMembers = new ModelChainBackend(bare, {
  build: () => Promise.resolve(bare),
});
Deno.bench("model chain: a bare backend's call", { group: "chain", baseline: true }, async () => {
  await bare.complete(stepRequest({ model: "m1" }));
});
Deno.bench(
  "model chain: the same call through the walker (one model)",
  { group: "chain" },
  async () => {
    await wrapped.complete(stepRequest({ model: "m1" }));
  },
);
Deno.bench(
  "model chain: a three-entry chain whose first entry answers",
  { group: "chain" },
  async () => {
    await chainWithMembers.complete(chained);
  },
);
