/**
 * Saving a running plan: saves never overlap, changes made while one runs are saved right after
 * it (coalesced into one save), and a caller can wait until a save that includes its change has
 * been written — the executor does before a tool starts, so a crash from then on is seen by the
 * next run.
 *
 * @module
 */
import { errorMessage } from "../errors.ts";
import type { Plan } from "./types.ts";

/** Saves one plan through the executor's `persist` option (nothing to do without one). */
export class PlanSaver {
  readonly #persist: ((plan: Plan) => void | Promise<void>) | undefined;
  readonly #plan: Plan;
  #persisting: Promise<void> | undefined;
  #again = false;
  /** Save generations: requested (state changed) and durably written. */
  #requested = 0;
  #written = 0;
  readonly #waiters: {
    generation: number;
    resolve: () => void;
    reject: (error: unknown) => void;
  }[] = [];

  /** Saves `plan` (the live object: each save writes its state at that moment) with `persist`. */
  constructor(plan: Plan, persist: ((plan: Plan) => void | Promise<void>) | undefined) {
    this.#plan = plan;
    this.#persist = persist;
  }

  /** The state changed: save it soon (a failed save is logged; {@linkcode saveNow} reports it). */
  schedule(): void {
    const persist = this.#persist;
    if (!persist) return;
    this.#requested++;
    if (this.#persisting) {
      this.#again = true;
      return;
    }
    this.#persisting = (async () => {
      // Yield first: whoever scheduled this save registers its waiter before it can complete.
      await null;
      do {
        this.#again = false;
        const generation = this.#requested;
        let failure: unknown = undefined;
        try {
          await persist(this.#plan);
        } catch (error) {
          failure = error;
          console.warn(`[stepflow] saving the plan failed: ${errorMessage(error)}`);
        }
        this.#written = generation;
        this.#wake(failure);
      } while (this.#again);
      this.#persisting = undefined;
    })();
  }

  /**
   * Saves the current state and waits until a save that includes it has been written; rejects
   * when that save failed (the caller must not go on as if it were recorded).
   */
  saveNow(): Promise<void> {
    if (!this.#persist) return Promise.resolve();
    this.schedule();
    const generation = this.#requested;
    return new Promise((resolve, reject) => {
      this.#waiters.push({ generation, resolve, reject });
    });
  }

  /** Waits for a save in flight, then saves the final state and waits for that too. */
  async flush(): Promise<void> {
    if (!this.#persist) return;
    await this.#persisting;
    this.schedule();
    await this.#persisting;
  }

  #wake(failure: unknown): void {
    const waiters = this.#waiters;
    for (let k = waiters.length - 1; k >= 0; k--) {
      if (waiters[k].generation > this.#written) continue;
      const waiter = waiters.splice(k, 1)[0];
      if (failure === undefined) waiter.resolve();
      else waiter.reject(failure);
    }
  }
}
