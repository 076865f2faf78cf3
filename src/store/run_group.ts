/**
 * Run groups: a label a run carries from its start (`RunOptions.group`) so that runs made
 * together — one `deno task eval`, a batch started from code — are listed together: `--runs
 * --group`, the dashboard's `/?group=…`. Groups are shown in HTML and terminals and filtered in
 * SQL, so they are restricted to a short, safe alphabet.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import { newRunId } from "./run_id.ts";

/** Allowed groups: 1-64 letters, digits, `_`, `-`, `.` and `:`, starting with a letter or digit. */
const RUN_GROUP = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

/** The longest group. */
export const MAX_RUN_GROUP_LENGTH = 64;

/**
 * True when `group` is a valid run group: 1-64 letters, digits, `_`, `-`, `.` or `:`, starting
 * with a letter or digit.
 *
 * @example
 * ```ts
 * import { isValidRunGroup } from "./run_group.ts";
 * isValidRunGroup("nightly-2026.11.26"); // true
 * isValidRunGroup("<b>x</b>"); // false
 * ```
 */
export function isValidRunGroup(group: unknown): group is string {
  return typeof group === "string" && RUN_GROUP.test(group);
}

/**
 * Throws `RUN_GROUP_INVALID` unless `group` is a valid run group ({@linkcode isValidRunGroup}).
 *
 * @param where what gave the group (`RunOptions.group`, `--group`), named in the message
 */
export function assertRunGroup(group: unknown, where = "the run group"): asserts group is string {
  if (isValidRunGroup(group)) return;
  const text = typeof group === "string" ? group : String(group);
  const shown = text.length > 80 ? `${JSON.stringify(text.slice(0, 80))}…` : JSON.stringify(text);
  throw new StepflowError(
    "RUN_GROUP_INVALID",
    `Invalid ${where} ${shown}: a run group is 1-${MAX_RUN_GROUP_LENGTH} letters, digits, "_", "-", "." or ":", starting with a letter or digit (for example nightly-2026.11.26).`,
    { details: { group: text.slice(0, 200) } },
  );
}

/**
 * A new group id for runs made together: `<prefix>-<UTC time>-<6 hex>`
 * (`eval-20261126T201700Z-1a2b3c`), sortable by time and unique enough.
 *
 * @example
 * ```ts
 * import { newRunGroup } from "./run_group.ts";
 * newRunGroup("eval"); // "eval-20261126T201700Z-" + 6 hex digits
 * ```
 */
export function newRunGroup(prefix: string, now: Date = new Date()): string {
  const group = `${prefix}-${newRunId(now)}`;
  assertRunGroup(group);
  return group;
}
