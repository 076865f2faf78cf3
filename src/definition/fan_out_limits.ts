/**
 * The bounds and defaults of a fan-out step (an agent step with `forEach`, docs/agents.md "Fan-out
 * steps"), in one leaf file: the zod schema (and so the JSON Schema editors read) and the load-time
 * checks take them from here, the runner applies the defaults.
 *
 * @module
 */

/** Children of one fan-out step in flight at once when the step sets no `concurrency`. */
export const DEFAULT_CONCURRENCY = 4;
/** The highest `concurrency` a step may set. */
export const MAX_CONCURRENCY = 256;
/** The most items a fan-out step takes when it sets no `maxItems`. */
export const DEFAULT_MAX_ITEMS = 1_000;
/** The highest `maxItems` a step may set. */
export const MAX_ITEMS_LIMIT = 100_000;
/** The most new children `onItemError: "retry=N"` may start for one item. */
export const MAX_ITEM_RETRIES = 100;
/**
 * Children of fan-out steps in flight at once in one runner, over all its runs, when the runner
 * sets no `maxChildren` (`--max-children`).
 */
export const DEFAULT_MAX_CHILDREN = 64;
/** The highest `maxChildren` a runner may set. */
export const MAX_CHILDREN_LIMIT = 4_096;
