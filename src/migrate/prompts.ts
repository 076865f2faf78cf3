/**
 * Prompt rewrites of a migration: intents renamed where the prompt tells the model what to answer,
 * climpt's `${context.<key>}` templates turned into stepflow variables, and the variables a prompt
 * uses listed so the converter can check that something provides each one.
 *
 * @module
 */

/** Result of {@linkcode renameIntentsInPrompt}. */
export interface PromptRewrite {
  /** The rewritten text. */
  text: string;
  /** `[line, before → after]` of every change. */
  changes: { line: number; from: string; to: string }[];
}

/**
 * Renames intents where a prompt names them as an answer: quoted (`"closing"`, `'closing'`) or in
 * backticks (`` `closing` ``), plus `action: closing` in YAML-like examples. Prose such as "before
 * closing the issue" is left alone — only a literal answer value is an instruction to the model.
 *
 * @example
 * ```ts
 * import { renameIntentsInPrompt } from "./prompts.ts";
 * renameIntentsInPrompt('Return `"handoff"` when done', { handoff: "complete" }).text;
 * // 'Return `"complete"` when done'
 * ```
 */
export function renameIntentsInPrompt(
  text: string,
  renames: Readonly<Record<string, string>>,
): PromptRewrite {
  const names = Object.keys(renames);
  if (names.length === 0) return { text, changes: [] };
  const alternation = names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
  const pattern = new RegExp(
    `(["'\`])(${alternation})\\1|(\\baction:\\s*)(${alternation})\\b(?![-_])`,
    "g",
  );
  const changes: PromptRewrite["changes"] = [];
  let line = 1;
  let scanned = 0;
  const out = text.replace(pattern, (match, quote, quoted, prefix, bare, offset: number) => {
    for (let i = scanned; i < offset; i++) if (text.charCodeAt(i) === 10) line++;
    scanned = offset;
    const name = (quoted ?? bare) as string;
    const replacement = quote ? `${quote}${renames[name]}${quote}` : `${prefix}${renames[name]}`;
    changes.push({ line, from: match, to: replacement });
    return replacement;
  });
  return { text: out, changes };
}

/** `{uv-<name>}` variables a prompt uses, in order of first use. */
export function uvVariablesOf(text: string): string[] {
  const seen = new Set<string>();
  for (const m of text.matchAll(/\{uv-([A-Za-z0-9_][A-Za-z0-9_.-]*)\}/g)) seen.add(m[1]);
  return [...seen];
}

/** True when the prompt reads stdin (`{input_text}`). */
export function usesInputText(text: string): boolean {
  return text.includes("{input_text}");
}

/**
 * Rewrites climpt's `${context.<key>}` command templates to stepflow's `{uv-<key>}`.
 *
 * @example
 * ```ts
 * import { contextTemplatesToVariables } from "./prompts.ts";
 * contextTemplatesToVariables("${context.prNumber}"); // "{uv-prNumber}"
 * ```
 */
export function contextTemplatesToVariables(value: string): string {
  return value.replace(/\$\{context\.([A-Za-z0-9_.-]+)\}/g, "{uv-$1}");
}
