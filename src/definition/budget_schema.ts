/**
 * The schemas of a run's budget and of model prices (agent.json `limits.budget` and `pricing`,
 * pricing files) — the single source of their types, each proven equal to its schema.
 *
 * @module
 */
import { z } from "zod";
import type { Exactly } from "../type_equality.ts";

const usdPrice = z.number().min(0).max(1_000_000);

/** One model's prices in US dollars per million tokens (agent.json `pricing`, a pricing file). */
export const ModelPricingSchema = z.strictObject({
  inputUsdPerMTok: usdPrice.describe("US dollars per million input (prompt) tokens"),
  outputUsdPerMTok: usdPrice.describe("US dollars per million output tokens"),
  cacheReadUsdPerMTok: usdPrice.optional().describe(
    "US dollars per million input tokens read from the prompt cache (default: the input price)",
  ),
  cacheWriteUsdPerMTok: usdPrice.optional().describe(
    "US dollars per million input tokens written to the prompt cache (default: the input price)",
  ),
});
/** Price of a model per million tokens, in US dollars. */
export interface ModelPricing {
  /** Price of one million input (prompt) tokens. */
  inputUsdPerMTok: number;
  /** Price of one million output (completion) tokens. */
  outputUsdPerMTok: number;
  /**
   * Price of one million input tokens read from the prompt cache (Anthropic: a tenth of the
   * input price; OpenAI: a half or a tenth). Default: the input price.
   */
  cacheReadUsdPerMTok?: number;
  /**
   * Price of one million input tokens written to the prompt cache (Anthropic: 1.25 × the input
   * price for the 5-minute cache). Default: the input price.
   */
  cacheWriteUsdPerMTok?: number;
}

/** A price list: model name → prices (a pricing file, agent.json `pricing`). */
export const PriceListSchema = z.record(z.string().min(1).max(200), ModelPricingSchema);

/** A run's hard budget (agent.json `limits.budget`, `--budget-usd`, `--budget-tokens`). */
export const RunBudgetSchema = z.strictObject({
  usd: z.number().positive().max(1_000_000_000).optional().describe(
    "US dollars the run (its retries, re-asks, tool turns and child runs included) may spend",
  ),
  tokens: z.int().positive().optional().describe("Input plus output tokens the run may use"),
  modelCalls: z.int().positive().optional().describe("Model calls the run may make"),
  toolCalls: z.int().positive().optional().describe("Tool calls the run may run"),
});
/**
 * A run's hard budget: what it may spend in all — its retries, re-asks, tool-loop turns and child
 * runs included, across resumes. Checked before every model call and tool call (docs/budgets.md).
 */
export interface RunBudget {
  /** US dollars (needs a price for every model the run calls). */
  usd?: number;
  /** Input plus output tokens. */
  tokens?: number;
  /** Model calls. */
  modelCalls?: number;
  /** Tool calls that run. */
  toolCalls?: number;
}

// Compile-time proof that the interfaces above are exactly what their zod schemas parse to.
const _schemasMatchInterfaces: [
  Exactly<z.infer<typeof ModelPricingSchema>, ModelPricing>,
  Exactly<z.infer<typeof RunBudgetSchema>, RunBudget>,
] = [true, true];
