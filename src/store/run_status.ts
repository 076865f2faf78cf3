/**
 * The one status vocabulary every view of a run shows — `--runs`, `--show`, their `--json`, the
 * dashboard — for the file and PostgreSQL stores alike: the checkpoint's status, except that a
 * `running` or `paused` run no live process drives any more (killed, crashed, its worker gone) is
 * `interrupted`, and a submitted run no worker started yet is `queued`.
 *
 * @module
 */
import { RUN_STATUSES } from "./checkpoint_format.ts";
import type { RunStatus, RunSummary } from "./types.ts";

/** A status as views show it: the checkpoint's statuses, `queued` and `interrupted`. */
export type ShownStatus = RunStatus | "queued" | "interrupted";

/**
 * The statuses of a run a process drives: recorded with nobody holding the run's lock or lease,
 * they are shown as `interrupted` (the PostgreSQL store's status filter reads this list too).
 */
export const DRIVEN_STATUSES: readonly ShownStatus[] = ["running", "paused"];

/** Every status views show, in the order a run can reach them (the dashboard's status filter). */
export const SHOWN_STATUSES: readonly ShownStatus[] = ["queued", ...RUN_STATUSES, "interrupted"];

/**
 * The status to show for a run: `interrupted` when it is `running` or `paused` and `live` is false
 * (nobody holds its lock or lease), else its status as recorded.
 *
 * @example
 * ```ts
 * import { shownStatus } from "./run_status.ts";
 * shownStatus({ status: "running", live: false }); // "interrupted"
 * shownStatus({ status: "running" }); // "running" (liveness unknown)
 * ```
 */
export function shownStatus(run: Pick<RunSummary, "status" | "live">): ShownStatus {
  return DRIVEN_STATUSES.includes(run.status) && run.live === false ? "interrupted" : run.status;
}
