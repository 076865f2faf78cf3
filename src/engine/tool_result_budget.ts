/**
 * The bound of a step's tool conversation: the tool results it carries. A step that reads much
 * (a thousand calls, files of 100,000 characters) would otherwise send, and hold, every result
 * of every turn again on the next one — past any model's context and without bound in memory.
 *
 * When the results held exceed the budget, the oldest are replaced by a short note, down to half
 * the budget: elision happens in batches, so the conversation's prefix stays the same bytes for
 * many turns in between (a server's prompt cache keeps serving it). The results of the latest
 * turn are never elided: the model always sees what it just asked for.
 *
 * @module
 */
import type { ToolTurnMessage } from "../llm/tool_turn.ts";

/** Characters of tool results a step's tool conversation holds at most, by default (~50k tokens). */
export const DEFAULT_MAX_TOOL_RESULT_CHARS = 200_000;

/** The note that replaces an elided result (the model is told how to get it back). */
export function elidedNote(tool: string, chars: number): string {
  return `[elided: ${chars} characters of this ${tool} result, to keep the conversation within its limit; call the tool again if you need it]`;
}

/**
 * Keeps the tool results of one step's conversation within `maxChars`.
 *
 * @example
 * ```ts
 * import { ToolResultBudget } from "./tool_result_budget.ts";
 * import type { ToolTurnMessage } from "../llm/tool_turn.ts";
 * const budget = new ToolResultBudget(100);
 * const messages: ToolTurnMessage[] = [{ role: "user", content: "Go." }];
 * for (let i = 0; i < 3; i++) {
 *   messages.push({ role: "tool", results: [{ id: `c${i}`, name: "Read", content: "x".repeat(60), isError: false }] });
 *   budget.add(messages);
 * }
 * console.log(budget.heldChars <= 100); // true: the oldest results were elided
 * ```
 */
export class ToolResultBudget {
  /** The most characters of results held (`Infinity`: no bound). */
  readonly maxChars: number;
  #held = 0;
  /** The notes put in place of results (a result that merely starts like one is no note). */
  readonly #notes = new WeakSet<object>();
  /** Index of the oldest message whose results may still be elided. */
  #oldest = 0;

  /**
   * Creates the budget.
   *
   * @param maxChars the most characters of tool results held (default
   *   {@linkcode DEFAULT_MAX_TOOL_RESULT_CHARS}; `Infinity` turns the bound off)
   */
  constructor(maxChars: number = DEFAULT_MAX_TOOL_RESULT_CHARS) {
    this.maxChars = Math.max(0, maxChars);
  }

  /** Characters of tool results held now. */
  get heldChars(): number {
    return this.#held;
  }

  /**
   * Counts the results of the last message (just pushed) and, when the total is over the budget,
   * elides the oldest results before it down to half the budget (results shorter than their note
   * are kept). Elided messages are replaced, not changed: a backend may keep what it was sent.
   */
  add(messages: ToolTurnMessage[]): void {
    const last = messages.at(-1);
    if (last?.role !== "tool") return;
    for (const r of last.results) this.#held += r.content.length;
    if (this.#held <= this.maxChars) return;
    const target = this.maxChars / 2;
    const end = messages.length - 1;
    for (let i = this.#oldest; i < end && this.#held > target; i++) {
      const message = messages[i];
      this.#oldest = i;
      if (message.role !== "tool") continue;
      messages[i] = {
        role: "tool",
        results: message.results.map((r) => {
          if (this.#held <= target || this.#notes.has(r)) return r;
          const note = elidedNote(r.name, r.content.length);
          // A result shorter than its note is kept: eliding it would not save anything.
          if (note.length >= r.content.length) return r;
          this.#held += note.length - r.content.length;
          const elided = { ...r, content: note };
          this.#notes.add(elided);
          return elided;
        }),
      };
    }
  }
}
