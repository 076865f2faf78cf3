/**
 * The runner-wide cap on children of fan-out steps in flight (`StepFlowRunnerOptions.maxChildren`,
 * `run-agent --max-children`): one counting semaphore a runner shares with every run it drives and
 * their child runs, so fan-outs of several runs — and fan-outs nested in children — never have
 * more children in flight together than the cap. A child that itself runs a fan-out gives its
 * place back while its own children run (`fan_out.ts`), so nested fan-outs cannot starve each other.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import { DEFAULT_MAX_CHILDREN, MAX_CHILDREN_LIMIT } from "../definition/fan_out_limits.ts";

/** A counting semaphore of places for children in flight; see the module documentation. */
export class ChildLimiter {
  /** The most places. */
  readonly max: number;
  #taken = 0;
  readonly #waiting: (() => void)[] = [];

  /**
   * A limiter of `max` places (default {@linkcode DEFAULT_MAX_CHILDREN}).
   *
   * @throws {StepflowError} `MAX_CHILDREN_INVALID` for anything but a whole number 1-4,096
   */
  constructor(max: number = DEFAULT_MAX_CHILDREN) {
    if (!Number.isInteger(max) || max < 1 || max > MAX_CHILDREN_LIMIT) {
      throw new StepflowError(
        "MAX_CHILDREN_INVALID",
        `maxChildren must be a whole number from 1 to ${MAX_CHILDREN_LIMIT} (children of fan-out steps in flight at once), got ${
          JSON.stringify(max)
        }.`,
        { details: { maxChildren: max } },
      );
    }
    this.max = max;
  }

  /** Places taken now. */
  get inFlight(): number {
    return this.#taken;
  }

  /** Takes a place when one is free; false otherwise. */
  tryAcquire(): boolean {
    if (this.#taken >= this.max) return false;
    this.#taken++;
    return true;
  }

  /** Takes a place, waiting for one (first come, first served); rejects when `signal` aborts. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    signal?.throwIfAborted();
    return new Promise<void>((resolve, reject) => {
      const take = () => {
        signal?.removeEventListener("abort", onAbort);
        this.#taken++;
        resolve();
      };
      const onAbort = () => {
        const at = this.#waiting.indexOf(take);
        if (at >= 0) this.#waiting.splice(at, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(take);
    });
  }

  /**
   * Takes a place whether one is free or not: a run that gave its place back for its own fan-out
   * and was stopped meanwhile takes it back at once (its parent gives it back when it ends).
   */
  take(): void {
    this.#taken++;
  }

  /** Gives a place back (to the longest waiter, if any). */
  release(): void {
    this.#taken = Math.max(0, this.#taken - 1);
    const next = this.#waiting.shift();
    if (next) next();
  }
}
