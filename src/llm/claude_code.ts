/**
 * The `claude-code` backend: each call is one `query()` of the Claude Agent SDK
 * (`@anthropic-ai/claude-agent-sdk`), i.e. one turn of a Claude Code session that may read and
 * edit files and run tools in the run's working directory.
 *
 * @module
 */
import { errorMessage, UsageError } from "../errors.ts";
import { BackendError, fromRetryExhausted } from "./backend_error.ts";
import { DEFAULT_CHAT_TIMEOUT_MS } from "./chat_backend.ts";
import {
  type FailureClass,
  isRetryableStatus,
  resolveRetryPolicy,
  RetryExhausted,
  type RetryListener,
  type RetryPolicy,
  withRetry,
} from "./retry.ts";
import { loadSdk } from "./sdk_loader.ts";
import { ClaudeStreamReader } from "./claude_code_stream.ts";
import { type McpServerConfig, parseMcpServersOrThrow } from "../definition/mcp_servers.ts";
import type { LlmBackend, LlmCallOptions, LlmRequest, LlmResponse, LlmUsage } from "./types.ts";

/** A permission mode Claude Code accepts. */
export type ClaudePermissionMode =
  | "default"
  | "acceptEdits"
  | "bypassPermissions"
  | "plan"
  | "dontAsk"
  | "auto";

/** The permission modes Claude Code accepts. */
export const CLAUDE_PERMISSION_MODES: readonly ClaudePermissionMode[] = Object.freeze([
  "default",
  "acceptEdits",
  "bypassPermissions",
  "plan",
  "dontAsk",
  "auto",
]);

/** Default per-call timeout of the `claude-code` backend: 30 minutes (agentic turns are long). */
export const DEFAULT_CLAUDE_CODE_TIMEOUT_MS = 3 * DEFAULT_CHAT_TIMEOUT_MS;

/** Options of {@linkcode ClaudeCodeBackend}. */
export interface ClaudeCodeBackendOptions {
  /** Default model (`sonnet`, `opus`, a full model id…); a request's `model` wins. Default: Claude Code's. */
  model?: string;
  /** Tools allowed without asking, when the request names none (the agent's `allowedTools` win). */
  allowedTools?: string[];
  /** Permission mode when the request names none (see {@linkcode CLAUDE_PERMISSION_MODES}). */
  permissionMode?: string;
  /** The Claude Code executable. Default: the native binary bundled with the SDK. */
  pathToClaudeCodeExecutable?: string;
  /** Environment of the Claude Code process; replaces the inherited one (include PATH, HOME). */
  env?: Record<string, string | undefined>;
  /** Maximum agentic turns per call. */
  maxTurns?: number;
  /** Which Claude Code settings files to load (default: all, like the CLI). */
  settingSources?: ("user" | "project" | "local")[];
  /** Retry policy for API failures Claude Code reports (429/5xx after its own retries). */
  retry?: Partial<RetryPolicy>;
  /** Per-call timeout in ms (default 30 min; 0 disables). A timed-out call is not retried. */
  timeoutMs?: number;
  /**
   * Called before every retry: stepflow's own, and each API retry Claude Code reports
   * (`system/api_retry` messages; their `reason` starts with "Claude Code").
   */
  onRetry?: RetryListener;
  /** Receives every SDK message as it streams (progress display, logging). */
  onMessage?: (message: Record<string, unknown>) => void;
  /** Further `query()` options passed through as they are (those set here win over derived ones). */
  extraOptions?: Record<string, unknown>;
}

/** The SDK messages this backend reads (declared here to keep the SDK out of the module graph). */
interface SdkMessage {
  type: string;
  subtype?: string;
  session_id?: string;
  error?: string;
  // system/api_retry
  attempt?: number;
  max_retries?: number;
  retry_delay_ms?: number;
  error_status?: number | null;
  // result
  is_error?: boolean;
  result?: string;
  errors?: string[];
  api_error_status?: number | null;
  structured_output?: unknown;
  total_cost_usd?: number;
  usage?: Record<string, number | null | undefined>;
  modelUsage?: Record<string, Record<string, number | undefined>>;
}

/**
 * The `query()` options this backend sets (declared here to keep the SDK out of the module graph;
 * tests/llm/sdk_types_test.ts checks that they fit the SDK's `Options`).
 */
export interface ClaudeQueryOptions {
  /** Cancels the query. */
  abortController: AbortController;
  /** Working directory. */
  cwd: string;
  /** The Claude Code preset, with the agent's system prompt appended. */
  systemPrompt: { type: "preset"; preset: "claude_code"; append?: string };
  /** Receives Claude Code's stderr. */
  stderr: (data: string) => void;
  /** Model. */
  model?: string;
  /** Tools allowed without asking. */
  allowedTools?: string[];
  /** Permission mode. */
  permissionMode?: ClaudePermissionMode;
  /** Required with `bypassPermissions`. */
  allowDangerouslySkipPermissions?: boolean;
  /** Structured output. */
  outputFormat?: { type: "json_schema"; schema: Record<string, unknown> };
  /** Session to resume. */
  resume?: string;
  /** Claude Code executable. */
  pathToClaudeCodeExecutable?: string;
  /** Process environment. */
  env?: Record<string, string | undefined>;
  /** Turn limit. */
  maxTurns?: number;
  /** Settings files to load. */
  settingSources?: ("user" | "project" | "local")[];
  /** MCP servers (agent.json `behavior.mcpServers`, `${VAR}` expanded). */
  mcpServers?: Record<string, McpServerConfig>;
  /** Stream the model's text as deltas (`stream_event` messages), set when someone listens. */
  includePartialMessages?: boolean;
}

/** The part of the Claude Agent SDK this backend calls (checked against the SDK in tests). */
export interface ClaudeAgentSdkModule {
  /** Starts one query. */
  query(params: { prompt: string; options?: ClaudeQueryOptions }): AsyncIterable<unknown> & {
    close?(): void;
  };
}

const RETRYABLE_ASSISTANT_ERRORS = new Set(["rate_limit", "overloaded", "server_error"]);

/** Raised inside an attempt; classified for the retry policy, then turned into a BackendError. */
class ClaudeCodeFailure extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = "ClaudeCodeFailure";
  }
}

interface Cumulative {
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/**
 * Runs each call as one Claude Code turn through the Claude Agent SDK's `query()`:
 *
 * - the agent's system prompt is appended to the Claude Code preset
 *   (`systemPrompt: { type: "preset", preset: "claude_code", append }`);
 * - `allowedTools`, `permissionMode` (`bypassPermissions` also sets
 *   `allowDangerouslySkipPermissions`), `cwd` and `model` come from the request;
 * - `outputSchema` is sent as `outputFormat: { type: "json_schema", schema }` and the result's
 *   `structured_output` is returned as `structuredOutput` (without one, the engine reads the JSON
 *   in the result text);
 * - `req.sessionId` resumes that session (`resume`), and the response's `sessionId` is the
 *   session of this turn, so the iterations of a run continue one conversation;
 * - the call's `signal` aborts the query (and ends the Claude Code process);
 * - `usage` and `costUsd` come from the result message (`modelUsage`, `total_cost_usd`); as those
 *   totals are cumulative over a resumed session, the backend reports each call's increase;
 * - the tools Claude Code uses are reported to the call's `onToolCallEvent` (`tool_use` →
 *   `requested`, Claude Code's decision → `decided` by `"claude-code"`, `tool_result` →
 *   `finished`), and with an `onText` the model's text streams to it (`includePartialMessages`).
 *
 * Claude Code uses its own login (`claude` then `/login`) or `ANTHROPIC_API_KEY`.
 *
 * @example
 * ```ts ignore
 * import { ClaudeCodeBackend } from "@stepflow/core/llm";
 * const backend = new ClaudeCodeBackend({ model: "sonnet" });
 * const res = await backend.complete({
 *   kind: "step", agent: "demo", stepId: "s1", iteration: 1, cwd: Deno.cwd(),
 *   prompt: "List the TypeScript files here.", allowedTools: ["Glob", "Read"], permissionMode: "default",
 * });
 * console.log(res.text, res.sessionId, res.costUsd);
 * ```
 */
export class ClaudeCodeBackend implements LlmBackend {
  /** Always `"claude-code"`. */
  readonly name = "claude-code";
  /** Claude Code's tool calls are reported to `onToolCallEvent`. */
  readonly reportsToolCalls = true;
  /** Claude Code prices its own calls (`total_cost_usd`): a dollar budget needs no price table. */
  readonly reportsCost = true;
  /** The retry policy in force. */
  readonly retryPolicy: RetryPolicy;
  /** The per-call timeout in ms (0: none). */
  readonly timeoutMs: number;
  readonly #options: ClaudeCodeBackendOptions;
  // Totals last seen per session, to turn cumulative figures into per-call ones.
  readonly #totals = new Map<string, Cumulative>();

  /**
   * Creates the backend; the SDK is loaded on the first call.
   *
   * @param options see {@linkcode ClaudeCodeBackendOptions}
   */
  constructor(options: ClaudeCodeBackendOptions = {}) {
    this.#options = options;
    this.retryPolicy = resolveRetryPolicy(options.retry);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_CLAUDE_CODE_TIMEOUT_MS;
    if (!Number.isFinite(this.timeoutMs) || this.timeoutMs < 0) {
      throw new UsageError(`timeoutMs must be a number ≥ 0, got ${options.timeoutMs}.`);
    }
    if (options.permissionMode !== undefined) checkPermissionMode(options.permissionMode);
  }

  /** Runs one Claude Code turn. */
  async complete(req: LlmRequest, opts: LlmCallOptions = {}): Promise<LlmResponse> {
    const permissionMode = req.permissionMode ?? this.#options.permissionMode;
    if (permissionMode !== undefined) checkPermissionMode(permissionMode, req.stepId);
    const mcpServers = this.#mcpServers(req);
    opts.signal?.throwIfAborted();
    const sdk = await loadSdk<ClaudeAgentSdkModule>("@anthropic-ai/claude-agent-sdk", this.name);
    const listeners = [this.#options.onRetry, opts.onRetry];
    try {
      return await withRetry(
        (signal) => this.#turn(sdk, req, { permissionMode, mcpServers }, signal, listeners, opts),
        {
          backend: this.name,
          policy: this.retryPolicy,
          classify,
          signal: opts.signal,
          timeoutMs: this.timeoutMs,
          retryTimeouts: false,
          onRetry: listeners,
          context: { stepId: req.stepId, iteration: req.iteration },
          ...(opts.yieldWaitsFromMs !== undefined
            ? { yieldWaitsFromMs: opts.yieldWaitsFromMs }
            : {}),
        },
      );
    } catch (error) {
      if (!(error instanceof RetryExhausted)) throw error;
      throw fromRetryExhausted(
        this.name,
        error,
        { stepId: req.stepId, timeoutMs: this.timeoutMs },
        {
          auth:
            "Claude Code is not logged in or its key was refused: run `claude` and then /login, or set ANTHROPIC_API_KEY.",
          notFound: `Check the model name${
            req.model ? ` "${req.model}"` : ""
          } (--model or behavior.model).`,
        },
      );
    }
  }

  /**
   * The request's MCP servers for the SDK's `mcpServers`, `${VAR}` expanded from the environment
   * Claude Code gets (`MCP_CONFIG_INVALID` before anything starts when one is wrong).
   */
  #mcpServers(req: LlmRequest): Record<string, McpServerConfig> | undefined {
    if (!req.mcpServers || Object.keys(req.mcpServers).length === 0) return undefined;
    const env = this.#options.env ?? Deno.env.toObject();
    const servers = parseMcpServersOrThrow(req.mcpServers, env, "behavior.mcpServers");
    return Object.fromEntries(servers);
  }

  async #turn(
    sdk: ClaudeAgentSdkModule,
    req: LlmRequest,
    call: { permissionMode?: string; mcpServers?: Record<string, McpServerConfig> },
    signal: AbortSignal,
    listeners: (RetryListener | undefined)[],
    opts: LlmCallOptions,
  ): Promise<LlmResponse> {
    const abortController = new AbortController();
    const onAbort = () => abortController.abort(signal.reason);
    if (signal.aborted) onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    const stderr: string[] = [];
    const options = this.#queryOptions(req, call, abortController, (data) => {
      stderr.push(data);
      if (stderr.length > 40) stderr.shift();
    });
    // Tool calls and text are read from the stream only when someone listens.
    const reader = opts.onToolCallEvent || opts.onText
      ? new ClaudeStreamReader({
        ...(opts.onToolCallEvent ? { onToolCallEvent: opts.onToolCallEvent } : {}),
        ...(opts.onText ? { onText: opts.onText } : {}),
      })
      : undefined;
    if (opts.onText && !("includePartialMessages" in options)) {
      options.includePartialMessages = true;
    }
    const query = sdk.query({ prompt: req.prompt, options });
    let result: SdkMessage | undefined;
    let initSessionId: string | undefined;
    let assistantError: string | undefined;
    let finished = false;
    try {
      for await (const raw of query) {
        const message = raw as SdkMessage;
        this.#notify(message);
        await reader?.read(raw as Record<string, unknown>);
        if (message.type === "system" && message.subtype === "init") {
          initSessionId = message.session_id;
        } else if (message.type === "system" && message.subtype === "api_retry") {
          reportApiRetry(message, req, listeners);
        } else if (message.type === "assistant" && message.error) {
          assistantError = message.error;
        } else if (message.type === "result") {
          result = message;
          await reader?.end();
        }
      }
      finished = true;
    } catch (error) {
      if (signal.aborted) throw signal.reason ?? error;
      // The SDK also throws when Claude Code exits non-zero after an error result; the result
      // message says more than the exit code.
      if (!result) throw spawnFailure(error, stderr);
    } finally {
      signal.removeEventListener("abort", onAbort);
      if (!finished) query.close?.();
    }
    if (!result) {
      throw new ClaudeCodeFailure(
        `Claude Code ended without a result message${stderrTail(stderr)}`,
        undefined,
        false,
      );
    }
    if (result.subtype !== "success" || result.is_error) {
      throw resultFailure(result, assistantError);
    }
    return this.#response(req, result, initSessionId);
  }

  #queryOptions(
    req: LlmRequest,
    call: { permissionMode?: string; mcpServers?: Record<string, McpServerConfig> },
    abortController: AbortController,
    onStderr: (data: string) => void,
  ): ClaudeQueryOptions {
    const o = this.#options;
    const permissionMode = call.permissionMode;
    const model = req.model ?? o.model;
    const allowedTools = req.allowedTools ?? o.allowedTools;
    const options: ClaudeQueryOptions = {
      abortController,
      cwd: req.cwd,
      systemPrompt: {
        type: "preset",
        preset: "claude_code",
        ...(req.systemPrompt ? { append: req.systemPrompt } : {}),
      },
      stderr: onStderr,
    };
    if (model) options.model = model;
    if (allowedTools && allowedTools.length > 0) options.allowedTools = [...allowedTools];
    if (permissionMode) options.permissionMode = permissionMode as ClaudePermissionMode;
    if (permissionMode === "bypassPermissions") options.allowDangerouslySkipPermissions = true;
    if (req.outputSchema) options.outputFormat = { type: "json_schema", schema: req.outputSchema };
    if (req.sessionId) options.resume = req.sessionId;
    if (o.pathToClaudeCodeExecutable) {
      options.pathToClaudeCodeExecutable = o.pathToClaudeCodeExecutable;
    }
    if (o.env) options.env = { ...o.env };
    if (o.maxTurns !== undefined) options.maxTurns = o.maxTurns;
    if (o.settingSources) options.settingSources = [...o.settingSources];
    if (call.mcpServers) options.mcpServers = call.mcpServers;
    return { ...options, ...o.extraOptions };
  }

  #notify(message: SdkMessage): void {
    try {
      this.#options.onMessage?.(message as unknown as Record<string, unknown>);
    } catch {
      // A progress listener must never break the call.
    }
  }

  #response(req: LlmRequest, result: SdkMessage, initSessionId?: string): LlmResponse {
    const text = result.result ?? "";
    const sessionId = result.session_id ?? initSessionId;
    const response: LlmResponse = { text };
    if (sessionId) response.sessionId = sessionId;
    if (result.structured_output !== undefined) {
      response.structuredOutput = result.structured_output;
    }
    const fromModelUsage = sumModelUsage(result.modelUsage);
    const cumulative: Cumulative = {
      costUsd: typeof result.total_cost_usd === "number" ? result.total_cost_usd : 0,
      inputTokens: fromModelUsage?.inputTokens ?? 0,
      outputTokens: fromModelUsage?.outputTokens ?? 0,
      cacheReadTokens: fromModelUsage?.cacheReadTokens ?? 0,
      cacheWriteTokens: fromModelUsage?.cacheWriteTokens ?? 0,
    };
    // Totals of a resumed session include its earlier turns; report what this call added.
    const previous = req.sessionId ? this.#totals.get(req.sessionId) : undefined;
    const delta = (now: number, before: number | undefined) =>
      before !== undefined && now >= before ? now - before : now;
    if (sessionId) {
      this.#totals.delete(sessionId);
      this.#totals.set(sessionId, cumulative);
      if (this.#totals.size > 256) this.#totals.delete(this.#totals.keys().next().value as string);
    }
    if (typeof result.total_cost_usd === "number") {
      response.costUsd = delta(cumulative.costUsd, previous?.costUsd);
    }
    if (fromModelUsage) {
      response.usage = {
        inputTokens: delta(cumulative.inputTokens, previous?.inputTokens),
        outputTokens: delta(cumulative.outputTokens, previous?.outputTokens),
      };
      const read = delta(cumulative.cacheReadTokens, previous?.cacheReadTokens);
      const written = delta(cumulative.cacheWriteTokens, previous?.cacheWriteTokens);
      if (read > 0) response.usage.cacheReadTokens = read;
      if (written > 0) response.usage.cacheWriteTokens = written;
    } else if (result.usage) {
      const usage = usageOf(result.usage);
      if (usage) response.usage = usage;
    }
    return response;
  }
}

function checkPermissionMode(mode: string, stepId?: string): void {
  if ((CLAUDE_PERMISSION_MODES as readonly string[]).includes(mode)) return;
  throw new UsageError(
    `Unknown permissionMode "${mode}"${
      stepId ? ` for step "${stepId}"` : ""
    } (claude-code backend); use one of: ${CLAUDE_PERMISSION_MODES.join(", ")}.`,
    { permissionMode: mode, ...(stepId ? { stepId } : {}) },
  );
}

/** The usage summed over models, or `undefined` (unknown, not zero) when no model reported both counts. */
function sumModelUsage(
  modelUsage: SdkMessage["modelUsage"],
): Omit<Cumulative, "costUsd"> | undefined {
  if (!modelUsage || typeof modelUsage !== "object") return undefined;
  const counted = Object.values(modelUsage).filter((usage) =>
    usage !== null && typeof usage === "object" && typeof usage.inputTokens === "number" &&
    typeof usage.outputTokens === "number"
  );
  if (counted.length === 0) return undefined;
  const sum = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  for (const usage of counted) {
    const read = usage.cacheReadInputTokens ?? 0;
    const written = usage.cacheCreationInputTokens ?? 0;
    sum.inputTokens += (usage.inputTokens ?? 0) + read + written;
    sum.outputTokens += usage.outputTokens ?? 0;
    sum.cacheReadTokens += read;
    sum.cacheWriteTokens += written;
  }
  return sum;
}

/** The usage of a result's `usage` record, or `undefined` (unknown) without both counts. */
function usageOf(usage: Record<string, number | null | undefined>): LlmUsage | undefined {
  if (typeof usage.input_tokens !== "number" || typeof usage.output_tokens !== "number") {
    return undefined;
  }
  const read = usage.cache_read_input_tokens ?? 0;
  const written = usage.cache_creation_input_tokens ?? 0;
  return {
    inputTokens: usage.input_tokens + read + written,
    outputTokens: usage.output_tokens,
    ...(read > 0 ? { cacheReadTokens: read } : {}),
    ...(written > 0 ? { cacheWriteTokens: written } : {}),
  };
}

function reportApiRetry(
  message: SdkMessage,
  req: LlmRequest,
  listeners: (RetryListener | undefined)[],
): void {
  const info = {
    backend: "claude-code",
    attempt: message.attempt ?? 1,
    maxAttempts: (message.max_retries ?? 0) + 1,
    delayMs: message.retry_delay_ms ?? 0,
    ...(typeof message.error_status === "number" ? { status: message.error_status } : {}),
    reason: `Claude Code API retry: ${message.error ?? "error"}${
      typeof message.error_status === "number" ? ` (HTTP ${message.error_status})` : ""
    }`,
    error: message,
    stepId: req.stepId,
    iteration: req.iteration,
  };
  for (const listener of listeners) {
    try {
      listener?.(info);
    } catch {
      // ignored, as in withRetry
    }
  }
}

function stderrTail(stderr: string[]): string {
  const tail = stderr.join("").trim().split("\n").slice(-5).join("\n");
  return tail ? `; Claude Code said:\n${tail}` : "";
}

function spawnFailure(error: unknown, stderr: string[]): Error {
  const message = errorMessage(error);
  if (/executable not found|binary not found|failed to launch|ENOENT/i.test(message)) {
    return new BackendError(
      "BACKEND_NOT_INSTALLED",
      `claude-code backend: ${message}. Install Claude Code (https://code.claude.com) or point pathToClaudeCodeExecutable at it; or use --backend anthropic with ANTHROPIC_API_KEY.`,
      { backend: "claude-code" },
      error,
    );
  }
  return new ClaudeCodeFailure(
    `Claude Code failed: ${message}${stderrTail(stderr)}`,
    undefined,
    false,
  );
}

function resultFailure(result: SdkMessage, assistantError: string | undefined): ClaudeCodeFailure {
  const status = typeof result.api_error_status === "number"
    ? result.api_error_status
    : assistantError === "authentication_failed"
    ? 401
    : undefined;
  const retryable = status !== undefined
    ? isRetryableStatus(status)
    : RETRYABLE_ASSISTANT_ERRORS.has(assistantError ?? "");
  const detail = (result.errors?.length ? result.errors.join("; ") : result.result) ?? "";
  const why = {
    error_max_turns: "reached the maximum number of turns (raise maxTurns)",
    error_max_budget_usd: "reached its budget",
    error_max_structured_output_retries:
      "could not produce output that matches the step's output schema",
  }[result.subtype ?? ""] ??
    (result.subtype === "success"
      ? "reported an error"
      : `failed (${result.subtype ?? "unknown"})`);
  return new ClaudeCodeFailure(
    `Claude Code ${why}${detail ? `: ${detail}` : ""}${
      assistantError ? ` [${assistantError}]` : ""
    }`,
    status,
    retryable,
  );
}

function classify(error: unknown): FailureClass {
  if (error instanceof ClaudeCodeFailure) {
    return {
      retryable: error.retryable,
      kind: error.status !== undefined ? "http" : "other",
      ...(error.status !== undefined ? { status: error.status } : {}),
      reason: error.message,
    };
  }
  return { retryable: false, kind: "other", reason: errorMessage(error) };
}
