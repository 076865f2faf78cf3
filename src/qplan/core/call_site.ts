/**
 * A QPlan call site compiled once: an action line's module and its arguments sorted into
 * constants, bare paths and expressions, with the argument checker that knows which of them can
 * change between calls. Each later call only evaluates what may differ.
 *
 * @module
 */
import type { ActionStatement, Expr, PathExpr } from "./ast.ts";
import { type ArgChecker, createArgChecker } from "./arg_check.ts";
import { evaluate, resolveBare } from "./evaluate.ts";
import type { ExecutionContext } from "./execution_context.ts";
import type { QPlanTool } from "./tool_types.ts";
import { setOwn } from "../../own_record.ts";

/** How an argument gets its value: fixed at compile time, a bare path, or an expression. */
const CONST = 0;
const BARE = 1;
const EXPR = 2;

/** An action line compiled for repeated calls. */
export interface CallSite {
  node: ActionStatement;
  tool: QPlanTool;
  /** Per argument, in order: its key, kind (CONST, BARE, EXPR), constant and expression. */
  keys: string[];
  kinds: number[];
  consts: unknown[];
  exprs: Expr[];
  /** No key is `__proto__`: plain assignment is safe. */
  safeKeys: boolean;
  checker: ArgChecker;
}

/** Compiles the action line `node` that calls `tool` (`fastPath`: skip zod for checked types). */
export function compileCallSite(
  node: ActionStatement,
  tool: QPlanTool,
  fastPath: boolean,
): CallSite {
  const keys: string[] = [];
  const kinds: number[] = [];
  const consts: unknown[] = [];
  const exprs: Expr[] = [];
  const dynamic: string[] = [];
  if (node.printItems) dynamic.push("items");
  for (const arg of node.args) {
    keys.push(arg.key);
    exprs.push(arg.value);
    if (arg.value.kind === "literal") {
      kinds.push(CONST);
      consts.push(arg.value.value);
    } else {
      kinds.push(arg.bare ? BARE : EXPR);
      consts.push(undefined);
      dynamic.push(arg.key);
    }
  }
  return {
    node,
    tool,
    keys,
    kinds,
    consts,
    exprs,
    safeKeys: !keys.includes("__proto__"),
    checker: createArgChecker(tool.inputSchema, dynamic, fastPath),
  };
}

/** The arguments of one call at `site`, evaluated in `ctx`. */
export function callSiteArgs(site: CallSite, ctx: ExecutionContext): Record<string, unknown> {
  const { keys, kinds, consts, exprs } = site;
  const args: Record<string, unknown> = {};
  for (let i = 0; i < keys.length; i++) {
    const kind = kinds[i];
    const value = kind === CONST
      ? consts[i]
      : kind === BARE
      ? resolveBare(exprs[i] as PathExpr, ctx)
      : evaluate(exprs[i], ctx);
    if (site.safeKeys) args[keys[i]] = value;
    else setOwn(args, keys[i], value);
  }
  if (site.node.printItems) {
    args.items = site.node.printItems.map((item) => {
      const value = item.bare && item.value.kind === "path"
        ? resolveBare(item.value, ctx)
        : evaluate(item.value, ctx);
      return item.label === undefined ? { value } : { label: item.label, value };
    });
  }
  return args;
}
