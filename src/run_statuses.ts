/**
 * The one list of run states. Every other spelling follows from {@linkcode RUN_STATUS_KINDS}: the
 * events' `RunState`, the checkpoint's `RunStatus` and its schema, the statuses views show
 * (`--runs`, `--show`, their `--json`, the dashboard) and the PostgreSQL queries that select runs
 * still open. Shared by every layer (it imports nothing of stepflow).
 *
 * Adding a status is one line in {@linkcode RUN_STATUS_KINDS}: its word, and whether a run in it is
 * still `open` (it may go on: resumable, listed among the live runs, kept leased by its worker) or
 * `ended`. (A new `open` status also wants a PostgreSQL migration that recreates the
 * `runs_open_leases` index with it, since applied migrations never change; without one, queries
 * stay correct and only that index does not cover the new status.)
 *
 * @module
 */

/**
 * Every status a checkpoint may record, in the order a run can reach them, each with its kind:
 * - `running` — a process drives it;
 * - `paused` — stopped between iterations by a pause request; resumable;
 * - `waiting` — stopped at an input step until someone answers: not ended, but no process drives
 *   it and it holds no lock or lease (kind `waits`: never shown `interrupted`, never re-queued);
 * - `completed`, `failed`, `aborted`, `declined`, `cancelled`, `timeout` — how it ended
 *   (`declined`: a person's answer at an input step stopped it — their decision, not a failure);
 * - `budget_exceeded` — stopped by its budget (kind `waits`: no process drives it, never re-queued,
 *   kept by retention; `--resume` with a higher budget carries on inside the step it stopped in).
 */
export const RUN_STATUS_KINDS = {
  running: "open",
  paused: "open",
  waiting: "waits",
  completed: "ended",
  failed: "ended",
  aborted: "ended",
  declined: "ended",
  cancelled: "ended",
  timeout: "ended",
  budget_exceeded: "waits",
} as const satisfies Record<string, "open" | "waits" | "ended">;

/** Status of a run as recorded in its checkpoint (a key of {@linkcode RUN_STATUS_KINDS}). */
export type RunStatus = keyof typeof RUN_STATUS_KINDS;

/** A recorded status a run ended in. */
export type EndedRunStatus = {
  [S in RunStatus]: (typeof RUN_STATUS_KINDS)[S] extends "ended" ? S : never;
}[RunStatus];

/** A recorded status a run may go on from (`running`, `paused`). */
export type OpenRunStatus = {
  [S in RunStatus]: (typeof RUN_STATUS_KINDS)[S] extends "open" ? S : never;
}[RunStatus];

/**
 * The lifecycle state of a run as executors report it to event handlers: `idle` before it starts,
 * then its recorded status.
 * `idle → running ⇄ paused → completed | failed | aborted | declined | cancelled | timeout`;
 * a step-flow run that reaches an input step ends its drive `waiting` (an answer starts the next).
 */
export type RunState = "idle" | RunStatus;

/**
 * A status as views show it: `queued` (submitted, no worker started it yet), a recorded status, or
 * `interrupted` (open, but no live process drives it any more: killed, crashed, its worker gone).
 */
export type ShownStatus = "queued" | RunStatus | "interrupted";

/**
 * Every recorded status, in the order a run can reach them.
 *
 * @example
 * ```ts
 * import { RUN_STATUSES } from "./run_statuses.ts";
 * RUN_STATUSES.includes("paused"); // true
 * ```
 */
export const RUN_STATUSES: readonly [RunStatus, ...RunStatus[]] = Object.freeze(
  Object.keys(RUN_STATUS_KINDS) as [RunStatus, ...RunStatus[]],
);

/** The recorded statuses a run may go on from, in {@linkcode RUN_STATUSES}' order. */
export const OPEN_RUN_STATUSES: readonly OpenRunStatus[] = Object.freeze(
  RUN_STATUSES.filter((s): s is OpenRunStatus => RUN_STATUS_KINDS[s] === "open"),
);

/** The recorded statuses a run ends in, in {@linkcode RUN_STATUSES}' order. */
export const ENDED_RUN_STATUSES: readonly EndedRunStatus[] = Object.freeze(
  RUN_STATUSES.filter((s): s is EndedRunStatus => RUN_STATUS_KINDS[s] === "ended"),
);

/**
 * True when a run in `status` has not ended: open (`running`, `paused`) or waiting for an answer.
 * Retention never deletes such a run.
 *
 * @example
 * ```ts
 * import { isNotEnded } from "./run_statuses.ts";
 * isNotEnded("waiting"); // true
 * isNotEnded("failed"); // false
 * ```
 */
export function isNotEnded(status: string | undefined): boolean {
  return status !== undefined && Object.hasOwn(RUN_STATUS_KINDS, status) &&
    RUN_STATUS_KINDS[status as RunStatus] !== "ended";
}

/**
 * Every status views show, in the order a run can reach them: `queued`, the recorded ones,
 * `interrupted`.
 */
export const SHOWN_STATUSES: readonly ShownStatus[] = Object.freeze([
  "queued",
  ...RUN_STATUSES,
  "interrupted",
]);

/**
 * True when `status` is a recorded status a run may go on from (see {@linkcode OPEN_RUN_STATUSES}).
 *
 * @example
 * ```ts
 * import { isOpenStatus } from "./run_statuses.ts";
 * isOpenStatus("paused"); // true
 * isOpenStatus("completed"); // false
 * isOpenStatus("queued"); // false (not recorded yet)
 * ```
 */
export function isOpenStatus(status: string | undefined): status is OpenRunStatus {
  return status !== undefined && Object.hasOwn(RUN_STATUS_KINDS, status) &&
    RUN_STATUS_KINDS[status as RunStatus] === "open";
}

/**
 * The statuses of a submitted run that has not ended: `queued` (no worker started it yet), then
 * the open recorded ones. The worker queue re-queues, gives up on and drives only these.
 */
export const NOT_ENDED_STATUSES: readonly ("queued" | OpenRunStatus)[] = Object.freeze([
  "queued",
  ...OPEN_RUN_STATUSES,
]);
