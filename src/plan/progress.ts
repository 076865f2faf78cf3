/**
 * A replaying event stream: every consumer sees every event from the start, so iterating after the
 * run began loses nothing.
 *
 * @module
 */

/** An append-only log readable as an `AsyncIterable` by any number of consumers. */
export class EventLog<T> implements AsyncIterable<T> {
  readonly #events: T[] = [];
  #closed = false;
  #wake: (() => void)[] = [];

  /** Appends an event. Ignored after {@linkcode EventLog.close}. */
  push(event: T): void {
    if (this.#closed) return;
    this.#events.push(event);
    this.#notify();
  }

  /** Ends the stream: consumers finish after the last event. */
  close(): void {
    this.#closed = true;
    this.#notify();
  }

  /** Every event so far. */
  get events(): readonly T[] {
    return this.#events;
  }

  /** Iterates from the first event until the log is closed. */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let i = 0;
    for (;;) {
      while (i < this.#events.length) yield this.#events[i++];
      if (this.#closed) return;
      await new Promise<void>((resolve) => this.#wake.push(resolve));
    }
  }

  #notify(): void {
    if (this.#wake.length === 0) return;
    const wake = this.#wake;
    this.#wake = [];
    for (const resolve of wake) resolve();
  }
}
