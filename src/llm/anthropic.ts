/**
 * The `anthropic` backend: the Anthropic Messages API through the official `@anthropic-ai/sdk`
 * client, with native JSON-schema structured output (`output_config.format`).
 *
 * @module
 */
import type { FailureHints } from "./backend_error.ts";
import type { SdkErrorClasses } from "./retry.ts";
import { urlWithoutCredentials } from "./backend_choice.ts";
import {
  badResponse,
  ChatApiBackend,
  type ChatBackendOptions,
  type ChatExchangeRequest,
  type ChatExchangeResult,
} from "./chat_backend.ts";
import { type AnthropicMessage, readAnthropicStream } from "./anthropic_stream.ts";
import { loadSdk } from "./sdk_loader.ts";
import { generatedCallId, type ToolTurnMessage } from "./tool_turn.ts";
import type { LlmUsage } from "./types.ts";

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
  /**
   * Mark the prompt's reusable prefix for the server's prompt cache (`cache_control`
   * breakpoints on the tools, the system prompt and the conversation's last turn). Default true;
   * false sends no breakpoint (a gateway that refuses the field).
   */
  promptCache?: boolean;
}

/** A prompt-cache breakpoint: the prefix up to and including the block it marks is cached. */
export interface AnthropicCacheControl {
  /** The only kind the API has (five minutes, renewed by each use). */
  type: "ephemeral";
}

// The subset of the SDK this backend uses. Declared here rather than imported so that the SDK stays
// out of the module graph; tests/llm/sdk_types_test.ts checks it against the real SDK types.
/** The body of `POST /v1/messages` as this backend sends it. */
export interface AnthropicMessagesBody {
  model: string;
  max_tokens: number;
  messages: { role: "user" | "assistant"; content: string | AnthropicContentBlock[] }[];
  system?: string | { type: "text"; text: string; cache_control?: AnthropicCacheControl }[];
  output_config?: { format: { type: "json_schema"; schema: Record<string, unknown> } };
  /** Answer as server-sent events (the backend's `stream` option, default true). */
  stream?: boolean;
  tools?: {
    name: string;
    description?: string;
    input_schema: { type: "object"; [key: string]: unknown };
    cache_control?: AnthropicCacheControl;
  }[];
}

/** A content block of a turn: text, a tool call, or a tool's result. */
export type AnthropicContentBlock =
  | { type: "text"; text: string; cache_control?: AnthropicCacheControl }
  | {
    type: "tool_use";
    id: string;
    name: string;
    input: unknown;
    cache_control?: AnthropicCacheControl;
  }
  | {
    type: "tool_result";
    tool_use_id: string;
    content: string;
    is_error?: boolean;
    cache_control?: AnthropicCacheControl;
  };

/** The part of the Anthropic client this backend calls. */
export interface AnthropicMessagesClient {
  messages: {
    create(
      body: AnthropicMessagesBody,
      options?: { signal?: AbortSignal; timeout?: number; maxRetries?: number },
    ): PromiseLike<unknown> & { asResponse(): PromiseLike<Response> };
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
 * - prompt caching: `cache_control` breakpoints mark the last tool, the system prompt and the
 *   conversation's last turn, so each call of a run (each turn of a tool loop above all) reads the
 *   prefix the call before it wrote instead of paying for it in full (`promptCache: false` turns
 *   this off);
 * - `usage` is `input_tokens` + cache reads + cache writes and `output_tokens`, the cache reads
 *   and writes also apart (`cacheReadTokens`, `cacheWriteTokens`); `costUsd` is reported when
 *   `pricing` has the model (cache reads and writes at their own prices when given).
 *
 * A step with `allowedTools` runs through the one tool loop (`src/engine/tool_loop.ts`): this
 * backend sends the tools and `tool_result` blocks and reads `tool_use` blocks ({@linkcode
 * ChatApiBackend.toolTurn}); `permissionMode` is applied by the loop.
 *
 * @example
 * ```ts ignore
 * import { readJsonAnswer } from "@stepflow/core";
 * import { AnthropicBackend } from "@stepflow/core/llm";
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

  /** The API requires an answer-token limit: 8192 unless `maxTokens` says otherwise. */
  protected override get defaultMaxTokens(): number {
    return DEFAULT_ANTHROPIC_MAX_TOKENS;
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
    // Written in the prompt's order (tools, system, messages): the cached prefix.
    const body: AnthropicMessagesBody = {
      model: request.model,
      max_tokens: request.maxTokens ?? this.#options.maxTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
      ...(request.tools?.length
        ? {
          tools: request.tools.map((t) => ({
            name: t.name,
            description: t.description,
            input_schema: { ...t.inputSchema, type: "object" as const },
          })),
        }
        : {}),
      ...(request.system ? { system: request.system } : {}),
      messages: request.turns.map((t) => ({ role: t.role, content: t.content })),
    };
    if (request.toolMessages) body.messages.push(...toAnthropicMessages(request.toolMessages));
    if (this.#options.promptCache !== false) markCacheBreakpoints(body);
    if (request.schema) {
      body.output_config = { format: { type: "json_schema", schema: request.schema } };
    }
    const message = this.streams
      ? await this.#streamed(client, body, request)
      : await client.messages.create(body, {
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
    const usage = anthropicUsage(message.usage);
    if (usage) result.usage = usage;
    if (message.stop_reason === "refusal") {
      const category = message.stop_details?.category;
      result.refusal = (message.stop_details?.explanation ?? (text || "no explanation given")) +
        (category ? ` (category: ${category})` : "");
    }
    if (message.stop_reason === "max_tokens") result.truncated = true;
    if (typeof message.stop_reason === "string") result.finishReason = message.stop_reason;
    if (typeof message.model === "string" && message.model) result.responseModel = message.model;
    return result;
  }

  /**
   * Sends `body` with `stream: true` and reads the events into the message (text reported to
   * `onText` as it arrives); a stream that breaks off is a `StreamInterrupted` (src/llm/stream_failure.ts).
   */
  async #streamed(
    client: AnthropicMessagesClient,
    body: AnthropicMessagesBody,
    request: ChatExchangeRequest,
  ): Promise<AnthropicMessage> {
    // The raw body, read by our own event reader (src/llm/sse_events.ts): the client's stream
    // layers cost more than the answer's parsing. The client still sends the request and turns
    // an error status into its error.
    const response = await client.messages.create({ ...body, stream: true }, {
      signal: request.signal,
      maxRetries: 0,
    }).asResponse();
    const events = await this.eventStream(response);
    return await readAnthropicStream(events, request.signal, request.onText, request.idle);
  }

  /** Says that the URL is not the Anthropic Messages API, and what its base URL looks like. */
  protected notApiHint(): string {
    const server = urlWithoutCredentials(this.#options.baseUrl ?? "https://api.anthropic.com");
    return `The URL ${server} does not answer like the Anthropic Messages API: check --base-url (ANTHROPIC_BASE_URL) — the API's root without /v1 (the client adds /v1/messages), e.g. https://api.anthropic.com — and that the server there serves the Messages API.`;
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
 * The body with its prompt-cache breakpoints (at most 3 of the 4 the API allows): the last tool
 * (the tools are the prompt's first part), the system prompt (tools + system: the part every call
 * of a run repeats) and the last block of the last turn (the conversation so far, which the next
 * turn of a tool loop repeats). A prefix shorter than the model's minimum is not cached and costs
 * nothing extra.
 */
export function markCacheBreakpoints(body: AnthropicMessagesBody): void {
  const cache: AnthropicCacheControl = { type: "ephemeral" };
  const lastTool = body.tools?.at(-1);
  if (lastTool) lastTool.cache_control = cache;
  if (typeof body.system === "string") {
    body.system = [{ type: "text", text: body.system, cache_control: cache }];
  }
  const last = body.messages.at(-1);
  if (!last) return;
  if (typeof last.content === "string") {
    // An empty text block is refused by the API; an empty turn is left as it is.
    if (last.content) last.content = [{ type: "text", text: last.content, cache_control: cache }];
    return;
  }
  const block = last.content.at(-1);
  if (block) last.content[last.content.length - 1] = { ...block, cache_control: cache };
}

/**
 * The usage of a reply: `input_tokens` counts only the tokens after the last cache breakpoint, so
 * the input is that plus the cache reads and writes, which are also kept apart. Without both
 * counts the usage is unknown, not zero.
 */
function anthropicUsage(usage: AnthropicMessage["usage"]): LlmUsage | undefined {
  if (typeof usage?.input_tokens !== "number" || typeof usage.output_tokens !== "number") {
    return undefined;
  }
  const read = count(usage.cache_read_input_tokens);
  const written = count(usage.cache_creation_input_tokens);
  return {
    inputTokens: usage.input_tokens + read + written,
    outputTokens: usage.output_tokens,
    ...(read ? { cacheReadTokens: read } : {}),
    ...(written ? { cacheWriteTokens: written } : {}),
  };
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0;
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

/** Arguments text read back as the object it spells, up to this many characters. */
const MAX_ARGUMENTS_TEXT = 1024 * 1024;

/**
 * The API needs an object as a `tool_use` input, even for a call whose arguments were broken. A
 * call another provider made (a model chain fell through mid-loop) has its arguments as the JSON
 * text OpenAI sends: read back as the object it spells.
 */
function toolInput(args: unknown): unknown {
  if (typeof args === "string" && args.length <= MAX_ARGUMENTS_TEXT) {
    try {
      args = JSON.parse(args);
    } catch {
      return {};
    }
  }
  return args !== null && typeof args === "object" && !Array.isArray(args) ? args : {};
}
