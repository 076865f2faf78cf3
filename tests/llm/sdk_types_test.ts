/**
 * The backends describe the few SDK members they use with their own types (so that no SDK enters
 * the module graph). This file checks, at type-check time, that the real SDKs still fit them.
 */
import assert from "node:assert/strict";
import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import type * as AgentSdk from "@anthropic-ai/claude-agent-sdk";
import type { AnthropicMessagesClient } from "../../src/llm/anthropic.ts";
import type { OpenAiChatClient } from "../../src/llm/openai.ts";
import type { ClaudeAgentSdkModule, ClaudeQueryOptions } from "../../src/llm/claude_code.ts";

Deno.test("the real SDK clients fit the backends' structural types", () => {
  const anthropic = (client: Anthropic): AnthropicMessagesClient => client;
  const openai = (client: OpenAI): OpenAiChatClient => client;
  const agent = (sdk: typeof AgentSdk): ClaudeAgentSdkModule => sdk;
  const options = (o: ClaudeQueryOptions): AgentSdk.Options => o;
  assert.equal(typeof anthropic, "function");
  assert.equal(typeof openai, "function");
  assert.equal(typeof agent, "function");
  assert.equal(typeof options, "function");
});
