/**
 * The backend of a command line from its flags `--backend`, `--script`, `--model`, `--base-url`:
 * the same rules and messages in every CLI.
 *
 * @module
 */
import { resolve } from "node:path";
import { UsageError } from "../../errors.ts";
import { createBackend } from "../../llm/factory.ts";
import type { RetryListener } from "../../llm/retry.ts";
import type { ReplayMode } from "../../llm/replay.ts";
import type { LlmBackend } from "../../llm/types.ts";
import { defineFlags, type FlagsOf, parsePositiveInt, parseWholeNumber } from "./flags.ts";

/** The backend flags, parsed (`replay`: run-agent's `--replay strict|lenient`, read with its own flags). */
export type BackendFlags = Omit<FlagsOf<typeof BACKEND_FLAGS>, "noStream" | "fallbackModel"> & {
  /** `--no-stream`: plain requests instead of streamed answers (commands that declare it). */
  noStream?: boolean;
  /**
   * `--fallback-model NAME` (repeatable, commands that declare it): models tried after each call's
   * own model or chain. Given (even empty), the backend walks model chains with these flags.
   */
  fallbackModel?: string[];
  /** `--replay strict|lenient` (run-agent): how a replay file treats a changed prompt. */
  replay?: ReplayMode;
};

/** Options of {@linkcode backendName} and {@linkcode backendFromFlags}. */
export interface BackendFromFlagsOptions {
  /** The user's directory: `--script` resolves against it. */
  cwd: string;
  /** The backend when no flag names one (agent.json `behavior.backend`, a CLI default). */
  fallback?: string;
  /** The model when `--model` is not given (agent.json `behavior.model`'s first model). */
  defaultModel?: string;
  /** Where credentials are read (default: the process environment). */
  env?: Record<string, string | undefined>;
  /** Backend warnings (schema fallback, truncated answers). */
  onWarning?: (message: string) => void;
  /** Called before every retry of a backend call. */
  onRetry?: RetryListener;
}

/**
 * The backend `flags` name: `--backend`, else `scripted` when `--script` is given, else
 * `options.fallback`; `undefined` when none does. `--script` with another backend is a
 * {@linkcode UsageError}.
 */
export function backendName(
  flags: BackendFlags,
  options: Pick<BackendFromFlagsOptions, "fallback"> = {},
): string | undefined {
  const name = (flags.backend ?? (flags.script !== undefined ? "scripted" : undefined) ??
    options.fallback)?.toLowerCase();
  if (flags.script !== undefined && name !== "scripted") {
    throw new UsageError(
      `--script is for the scripted backend, but --backend is "${name}". Drop --script to use ${name}, or drop --backend to use the script.`,
    );
  }
  return name;
}

/**
 * Builds the backend the flags name (see {@linkcode backendName}) with `createBackend`; resolves
 * to `undefined` when no flag names one and there is no `fallback`. Every problem (unknown name,
 * missing credentials, `scripted` without `--script`) is a {@linkcode UsageError}.
 *
 * @example
 * ```ts ignore
 * import { backendFromFlags } from "./backend.ts";
 * const backend = await backendFromFlags({ script: "answers.yaml" }, { cwd: Deno.cwd() });
 * ```
 */
export async function backendFromFlags(
  flags: BackendFlags,
  options: BackendFromFlagsOptions,
): Promise<LlmBackend | undefined> {
  const name = backendName(flags, options);
  if (name === undefined) return undefined;
  const model = flags.model ?? options.defaultModel;
  const retry = {
    ...(flags.maxAttempts !== undefined ? { maxAttempts: flags.maxAttempts } : {}),
    ...(flags.maxRateLimitWaitMs !== undefined
      ? { maxRateLimitWaitMs: flags.maxRateLimitWaitMs }
      : {}),
  };
  return await createBackend({
    name,
    ...(model !== undefined ? { model } : {}),
    ...(flags.baseUrl !== undefined ? { baseUrl: flags.baseUrl } : {}),
    ...(flags.script !== undefined ? { script: resolve(options.cwd, flags.script) } : {}),
    ...(Object.keys(retry).length > 0 ? { retry } : {}),
    ...(flags.idleTimeoutMs !== undefined ? { idleTimeoutMs: flags.idleTimeoutMs } : {}),
    ...(flags.fallbackModel !== undefined ? { fallbackModels: [...flags.fallbackModel] } : {}),
    ...(flags.noStream ? { stream: false } : {}),
    ...(flags.replay !== undefined ? { replay: flags.replay } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    ...(options.onRetry ? { onRetry: options.onRetry } : {}),
  });
}

/**
 * The backend flags, declared once for every command ({@linkcode defineFlags}). A command takes the
 * ones it needs by key, in its own help order, and may reword a description:
 * `{ backend: BACKEND_FLAGS.backend, model: { ...BACKEND_FLAGS.model, description: "…" } }`.
 */
export const BACKEND_FLAGS = defineFlags({
  backend: {
    type: "string",
    value: "NAME",
    description: "LLM backend: claude-code, anthropic, openai or scripted",
  },
  model: { type: "string", value: "MODEL", description: "Model for every call" },
  baseUrl: {
    type: "string",
    value: "URL",
    description: "Server URL of the backend (OpenAI-compatible servers)",
  },
  script: {
    type: "string",
    value: "FILE",
    description:
      "Scripted answers, YAML/JSON (format: docs/backends.md#script-files); implies --backend scripted",
  },
  maxAttempts: {
    type: "string",
    value: "N",
    description: "Attempts per model call on 429/5xx/network errors (default 3)",
    parse: parsePositiveInt(
      "--max-attempts",
      (raw) =>
        `--max-attempts expects a positive integer (attempts per model call, default 3), got "${raw}".`,
    ),
  },
  noStream: {
    type: "boolean",
    description:
      "Ask anthropic/openai for plain answers, not streams (servers that cannot stream; STEPFLOW_STREAM=0)",
  },
  fallbackModel: {
    type: "string",
    value: "NAME",
    multiple: true,
    description:
      "A model tried when a call's own model is rate-limited, overloaded, down or too short (repeatable)",
  },
  maxRateLimitWaitMs: {
    type: "string",
    value: "MS",
    description:
      "Longest wait for a rate-limit reset or Retry-After (default 120000; 0: never wait)",
    parse: wholeMs("--max-rate-limit-wait-ms"),
  },
  idleTimeoutMs: {
    type: "string",
    value: "MS",
    description: "End a streamed answer silent for MS ms and retry it (default 300000; 0: off)",
    parse: wholeMs("--idle-timeout-ms"),
  },
});

/** A `parse` for a flag that takes milliseconds, 0 included. */
function wholeMs(flag: string): (raw: string) => number {
  return (raw) => {
    const n = parseWholeNumber(raw);
    if (n === undefined) {
      throw new UsageError(`${flag} expects a number of milliseconds (0 or more), got "${raw}".`);
    }
    return n;
  };
}
