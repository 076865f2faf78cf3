/**
 * What a `claude-code` call shows while it runs: the Claude Agent SDK's stream messages read as the
 * one event vocabulary — each tool call Claude Code makes (`tool_use` blocks of assistant messages,
 * `tool_result` blocks of the user messages that answer them) as `requested` → `decided` →
 * `finished` reports, and the model's text as it streams (`stream_event` text deltas when partial
 * messages are on, else the text blocks of each assistant message).
 *
 * Claude Code decides and runs its tools itself, so every decision is `decidedBy: "claude-code"`: a
 * call is allowed once it makes progress or returns, refused when Claude Code reports a
 * `permission_denied` for it.
 *
 * @module
 */
import type { ToolCallEvent } from "../events/types.ts";

/** Characters of a tool result kept in a `finished` report. */
export const CLAUDE_TOOL_RESULT_CHARS = 2_000;

/** Who decides the calls of a `claude-code` step. */
export const CLAUDE_CODE_DECIDER = "claude-code";

/** Where the reports go (the call's `onToolCallEvent` and `onText`). */
export interface ClaudeStreamListeners {
  /** Told of each moment of each tool call (awaited, in order). */
  onToolCallEvent?: (event: ToolCallEvent) => void | Promise<void>;
  /** Told of each piece of the model's text. */
  onText?: (text: string) => void;
}

/** A call seen asked for and not yet finished. */
interface OpenCall {
  tool: string;
  args?: Record<string, unknown>;
  started: number;
  decision?: "allow" | "deny";
}

type Block = Record<string, unknown>;

/**
 * Reads one `query()`'s stream messages (feed each to {@linkcode ClaudeStreamReader.read}, then
 * call {@linkcode ClaudeStreamReader.end} after a result) and reports what they say. A listener
 * that throws never breaks the call.
 *
 * @example
 * ```ts
 * import { ClaudeStreamReader } from "./claude_code_stream.ts";
 * const seen: string[] = [];
 * const reader = new ClaudeStreamReader({ onToolCallEvent: (e) => void seen.push(e.phase) });
 * await reader.read({
 *   type: "assistant", parent_tool_use_id: null,
 *   message: { content: [{ type: "tool_use", id: "t1", name: "Read", input: { file_path: "a" } }] },
 * });
 * await reader.read({
 *   type: "user", parent_tool_use_id: null,
 *   message: { content: [{ type: "tool_result", tool_use_id: "t1", content: "1\ta" }] },
 * });
 * console.log(seen); // ["requested", "decided", "finished"]
 * ```
 */
export class ClaudeStreamReader {
  readonly #listeners: ClaudeStreamListeners;
  readonly #open = new Map<string, OpenCall>();
  /** Ids of assistant messages whose text came as stream deltas (their full text is not re-sent). */
  readonly #streamed = new Set<string>();
  #streaming?: string;
  #wroteText = false;
  #lastTextMessage?: string;
  #unnamed = 0;

  /** @param listeners where the reports go */
  constructor(listeners: ClaudeStreamListeners) {
    this.#listeners = listeners;
  }

  /** Reads one SDK message. */
  async read(message: Record<string, unknown>): Promise<void> {
    switch (message.type) {
      case "stream_event":
        return this.#streamEvent(message);
      case "assistant":
        return await this.#assistant(message);
      case "user":
        return await this.#user(message);
      case "tool_progress":
        return await this.#decide(String(message.tool_use_id ?? ""), "allow");
      case "system":
        if (message.subtype === "permission_denied") {
          return await this.#decide(String(message.tool_use_id ?? ""), "deny");
        }
    }
  }

  /**
   * The turn ended (its result arrived): a call Claude Code never answered is reported finished
   * as an error, so every call reports its three moments.
   */
  async end(): Promise<void> {
    for (const [id, call] of [...this.#open]) {
      await this.#decide(id, "allow");
      await this.#finish(
        id,
        call,
        "Claude Code ended its turn without a result for this call.",
        true,
      );
    }
  }

  #streamEvent(message: Record<string, unknown>): void {
    if (!this.#listeners.onText || message.parent_tool_use_id) return;
    const event = asRecord(message.event);
    if (event.type === "message_start") {
      this.#streaming = stringOf(asRecord(event.message).id) ?? this.#unnamedId();
      return;
    }
    const delta = asRecord(event.delta);
    if (event.type !== "content_block_delta" || delta.type !== "text_delta") return;
    if (typeof delta.text !== "string" || delta.text === "") return;
    this.#streaming ??= this.#unnamedId();
    this.#streamed.add(this.#streaming);
    this.#text(delta.text, this.#streaming);
  }

  async #assistant(message: Record<string, unknown>): Promise<void> {
    const inner = asRecord(message.message);
    const id = stringOf(inner.id) ?? this.#unnamedId();
    const topLevel = !message.parent_tool_use_id;
    for (const block of blocksOf(inner.content)) {
      if (block.type === "text" && topLevel && typeof block.text === "string") {
        // Text already streamed as deltas is not sent twice.
        if (!this.#streamed.has(id)) this.#text(block.text, id);
      } else if (block.type === "tool_use") {
        await this.#requested(block);
      }
    }
  }

  async #user(message: Record<string, unknown>): Promise<void> {
    for (const block of blocksOf(asRecord(message.message).content)) {
      if (block.type !== "tool_result") continue;
      const id = stringOf(block.tool_use_id);
      const call = id ? this.#open.get(id) : undefined;
      // A result for a call this turn never showed (a resumed session's) has nothing to finish.
      if (!id || !call) continue;
      await this.#decide(id, "allow");
      await this.#finish(id, call, resultText(block.content), block.is_error === true);
    }
  }

  async #requested(block: Block): Promise<void> {
    const id = stringOf(block.id) ?? this.#unnamedId();
    const tool = String(block.name ?? "?").slice(0, 200);
    const call: OpenCall = { tool, started: performance.now() };
    const input = block.input;
    if (input !== null && typeof input === "object" && !Array.isArray(input)) {
      call.args = input as Record<string, unknown>;
    }
    this.#open.set(id, call);
    await this.#report({
      phase: "requested",
      callId: id,
      tool,
      ...(call.args ? { args: call.args } : {}),
    });
  }

  /** The call's `decided` report, once: the first word on it wins. */
  async #decide(id: string, decision: "allow" | "deny"): Promise<void> {
    const call = this.#open.get(id);
    if (!call || call.decision) return;
    call.decision = decision;
    await this.#report({
      phase: "decided",
      callId: id,
      tool: call.tool,
      ...(call.args ? { args: call.args } : {}),
      decision,
      decidedBy: CLAUDE_CODE_DECIDER,
    });
  }

  async #finish(id: string, call: OpenCall, result: string, isError: boolean): Promise<void> {
    this.#open.delete(id);
    await this.#report({
      phase: "finished",
      callId: id,
      tool: call.tool,
      ...(call.args ? { args: call.args } : {}),
      decision: call.decision ?? "allow",
      decidedBy: CLAUDE_CODE_DECIDER,
      result: clip(result),
      isError: isError || call.decision === "deny",
      // A refused call did not run.
      durationMs: call.decision === "deny" ? 0 : Math.round(performance.now() - call.started),
    });
  }

  /** An id for what Claude Code sent without one (a message, a call). */
  #unnamedId(): string {
    return `unnamed_${++this.#unnamed}`;
  }

  /** A piece of text; the text of a later message starts on a new line. */
  #text(text: string, messageId: string): void {
    const onText = this.#listeners.onText;
    if (!onText) return;
    const piece = this.#wroteText && messageId !== this.#lastTextMessage ? `\n${text}` : text;
    this.#lastTextMessage = messageId;
    this.#wroteText = true;
    try {
      onText(piece);
    } catch {
      // A listener must never break the call.
    }
  }

  async #report(event: ToolCallEvent): Promise<void> {
    try {
      await this.#listeners.onToolCallEvent?.(event);
    } catch {
      // A listener must never break the call.
    }
  }
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : {};
}

function stringOf(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value.slice(0, 200) : undefined;
}

function blocksOf(content: unknown): Block[] {
  return Array.isArray(content) ? content.map(asRecord) : [];
}

/** A tool result's text: a string, or its text blocks (other blocks named, not dumped). */
function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  return blocksOf(content)
    .map((block) => typeof block.text === "string" ? block.text : `[${String(block.type)}]`)
    .join("\n");
}

function clip(text: string): string {
  return text.length > CLAUDE_TOOL_RESULT_CHARS
    ? `${text.slice(0, CLAUDE_TOOL_RESULT_CHARS)}… (${text.length} characters)`
    : text;
}
