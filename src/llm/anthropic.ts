/**
 * The `anthropic` backend: the Anthropic Messages API through the official `@anthropic-ai/sdk`
 * client, with native JSON-schema structured output (`output_config.format`).
 *
 * @module
 */
import type { FailureHints } from "./backend_error.ts";
import type { SdkErrorClasses } from "./retry.ts";
import {
  badResponse,
  ChatApiBackend,
  type ChatBackendOptions,
  type ChatExchangeRequest,
  type ChatExchangeResult,
} from "./chat_backend.ts";
import { loadSdk } from "./sdk_loader.ts";
import { generatedCallId, type ToolTurnMessage } from "./tool_turn.ts";

/** Default answer-token limit of the `anthropic` backend (the API requires one). */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 8192;

/** Options of {@linkcode AnthropicBackend}. */
export interface AnthropicBackendOptions extends ChatBackendOptions {
  /** API key (`ANTHROPIC_API_KEY`). Required unless `baseUrl` points at a gateway that needs none. */
  apiKey?: string;
  /** API base URL without `/v1` (default `https://api.anthropic.com`). */
  baseUrl?: string;
  /** Answer-token limit (`max_tokens`, default 8192). */
  maxTokens?: number;
}

// The subset of the SDK this backend uses. Declared here rather than imported so that the SDK stays
// out of the module graph; tests/llm/sdk_types_test.ts checks it against the real SDK types.
/** The body of `POST /v1/messages` as this backend sends it. */
export interface AnthropicMessagesBody {
  model: string;
  max_tokens: number;
  messages: { role: "user" | "assistant"; content: string | AnthropicContentBlock[] }[];
  system?: string;
  output_config?: { format: { type: "json_schema"; schema: Record<string, unknown> } };
  tools?: {
    name: string;
    description?: string;
    input_schema: { type: "object"; [key: string]: unknown };
  }[];
}

/** A content block of a tool turn: text, a tool call, or a tool's result. */
export type AnthropicContentBlock =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: unknown }
  | { type: "tool_result"; tool_use_id: string; content: string; is_error?: boolean };

/** The part of the Anthropic client this backend calls. */
export interface AnthropicMessagesClient {
  messages: {
    create(
      body: AnthropicMessagesBody,
      options?: { signal?: AbortSignal; timeout?: number; maxRetries?: number },
    ): PromiseLike<unknown>;
  };
}

interface AnthropicMessage {
  content?: { type: string; text?: string; id?: unknown; name?: unknown; input?: unknown }[];
  stop_reason?: string | null;
  stop_details?: { category?: string | null; explanation?: string | null } | null;
  usage?: {
    input_tokens?: number | null;
    output_tokens?: number | null;
    cache_creation_input_tokens?: number | null;
    cache_read_input_tokens?: number | null;
  };
}

type AnthropicModule = SdkErrorClasses & {
  default: new (options: Record<string, unknown>) => AnthropicMessagesClient;
};

/**
 * Calls Claude through the Anthropic Messages API (`POST /v1/messages`).
 *
 * - `outputSchema` is sent as `output_config: { format: { type: "json_schema", schema } }`; if the
 *   server rejects it (older models, gateways), the backend falls back to asking through the
 *   prompt (see {@linkcode StructuredOutputMode});
 * - the system prompt goes in `system`; the conversation of each `sessionId` is kept in memory and
 *   sent again on the next call of the run;
 * - the SDK's own retries are off: the stepflow retry policy applies (408/409/429/5xx and network
 *   errors, `Retry-After` honoured), each retry reported to `onRetry`;
 * - `usage` is `input_tokens` (+ cache reads and writes) and `output_tokens`; `costUsd` is
 *   reported when `pricing` has the model.
 *
 * A step with `allowedTools` runs through the one tool loop (`src/engine/tool_loop.ts`): this
 * backend sends the tools and `tool_result` blocks and reads `tool_use` blocks ({@linkcode
 * ChatApiBackend.toolTurn}); `permissionMode` is applied by the loop.
 *
 * @example
 * ```ts ignore
 * import { AnthropicBackend, readJsonAnswer } from "@stepflow/core";
 * const backend = new AnthropicBackend({
 *   apiKey: Deno.env.get("ANTHROPIC_API_KEY"),
 *   model: "claude-sonnet-5-5",
 * });
 * const res = await backend.complete({
 *   kind: "step", agent: "demo", stepId: "s1", iteration: 1, cwd: ".",
 *   prompt: "Name a colour.",
 *   outputSchema: { type: "object", properties: { colour: { type: "string" } }, required: ["colour"] },
 * });
 * console.log(readJsonAnswer(res), res.usage); // { ok: true, value: { colour: "teal" } }, …
 * ```
 */
export class AnthropicBackend extends ChatApiBackend {
  /** Always `"anthropic"`. */
  readonly name = "anthropic";
  readonly #options: AnthropicBackendOptions;

  /**
   * Creates the backend; the SDK is loaded on the first call.
   *
   * @param options see {@linkcode AnthropicBackendOptions}
   */
  constructor(options: AnthropicBackendOptions = {}) {
    super(options);
    this.#options = options;
  }

  #getClient(): Promise<AnthropicMessagesClient> {
    return this.sdkClient(async () => {
      const sdk = await loadSdk<AnthropicModule>("@anthropic-ai/sdk", this.name);
      this.sdkErrorClasses = {
        APIConnectionError: sdk.APIConnectionError,
        APIConnectionTimeoutError: sdk.APIConnectionTimeoutError,
      };
      return new sdk.default(this.clientOptions(this.#options.baseUrl));
    });
  }

  /** Sends one `POST /v1/messages`. */
  protected async exchange(request: ChatExchangeRequest): Promise<ChatExchangeResult> {
    const client = await this.#getClient();
    const body: AnthropicMessagesBody = {
      model: request.model,
      max_tokens: this.#options.maxTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
      messages: request.turns.map((t) => ({ role: t.role, content: t.content })),
    };
    if (request.toolMessages) body.messages.push(...toAnthropicMessages(request.toolMessages));
    if (request.tools?.length) {
      body.tools = request.tools.map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: { ...t.inputSchema, type: "object" },
      }));
    }
    if (request.system) body.system = request.system;
    if (request.schema) {
      body.output_config = { format: { type: "json_schema", schema: request.schema } };
    }
    const message = await client.messages.create(body, {
      signal: request.signal,
      maxRetries: 0,
    }) as AnthropicMessage;
    if (!message || typeof message !== "object" || !Array.isArray(message.content)) {
      throw badResponse(this.name, "no content array", message);
    }
    const text = message.content
      .filter((block) => block.type === "text" && typeof block.text === "string")
      .map((block) => block.text)
      .join("");
    const result: ChatExchangeResult = { text };
    if (request.tools) {
      result.toolCalls = message.content.filter((block) => block.type === "tool_use").map((b) => ({
        id: typeof b.id === "string" && b.id ? b.id : generatedCallId(),
        name: typeof b.name === "string" ? b.name : "",
        arguments: b.input,
      }));
    }
    const usage = message.usage;
    // Without both counts the usage is unknown, not zero.
    if (
      usage && typeof usage.input_tokens === "number" && typeof usage.output_tokens === "number"
    ) {
      result.usage = {
        inputTokens: usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) +
          (usage.cache_read_input_tokens ?? 0),
        outputTokens: usage.output_tokens,
      };
    }
    if (message.stop_reason === "refusal") {
      const category = message.stop_details?.category;
      result.refusal = (message.stop_details?.explanation ?? (text || "no explanation given")) +
        (category ? ` (category: ${category})` : "");
    }
    if (message.stop_reason === "max_tokens") result.truncated = true;
    return result;
  }

  /** Says which variable to check. */
  protected failureHints(model: string): FailureHints {
    const server = this.#options.baseUrl ?? "https://api.anthropic.com";
    return {
      auth: `Check ANTHROPIC_API_KEY (the key was refused by ${server}).`,
      notFound:
        `Check the model name "${model}" (--model or behavior.model) and the base URL ${server}.`,
      network:
        `Could not connect to ${server}: is the server at ${server} running? Check the network and --base-url (ANTHROPIC_BASE_URL).`,
    };
  }
}

/**
 * A step's tool conversation as Messages API turns: assistant turns carry `tool_use` blocks, tool
 * results go back as one user turn of `tool_result` blocks.
 */
function toAnthropicMessages(messages: ToolTurnMessage[]): AnthropicMessagesBody["messages"] {
  return messages.map((m) => {
    if (m.role === "user") return { role: "user" as const, content: m.content };
    if (m.role === "assistant") {
      const blocks: AnthropicContentBlock[] = m.text ? [{ type: "text", text: m.text }] : [];
      for (const call of m.toolCalls) {
        blocks.push({
          type: "tool_use",
          id: call.id,
          name: call.name,
          input: toolInput(call.arguments),
        });
      }
      return { role: "assistant" as const, content: blocks };
    }
    return {
      role: "user" as const,
      content: m.results.map((r): AnthropicContentBlock => ({
        type: "tool_result",
        tool_use_id: r.id,
        content: r.content,
        ...(r.isError ? { is_error: true } : {}),
      })),
    };
  });
}

/** The API needs an object as a `tool_use` input, even for a call whose arguments were broken. */
function toolInput(args: unknown): unknown {
  return args !== null && typeof args === "object" && !Array.isArray(args) ? args : {};
}
