/**
 * One function that builds any backend by name, for the runner's default backend (agent.json
 * `behavior.backend` / `behavior.model`) and the CLI flags `--backend`, `--model`, `--base-url`,
 * `--script`. Credentials come from the standard environment variables.
 *
 * @module
 */
import type { ModelChainEntry, ModelOnBackend } from "../definition/schema.ts";
import { UsageError } from "../errors.ts";
import type { ModelPricing, StructuredOutputMode } from "./chat_backend.ts";
import type { ChatHttpClient } from "./chat_fetch.ts";
import { ModelChainBackend } from "./model_chain.ts";
import type { ClaudeCodeBackendOptions } from "./claude_code.ts";
import type { ReplayMode } from "./replay.ts";
import type { RetryListener, RetryPolicy } from "./retry.ts";
import { loadScriptFile } from "./script_file.ts";
import type { LlmBackend } from "./types.ts";

/** The backend names {@linkcode createBackend} knows. */
export const BACKEND_NAMES: readonly BackendName[] = Object.freeze([
  "claude-code",
  "anthropic",
  "openai",
  "scripted",
]);

/** A backend name. */
export type BackendName = "claude-code" | "anthropic" | "openai" | "scripted";

/** The model of the `anthropic` backend when neither the spec nor the request names one. */
export const DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-5-5";

/** The model of the `openai` backend on api.openai.com when neither the spec nor the request names one. */
export const DEFAULT_OPENAI_MODEL = "gpt-5.4-mini";

/** The address of a local Ollama server's OpenAI-compatible API, used in messages and docs. */
export const OLLAMA_BASE_URL = "http://127.0.0.1:11434/v1";

/** The environment variables {@linkcode createBackend} reads. */
export const BACKEND_ENV_VARS: readonly string[] = Object.freeze([
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_BASE_URL",
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "STEPFLOW_STREAM",
  "STEPFLOW_HTTP_CLIENT",
]);

/** What to build; see {@linkcode createBackend}. */
export interface BackendSpec {
  /** `claude-code`, `anthropic`, `openai` or `scripted` (case-insensitive). */
  name: string;
  /** Default model of the backend (a step's `model` still wins per call). */
  model?: string;
  /**
   * Server base URL. `openai`: any OpenAI-compatible server including `/v1` (Ollama
   * `http://127.0.0.1:11434/v1`, vLLM `http://127.0.0.1:8000/v1`, LM Studio
   * `http://127.0.0.1:1234/v1`) — no key needed then. `anthropic`: an Anthropic-compatible
   * gateway. `claude-code`: passed to Claude Code as `ANTHROPIC_BASE_URL`.
   */
  baseUrl?: string;
  /** `scripted`: the YAML/JSON script file (`--script`). */
  script?: string;
  /** `scripted` with a replay file: how a changed prompt is treated (`--replay`; default strict). */
  replay?: ReplayMode;
  /** API key; default from the environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`). */
  apiKey?: string;
  /**
   * Where to read the variables of {@linkcode BACKEND_ENV_VARS} from. Default: the process
   * environment (read only when permitted; a denied read counts as unset).
   */
  env?: Record<string, string | undefined>;
  /** Retry policy (defaults: 3 attempts, 500 ms initial, factor 2, 30 s cap). */
  retry?: Partial<RetryPolicy>;
  /** Per-call timeout in ms (defaults: 10 min for the APIs, 30 min for claude-code; 0 disables). */
  timeoutMs?: number;
  /**
   * `anthropic` / `openai`: idle timeout of streamed answers in ms (default 5 min; 0 disables) — an
   * attempt whose server sends nothing for this long is ended and retried (`--idle-timeout-ms`).
   */
  idleTimeoutMs?: number;
  /**
   * Models tried after each call's own model or chain, in order (`--fallback-model NAME`,
   * repeatable): a name is a model of this backend, `{ backend, model, baseUrl }` one elsewhere.
   * When given (even empty), the backend is a `ModelChainBackend` that walks chains with this
   * spec's options (docs/backends.md, "Model fallback chains").
   */
  fallbackModels?: ModelChainEntry[];
  /**
   * Called before every retry with `{ backend, attempt, maxAttempts, delayMs, status?, reason,
   * error, stepId?, iteration? }` — forward it as the run's retry event.
   */
  onRetry?: RetryListener;
  /** Receives backend warnings (schema fallback, truncated answers). Default `console.warn`. */
  onWarning?: (message: string) => void;
  /** `anthropic` / `openai`: structured-output strategy (default `auto`). */
  structuredOutput?: StructuredOutputMode;
  /** `anthropic` / `openai`: answer-token limit. */
  maxTokens?: number;
  /**
   * `anthropic` / `openai`: ask for streamed answers (default true, or `STEPFLOW_STREAM`: `0`,
   * `false`, `off`, `no` turn it off); `false` for servers that cannot stream (`--no-stream`).
   */
  stream?: boolean;
  /**
   * `anthropic` / `openai`: which HTTP client sends the requests — `stepflow` (default: its own
   * HTTP/1.1 client for a plain `http:` server, Deno's `fetch` for the rest) or `fetch` (Deno's
   * `fetch` for everything); default from `STEPFLOW_HTTP_CLIENT`.
   */
  httpClient?: ChatHttpClient;
  /** `anthropic` / `openai`: prices per model, to report `costUsd`. */
  pricing?: Record<string, ModelPricing>;
  /** `claude-code`: further options (executable path, allowed tools, permission mode, …). */
  claudeCode?: Omit<ClaudeCodeBackendOptions, "model" | "retry" | "timeoutMs" | "onRetry">;
}

/**
 * Builds the backend named by `spec.name`:
 *
 * | name | needs | reads |
 * | --- | --- | --- |
 * | `claude-code` | Claude Code logged in (or `ANTHROPIC_API_KEY`) | — |
 * | `anthropic` | `ANTHROPIC_API_KEY` (or a `baseUrl` gateway) | `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `STEPFLOW_STREAM` |
 * | `openai` | `OPENAI_API_KEY`, or a `baseUrl` of a local server (no key) | `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `STEPFLOW_STREAM` |
 * | `scripted` | `script` | — |
 *
 * No SDK is loaded here: each backend imports its SDK on its first call.
 *
 * @throws {UsageError} for an unknown name, missing credentials (the message names the variable
 *   to set, or `--base-url` for a local server), a local server without a model, a malformed base
 *   URL, or `scripted` without a script. The CLI prints the message and exits with code 2.
 *
 * @example
 * ```ts
 * import { createBackend } from "./factory.ts";
 * // A local Ollama server: no key needed, the model must be named.
 * const backend = await createBackend({
 *   name: "openai", baseUrl: "http://127.0.0.1:11434/v1", model: "llama3.2", env: {},
 *   onRetry: (r) => console.error(`retry ${r.attempt}/${r.maxAttempts} in ${r.delayMs} ms: ${r.reason}`),
 * });
 * console.log(backend.name); // openai
 * ```
 */
export async function createBackend(spec: BackendSpec): Promise<LlmBackend> {
  const backend = await createOne(spec);
  if (spec.fallbackModels === undefined) return backend;
  return new ModelChainBackend(backend, {
    fallbacks: spec.fallbackModels,
    build: (entry) => createBackend(memberSpec(spec, entry)),
  });
}

/**
 * `backend` able to walk model chains: itself when it walks them already (a `ModelChainBackend`,
 * or a wrapper of one), else a `ModelChainBackend` over it — the same one for every call with
 * `backend` — whose entries on other backends are built from the environment with the defaults.
 * The runner sends a call whose step or agent gives a chain through it.
 *
 * @example
 * ```ts
 * import { modelChainFor } from "./factory.ts";
 * import { ScriptedBackend } from "./scripted.ts";
 * const backend = new ScriptedBackend(["hi"]);
 * console.log(modelChainFor(backend) === modelChainFor(backend)); // true
 * ```
 */
export function modelChainFor(backend: LlmBackend): LlmBackend {
  if (backend.walksModelChains) return backend;
  let chain = chains.get(backend);
  if (!chain) {
    chain = new ModelChainBackend(backend, {
      build: (entry) => createBackend(memberSpec({ name: entry.backend }, entry)),
    });
    chains.set(backend, chain);
  }
  return chain;
}

const chains = new WeakMap<LlmBackend, ModelChainBackend>();

/**
 * The spec of a chain entry on another backend: the run's options (environment, retry policy,
 * timeouts, streaming, prices, listeners), never its key, server, script or Claude Code options.
 */
function memberSpec(spec: BackendSpec, entry: ModelOnBackend): BackendSpec {
  const {
    name: _name,
    model: _model,
    baseUrl: _baseUrl,
    apiKey: _apiKey,
    script: _script,
    replay: _replay,
    claudeCode: _claudeCode,
    fallbackModels: _fallbacks,
    ...options
  } = spec;
  return {
    ...options,
    name: entry.backend,
    model: entry.model,
    ...(entry.baseUrl !== undefined ? { baseUrl: entry.baseUrl } : {}),
  };
}

async function createOne(spec: BackendSpec): Promise<LlmBackend> {
  const name = spec.name?.trim().toLowerCase();
  const env = spec.env ?? processEnv();
  switch (name) {
    case "scripted":
      if (!spec.script) {
        throw new UsageError(
          "The scripted backend needs a script: pass --script FILE (a YAML or JSON map from step id to a list of responses).",
          { backend: "scripted" },
        );
      }
      return await loadScriptFile(spec.script, {
        env,
        ...(spec.replay ? { replay: spec.replay } : {}),
        ...(spec.onWarning ? { onWarning: spec.onWarning } : {}),
      });
    case "claude-code":
      return createClaudeCode(spec);
    case "anthropic":
      return createAnthropic(spec, env);
    case "openai":
      return createOpenAi(spec, env);
    default:
      throw new UsageError(
        `Unknown backend "${spec.name}": use one of ${
          BACKEND_NAMES.join(", ")
        } (--backend or behavior.backend in agent.json).`,
        { backend: spec.name },
      );
  }
}

async function createClaudeCode(spec: BackendSpec) {
  const baseUrl = spec.baseUrl === undefined ? undefined : checkUrl(spec.baseUrl, "claude-code");
  let processEnvironment = spec.claudeCode?.env;
  if (baseUrl !== undefined || spec.apiKey !== undefined) {
    processEnvironment = {
      ...(processEnvironment ?? wholeProcessEnv()),
      ...(baseUrl !== undefined ? { ANTHROPIC_BASE_URL: baseUrl } : {}),
      ...(spec.apiKey !== undefined ? { ANTHROPIC_API_KEY: spec.apiKey } : {}),
    };
  }
  const { ClaudeCodeBackend } = await import("./claude_code.ts");
  return new ClaudeCodeBackend({
    ...spec.claudeCode,
    ...(processEnvironment ? { env: processEnvironment } : {}),
    ...(spec.model ? { model: spec.model } : {}),
    ...common(spec),
  });
}

async function createAnthropic(spec: BackendSpec, env: Record<string, string | undefined>) {
  const apiKey = nonEmpty(spec.apiKey) ?? nonEmpty(env.ANTHROPIC_API_KEY);
  const rawBaseUrl = nonEmpty(spec.baseUrl) ?? nonEmpty(env.ANTHROPIC_BASE_URL);
  const baseUrl = rawBaseUrl === undefined ? undefined : checkUrl(rawBaseUrl, "anthropic");
  if (!apiKey && !baseUrl) {
    throw new UsageError(
      "The anthropic backend needs an API key: set ANTHROPIC_API_KEY (create one at https://console.anthropic.com/settings/keys). " +
        "Alternatives without a key: --backend claude-code (uses your Claude Code login), or a local " +
        `OpenAI-compatible server such as Ollama: --backend openai --base-url ${OLLAMA_BASE_URL} --model llama3.2.`,
      { backend: "anthropic", variable: "ANTHROPIC_API_KEY" },
    );
  }
  const { AnthropicBackend } = await import("./anthropic.ts");
  return new AnthropicBackend({
    ...chatOptions(spec, env),
    model: spec.model ?? DEFAULT_ANTHROPIC_MODEL,
    ...(apiKey ? { apiKey } : {}),
    ...(baseUrl ? { baseUrl } : {}),
  });
}

async function createOpenAi(spec: BackendSpec, env: Record<string, string | undefined>) {
  const apiKey = nonEmpty(spec.apiKey) ?? nonEmpty(env.OPENAI_API_KEY);
  const rawBaseUrl = nonEmpty(spec.baseUrl) ?? nonEmpty(env.OPENAI_BASE_URL);
  const baseUrl = rawBaseUrl === undefined ? undefined : checkUrl(rawBaseUrl, "openai");
  const official = baseUrl === undefined || /^https:\/\/api\.openai\.com(\/|$)/.test(baseUrl);
  if (official && !apiKey) {
    throw new UsageError(
      "The openai backend needs OPENAI_API_KEY to call api.openai.com (create one at https://platform.openai.com/api-keys). " +
        `For a local OpenAI-compatible server, which needs no key, pass --base-url (or set OPENAI_BASE_URL): Ollama ${OLLAMA_BASE_URL}, ` +
        "vLLM http://127.0.0.1:8000/v1, LM Studio http://127.0.0.1:1234/v1.",
      { backend: "openai", variable: "OPENAI_API_KEY" },
    );
  }
  if (!official && !spec.model) {
    throw new UsageError(
      `The openai backend needs a model name for the server at ${baseUrl}: pass --model (or set behavior.model in agent.json), e.g. --model llama3.2 for Ollama (\`ollama list\` shows what is installed).`,
      { backend: "openai", baseUrl },
    );
  }
  const { OPENAI_DEFAULT_BASE_URL, OpenAiBackend } = await import("./openai.ts");
  return new OpenAiBackend({
    ...chatOptions(spec, env),
    model: spec.model ?? DEFAULT_OPENAI_MODEL,
    ...(apiKey ? { apiKey } : {}),
    baseUrl: baseUrl ?? OPENAI_DEFAULT_BASE_URL,
  });
}

function common(spec: BackendSpec) {
  return {
    ...(spec.retry ? { retry: spec.retry } : {}),
    ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
    ...(spec.onRetry ? { onRetry: spec.onRetry } : {}),
  };
}

function chatOptions(spec: BackendSpec, env: Record<string, string | undefined>) {
  const stream = spec.stream ?? streamFromEnv(env.STEPFLOW_STREAM);
  const httpClient = spec.httpClient ?? httpClientFromEnv(env.STEPFLOW_HTTP_CLIENT);
  return {
    ...common(spec),
    ...(spec.idleTimeoutMs !== undefined ? { idleTimeoutMs: spec.idleTimeoutMs } : {}),
    ...(stream !== undefined ? { stream } : {}),
    ...(httpClient !== undefined ? { httpClient } : {}),
    ...(spec.onWarning ? { onWarning: spec.onWarning } : {}),
    ...(spec.structuredOutput ? { structuredOutput: spec.structuredOutput } : {}),
    ...(spec.maxTokens !== undefined ? { maxTokens: spec.maxTokens } : {}),
    ...(spec.pricing ? { pricing: spec.pricing } : {}),
  };
}

/** `STEPFLOW_STREAM` as a switch: unset or empty is the default; anything but on/off is refused. */
function streamFromEnv(value: string | undefined): boolean | undefined {
  const v = value?.trim().toLowerCase();
  if (!v) return undefined;
  if (["1", "true", "on", "yes"].includes(v)) return true;
  if (["0", "false", "off", "no"].includes(v)) return false;
  throw new UsageError(
    `STEPFLOW_STREAM must be 1/true/on or 0/false/off (streamed answers from the anthropic and openai backends), got "${value}".`,
    { variable: "STEPFLOW_STREAM" },
  );
}

/** `STEPFLOW_HTTP_CLIENT`: unset or empty is the default; anything but stepflow/fetch is refused. */
function httpClientFromEnv(value: string | undefined): ChatHttpClient | undefined {
  const v = value?.trim().toLowerCase();
  if (!v) return undefined;
  if (v === "stepflow" || v === "fetch") return v;
  throw new UsageError(
    `STEPFLOW_HTTP_CLIENT must be stepflow (its own HTTP/1.1 client for plain-http servers, the default) or fetch (Deno's fetch for every request), got "${value}".`,
    { variable: "STEPFLOW_HTTP_CLIENT" },
  );
}

function checkUrl(value: string, backend: string): string {
  const protocol = URL.canParse(value) ? new URL(value).protocol : undefined;
  if (protocol !== "http:" && protocol !== "https:") {
    throw new UsageError(
      `--base-url for the ${backend} backend must be an http(s) URL such as ${OLLAMA_BASE_URL}, got "${value}".`,
      { backend, baseUrl: value },
    );
  }
  return value.replace(/\/+$/, "");
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

function processEnv(): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const key of BACKEND_ENV_VARS) {
    try {
      env[key] = Deno.env.get(key);
    } catch {
      // Without --allow-env the variable counts as unset; the error message then says to set it.
    }
  }
  return env;
}

function wholeProcessEnv(): Record<string, string | undefined> {
  try {
    return Deno.env.toObject();
  } catch {
    return {};
  }
}
