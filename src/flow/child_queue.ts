/**
 * Fan-out children on the workers (docs/scaling.md, "Fan-out steps on the workers"): what a fan-out
 * step needs from the queue its run was taken from, so that its children are queued as runs of
 * their own — spread over every worker, `concurrency` of them out at a time across all — while the
 * parent holds no worker slot: its drive stops ({@linkcode FanOutSuspended}) and the workers wake it
 * when its last child ends, or a child fails.
 *
 * The worker gives the runner a `ChildQueue` (`StepFlowRunnerOptions.childQueue`, declared in
 * `types.ts`); a run without one drives its children itself (`fan_out.ts`).
 *
 * @module
 */
export type { ChildQueue, QueuedChild, QueuedFanOut } from "./types.ts";

/**
 * A fan-out step whose children run on the workers stopped its run's drive until they end: the run
 * gives its worker slot back, and the worker that ends its last child (or a failed one) queues it
 * again. Not an error of the run: its checkpoint holds the fan-out, and its next drive takes it up.
 */
export class FanOutSuspended extends Error {
  /** The stable code. */
  readonly code = "FANOUT_SUSPENDED";
  /** Children still out (queued or driven by a worker). */
  readonly open: number;

  /**
   * The stop of a fan-out step's drive while `open` of its children are out.
   *
   * @param stepId the fan-out step
   * @param open children still out
   */
  constructor(stepId: string, open: number) {
    super(
      `fan-out step "${stepId}" waits for ${open} child run${
        open === 1 ? "" : "s"
      } on the workers; the run gives its slot back until they end`,
    );
    this.name = "FanOutSuspended";
    this.open = open;
  }
}
