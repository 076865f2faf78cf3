/**
 * The one pricing module: what a model's tokens cost, from the price table shipped with the package
 * (`prices.json`, dated, with its sources) under the user's own prices — agent.json `pricing`,
 * `STEPFLOW_PRICING=FILE`, `--pricing FILE`, the runner's `pricing` option — and the cost of one
 * call's usage at those prices. A model with no price has an unknown cost, never a cost of 0.
 *
 * @module
 */
import { checkPriceList } from "../definition/agent_pricing.ts";
import type { ModelPricing } from "../definition/schema.ts";
import { StepflowError } from "../errors.ts";
import { readTextFileOr } from "../read_text_file.ts";
import shipped from "./prices.json" with { type: "json" };
import type { LlmUsage } from "./types.ts";

export type { ModelPricing };

/** One layer of a {@linkcode PriceTable}: where its prices come from, and the prices. */
export interface PriceLayer {
  /** Named in the run log and in messages (`built-in prices of 2025-11-30`, a file's path). */
  source: string;
  /** Prices by model name. */
  prices: ReadonlyMap<string, ModelPricing>;
}

/** A model's price as the table found it: the entry, the name it is listed under, its source. */
export interface FoundPrice {
  /** The prices. */
  pricing: ModelPricing;
  /** The name the table lists it under (a dated model id is found under its undated name). */
  model: string;
  /** The layer it came from. */
  source: string;
}

/** The date of the price table shipped with the package. */
export const BUILT_IN_PRICES_DATE: string = shipped.date;

/** How the shipped table names itself in run logs and messages. */
export const BUILT_IN_PRICES_SOURCE = `built-in prices of ${shipped.date}`;

/** `-20250929`, `-2025-09-29`, `-latest`: suffixes of a model id its price is listed without. */
const SNAPSHOT_SUFFIX = /-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$/;

let builtIn: PriceTable | undefined;

/**
 * Prices in layers, later layers over earlier ones (per model). {@linkcode PriceTable.builtIn} is
 * the shipped table; {@linkcode PriceTable.with} adds the user's prices on top. A model is found
 * under its own name, else under its name without a snapshot suffix (`claude-sonnet-4-5-20250929`
 * is priced as `claude-sonnet-4-5`, `gpt-4o-2024-08-06` as `gpt-4o`).
 *
 * @example
 * ```ts
 * import { PriceTable } from "./pricing.ts";
 * const table = PriceTable.builtIn().with("my-prices.json", {
 *   "my-model": { inputUsdPerMTok: 1, outputUsdPerMTok: 2 },
 * });
 * console.log(table.find("my-model")?.source); // "my-prices.json"
 * console.log(table.find("claude-sonnet-4-5-20250929")?.model); // "claude-sonnet-4-5"
 * console.log(table.find("no-such-model")); // undefined
 * ```
 */
export class PriceTable {
  /** The layers, the shipped table first. */
  readonly layers: readonly PriceLayer[];

  /**
   * A table of these layers (later over earlier).
   *
   * @param layers the layers
   */
  constructor(layers: readonly PriceLayer[]) {
    this.layers = layers;
  }

  /** The table shipped with the package (`src/llm/prices.json`). */
  static builtIn(): PriceTable {
    builtIn ??= new PriceTable([{
      source: BUILT_IN_PRICES_SOURCE,
      prices: new Map(Object.entries(shipped.prices) as [string, ModelPricing][]),
    }]);
    return builtIn;
  }

  /** This table with `prices` (from `source`) over it; the same table when `prices` is empty. */
  with(source: string, prices: Readonly<Record<string, ModelPricing>>): PriceTable {
    const entries = Object.entries(prices);
    if (entries.length === 0) return this;
    return new PriceTable([...this.layers, { source, prices: new Map(entries) }]);
  }

  /** This table with the layers of `other` over it. */
  over(other: PriceTable): PriceTable {
    return other.layers.length ? new PriceTable([...this.layers, ...other.layers]) : this;
  }

  /**
   * Every model's price in one list, later layers over earlier (the sources are not kept): for a
   * table that travels as JSON (a run submitted to the workers).
   */
  flatten(): Record<string, ModelPricing> {
    const flat: Record<string, ModelPricing> = Object.create(null);
    for (const layer of this.layers) {
      for (const [model, pricing] of layer.prices) {
        Object.defineProperty(flat, model, {
          value: pricing,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
    }
    return flat;
  }

  /** Where the prices come from, the shipped table first. */
  get sources(): string[] {
    return this.layers.map((l) => l.source);
  }

  /** The price of `model`, or undefined when no layer has one (its cost is unknown). */
  find(model: string | undefined): FoundPrice | undefined {
    if (model === undefined || model === "") return undefined;
    const exact = this.#lookup(model);
    if (exact) return exact;
    const undated = model.replace(SNAPSHOT_SUFFIX, "");
    return undated !== model ? this.#lookup(undated) : undefined;
  }

  #lookup(model: string): FoundPrice | undefined {
    for (let i = this.layers.length - 1; i >= 0; i--) {
      const pricing = this.layers[i].prices.get(model);
      if (pricing) return { pricing, model, source: this.layers[i].source };
    }
    return undefined;
  }
}

/**
 * The cost of `usage` at `pricing`, or `undefined` without either: the input tokens read from or
 * written to the prompt cache at their own prices (the input price when none is given), the rest
 * of the input and the output at theirs. `usage.inputTokens` counts every prompt token, cached ones
 * included (how the backends report it: Anthropic's `input_tokens` plus its cache counts, OpenAI's
 * `prompt_tokens`).
 *
 * @example
 * ```ts
 * import { costOf } from "./pricing.ts";
 * const pricing = { inputUsdPerMTok: 3, outputUsdPerMTok: 15, cacheReadUsdPerMTok: 0.3 };
 * console.log(costOf({ inputTokens: 1_000_000, outputTokens: 0, cacheReadTokens: 1_000_000 }, pricing)); // 0.3
 * ```
 */
export function costOf(
  usage: LlmUsage | undefined,
  pricing: ModelPricing | undefined,
): number | undefined {
  if (!usage || !pricing) return undefined;
  const read = usage.cacheReadTokens ?? 0;
  const written = usage.cacheWriteTokens ?? 0;
  const uncached = Math.max(0, usage.inputTokens - read - written);
  return (uncached * pricing.inputUsdPerMTok +
    read * (pricing.cacheReadUsdPerMTok ?? pricing.inputUsdPerMTok) +
    written * (pricing.cacheWriteUsdPerMTok ?? pricing.inputUsdPerMTok) +
    usage.outputTokens * pricing.outputUsdPerMTok) / 1_000_000;
}

/**
 * The dearest price of one input token of `pricing`, in dollars: what a prompt token costs at most
 * (written to the cache, when that is dearer than plain input).
 */
export function dearestInputUsd(pricing: ModelPricing): number {
  return Math.max(pricing.inputUsdPerMTok, pricing.cacheWriteUsdPerMTok ?? 0) / 1_000_000;
}

/**
 * Checks a pricing value (a pricing file's JSON, agent.json `pricing`, the runner's option) and
 * returns it; `where` names it in the error.
 *
 * @throws {StepflowError} `PRICING_INVALID` naming each problem (model, field) and the format
 */
export function parsePrices(value: unknown, where: string): Record<string, ModelPricing> {
  const checked = checkPriceList(value, where);
  if (checked.prices) return checked.prices;
  throw new StepflowError(
    "PRICING_INVALID",
    `${where} is not a valid price list: ${
      checked.problems.join("; ")
    }. Write { "<model>": { "inputUsdPerMTok": 3, "outputUsdPerMTok": 15, "cacheReadUsdPerMTok": 0.3, "cacheWriteUsdPerMTok": 3.75 } } (US dollars per million tokens; the cache prices are optional).`,
    { details: { where, problems: checked.problems } },
  );
}

/**
 * Reads and checks a pricing file (`--pricing FILE`, `STEPFLOW_PRICING`, agent.json `pricing`).
 *
 * @throws {StepflowError} `PRICING_NOT_FOUND` (cannot be read), `PRICING_INVALID` (not JSON, or not
 *   a price list)
 */
export async function readPriceFile(
  file: string,
  what = "pricing file",
): Promise<Record<string, ModelPricing>> {
  const text = await readTextFileOr(
    file,
    "PRICING_NOT_FOUND",
    what,
    ". Point it at a JSON file that maps model names to prices.",
  );
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StepflowError(
      "PRICING_INVALID",
      `${what} ${file} is not JSON: ${(error as Error).message}.`,
      { details: { file } },
    );
  }
  return parsePrices(value, `${what} ${file}`);
}
