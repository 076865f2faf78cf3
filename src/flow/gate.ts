/**
 * The structured gate of a gate-routed step: reads the intent, jump target and handoff
 * fields out of a step's structured output.
 *
 * @module
 */
import type { GateIntent, StructuredGate } from "../definition/schema.ts";
import { setOwn } from "../own_record.ts";

/** What a gate reads from one output. */
export interface GateInterpretation {
  /** The intent after mapping (`continue` → `next`, …), or undefined when the output has none. */
  intent?: GateIntent;
  /** The raw value found at `intentField`, when it was a string but not a known intent. */
  unknownIntent?: string;
  /** The jump target read at `targetField`, when any. */
  target?: string;
  /** Handoff values keyed by the last segment of each `handoffFields` path. */
  handoff: Record<string, unknown>;
}

const INTENT_MAP: Readonly<Record<string, GateIntent>> = {
  next: "next",
  continue: "next",
  repeat: "repeat",
  retry: "repeat",
  wait: "repeat",
  jump: "jump",
  complete: "complete",
  abort: "abort",
  escalate: "abort",
};

/**
 * Maps an AI response value to a {@linkcode GateIntent} (case-insensitive), as docs/agents.md lists
 * them under `intentField`:
 * `continue→next`, `retry→repeat`, `wait→repeat`, `escalate→abort`, and the five intents as themselves.
 *
 * @example
 * ```ts
 * import { mapIntent } from "./gate.ts";
 * mapIntent("Continue"); // "next"
 * mapIntent("ship-it"); // undefined
 * ```
 */
export function mapIntent(value: string): GateIntent | undefined {
  const key = value.trim().toLowerCase();
  // The value comes from a model: "constructor" must be an unknown intent, not Object's constructor.
  return Object.hasOwn(INTENT_MAP, key) ? INTENT_MAP[key] : undefined;
}

/**
 * Reads a dot path (`next_action.details.target`, also `items[0].name`) from a value.
 *
 * @example
 * ```ts
 * import { readPath } from "./gate.ts";
 * readPath({ a: { b: [{ c: 1 }] } }, "a.b[0].c"); // 1
 * ```
 */
export function readPath(value: unknown, path: string): unknown {
  let node = value;
  for (const segment of splitPath(path)) {
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, segment)) {
      return undefined;
    }
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

const pathCache = new Map<string, string[]>();

function splitPath(path: string): string[] {
  let parts = pathCache.get(path);
  if (!parts) {
    parts = path.replace(/\[(\d+)\]/g, ".$1").split(".").filter((p) => p !== "");
    pathCache.set(path, parts);
  }
  return parts;
}

/** The key a handoff path is stored under: its last segment (`analysis.approach` → `approach`). */
export function handoffKey(path: string): string {
  const parts = splitPath(path);
  return parts[parts.length - 1] ?? path;
}

/**
 * Interprets one structured output with a step's gate.
 *
 * @example
 * ```ts
 * import { interpretGate } from "./gate.ts";
 * interpretGate(
 *   { next_action: { action: "continue" }, analysis: { approach: "tests first" } },
 *   { allowedIntents: ["next"], intentField: "next_action.action", handoffFields: ["analysis.approach"] },
 * ); // { intent: "next", handoff: { approach: "tests first" } }
 * ```
 */
export function interpretGate(output: unknown, gate: StructuredGate): GateInterpretation {
  const result: GateInterpretation = { handoff: {} };
  const raw = readPath(output, gate.intentField);
  if (typeof raw === "string" && raw.trim() !== "") {
    const intent = mapIntent(raw);
    if (intent) result.intent = intent;
    else result.unknownIntent = raw;
  }
  if (gate.targetField) {
    const target = readPath(output, gate.targetField);
    if (typeof target === "string" && target !== "") result.target = target;
  }
  for (const path of gate.handoffFields ?? []) {
    const value = readPath(output, path);
    if (value !== undefined) setOwn(result.handoff, handoffKey(path), value);
  }
  return result;
}
