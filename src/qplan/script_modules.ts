/**
 * The modules a QPlan script calls, read from its source without running it: `qplan run` starts
 * the MCP servers whose tools (`mcp__<server>__<tool>`) a script names, and only those.
 *
 * @module
 */
import type { Statement } from "./core/ast.ts";
import { QPlanSyntaxError } from "./core/errors.ts";
import { parseScript } from "./core/parser.ts";

/**
 * The module of every action in `source`, each once; `[]` for a script that does
 * not parse (running or validating it reports the syntax error).
 *
 * @example
 * ```ts
 * import { scriptModules } from "./script_modules.ts";
 * scriptModules('step id="a" {\n  mcp__files__read_text_file path="a.txt" -> t\n  print t\n}');
 * // ["mcp__files__read_text_file", "print"]
 * ```
 */
export function scriptModules(source: string): string[] {
  let body: Statement[];
  try {
    body = parseScript(source).body;
  } catch (error) {
    if (error instanceof QPlanSyntaxError) return [];
    throw error;
  }
  const modules = new Set<string>();
  // An explicit stack: scripts nest up to the parser's depth limit.
  const pending: Statement[][] = [body];
  for (let block = pending.pop(); block; block = pending.pop()) {
    for (const stmt of block) {
      switch (stmt.kind) {
        case "action":
          modules.add(stmt.module);
          break;
        case "if":
          pending.push(stmt.then);
          if (stmt.else) pending.push(stmt.else);
          break;
        case "while":
        case "each":
        case "parallel":
          pending.push(stmt.body);
          break;
        case "step":
          pending.push(stmt.children);
          break;
      }
    }
  }
  return [...modules];
}
