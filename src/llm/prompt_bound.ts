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
import type { AttemptBound } from "./types.ts";

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

/**
 * What the run's meter is told of a chat-API attempt (see `AttemptMeter`): the model, the quick
 * bound of its prompt, the closer one when asked (read once), and the most output it asks for.
 *
 * @example
 * ```ts
 * import { attemptBound } from "./prompt_bound.ts";
 * const bound = attemptBound("gpt-4o", 8192, { turns: [{ role: "user", content: "Hi" }] });
 * console.log(bound.promptTokensCeiling, bound.promptTokens()); // 1046 1042
 * ```
 */
export function attemptBound(
  model: string,
  maxOutputTokens: number | undefined,
  prompt: PromptParts,
): AttemptBound {
  let promptTokens: number | undefined;
  return {
    model,
    ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
    promptTokensCeiling: promptTokenCeiling(prompt),
    promptTokens: () => promptTokens ??= promptTokenBound(prompt),
  };
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
  return measure(parts, utf8Length, 1);
}

/**
 * A quicker, looser bound than {@linkcode promptTokenBound}: three bytes per UTF-16 code unit (the
 * most one can take in UTF-8), counted without reading the text. A budget far from spent needs no
 * closer figure.
 *
 * @example
 * ```ts
 * import { promptTokenCeiling } from "./prompt_bound.ts";
 * promptTokenCeiling({ turns: [{ role: "user", content: "hello" }] }); // 15 + 16 + 1024 = 1055
 * ```
 */
export function promptTokenCeiling(parts: PromptParts): number {
  return measure(parts, codeUnitsTimesThree, 3);
}

function codeUnitsTimesThree(text: string): number {
  return text.length * 3;
}

/** The bound of `parts` with `size` for each text (`jsonFactor` for the cached JSON lengths). */
function measure(parts: PromptParts, size: (text: string) => number, jsonFactor: number): number {
  let bytes = PROMPT_FRAMING_TOKENS;
  if (parts.system) bytes += size(parts.system) + MESSAGE_FRAMING_TOKENS;
  for (const turn of parts.turns) bytes += size(turn.content) + MESSAGE_FRAMING_TOKENS;
  for (const message of parts.toolMessages ?? []) {
    bytes += MESSAGE_FRAMING_TOKENS;
    if (message.role === "user") bytes += size(message.content);
    else if (message.role === "assistant") {
      bytes += size(message.text);
      for (const call of message.toolCalls) {
        bytes += MESSAGE_FRAMING_TOKENS + size(String(call.id)) + size(call.name) +
          (typeof call.arguments === "string"
            ? size(call.arguments)
            : size(JSON.stringify(call.arguments ?? {}) ?? ""));
      }
    } else {
      for (const result of message.results) {
        bytes += MESSAGE_FRAMING_TOKENS + size(result.id) + size(result.name) +
          size(result.content);
      }
    }
  }
  if (parts.tools?.length) bytes += jsonLength(parts.tools) * jsonFactor;
  if (parts.schema) bytes += jsonLength(parts.schema) * jsonFactor;
  return bytes;
}

/** The UTF-8 length of `text` in bytes (a lone surrogate counts 3, as it is sent replaced). */
export function utf8Length(text: string): number {
  // The platform's encoder counts fastest; long texts go through it in slices.
  let bytes = 0;
  for (let from = 0; from < text.length; from += SLICE_CHARS) {
    let end = Math.min(text.length, from + SLICE_CHARS);
    // A slice must not split a surrogate pair (each half would count as a replacement).
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end++;
    const part = from === 0 && end === text.length ? text : text.slice(from, end);
    bytes += encoder.encodeInto(part, scratch).written;
    from = end - SLICE_CHARS;
  }
  return bytes;
}

/** Characters encoded at once; the scratch buffer holds their worst case (3 bytes each, +1 pair). */
const SLICE_CHARS = 16_384;
const encoder = new TextEncoder();
const scratch = new Uint8Array(SLICE_CHARS * 3 + 8);

function jsonLength(value: object): number {
  let length = jsonBytes.get(value);
  if (length === undefined) {
    length = utf8Length(JSON.stringify(value) ?? "");
    jsonBytes.set(value, length);
  }
  return length;
}
