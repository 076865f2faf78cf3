/**
 * How a run's backend was chosen — backend name, `--model` override, server URL, script path —
 * recorded in the run's state so that `--resume`, `--redrive`, the dashboard's Resume/Redrive and
 * a worker taking over continue on the backend the run started with (unless a flag names another).
 * Never a key: credentials stay in the environment, and a URL's user and password are dropped.
 *
 * @module
 */
import { z } from "zod";
import type { Exactly } from "../type_equality.ts";

/** How a run's backend was chosen (see the module documentation). */
export interface BackendChoice {
  /** Backend name: `claude-code`, `anthropic`, `openai`, `scripted`. */
  backend: string;
  /** The `--model` override, when one was given (else the steps' and agent's models apply). */
  model?: string;
  /** The server URL (`--base-url`), without user or password. */
  baseUrl?: string;
  /** The scripted answers file, as an absolute path. */
  script?: string;
  /** `--fallback-model` names: models of this backend tried after each call's own (in order). */
  fallbackModels?: string[];
}

/** A recorded choice is read back from a checkpoint (untrusted JSON) through this schema. */
const BackendChoiceSchema = z.object({
  backend: z.string().min(1),
  model: z.string().min(1).optional(),
  baseUrl: z.string().min(1).optional(),
  script: z.string().min(1).optional(),
  fallbackModels: z.array(z.string().min(1)).optional(),
}).strict();

// Compile-time: the interface equals the schema's output type.
// Hand-written because public: readable in `deno doc` (why: src/type_equality.ts).
const typesMatch: Exactly<z.output<typeof BackendChoiceSchema>, BackendChoice> = true;
void typesMatch;

/**
 * The backend choice recorded in a run's state (`state.backendChoice`), or undefined when the run
 * recorded none (started by an older version, or by a caller that passed its own backend object)
 * or the record is not a valid choice.
 *
 * @example
 * ```ts
 * import { recordedBackendChoice } from "./backend_choice.ts";
 * recordedBackendChoice({ backendChoice: { backend: "scripted", script: "/tmp/a.yaml" } });
 * // { backend: "scripted", script: "/tmp/a.yaml" }
 * ```
 */
export function recordedBackendChoice(state: unknown): BackendChoice | undefined {
  if (typeof state !== "object" || state === null) return undefined;
  const parsed = BackendChoiceSchema.safeParse((state as Record<string, unknown>).backendChoice);
  return parsed.success ? parsed.data : undefined;
}

/**
 * The choice to continue a run with: what the flags name wins, field by field, over the recorded
 * one (`--fallback-model` names, given at all, replace the recorded list). Naming another backend
 * (`--backend`, or `--script` for a run that was not scripted) drops the recorded model, URL,
 * script and fallback models, which belonged to the old backend.
 *
 * @example
 * ```ts
 * import { mergeBackendChoice } from "./backend_choice.ts";
 * mergeBackendChoice({ backend: "openai", baseUrl: "http://127.0.0.1:8080/v1", model: "m" }, {});
 * // the recorded choice, unchanged
 * mergeBackendChoice({ backend: "openai", model: "m" }, { backend: "anthropic" });
 * // { backend: "anthropic" }
 * ```
 */
export function mergeBackendChoice(
  recorded: BackendChoice,
  flags: Partial<BackendChoice>,
): BackendChoice {
  const name = (flags.backend ?? (flags.script !== undefined ? "scripted" : recorded.backend))
    .toLowerCase();
  const same = name === recorded.backend.toLowerCase();
  const pick = (key: "model" | "baseUrl" | "script") =>
    flags[key] ?? (same ? recorded[key] : undefined);
  const choice: BackendChoice = { backend: name };
  for (const key of ["model", "baseUrl", "script"] as const) {
    const value = pick(key);
    if (value !== undefined) choice[key] = value;
  }
  const fallbacks = flags.fallbackModels?.length
    ? flags.fallbackModels
    : same
    ? recorded.fallbackModels
    : undefined;
  if (fallbacks?.length) choice.fallbackModels = [...fallbacks];
  return choice;
}

/**
 * A choice fit to record: the URL without its user and password (a key must never reach the run's
 * files), undefined fields left out.
 */
export function recordableChoice(choice: BackendChoice): BackendChoice {
  const out: BackendChoice = { backend: choice.backend };
  if (choice.model !== undefined) out.model = choice.model;
  if (choice.script !== undefined) out.script = choice.script;
  if (choice.baseUrl !== undefined) out.baseUrl = urlWithoutCredentials(choice.baseUrl);
  if (choice.fallbackModels?.length) out.fallbackModels = [...choice.fallbackModels];
  return out;
}

/**
 * A URL without its user and password, for records and messages: `https://user:key@host/v1` →
 * `https://host/v1`; anything that is not a URL as it is.
 *
 * @example
 * ```ts
 * import { urlWithoutCredentials } from "./backend_choice.ts";
 * urlWithoutCredentials("http://u:p@127.0.0.1:8080/v1"); // "http://127.0.0.1:8080/v1"
 * ```
 */
export function urlWithoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return url;
    parsed.username = "";
    parsed.password = "";
    return parsed.href;
  } catch {
    return url;
  }
}
