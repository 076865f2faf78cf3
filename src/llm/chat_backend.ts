/**
 * What the two chat-API backends (`anthropic`, `openai`) share: conversation history per session,
 * the retry policy and per-call timeout, native structured output with a prompt-and-extract
 * fallback, and usage/cost accounting. Each backend only says how to send one exchange.
 *
 * Long because: it is the one base class of both chat backends — the exchange with its retry,
 * idle watch and error-body reading, the structured-output modes and the usage accounting share
 * its session state; split apart, each part would reach into the others' private fields.
 *
 * @module
 */
import { UsageError } from "../errors.ts";
import { BackendError, type FailureHints, fromRetryExhausted } from "./backend_error.ts";
import { type ChatTurn, type ConversationLimits, ConversationStore } from "./conversation.ts";
import {
  classifyHttpFailure,
  type ErrorBodyKind,
  type FailureClass,
  resolveRetryPolicy,
  RetryExhausted,
  type RetryListener,
  type RetryPolicy,
  type SdkErrorClasses,
  withRetry,
} from "./retry.ts";
import { StreamInterrupted } from "./stream_failure.ts";
import { DEFAULT_IDLE_TIMEOUT_MS, IdleWatch, StreamStalled } from "./stream_idle.ts";
import {
  type ChatHttpClient,
  errorBodies,
  type ExchangeCapture,
  fetchKeepingErrorBodies,
  fetchOnlyKeepingErrorBodies,
} from "./chat_fetch.ts";
import type { ToolSpec, ToolTurnMessage, ToolTurnRequest, ToolTurnResponse } from "./tool_turn.ts";
import type { LlmBackend, LlmCallOptions, LlmRequest, LlmResponse, LlmUsage } from "./types.ts";
import { attemptBound } from "./prompt_bound.ts";
import { costOf, type ModelPricing } from "./pricing.ts";

/**
 * How a chat backend asks for structured output when the request has an `outputSchema`:
 * - `native` — the API's JSON-schema parameter (`output_config.format` / `response_format`);
 * - `prompt` — the schema is written into the prompt (the engine extracts the JSON from the text:
 *   whole text, then a fenced ```json block, then the first balanced object);
 * - `auto` (default) — `native`, switching this backend to `prompt` for good when the server
 *   rejects the schema parameter (HTTP 400/422 naming it), with one warning.
 *
 * In every mode the backend returns the answer's text only (chat APIs have no structured output
 * apart from the text): the engine reads the JSON from it (`readJsonAnswer` in
 * src/engine/ask_structured.ts), so a server that ignores the schema parameter but answers JSON in
 * prose is read the same way.
 */
export type StructuredOutputMode = "auto" | "native" | "prompt";

// The prices and the cost of a call live in the one pricing module; named here for the options.
export type { ModelPricing };

/** Options shared by {@linkcode AnthropicBackend} and {@linkcode OpenAiBackend}. */
export interface ChatBackendOptions {
  /** Default model (a request's `model` wins). */
  model?: string;
  /** API key. */
  apiKey?: string;
  /** Server base URL. */
  baseUrl?: string;
  /** Retry policy (defaults: 3 attempts, 500 ms initial, factor 2, 30 s cap). */
  retry?: Partial<RetryPolicy>;
  /** Per-attempt timeout in ms (default 600 000 = 10 min; 0 disables). */
  timeoutMs?: number;
  /**
   * Idle timeout of streamed answers in ms (default 300 000 = 5 min; 0 disables): an attempt whose
   * server sends no byte for this long — before the answer starts or within it — is ended and
   * retried, beside the whole-attempt `timeoutMs`.
   */
  idleTimeoutMs?: number;
  /** Called before every retry (see {@linkcode RetryInfo}). */
  onRetry?: RetryListener;
  /** Receives warnings (schema fallback, truncated answers). Default: `console.warn`. */
  onWarning?: (message: string) => void;
  /** Structured-output strategy (default `auto`). */
  structuredOutput?: StructuredOutputMode;
  /** Maximum answer tokens. */
  maxTokens?: number;
  /**
   * Prices per model name, to report `costUsd` on the backend's own answers; without an entry for
   * the model, no cost is reported. A run prices every call from its price table whatever this
   * says (src/llm/pricing.ts): this is for calling the backend directly.
   */
  pricing?: Record<string, ModelPricing>;
  /** Bounds of the in-memory conversation history. */
  conversation?: ConversationLimits;
  /**
   * Ask for the answer as a stream of server-sent events (default true): the text reaches
   * `LlmCallOptions.onText` as it is written, and a call that hangs mid-answer is seen. `false`
   * sends plain requests, for servers that cannot stream (`--no-stream`, `STEPFLOW_STREAM=0`).
   */
  stream?: boolean;
  /**
   * Which HTTP client sends the requests (default `stepflow`: its own HTTP/1.1 client for a plain
   * `http:` server, `fetch` for the rest); `fetch` sends everything through Deno's `fetch`
   * (`STEPFLOW_HTTP_CLIENT=fetch`).
   */
  httpClient?: ChatHttpClient;
}

/** One exchange as a chat backend sends it. */
export interface ChatExchangeRequest {
  /** The model. */
  model: string;
  /** System prompt. */
  system?: string;
  /** History plus the new user turn. */
  turns: ChatTurn[];
  /** JSON Schema to request natively, when native structured output is on for this call. */
  schema?: Record<string, unknown>;
  /** Step id (schema names). */
  stepId: string;
  /** Cancels the exchange (caller abort or per-attempt timeout). */
  signal: AbortSignal;
  /** Tools offered in a tool turn (see {@linkcode ChatApiBackend.toolTurn}). */
  tools?: ToolSpec[];
  /** A tool turn's messages after `turns` (the history): the prompt, tool calls and results. */
  toolMessages?: ToolTurnMessage[];
  /** Told each piece of text as a streamed answer arrives (see `LlmCallOptions.onText`). */
  onText?: (text: string) => void;
  /**
   * This attempt's answer-token limit, when the run's budget lowered it below the backend's own
   * (`maxTokens`) or set one where it had none: send it instead.
   */
  maxTokens?: number;
  /** A streamed exchange's idle watch (the idle timeout): touch it as each chunk arrives. */
  idle?: { touch(): void };
}

/** What one exchange returned. */
export interface ChatExchangeResult {
  /** Answer text. */
  text: string;
  /** Token usage. */
  usage?: LlmUsage;
  /** Set when the model refused, with its explanation. */
  refusal?: string;
  /** Set when the answer was cut at the token limit. */
  truncated?: boolean;
  /** The tool calls the model asked for (tool turns only). */
  toolCalls?: ToolTurnResponse["toolCalls"];
  /** The model the server says answered, when it says. */
  responseModel?: string;
  /** Why the answer ended, as the server said it. */
  finishReason?: string;
}

/** Default per-attempt timeout of the chat backends. */
export const DEFAULT_CHAT_TIMEOUT_MS = 600_000;

const SCHEMA_PARAMETER =
  /response_format|json_schema|output_config|output_format|structured|schema/i;

/**
 * The instruction appended to the prompt when structured output is requested through the prompt.
 * The schema is written compactly (no indentation): it is sent with every call of the step.
 */
export function schemaInstruction(schema: Record<string, unknown>): string {
  return [
    "Answer with a single JSON object that matches this JSON Schema, and nothing else",
    "(no prose before or after it):",
    "```json",
    JSON.stringify(schema),
    "```",
  ].join("\n");
}

/** The cost of a call's usage at a model's prices (see `costOf` in src/llm/pricing.ts). */
export { costOf };

/**
 * The base of the chat-API backends. Subclasses implement {@linkcode ChatApiBackend.exchange}
 * (one request to the API) and describe their failures; everything else lives here.
 */
export abstract class ChatApiBackend implements LlmBackend {
  /** The backend name. */
  abstract readonly name: string;
  /** The default model. */
  readonly model?: string;
  /** The retry policy in force. */
  readonly retryPolicy: RetryPolicy;
  /** The per-attempt timeout in ms (0: none). */
  readonly timeoutMs: number;
  /** The idle timeout of streamed answers in ms (0: none). */
  readonly idleTimeoutMs: number;
  /** Conversation history per session id (shared with the other chat backends of a model chain). */
  protected conversations: ConversationStore;
  /** Options as given. */
  protected readonly options: ChatBackendOptions;
  /** The loaded SDK's error classes, set by the subclass when it loads the SDK. */
  protected sdkErrorClasses: SdkErrorClasses = {};
  #schemaMode: StructuredOutputMode;
  #client?: Promise<unknown>;
  /** Error-body messages (and kinds) of failed exchanges, by the error the SDK threw. */
  readonly #bodyMessages = new WeakMap<object, { message: string; kind?: ErrorBodyKind }>();

  /**
   * Checks the options; nothing is loaded or sent yet.
   *
   * @param options see {@linkcode ChatBackendOptions}
   */
  constructor(options: ChatBackendOptions) {
    this.options = options;
    this.model = options.model;
    this.retryPolicy = resolveRetryPolicy(options.retry);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_CHAT_TIMEOUT_MS;
    if (!Number.isFinite(this.timeoutMs) || this.timeoutMs < 0) {
      throw new UsageError(`timeoutMs must be a number ≥ 0, got ${options.timeoutMs}.`);
    }
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    if (!Number.isFinite(this.idleTimeoutMs) || this.idleTimeoutMs < 0) {
      throw new UsageError(`idleTimeoutMs must be a number ≥ 0, got ${options.idleTimeoutMs}.`);
    }
    const mode = options.structuredOutput ?? "auto";
    if (!["auto", "native", "prompt"].includes(mode)) {
      throw new UsageError(
        `structuredOutput must be "auto", "native" or "prompt", got ${JSON.stringify(mode)}.`,
      );
    }
    this.#schemaMode = mode;
    this.conversations = new ConversationStore(options.conversation);
  }

  /**
   * The SDK client, created by `create` on first use and kept; a failed creation (an SDK that
   * cannot be loaded) is tried again on the next call.
   */
  protected sdkClient<T>(create: () => Promise<T>): Promise<T> {
    this.#client ??= create().catch((error) => {
      this.#client = undefined;
      throw error;
    });
    return this.#client as Promise<T>;
  }

  /**
   * The options both official SDK clients take: the key (a placeholder when there is none, as a
   * local server or a gateway needs none but the SDKs refuse to start without one), the base URL,
   * no SDK retries (the stepflow policy applies), and a backstop timeout behind the per-call one.
   */
  protected clientOptions(baseURL: string | undefined): Record<string, unknown> {
    return {
      apiKey: this.options.apiKey ?? "not-needed",
      ...(baseURL ? { baseURL } : {}),
      maxRetries: 0,
      ...(this.timeoutMs > 0 ? { timeout: this.timeoutMs + 1_000 } : {}),
      fetch: this.options.httpClient === "fetch"
        ? fetchOnlyKeepingErrorBodies
        : fetchKeepingErrorBodies,
    };
  }

  /** The store of this backend's conversations (see {@linkcode ChatApiBackend.useConversationStore}). */
  get conversationStore(): ConversationStore {
    return this.conversations;
  }

  /**
   * Keeps conversations in `store` from now on, the store of another chat backend: the backends of
   * a model chain share one, so that a call that falls through to another provider continues the
   * same conversation (each backend writes it in its own API's format).
   */
  useConversationStore(store: ConversationStore): void {
    this.conversations = store;
  }

  /** Whether answers are asked for as streams (the `stream` option; default true). */
  get streams(): boolean {
    return this.options.stream ?? true;
  }

  /** The structured-output mode in force (`auto` turns into `prompt` after a schema rejection). */
  get structuredOutputMode(): StructuredOutputMode {
    return this.#schemaMode;
  }

  /** Sends one exchange to the API. Throw the SDK's errors as they are; they are classified. */
  protected abstract exchange(request: ChatExchangeRequest): Promise<ChatExchangeResult>;

  /** Hints for failure messages (which variable to check, which server is down). */
  protected abstract failureHints(model: string): FailureHints;

  /**
   * What to say when the URL does not answer like this backend's API (a web page, a 501, a path
   * that does not exist): which URL, and what the API's base URL looks like.
   */
  protected abstract notApiHint(): string;

  /**
   * Classifies a failed exchange by the SDK's error classes, the status and the cause (see
   * {@linkcode classifyHttpFailure}), with the message read from the error body.
   */
  protected classify(error: unknown): FailureClass {
    if (error instanceof StreamStalled) {
      return { retryable: true, kind: "timeout", reason: error.message };
    }
    if (error instanceof StreamInterrupted) {
      return {
        retryable: error.retryable,
        kind: "stream",
        reason: error.message,
        ...(error.errorType !== undefined ? { errorType: error.errorType } : {}),
      };
    }
    const body = error !== null && typeof error === "object"
      ? this.#bodyMessages.get(error)
      : undefined;
    return classifyHttpFailure(error, {
      classes: this.sdkErrorClasses,
      ...(body !== undefined ? { bodyMessage: body.message } : {}),
      ...(body?.kind !== undefined ? { bodyKind: body.kind } : {}),
    });
  }

  /**
   * The body of the answer to a streamed request, to read as server-sent events. Throws
   * `BACKEND_BAD_RESPONSE` (not retried), after cancelling the body, when the answer is JSON or a
   * page rather than events — a server that cannot stream.
   */
  protected async eventStream(response: Response): Promise<ReadableStream<Uint8Array>> {
    const type = response.headers.get("content-type") ?? "";
    // Only a body that is plainly not events is refused: some servers send events under another
    // type, or none, and are read as events.
    if (response.body !== null && !/json|html|xml/i.test(type)) return response.body;
    await response.body?.cancel().catch(() => {});
    if (/html/i.test(type)) {
      // A web page is no API that cannot stream: turning streaming off would not help.
      throw new BackendError(
        "BACKEND_BAD_RESPONSE",
        `${this.name} backend: the server answered with a web page (${type}). ${this.notApiHint()}`,
        { backend: this.name },
      );
    }
    throw new BackendError(
      "BACKEND_BAD_RESPONSE",
      response.body === null
        ? `${this.name} backend: a streamed answer was asked for, but the server's answer has no body.`
        : `${this.name} backend: a streamed answer was asked for, but the server answered with ${type} instead of server-sent events. If the server cannot stream, turn streaming off: --no-stream, STEPFLOW_STREAM=0, or stream: false.`,
      { backend: this.name },
    );
  }

  /**
   * One exchange, keeping the message of an error body for {@linkcode ChatApiBackend.classify};
   * a streamed one is ended when its server goes quiet for the idle timeout (`StreamStalled`).
   */
  async #exchangeKeepingErrorBody(request: ChatExchangeRequest): Promise<ChatExchangeResult> {
    const idle = this.streams && this.idleTimeoutMs > 0
      ? new IdleWatch(this.idleTimeoutMs)
      : undefined;
    const capture: ExchangeCapture = idle ? { idle } : {};
    const signal = idle ? AbortSignal.any([request.signal, idle.signal]) : request.signal;
    try {
      return await errorBodies.run(
        capture,
        () => this.exchange({ ...request, signal, ...(idle ? { idle } : {}) }),
      );
    } catch (error) {
      if (idle?.fired && !request.signal.aborted) throw new StreamStalled(idle.idleMs, error);
      if (capture.message !== undefined && error !== null && typeof error === "object") {
        this.#bodyMessages.set(error, { message: capture.message, kind: capture.bodyKind });
      }
      throw error;
    } finally {
      idle?.stop();
    }
  }

  /**
   * What every call starts with: the model (the request's, else the backend's; none is a usage
   * error naming the step), the session it continues (a new one when the request names none) and
   * that session's turns so far.
   */
  #callStart(
    req: { model?: string; stepId: string; sessionId?: string },
    opts: LlmCallOptions,
  ): { model: string; sessionId: string; history: ChatTurn[] } {
    const model = req.model ?? this.model;
    if (!model) {
      throw new UsageError(
        `The ${this.name} backend needs a model name for step "${req.stepId}": pass --model, set behavior.model in agent.json, or set the step's model.`,
        { backend: this.name, stepId: req.stepId },
      );
    }
    opts.signal?.throwIfAborted();
    const sessionId = req.sessionId ?? crypto.randomUUID();
    return { model, sessionId, history: this.conversations.get(sessionId) };
  }

  /**
   * Runs one call: continues the conversation of `req.sessionId` (a new one when absent), asks for
   * `req.outputSchema` natively or through the prompt, retries transient failures, and returns
   * the text, the parsed structured output, the session id, usage and cost.
   */
  async complete(req: LlmRequest, opts: LlmCallOptions = {}): Promise<LlmResponse> {
    const { model, sessionId, history } = this.#callStart(req, opts);
    const schema = req.outputSchema;

    const result = await this.#send(model, req, opts, (native) => ({
      turns: [...history, {
        role: "user",
        content: schema && !native ? `${req.prompt}\n\n${schemaInstruction(schema)}` : req.prompt,
      }],
    }));
    if (result.refusal !== undefined) {
      throw new BackendError(
        "BACKEND_REFUSED",
        `${this.name} backend in step "${req.stepId}": the model refused to answer: ${result.refusal}`,
        { backend: this.name, stepId: req.stepId, attempts: 1 },
      );
    }
    if (result.truncated) {
      this.#warn(
        `${this.name} backend in step "${req.stepId}": the answer was cut at the token limit${
          this.options.maxTokens ? ` (maxTokens ${this.options.maxTokens})` : ""
        }; raise maxTokens if the output is incomplete.`,
      );
    }
    // The history keeps the prompt without the schema instruction: only the current call needs
    // it, and a schema repeated in every kept turn would fill a small model's context.
    this.conversations.append(sessionId, [
      { role: "user", content: req.prompt },
      { role: "assistant", content: result.text },
    ]);

    const response: LlmResponse = { text: result.text, sessionId, model, ...answerFacts(result) };
    if (result.usage) {
      response.usage = result.usage;
      const cost = costOf(result.usage, this.#ownPrice(model));
      if (cost !== undefined) response.costUsd = cost;
    }
    return response;
  }

  /**
   * Sends one exchange with the retry policy and per-attempt timeout, asking for `req.outputSchema`
   * natively unless the mode is `prompt` (`build` writes the schema into the prompt then). In
   * `auto`, a server that rejects the schema parameter switches this backend to `prompt` for good,
   * with one warning, and the exchange is sent again.
   */
  async #send(
    model: string,
    req: {
      stepId: string;
      iteration: number;
      systemPrompt?: string;
      outputSchema?: Record<string, unknown>;
    },
    opts: LlmCallOptions,
    build: (native: boolean) => Pick<ChatExchangeRequest, "turns" | "toolMessages" | "tools">,
  ): Promise<ChatExchangeResult> {
    const schema = req.outputSchema;
    const meter = opts.meter;
    for (;;) {
      const native = schema !== undefined && this.#schemaMode !== "prompt";
      const parts = build(native);
      // The run's budget may stop an attempt (its error goes through as it is) or lower its limit.
      let refused: { error: unknown } | undefined;
      const bound = meter
        ? attemptBound(model, this.options.maxTokens ?? this.defaultMaxTokens, {
          ...(req.systemPrompt ? { system: req.systemPrompt } : {}),
          ...parts,
          ...(native && schema ? { schema } : {}),
        })
        : undefined;
      try {
        return await withRetry(
          async (signal) => {
            let maxTokens: number | undefined;
            if (meter) {
              try {
                maxTokens = meter.beforeAttempt(bound!);
              } catch (error) {
                refused = { error };
                throw error;
              }
            }
            try {
              return await this.#exchangeKeepingErrorBody({
                model,
                ...(req.systemPrompt ? { system: req.systemPrompt } : {}),
                ...parts,
                ...(native ? { schema } : {}),
                ...(opts.onText ? { onText: opts.onText } : {}),
                ...(maxTokens !== undefined ? { maxTokens } : {}),
                stepId: req.stepId,
                signal,
              });
            } catch (error) {
              meter?.attemptFailed(signal.aborted || this.#maybeCharged(error));
              throw error;
            }
          },
          {
            backend: this.name,
            policy: this.retryPolicy,
            classify: (e) => this.classify(e),
            signal: opts.signal,
            timeoutMs: this.timeoutMs,
            onRetry: [this.options.onRetry, opts.onRetry],
            context: { stepId: req.stepId, iteration: req.iteration },
            ...(opts.yieldWaitsFromMs !== undefined
              ? { yieldWaitsFromMs: opts.yieldWaitsFromMs }
              : {}),
          },
        );
      } catch (error) {
        if (refused) throw refused.error;
        if (!(error instanceof RetryExhausted)) throw error;
        if (native && this.#schemaMode === "auto" && isSchemaRejection(error.failure)) {
          this.#schemaMode = "prompt";
          this.#warn(
            `${this.name} backend: the server rejected the JSON-schema parameter (${error.failure.reason}); asking for JSON through the prompt from now on (structuredOutput: "prompt").`,
          );
          continue;
        }
        throw fromRetryExhausted(
          this.name,
          error,
          { stepId: req.stepId, timeoutMs: this.timeoutMs },
          { ...this.failureHints(model), notApi: this.notApiHint() },
        );
      }
    }
  }

  /**
   * The most output tokens an attempt asks for when nothing lowers it: the `maxTokens` option, else
   * the backend's own default (undefined: the request asks for no limit).
   */
  protected get defaultMaxTokens(): number | undefined {
    return undefined;
  }

  /**
   * Whether a failed attempt may have been charged: a stream cut off after it began, or anything
   * but an HTTP error status and a connection that never opened (the server may have worked on it).
   */
  #maybeCharged(error: unknown): boolean {
    const failure = this.classify(error);
    return failure.kind !== "http" && failure.kind !== "network";
  }

  /**
   * One turn of the tool loop (`src/engine/tool_loop.ts`): the run's conversation, then the step's
   * messages, with the tools on offer; retried and timed out like {@linkcode ChatApiBackend.complete}.
   * A turn that asks for no tool ends the step's tool conversation: its prompt and final text join
   * the session's history.
   */
  async toolTurn(req: ToolTurnRequest, opts: LlmCallOptions = {}): Promise<ToolTurnResponse> {
    const { model, sessionId, history } = this.#callStart(req, opts);
    const schema = req.outputSchema;
    const result = await this.#send(model, req, opts, (native) => ({
      turns: history,
      toolMessages: schema && !native ? withSchemaInstruction(req.messages, schema) : req.messages,
      tools: req.tools,
    }));
    if (result.refusal !== undefined) {
      throw new BackendError(
        "BACKEND_REFUSED",
        `${this.name} backend in step "${req.stepId}": the model refused to answer: ${result.refusal}`,
        { backend: this.name, stepId: req.stepId, attempts: 1 },
      );
    }
    const toolCalls = result.toolCalls ?? [];
    const first = req.messages[0];
    if (toolCalls.length === 0 && first?.role === "user") {
      this.conversations.append(sessionId, [
        { role: "user", content: first.content },
        { role: "assistant", content: result.text },
      ]);
    }
    const response: ToolTurnResponse = { text: result.text, toolCalls, sessionId, model };
    Object.assign(response, answerFacts(result));
    if (result.usage) {
      response.usage = result.usage;
      const cost = costOf(result.usage, this.#ownPrice(model));
      if (cost !== undefined) response.costUsd = cost;
    }
    return response;
  }

  /** The `pricing` option's price of `model` (own keys only: a model named `constructor` has none). */
  #ownPrice(model: string): ModelPricing | undefined {
    const prices = this.options.pricing;
    return prices && Object.hasOwn(prices, model) ? prices[model] : undefined;
  }

  #warn(message: string): void {
    (this.options.onWarning ?? console.warn)(message);
  }
}

/** The answering model and finish reason of an exchange, when the server said them. */
function answerFacts(
  result: ChatExchangeResult,
): Pick<LlmResponse, "responseModel" | "finishReason"> {
  return {
    ...(result.responseModel ? { responseModel: result.responseModel } : {}),
    ...(result.finishReason ? { finishReason: result.finishReason } : {}),
  };
}

/** The step's messages with the schema instruction added to its prompt (the first message). */
function withSchemaInstruction(
  messages: ToolTurnMessage[],
  schema: Record<string, unknown>,
): ToolTurnMessage[] {
  const [first, ...rest] = messages;
  if (first?.role !== "user") return messages;
  return [{ role: "user", content: `${first.content}\n\n${schemaInstruction(schema)}` }, ...rest];
}

function isSchemaRejection(failure: FailureClass): boolean {
  return (failure.status === 400 || failure.status === 422) &&
    SCHEMA_PARAMETER.test(failure.reason);
}

/** The `BACKEND_BAD_RESPONSE` error for an answer that is not in the API's format. */
export function badResponse(backend: string, what: string, body: unknown): BackendError {
  const shown = typeof body === "string" ? body : JSON.stringify(body);
  return new BackendError(
    "BACKEND_BAD_RESPONSE",
    `${backend} backend: the server's answer is not in the API's format (${what}); got ${
      (shown ?? "nothing").slice(0, 200)
    }. Check that the base URL points at the right API.`,
    { backend },
  );
}
