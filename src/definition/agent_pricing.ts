/**
 * agent.json `pricing` at load time: the price list written in agent.json, or read from the JSON
 * file it names inside the agent folder — checked like any price list, so a bad price is a load
 * problem with its place, not a wrong cost later.
 *
 * @module
 */
import { relative, resolve } from "node:path";
import { isWithin } from "../prompt/c3l_path.ts";
import { outsideLinkMessage, realLocation } from "../prompt/confine.ts";
import { type ModelPricing, ModelPricingSchema } from "./schema.ts";
import type { AgentPricing } from "./types.ts";

/** Models one price list may name. */
export const MAX_PRICED_MODELS = 10_000;

/**
 * The problems of a price list (`where` names it), or its prices: each problem names the model and
 * the field.
 *
 * @example
 * ```ts
 * import { checkPriceList } from "./agent_pricing.ts";
 * checkPriceList({ "m": { inputUsdPerMTok: -1, outputUsdPerMTok: 2 } }, "prices.json").problems;
 * // ["prices.json: m.inputUsdPerMTok: Too small: expected number to be >=0"]
 * ```
 */
export function checkPriceList(
  value: unknown,
  where: string,
): { prices?: Record<string, ModelPricing>; problems: string[] } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { problems: [`${where}: expected an object of model name → prices`] };
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_PRICED_MODELS) {
    return { problems: [`${where}: more than ${MAX_PRICED_MODELS} models`] };
  }
  const problems: string[] = [];
  // Built entry by entry on a null prototype: a model named "__proto__" stays a model.
  const prices: Record<string, ModelPricing> = Object.create(null);
  for (const [model, entry] of entries) {
    if (model.length === 0 || model.length > 200) {
      problems.push(`${where}: a model name must have 1 to 200 characters`);
      continue;
    }
    const parsed = ModelPricingSchema.safeParse(entry);
    if (parsed.success) {
      Object.defineProperty(prices, model, { value: parsed.data, enumerable: true });
    } else {
      for (const issue of parsed.error.issues.slice(0, 4)) {
        const path = [model, ...issue.path.map(String)].join(".");
        problems.push(`${where}: ${path}: ${issue.message}`);
      }
    }
    if (problems.length >= 10) break;
  }
  return problems.length ? { problems } : { prices, problems };
}

/**
 * agent.json `pricing` of the agent in `dir` (`realDir` its real path), loaded: the list itself, or
 * the JSON file it names inside the folder. Problems are returned for the load error.
 */
export async function loadAgentPricing(
  pricing: string | Record<string, ModelPricing> | undefined,
  dir: string,
  realDir: string,
  agentFileLabel: string,
): Promise<{ pricing?: AgentPricing; problems: string[] }> {
  if (pricing === undefined) return { problems: [] };
  if (typeof pricing !== "string") {
    const checked = checkPriceList(pricing, `${agentFileLabel}: pricing`);
    if (!checked.prices) return { problems: checked.problems };
    const source = `${resolve(dir, agentFileLabel)} pricing`;
    return { pricing: { source, prices: checked.prices }, problems: [] };
  }
  const file = resolve(dir, pricing);
  const label = `${agentFileLabel}: pricing ${JSON.stringify(pricing)}`;
  if (!isWithin(dir, file) || file === dir) {
    return { problems: [`${label} must name a JSON file inside the agent folder ${dir}.`] };
  }
  const where = await realLocation(file, realDir);
  if (!where.inside) {
    return { problems: [outsideLinkMessage(relative(dir, file), file, where.real, realDir)] };
  }
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (error) {
    return {
      problems: [
        `${label}: cannot read ${file}: ${
          error instanceof Deno.errors.NotFound ? "no such file" : (error as Error).message
        }.`,
      ],
    };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problems: [`${label}: ${file} is not JSON: ${(error as Error).message}.`] };
  }
  const checked = checkPriceList(value, relative(dir, file));
  return checked.prices
    ? { pricing: { source: file, prices: checked.prices }, problems: [] }
    : { problems: checked.problems };
}
