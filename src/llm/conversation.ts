/**
 * In-memory conversation history for the stateless chat APIs (Anthropic Messages, OpenAI chat
 * completions), so that the iterations of one run continue one conversation. Bounded three ways:
 * the least recently used sessions are dropped beyond `maxSessions`, and the oldest turns of a
 * session (a user turn with its answer) beyond `maxMessages` turns or `maxChars` characters. The
 * system prompt is not part of the history: it is sent with every call, whatever is dropped.
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
  /**
   * Characters of turn content kept per session (oldest user/assistant pairs dropped first; a
   * single answer longer than this is not kept either). Default 60,000 (~15k tokens), so that
   * the history of a long run fits the context of a small local model.
   */
  maxChars?: number;
}

/** The default {@linkcode ConversationLimits.maxChars}. */
export const DEFAULT_CONVERSATION_MAX_CHARS = 60_000;

interface Session {
  turns: ChatTurn[];
  chars: number;
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
  readonly #sessions = new Map<string, Session>();
  readonly #maxSessions: number;
  readonly #maxMessages: number;
  readonly #maxChars: number;

  /**
   * Creates an empty store.
   *
   * @param limits session and turn bounds
   */
  constructor(limits: ConversationLimits = {}) {
    this.#maxSessions = Math.max(1, limits.maxSessions ?? 32);
    // Keep an even number so the kept history always starts with a user turn.
    this.#maxMessages = Math.max(2, (limits.maxMessages ?? 40) - ((limits.maxMessages ?? 40) % 2));
    this.#maxChars = Math.max(0, limits.maxChars ?? DEFAULT_CONVERSATION_MAX_CHARS);
  }

  /** The turns of `sessionId` (empty when unknown); a copy. */
  get(sessionId: string | undefined): ChatTurn[] {
    if (sessionId === undefined) return [];
    return [...(this.#sessions.get(sessionId)?.turns ?? [])];
  }

  /** Characters of turn content held for `sessionId`. */
  chars(sessionId: string): number {
    return this.#sessions.get(sessionId)?.chars ?? 0;
  }

  /** Adds turns to `sessionId`, marking it most recently used and applying the bounds. */
  append(sessionId: string, turns: ChatTurn[]): void {
    const session = this.#sessions.get(sessionId) ?? { turns: [], chars: 0 };
    this.#sessions.delete(sessionId);
    const kept = session.turns;
    kept.push(...turns);
    for (let i = 0; i < turns.length; i++) session.chars += turns[i].content.length;
    if (kept.length > this.#maxMessages || session.chars > this.#maxChars) {
      // Drop the oldest turns, two at a time so that the history starts with a user turn.
      let drop = 0;
      let chars = session.chars;
      while (
        drop < kept.length && (kept.length - drop > this.#maxMessages || chars > this.#maxChars)
      ) {
        chars -= kept[drop++].content.length;
        if (drop < kept.length) chars -= kept[drop++].content.length;
      }
      kept.splice(0, drop);
      session.chars = chars;
    }
    this.#sessions.set(sessionId, session);
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
