/**
 * An upper bound of the tokens a chat-API prompt can count, for the run's budget to know a call's
 * worst case before it is sent: every token of the byte-level tokenizers the APIs use stands for at
 * least one byte of text, so the UTF-8 bytes of everything sent — system prompt, history, this
 * step's messages, tool definitions, the output schema — bound the text's tokens; the API's own
 * framing (role markers per message, the tool-use instructions a server adds) is bounded by
 * {@linkcode PROMPT_FRAMING_TOKENS} and {@linkcode MESSAGE_FRAMING_TOKENS}.
 *
 * @module
 */
import type { ChatTurn } from "./conversation.ts";
import type { ToolSpec, ToolTurnMessage } from "./tool_turn.ts";

/**
 * Tokens one call's framing may add beyond its text: the tool-use system prompt a server adds
 * when tools are offered (a few hundred tokens on the Messages API) and the request's own markers.
 */
export const PROMPT_FRAMING_TOKENS = 1024;

/** Tokens one message's framing may add (its role and separators). */
export const MESSAGE_FRAMING_TOKENS = 16;

/** What a chat backend sends in one attempt, as far as its size goes. */
export interface PromptParts {
  /** The system prompt. */
  system?: string;
  /** The conversation so far and the new user turn. */
  turns: readonly ChatTurn[];
  /** A tool turn's messages after the turns. */
  toolMessages?: readonly ToolTurnMessage[];
  /** The tools offered. */
  tools?: readonly ToolSpec[];
  /** The output schema sent as a parameter (native structured output). */
  schema?: Record<string, unknown>;
}

/** JSON text lengths of tool lists and schemas, which are the same objects on every turn. */
const jsonBytes = new WeakMap<object, number>();

/**
 * At least as many tokens as `parts` can count (see the module's note).
 *
 * @example
 * ```ts
 * import { promptTokenBound } from "./prompt_bound.ts";
 * promptTokenBound({ turns: [{ role: "user", content: "héllo" }] }); // 6 bytes + 16 + 1024 = 1046
 * ```
 */
export function promptTokenBound(parts: PromptParts): number {
  let bytes = PROMPT_FRAMING_TOKENS;
  if (parts.system) bytes += utf8Length(parts.system) + MESSAGE_FRAMING_TOKENS;
  for (const turn of parts.turns) bytes += utf8Length(turn.content) + MESSAGE_FRAMING_TOKENS;
  for (const message of parts.toolMessages ?? []) {
    bytes += MESSAGE_FRAMING_TOKENS;
    if (message.role === "user") bytes += utf8Length(message.content);
    else if (message.role === "assistant") {
      bytes += utf8Length(message.text);
      for (const call of message.toolCalls) {
        bytes += MESSAGE_FRAMING_TOKENS + utf8Length(String(call.id)) + utf8Length(call.name) +
          (typeof call.arguments === "string"
            ? utf8Length(call.arguments)
            : utf8Length(JSON.stringify(call.arguments ?? {}) ?? ""));
      }
    } else {
      for (const result of message.results) {
        bytes += MESSAGE_FRAMING_TOKENS + utf8Length(result.id) + utf8Length(result.name) +
          utf8Length(result.content);
      }
    }
  }
  if (parts.tools?.length) bytes += jsonLength(parts.tools);
  if (parts.schema) bytes += jsonLength(parts.schema);
  return bytes;
}

/** The UTF-8 length of `text` in bytes (a lone surrogate counts 3, as it is sent replaced). */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code < 0x800) bytes += 1;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      // A surrogate pair is 4 bytes for its 2 code units.
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 2;
        i++;
      } else bytes += 2;
    } else bytes += 2;
  }
  return bytes;
}

function jsonLength(value: object): number {
  let length = jsonBytes.get(value);
  if (length === undefined) {
    length = utf8Length(JSON.stringify(value) ?? "");
    jsonBytes.set(value, length);
  }
  return length;
}
