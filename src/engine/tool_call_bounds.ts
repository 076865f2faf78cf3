/**
 * The bounds on what a model's turn may ask for, applied once, as the turn arrives and before
 * anything keeps it — the run log's `tool_turn` line, a recording, the conversation sent back,
 * events. A call whose arguments are over the bound is refused; the turn keeps an excerpt of them
 * and their size instead of the whole (10 MB of refused arguments made a 20 MB run log). A call id
 * or tool name longer than any a model makes is shortened the same way wherever it appears (a 1 MB
 * id was written five times).
 *
 * @module
 */
import type { ToolCallRequest, ToolTurnResponse } from "../llm/tool_turn.ts";

/** Characters of a call's arguments, as text or as the JSON of an object. */
export const MAX_ARGUMENT_CHARS = 1024 * 1024;
/** Characters kept of arguments over the bound. */
export const ARGUMENT_EXCERPT_CHARS = 2_000;
/** Characters of a call id kept as it is (models send a few dozen). */
export const MAX_CALL_ID_CHARS = 256;
/** Characters of a tool name kept as it is (no registered tool has a longer one). */
export const MAX_TOOL_NAME_CHARS = 200;

/** A turn with its calls bounded, and the calls whose arguments were over the bound. */
export interface BoundedTurn {
  /** The turn to keep and act on. */
  turn: ToolTurnResponse;
  /** By the call's index in the turn: the size of the arguments it sent (they are refused). */
  oversized: Map<number, number>;
}

/**
 * `turn` (number `turnNumber` of the call, from 1) with every call's id, name and arguments within
 * the bounds: a longer id becomes `<its first 40 characters, letters, digits, _ and - only>_t<turn>c<call>_len<length>`
 * (unique in its turn, and accepted back by the providers' APIs), a longer name
 * `<its first 64 characters, likewise>_len<length>`, and arguments over
 * {@linkcode MAX_ARGUMENT_CHARS} the text `<first 2,000 characters>… (<size> characters)`. A turn
 * within the bounds is returned as it is.
 *
 * @example
 * ```ts
 * import { boundToolCalls } from "./tool_call_bounds.ts";
 * const { turn, oversized } = boundToolCalls({
 *   text: "",
 *   toolCalls: [{ id: "c1", name: "Read", arguments: "x".repeat(2_000_000) }],
 * }, 1);
 * console.log(oversized.get(0), String(turn.toolCalls[0].arguments).length); // 2000000 2022
 * ```
 */
export function boundToolCalls(turn: ToolTurnResponse, turnNumber: number): BoundedTurn {
  const oversized = new Map<number, number>();
  let changed = false;
  const toolCalls = turn.toolCalls.map((call, index) => {
    const bounded: ToolCallRequest = { ...call };
    const id = String(call.id);
    if (id.length > MAX_CALL_ID_CHARS) {
      bounded.id = `${safe(id.slice(0, 40))}_t${turnNumber}c${index + 1}_len${id.length}`;
    }
    const name = String(call.name);
    if (name.length > MAX_TOOL_NAME_CHARS) {
      bounded.name = `${safe(name.slice(0, 64))}_len${name.length}`;
    }
    const text = argumentsText(call.arguments);
    if (text.length > MAX_ARGUMENT_CHARS) {
      oversized.set(index, text.length);
      bounded.arguments = `${text.slice(0, ARGUMENT_EXCERPT_CHARS)}… (${text.length} characters)`;
    }
    if (bounded.id !== call.id || bounded.name !== call.name || oversized.has(index)) {
      changed = true;
    }
    return bounded;
  });
  return { turn: changed ? { ...turn, toolCalls } : turn, oversized };
}

/** Letters, digits, `_` and `-` only: what every provider accepts in an id or a tool name. */
function safe(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, "_");
}

/** The arguments as text: as sent, or as JSON ("" when they are no JSON at all). */
function argumentsText(args: unknown): string {
  if (typeof args === "string") return args;
  try {
    return JSON.stringify(args) ?? "";
  } catch {
    return ""; // a cycle or a BigInt: the loop's own checks refuse it
  }
}
