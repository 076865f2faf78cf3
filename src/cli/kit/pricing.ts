/**
 * The prices a command line adds to a run's: `--pricing FILE` over `STEPFLOW_PRICING=FILE`, both
 * over agent.json `pricing` and the built-in table, each named in the run log by its file.
 *
 * @module
 */
import { resolve } from "node:path";
import { PriceTable, readPriceFile } from "../../llm/pricing.ts";

/**
 * The prices of `--pricing FILE` (`flag`) over those of `STEPFLOW_PRICING` (`env`), paths relative
 * to `userDir`; undefined when neither is given.
 *
 * @throws {StepflowError} `PRICING_NOT_FOUND`, `PRICING_INVALID`
 */
export async function cliPricing(
  flag: string | undefined,
  env: string | undefined,
  userDir: string,
): Promise<PriceTable | undefined> {
  let table = new PriceTable([]);
  const fromEnv = env?.trim();
  if (fromEnv) {
    const file = resolve(userDir, fromEnv);
    table = table.with(file, await readPriceFile(file, "the pricing file of STEPFLOW_PRICING"));
  }
  if (flag !== undefined) {
    const file = resolve(userDir, flag);
    table = table.with(file, await readPriceFile(file, "the pricing file of --pricing"));
  }
  return table.layers.length ? table : undefined;
}
