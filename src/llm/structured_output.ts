/**
 * Extracts a JSON value from model text, for backends (or servers) that cannot return structured
 * output natively. The order is fixed: the whole text as JSON, then the first fenced ```json block
 * (or any fenced block that parses), then the first balanced `{…}` object in the text.
 *
 * @module
 */

/** The outcome of {@linkcode extractJson}. */
export type JsonExtraction =
  | { ok: true; value: unknown; source: "whole" | "fenced" | "balanced" }
  | { ok: false; reason: string };

const FENCE = /```[ \t]*([A-Za-z0-9_-]*)[ \t]*\r?\n?([\s\S]*?)```/g;

/**
 * Finds the JSON value in `text`.
 *
 * @example
 * ```ts
 * import { extractJson } from "./structured_output.ts";
 * const r = extractJson('Sure!\n```json\n{"result":"ok"}\n```');
 * console.log(r.ok && r.value); // { result: "ok" }
 * ```
 */
export function extractJson(text: string): JsonExtraction {
  const trimmed = text.trim();
  if (trimmed === "") return { ok: false, reason: "the response is empty" };
  const whole = tryParse(trimmed);
  if (whole.ok) return { ok: true, value: whole.value, source: "whole" };

  const fences = [...trimmed.matchAll(FENCE)];
  // A block labelled json wins over unlabelled ones.
  fences.sort((a, b) => rank(a[1]) - rank(b[1]));
  for (const fence of fences) {
    const parsed = tryParse(fence[2].trim());
    if (parsed.ok) return { ok: true, value: parsed.value, source: "fenced" };
  }

  const balanced = firstBalancedObject(trimmed);
  if (balanced !== undefined) {
    const parsed = tryParse(balanced);
    if (parsed.ok) return { ok: true, value: parsed.value, source: "balanced" };
  }
  return {
    ok: false,
    reason:
      "no JSON found: the response is not JSON, has no ```json block and no balanced {…} object",
  };
}

function rank(label: string | undefined): number {
  return label?.toLowerCase() === "json" ? 0 : 1;
}

function tryParse(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** Returns the first `{…}` substring whose braces balance, honouring JSON strings and escapes. */
export function firstBalancedObject(text: string): string | undefined {
  let start = text.indexOf("{");
  while (start >= 0) {
    let depth = 0;
    let inString = false;
    let escaped = false;
    for (let i = start; i < text.length; i++) {
      const ch = text[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (ch === "\\") escaped = true;
        else if (ch === '"') inString = false;
        continue;
      }
      if (ch === '"') inString = true;
      else if (ch === "{") depth++;
      else if (ch === "}") {
        depth--;
        if (depth === 0) {
          const candidate = text.slice(start, i + 1);
          if (tryParse(candidate).ok) return candidate;
          break;
        }
      }
    }
    start = text.indexOf("{", start + 1);
  }
  return undefined;
}
