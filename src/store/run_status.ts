/**
 * The one status vocabulary every view of a run shows — `--runs`, `--show`, their `--json`, the
 * dashboard — for the file and PostgreSQL stores alike: the checkpoint's status, except that a
 * `running` or `paused` run no live process drives any more (killed, crashed, its worker gone) is
 * `interrupted`, and a submitted run no worker started yet is `queued`.
 *
 * @module
 */
import { isOpenStatus, type ShownStatus } from "../run_statuses.ts";
import type { RunSummary } from "./types.ts";

export type { ShownStatus };

/**
 * The status to show for a run: `interrupted` when it is open (`running`, `paused`) and `live` is false
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
  return isOpenStatus(run.status) && run.live === false ? "interrupted" : run.status;
}
