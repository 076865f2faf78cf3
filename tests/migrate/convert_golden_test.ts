/**
 * The converter's whole output, byte for byte: every climpt fixture agent (and the `edge` agent,
 * which holds the source defects the real fixtures lack) converts to exactly what is recorded in
 * `fixtures/golden/<agent>.json` — files, notes in order, registry, agent.json, schemas, smoke arguments.
 * A refactoring of `src/migrate/convert*` must leave these files unchanged; a deliberate change of
 * the output re-records them with `STEPFLOW_UPDATE_GOLDEN=1 deno test -A tests/migrate/`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { findClimptAgents } from "../../src/migrate/climpt_source.ts";
import { convertClimptAgent, type ConvertedAgent } from "../../src/migrate/convert.ts";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const GOLDEN = join(HERE, "fixtures", "golden");
const SOURCES = [join(HERE, "fixtures", "climpt"), join(HERE, "fixtures", "edge")];

/** Everything a conversion returns, as stable text (maps sorted by key). */
function serializeConversion(agent: ConvertedAgent): string {
  const sorted = <T>(map: Map<string, T>) =>
    Object.fromEntries([...map].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0));
  return `${
    JSON.stringify(
      {
        name: agent.name,
        files: sorted(agent.files),
        notes: agent.notes.notes,
        registry: agent.registry,
        agent: agent.agent,
        schemas: sorted(agent.schemas),
        smokeArgs: agent.smokeArgs,
        needsAllowRun: agent.needsAllowRun,
        hasValidators: agent.hasValidators,
      },
      null,
      2,
    )
  }\n`;
}

Deno.test("migrate climpt: every fixture agent converts byte for byte to its recorded output", async () => {
  const update = Deno.env.get("STEPFLOW_UPDATE_GOLDEN") === "1";
  let compared = 0;
  for (const root of SOURCES) {
    for (const source of await findClimptAgents(root)) {
      const actual = serializeConversion(await convertClimptAgent(source));
      const file = join(GOLDEN, `${source.name}.json`);
      if (update) await Deno.writeTextFile(file, actual);
      assert.equal(actual, await Deno.readTextFile(file), `${source.name}: output changed`);
      compared++;
    }
  }
  assert.ok(
    compared === 7,
    `expected the four climpt fixtures and the three edge agents, got ${compared}`,
  );
});
