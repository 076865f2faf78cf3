/**
 * The scheduler of the tool-plan executor: which step may run next. Scheduling is by in-degree
 * counting — each step is queued once, when its last dependency settles — so a run is O(V+E), not
 * a repeated scan of every step. A skipped or failed step passes its fate on to the steps
 * that depend on it (skipped → skipped, failed → blocked), iteratively.
 *
 * Steps are nodes numbered in the order they were added; recovery may add nodes while the run goes
 * on ({@linkcode StepScheduler.add} serves both the start of a run and an insertion).
 *
 * @module
 */
import type { Step } from "./types.ts";

const WAITING = 0;
const QUEUED = 1;
const RUNNING = 2;
const SETTLED = 3;

/** What a settled step passes on to its dependents: nothing, a skip, or a block. */
export type Poison = typeof NO_POISON | typeof SKIP | typeof BLOCK;
/** The step completed: its dependents may run. */
export const NO_POISON = 0;
/** The step was skipped: its dependents are skipped. */
export const SKIP = 1;
/** The step failed: its dependents are blocked. */
export const BLOCK = 2;

/** How the scheduler reports status changes (the executor records and announces them). */
export interface SchedulerHooks {
  /** Every dependency of node `i` is done: it is queued. */
  ready(i: number): void;
  /** Node `i` waits for dependencies. */
  blocked(i: number): void;
  /** Node `i` will not run: `culprit` (a dependency) was skipped or failed. */
  passedOn(i: number, status: "skipped" | "blocked", culprit: string | undefined): void;
}

/** The dependency bookkeeping of one run. */
export class StepScheduler {
  /** The steps, by node number. */
  readonly nodes: Step[] = [];
  /** Step id → node number (the first step of that id). */
  readonly byId: Map<string, number> = new Map();
  readonly #hooks: SchedulerHooks;
  readonly #remaining: number[] = [];
  readonly #dependents: number[][] = [];
  readonly #phase: number[] = [];
  readonly #poison: number[] = [];
  readonly #culprit: (string | undefined)[] = [];
  readonly #queue: number[] = [];
  #head = 0;

  /** @param hooks where status changes go */
  constructor(hooks: SchedulerHooks) {
    this.#hooks = hooks;
  }

  /**
   * Adds steps as nodes and wires them to their dependencies, without reporting anything yet:
   * steps already `completed` or `skipped` count as settled (that is how a stopped run continues),
   * and a settled dependency passes its fate on at once. Unknown dependency ids are left out
   * (validation reports them). Follow with {@linkcode admit}. Returns the first new node number.
   */
  add(steps: readonly Step[]): number {
    const first = this.nodes.length;
    for (const step of steps) {
      const i = this.nodes.length;
      this.nodes.push(step);
      if (!this.byId.has(step.id)) this.byId.set(step.id, i);
      const done = step.status === "completed" || step.status === "skipped";
      this.#remaining.push(0);
      this.#dependents.push([]);
      this.#phase.push(done ? SETTLED : WAITING);
      this.#poison.push(NO_POISON);
      this.#culprit.push(undefined);
    }
    const end = this.nodes.length;
    for (let n = first; n < end; n++) {
      const ids = this.nodes[n].dependsOn;
      for (let k = 0; k < ids.length; k++) {
        const d = this.byId.get(ids[k]);
        if (d === undefined || (ids.length > 1 && ids.indexOf(ids[k]) !== k)) continue;
        this.#dependents[d].push(n);
        this.#remaining[n]++;
      }
    }
    // Settled dependencies, in node order, pass their fate on to the new nodes.
    for (let d = 0; d < end; d++) {
      if (this.#phase[d] !== SETTLED) continue;
      const status = this.nodes[d].status;
      const poison = status === "completed" ? NO_POISON : status === "skipped" ? SKIP : BLOCK;
      for (const n of this.#dependents[d]) {
        if (n < first) continue;
        this.#remaining[n]--;
        if (poison > this.#poison[n]) {
          this.#poison[n] = poison;
          this.#culprit[n] = this.nodes[d].id;
        }
      }
    }
    return first;
  }

  /** Queues the waiting nodes from `first` on whose dependencies are done; the others are blocked. */
  admit(first: number): void {
    for (let i = first; i < this.nodes.length; i++) {
      if (this.#phase[i] !== WAITING) continue;
      if (this.#remaining[i] === 0) this.#becomeReady(i);
      else this.#hooks.blocked(i);
    }
  }

  /** Node `i` (which was running) waits again, now for the nodes from `first` on. */
  waitFor(i: number, first: number): void {
    this.#phase[i] = WAITING;
    this.#remaining[i] = 0;
    for (let n = first; n < this.nodes.length; n++) {
      this.#dependents[n].push(i);
      this.#remaining[i]++;
    }
  }

  /** The next queued node, now running; `undefined` when none is queued. */
  next(): number | undefined {
    while (this.#head < this.#queue.length) {
      const i = this.#queue[this.#head++];
      if (this.#phase[i] !== QUEUED) continue;
      this.#phase[i] = RUNNING;
      return i;
    }
    return undefined;
  }

  /** True while queued nodes remain. */
  get hasQueued(): boolean {
    return this.#head < this.#queue.length;
  }

  /** Node `i` settled: its dependents learn it, and those now free are queued (or passed on). */
  settle(i: number, poison: Poison): void {
    this.#phase[i] = SETTLED;
    const work: number[] = [];
    this.#release(i, poison, work);
    for (const d of work) this.#becomeReady(d);
  }

  /** Node `i` stopped before its outcome: it waits to run again (in a later run). */
  requeue(i: number): void {
    this.#phase[i] = WAITING;
  }

  /** True when node `i` has settled. */
  settled(i: number): boolean {
    return this.#phase[i] === SETTLED;
  }

  /** The dependency that skipped or blocked node `i`, when one did. */
  culprit(i: number): string | undefined {
    return this.#culprit[i];
  }

  /** After a stop: 1 for each unsettled node downstream of a failed or blocked one. */
  blockedAfterStop(): Uint8Array {
    const n = this.nodes.length;
    const work: number[] = [];
    for (let i = 0; i < n; i++) {
      const status = this.nodes[i].status;
      if (this.#phase[i] === SETTLED && (status === "failed" || status === "blocked")) work.push(i);
    }
    const blocked = new Uint8Array(n);
    while (work.length > 0) {
      const i = work.pop()!;
      for (const d of this.#dependents[i]) {
        if (this.#phase[d] === SETTLED || blocked[d]) continue;
        blocked[d] = 1;
        work.push(d);
      }
    }
    return blocked;
  }

  /** A node's last dependency settled: queue it, or pass a skip/block on (iteratively). */
  #becomeReady(start: number): void {
    const work = [start];
    while (work.length > 0) {
      const i = work.pop()!;
      if (this.#phase[i] !== WAITING) continue;
      const poison = this.#poison[i];
      if (poison === NO_POISON) {
        this.#phase[i] = QUEUED;
        this.#hooks.ready(i);
        this.#queue.push(i);
        continue;
      }
      this.#phase[i] = SETTLED;
      this.#hooks.passedOn(i, poison === SKIP ? "skipped" : "blocked", this.#culprit[i]);
      this.#release(i, poison as Poison, work);
    }
  }

  #release(i: number, poison: Poison, work: number[]): void {
    const id = this.nodes[i].id;
    for (const d of this.#dependents[i]) {
      if (poison > this.#poison[d]) {
        this.#poison[d] = poison;
        this.#culprit[d] = id;
      }
      if (--this.#remaining[d] === 0) work.push(d);
    }
  }
}
