/**
 * Migration of agents from other tools into stepflow agents: `migrateClimpt` converts climpt
 * (github.com/tettuan/climpt) agents — also run as `deno task migrate climpt <path>`.
 *
 * @example
 * ```ts ignore
 * import { migrateClimpt } from "jsr:@stepflow/core/cli";
 * const [agent] = await migrateClimpt("../climpt/.agent/iterator", { out: ".agent" });
 * console.log(agent.counts, agent.loadErrors);
 * ```
 *
 * @module
 */
export { migrateClimpt, type MigratedAgent, type MigrateOptions } from "./migrate.ts";
export { type MigrationNote, type NoteKind } from "./notes.ts";
export { INTENT_RENAMES } from "./convert.ts";
