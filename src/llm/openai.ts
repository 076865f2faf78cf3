/**
 * The `openai` backend: chat completions through the official `openai` client, against OpenAI or
 * any OpenAI-compatible server (Ollama, vLLM, LM Studio, llama.cpp, LiteLLM, OpenRouter…), with
 * `response_format: { type: "json_schema" }` structured output.
 *
 * @module
 */
import { urlWithoutCredentials } from "./backend_choice.ts";
import type { FailureHints } from "./backend_error.ts";
import type { SdkErrorClasses } from "./retry.ts";
import {
  badResponse,
  ChatApiBackend,
  type ChatBackendOptions,
  type ChatExchangeRequest,
  type ChatExchangeResult,
} from "./chat_backend.ts";
import { type ChatCompletion, readOpenAiStream } from "./openai_stream.ts";
import { loadSdk } from "./sdk_loader.ts";
import { generatedCallId, type ToolCallRequest, type ToolTurnMessage } from "./tool_turn.ts";

/** The official OpenAI endpoint. */
export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

/** Options of {@linkcode OpenAiBackend}. */
export interface OpenAiBackendOptions extends ChatBackendOptions {
  /** API key (`OPENAI_API_KEY`); local servers need none. */
  apiKey?: string;
  /** Server base URL including `/v1` (default `https://api.openai.com/v1`; Ollama: `http://127.0.0.1:11434/v1`). */
  baseUrl?: string;
  /** Answer-token limit (sent as `max_completion_tokens` to OpenAI, `max_tokens` to other servers). */
  maxTokens?: number;
  /** Send `strict: true` with the JSON schema (OpenAI's strict mode needs every property required and `additionalProperties: false`). Default false. */
  strictSchema?: boolean;
}

// The subset of the SDK this backend uses (see anthropic.ts for why it is declared here).
/** The body of `POST /chat/completions` as this backend sends it. */
export interface OpenAiChatBody {
  model: string;
  messages: OpenAiMessage[];
  tools?: {
    type: "function";
    function: { name: string; description?: string; parameters?: Record<string, unknown> };
  }[];
  response_format?: {
    type: "json_schema";
    json_schema: { name: string; schema: Record<string, unknown>; strict: boolean };
  };
  max_tokens?: number;
  max_completion_tokens?: number;
  /** Answer as server-sent chunks (the backend's `stream` option, default true). */
  stream?: boolean;
  /** With `stream`: the usage in a last chunk. */
  stream_options?: { include_usage: boolean };
}

/** One chat message: plain turns, an assistant turn with tool calls, or a tool's result. */
export type OpenAiMessage =
  | { role: "system" | "user"; content: string }
  | {
    role: "assistant";
    content: string | null;
    tool_calls?: {
      id: string;
      type: "function";
      function: { name: string; arguments: string };
    }[];
  }
  | { role: "tool"; tool_call_id: string; content: string };

/**
 * The part of the OpenAI client this backend calls: its request method, with the body as JSON text
 * (see {@linkcode OpenAiBackend}'s exchange for why not `chat.completions.create`).
 */
export interface OpenAiChatClient {
  post(
    path: string,
    options: {
      body: string;
      headers: Record<string, string>;
      signal?: AbortSignal;
      maxRetries?: number;
    },
  ): PromiseLike<unknown> & { asResponse(): PromiseLike<Response> };
}

type OpenAiModule = SdkErrorClasses & {
  default: new (options: Record<string, unknown>) => OpenAiChatClient;
};

/**
 * Calls a chat-completions endpoint (`POST {baseUrl}/chat/completions`).
 *
 * - `outputSchema` is sent as `response_format: { type: "json_schema", json_schema: { name,
 *   schema, strict } }`; a server that rejects it switches the backend to asking through the
 *   prompt, and JSON in prose or in a fenced block is still extracted;
 * - the system prompt is the first `system` message; the conversation of each `sessionId` is kept
 *   in memory and sent again on the next call of the run;
 * - the SDK's own retries are off: the stepflow retry policy applies, each retry reported to
 *   `onRetry`;
 * - prompt caching: the tools and the system prompt come first in every request and are the same
 *   bytes in every call of a run, so a server that caches prompt prefixes (OpenAI does it on its
 *   own) reuses them; the cached share of the prompt (`prompt_tokens_details.cached_tokens`) is
 *   reported as `cacheReadTokens`;
 * - `usage` is `prompt_tokens` / `completion_tokens`; `costUsd` is reported when `pricing` has
 *   the model (cache reads at their own price when given).
 *
 * A step with `allowedTools` runs through the one tool loop (`src/engine/tool_loop.ts`): this
 * backend sends `tools` and role `tool` messages and reads `tool_calls` (parallel calls,
 * `arguments` as text or object, ids made up when missing); `permissionMode` is applied by the loop.
 *
 * @example Ollama on this machine (no key needed)
 * ```ts ignore
 * import { readJsonAnswer } from "@stepflow/core";
 * import { OpenAiBackend } from "@stepflow/core/llm";
 * const backend = new OpenAiBackend({ baseUrl: "http://127.0.0.1:11434/v1", model: "llama3.2" });
 * const res = await backend.complete({
 *   kind: "step", agent: "demo", stepId: "s1", iteration: 1, cwd: ".", prompt: "Say hi as JSON {\"greeting\": …}",
 *   outputSchema: { type: "object", properties: { greeting: { type: "string" } } },
 * });
 * console.log(res.text, readJsonAnswer(res)); // the backend returns text; the engine reads the JSON
 * ```
 */
export class OpenAiBackend extends ChatApiBackend {
  /** Always `"openai"`. */
  readonly name = "openai";
  readonly #options: OpenAiBackendOptions;

  /**
   * Creates the backend; the SDK is loaded on the first call.
   *
   * @param options see {@linkcode OpenAiBackendOptions}
   */
  constructor(options: OpenAiBackendOptions = {}) {
    super(options);
    this.#options = options;
  }

  /** True when the base URL is not OpenAI's own endpoint. */
  get isCompatibleServer(): boolean {
    const base = this.#options.baseUrl;
    return base !== undefined && !/^https:\/\/api\.openai\.com(\/|$)/.test(base);
  }

  #getClient(): Promise<OpenAiChatClient> {
    return this.sdkClient(async () => {
      const sdk = await loadSdk<OpenAiModule>("openai", this.name);
      this.sdkErrorClasses = {
        APIConnectionError: sdk.APIConnectionError,
        APIConnectionTimeoutError: sdk.APIConnectionTimeoutError,
      };
      return new sdk.default(this.clientOptions(this.#options.baseUrl ?? OPENAI_DEFAULT_BASE_URL));
    });
  }

  /** Sends one `POST /chat/completions`. */
  protected async exchange(request: ChatExchangeRequest): Promise<ChatExchangeResult> {
    const client = await this.#getClient();
    const messages: OpenAiChatBody["messages"] = [];
    if (request.system) messages.push({ role: "system", content: request.system });
    for (const turn of request.turns) messages.push({ role: turn.role, content: turn.content });
    if (request.toolMessages) messages.push(...toOpenAiMessages(request.toolMessages));
    // The tools and the system prompt come first and are the same bytes in every call of a run,
    // so a server's prompt cache (OpenAI's is automatic, keyed on the prefix) serves them again.
    const body: OpenAiChatBody = request.tools?.length
      ? {
        model: request.model,
        tools: request.tools.map((t) => ({
          type: "function",
          function: { name: t.name, description: t.description, parameters: t.inputSchema },
        })),
        messages,
      }
      : { model: request.model, messages };
    if (request.schema) {
      body.response_format = {
        type: "json_schema",
        json_schema: {
          name: schemaName(request.stepId),
          schema: request.schema,
          strict: this.#options.strictSchema ?? false,
        },
      };
    }
    const maxTokens = request.maxTokens ?? this.#options.maxTokens;
    if (maxTokens !== undefined) {
      if (this.isCompatibleServer) body.max_tokens = maxTokens;
      else body.max_completion_tokens = maxTokens;
    }
    const completion = this.streams
      ? await this.#streamed(client, body, request)
      : await postChat(client, body, request.signal) as ChatCompletion;
    const choice = completion && typeof completion === "object" && Array.isArray(completion.choices)
      ? completion.choices[0]
      : undefined;
    if (!choice?.message) throw badResponse(this.name, "no choices[0].message", completion);
    const result: ChatExchangeResult = { text: choice.message.content ?? "" };
    if (request.tools) result.toolCalls = readToolCalls(choice.message.tool_calls);
    const usage = completion.usage;
    // Without both counts the usage is unknown, not zero (many local servers send none).
    if (
      usage && typeof usage.prompt_tokens === "number" &&
      typeof usage.completion_tokens === "number"
    ) {
      result.usage = { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens };
      const cached = usage.prompt_tokens_details?.cached_tokens;
      if (typeof cached === "number" && Number.isFinite(cached) && cached > 0) {
        result.usage.cacheReadTokens = Math.min(cached, usage.prompt_tokens);
      }
    }
    if (choice.message.refusal) result.refusal = choice.message.refusal;
    if (choice.finish_reason === "length") result.truncated = true;
    if (typeof choice.finish_reason === "string") result.finishReason = choice.finish_reason;
    if (typeof completion.model === "string" && completion.model) {
      result.responseModel = completion.model;
    }
    return result;
  }

  /**
   * Sends `body` with `stream: true` (usage asked for in the last chunk) and reads the chunks into
   * the completion, text reported to `onText` as it arrives; a stream that breaks off is a
   * `StreamInterrupted` (src/llm/stream_failure.ts).
   */
  async #streamed(
    client: OpenAiChatClient,
    body: OpenAiChatBody,
    request: ChatExchangeRequest,
  ): Promise<ChatCompletion> {
    // The raw body, read by our own event reader (src/llm/sse_events.ts): the client's stream
    // layers cost more than the answer's parsing. The client still sends the request and turns
    // an error status into its error.
    const response = await postChat(
      client,
      { ...body, stream: true, stream_options: { include_usage: true } },
      request.signal,
    ).asResponse();
    const events = await this.eventStream(response);
    return await readOpenAiStream(events, request.signal, request.onText, request.idle);
  }

  /** Says that the URL is no OpenAI-compatible API, and what its base URL looks like. */
  protected notApiHint(): string {
    const server = urlWithoutCredentials(this.#options.baseUrl ?? OPENAI_DEFAULT_BASE_URL);
    return `The URL ${server} does not answer like an OpenAI-compatible API: check --base-url (OPENAI_BASE_URL) — the API's root, which usually ends in /v1 (Ollama http://127.0.0.1:11434/v1, vLLM http://127.0.0.1:8000/v1, LM Studio http://127.0.0.1:1234/v1) — and that the server there serves the OpenAI chat completions API.`;
  }

  /** Says which variable or server option to check. */
  protected failureHints(model: string): FailureHints {
    // Messages reach logs and terminals: a key in the URL's user or password must not.
    const server = urlWithoutCredentials(this.#options.baseUrl ?? OPENAI_DEFAULT_BASE_URL);
    return {
      auth: this.isCompatibleServer
        ? `The server ${server} refused the key; set OPENAI_API_KEY to the key it expects.`
        : "Check OPENAI_API_KEY (the key was refused by api.openai.com).",
      notFound: this.isCompatibleServer
        ? `The server ${server} does not know model "${model}" (or the base URL is wrong; it usually ends in /v1). For Ollama, run \`ollama pull ${model}\`.`
        : `Check the model name "${model}" (--model or behavior.model).`,
      network: this.isCompatibleServer
        ? `Could not connect to ${server}: is the server at ${server} running? (For Ollama: \`ollama serve\`.) Check --base-url (OPENAI_BASE_URL).`
        : `Could not connect to ${server}: is the server at ${server} running? Check the network and --base-url (OPENAI_BASE_URL).`,
    };
  }
}

/**
 * `POST /chat/completions` through the client (its headers, auth and error classes), the body
 * written as JSON text here: `chat.completions.create` serializes it with a replacer function
 * called for every value (to learn its `stream` key), several times the cost of `JSON.stringify`
 * — a millisecond or more per turn once a tool loop's conversation is long.
 */
function postChat(
  client: OpenAiChatClient,
  body: OpenAiChatBody,
  signal: AbortSignal,
): PromiseLike<unknown> & { asResponse(): PromiseLike<Response> } {
  return client.post("/chat/completions", {
    body: JSON.stringify(body),
    headers: { "content-type": "application/json" },
    signal,
    maxRetries: 0,
  });
}

/** A `json_schema.name` the API accepts (`^[a-zA-Z0-9_-]{1,64}$`), derived from the step id. */
function schemaName(stepId: string): string {
  const name = stepId.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
  return name === "" ? "output" : name;
}

/** A step's tool conversation as chat messages: `tool_calls` on assistant turns, role `tool` results. */
function toOpenAiMessages(messages: ToolTurnMessage[]): OpenAiMessage[] {
  const out: OpenAiMessage[] = [];
  for (const m of messages) {
    if (m.role === "user") out.push({ role: "user", content: m.content });
    else if (m.role === "assistant") {
      out.push({
        role: "assistant",
        content: m.text || null,
        tool_calls: m.toolCalls.map((call) => ({
          id: call.id,
          type: "function",
          function: {
            name: call.name,
            arguments: typeof call.arguments === "string"
              ? call.arguments
              : JSON.stringify(call.arguments ?? {}),
          },
        })),
      });
    } else {
      for (const r of m.results) out.push({ role: "tool", tool_call_id: r.id, content: r.content });
    }
  }
  return out;
}

/**
 * The tool calls of an answer, read defensively: servers send `arguments` as a string (OpenAI) or
 * an object (some compatible servers), and some send no `id` — one is made up so the result can
 * name its call.
 */
function readToolCalls(raw: unknown): ToolCallRequest[] {
  if (!Array.isArray(raw)) return [];
  return raw.slice(0, 128).map((call) => {
    const c = (call ?? {}) as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
    return {
      id: typeof c.id === "string" && c.id ? c.id : generatedCallId(),
      name: typeof c.function?.name === "string" ? c.function.name : "",
      arguments: c.function?.arguments ?? {},
    };
  });
}
