/**
 * Writes `parse_outcomes.json`: the fingerprints of the current parser's outcomes over the seeded
 * texts of `plan_mutations.ts`. Run it only when a change of the parser's behaviour is intended
 * (and say so in the commit): `deno run -A tests/planspec/parse_outcomes.ts && deno fmt tests/planspec`.
 *
 * @module
 */
import { fingerprint, mutatedPlans, parseOutcome } from "./plan_mutations.ts";

/** The seed and the number of texts the golden file covers. */
export const OUTCOME_SEED = 33;
/** How many seeded texts the golden file covers. */
export const OUTCOME_COUNT = 1500;

if (import.meta.main) {
  const prints = mutatedPlans(OUTCOME_SEED, OUTCOME_COUNT).map((t) => fingerprint(parseOutcome(t)));
  const file = new URL("./parse_outcomes.json", import.meta.url);
  await Deno.writeTextFile(file, JSON.stringify(prints) + "\n");
  console.log(`wrote ${prints.length} fingerprints to ${file.pathname}`);
}
