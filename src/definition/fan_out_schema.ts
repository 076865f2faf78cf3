/**
 * The fields of a fan-out step (an agent step with `forEach`, docs/agents.md "Fan-out steps") in
 * `steps_registry.json`, as zod schemas; `schema.ts` spreads them into the step's schema.
 *
 * @module
 */
import { z } from "zod";
import { ITEM_ON_ERROR, onErrorTextPattern } from "../on_error.ts";
import { MAX_CONCURRENCY, MAX_ITEMS_LIMIT } from "./fan_out_limits.ts";

/** `forEach`, `concurrency`, `onItemError` and `maxItems` of a step. */
export const FAN_OUT_FIELDS = {
  forEach: z.string().min(1).optional().describe(
    'Fan-out step: "{handoff.<key>}" or "{uv-<name>}", an array; one child run per element, bound to {item} / {item.<path>} in args',
  ),
  concurrency: z.int().min(1).max(MAX_CONCURRENCY).optional().describe(
    `Fan-out step: children in flight at once (1-${MAX_CONCURRENCY}, default 4)`,
  ),
  onItemError: z.union([
    z.string().regex(
      onErrorTextPattern(ITEM_ON_ERROR),
      'onItemError must be "fail", "continue" or "retry=N"',
    ),
    z.strictObject({ retry: z.int().min(0) }),
  ]).optional().describe(
    'Fan-out step: a failed child — "fail" (default: cancel the others, the step fails), "continue", "retry=N"',
  ),
  maxItems: z.int().min(1).max(MAX_ITEMS_LIMIT).optional().describe(
    `Fan-out step: the most items it takes (1-${MAX_ITEMS_LIMIT}, default 1000); more fail the step before any child starts`,
  ),
};
