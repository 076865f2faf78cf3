/**
 * In-memory conversation history for the stateless chat APIs (Anthropic Messages, OpenAI chat
 * completions), so that the iterations of one run continue one conversation. Bounded twice: the
 * least recently used sessions are dropped beyond `maxSessions`, and the oldest turns of a session
 * beyond `maxMessages`.
 *
 * @module
 */

/** One turn of a conversation. */
export interface ChatTurn {
  /** Who spoke. */
  role: "user" | "assistant";
  /** What was said. */
  content: string;
}

/** Bounds of a {@linkcode ConversationStore}. */
export interface ConversationLimits {
  /** Sessions kept (least recently used dropped first). Default 32. */
  maxSessions?: number;
  /** Turns kept per session (oldest user/assistant pairs dropped first). Default 40. */
  maxMessages?: number;
}

/**
 * Keeps the turns of each session id.
 *
 * @example
 * ```ts
 * import { ConversationStore } from "./conversation.ts";
 * const store = new ConversationStore({ maxMessages: 4 });
 * store.append("s1", [{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }]);
 * console.log(store.get("s1").length); // 2
 * ```
 */
export class ConversationStore {
  readonly #sessions = new Map<string, ChatTurn[]>();
  readonly #maxSessions: number;
  readonly #maxMessages: number;

  /**
   * Creates an empty store.
   *
   * @param limits session and turn bounds
   */
  constructor(limits: ConversationLimits = {}) {
    this.#maxSessions = Math.max(1, limits.maxSessions ?? 32);
    // Keep an even number so the kept history always starts with a user turn.
    this.#maxMessages = Math.max(2, (limits.maxMessages ?? 40) - ((limits.maxMessages ?? 40) % 2));
  }

  /** The turns of `sessionId` (empty when unknown); a copy. */
  get(sessionId: string | undefined): ChatTurn[] {
    if (sessionId === undefined) return [];
    return [...(this.#sessions.get(sessionId) ?? [])];
  }

  /** Adds turns to `sessionId`, marking it most recently used and applying the bounds. */
  append(sessionId: string, turns: ChatTurn[]): void {
    const history = this.#sessions.get(sessionId) ?? [];
    this.#sessions.delete(sessionId);
    history.push(...turns);
    if (history.length > this.#maxMessages) {
      let drop = history.length - this.#maxMessages;
      if (drop % 2 === 1) drop++;
      history.splice(0, drop);
    }
    this.#sessions.set(sessionId, history);
    while (this.#sessions.size > this.#maxSessions) {
      const oldest = this.#sessions.keys().next().value as string;
      this.#sessions.delete(oldest);
    }
  }

  /** Number of sessions held. */
  get size(): number {
    return this.#sessions.size;
  }
}
