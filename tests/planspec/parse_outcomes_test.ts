import assert from "node:assert/strict";
import { fingerprint, mutatedPlans, parseOutcome } from "./plan_mutations.ts";
import { OUTCOME_COUNT, OUTCOME_SEED } from "./parse_outcomes.ts";

// A differential check of the parser against itself as it was: the fingerprints in
// parse_outcomes.json were written by the parser before its allocation work, over
// seeded plans mutated the way hand edits go wrong. Any change of a parsed plan, of an error's
// message, line or quoted text shows here with the text that caused it.
Deno.test("parse: mutated plans give the same plans and errors (lines included) as recorded", async () => {
  const recorded: string[] = JSON.parse(
    await Deno.readTextFile(new URL("./parse_outcomes.json", import.meta.url)),
  );
  const texts = mutatedPlans(OUTCOME_SEED, OUTCOME_COUNT);
  assert.equal(recorded.length, texts.length);
  for (let i = 0; i < texts.length; i++) {
    const outcome = parseOutcome(texts[i]);
    if (fingerprint(outcome) !== recorded[i]) {
      assert.fail(
        `text ${i} (seed ${OUTCOME_SEED}) parses differently from the recorded outcome\n` +
          `text: ${JSON.stringify(texts[i])}\noutcome now:\n${outcome}`,
      );
    }
  }
});
