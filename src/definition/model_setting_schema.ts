/**
 * zod schemas of `model` in agent.json and in a step: one model name, or a fallback chain of
 * entries tried in order (docs/backends.md, "Model fallback chains"). `schema.ts` re-exports them.
 *
 * @module
 */
import { z } from "zod";
import type { Exactly } from "../type_equality.ts";

/** A model of a chain on another backend or server than the run's. */
export const ModelOnBackendSchema = z.strictObject({
  backend: z.enum(["openai", "anthropic"]).describe("The backend that serves this model"),
  model: z.string().min(1),
  baseUrl: z.string().min(1).optional().describe(
    "The server (default: the backend's own: OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the API)",
  ),
});
/**
 * A model of a chain on another backend or server than the run's: `{ "backend": "openai",
 * "model": "gpt-5.4", "baseUrl": "http://127.0.0.1:8000/v1" }`.
 */
export interface ModelOnBackend {
  /** The backend that serves the model. */
  backend: "openai" | "anthropic";
  /** The model. */
  model: string;
  /** The server (default: the backend's own, from its environment variables). */
  baseUrl?: string;
}

/** One entry of a model chain: a model of the run's backend, or a model on another backend. */
export const ModelChainEntrySchema = z.union([z.string().min(1), ModelOnBackendSchema]);
/** One entry of a model chain: a model name (the run's backend) or a {@linkcode ModelOnBackend}. */
export type ModelChainEntry = string | ModelOnBackend;

/** `model` in agent.json and in a step: one model, or a fallback chain tried in order. */
export const ModelSettingSchema = z.union([
  z.string().min(1),
  z.array(ModelChainEntrySchema).min(1),
]).describe(
  'A model name, or a fallback chain: ["claude-sonnet-5-5", { "backend": "openai", "model": "gpt-5.4" }] — a call falls through to the next entry on a rate limit, an overload or a 5xx after the retries, or a context-length refusal',
);
/**
 * `model` in agent.json and in a step: a model name, or a fallback chain of entries tried in
 * order (docs/backends.md, "Model fallback chains").
 *
 * @example
 * ```ts
 * import type { ModelSetting } from "./schema.ts";
 * const chain: ModelSetting = [
 *   "claude-sonnet-5-5",
 *   "claude-haiku-4-5",
 *   { backend: "openai", model: "gpt-5.4", baseUrl: "http://127.0.0.1:8000/v1" },
 * ];
 * ```
 */
export type ModelSetting = string | ModelChainEntry[];

// Compile-time proof that the interfaces above are exactly what their zod schemas parse to.
const _schemasMatchInterfaces: [
  Exactly<z.infer<typeof ModelOnBackendSchema>, ModelOnBackend>,
  Exactly<z.infer<typeof ModelSettingSchema>, ModelSetting>,
] = [true, true];
