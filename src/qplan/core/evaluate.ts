/**
 * Expression evaluation: arithmetic (`+` concatenates when a side is text), comparisons, `and`,
 * `or`, `not`, `EXISTS` / `NOT_EXISTS`, variable paths with `.field`, `[index]`, and `.length` /
 * `.count` on lists. Only own properties are read, never inherited ones.
 *
 * @module
 */
import type { Expr, PathExpr } from "./ast.ts";
import type { ExecutionContext } from "./execution_context.ts";
import { setOwn } from "../../own_record.ts";

/** An expression that cannot be evaluated (e.g. `"a" - 1`); carries the position of the culprit. */
export class ExpressionError extends Error {
  /** 1-based line. */
  readonly line: number;
  /** 1-based column. */
  readonly column: number;
  /**
   * Creates the error for an expression at a position.
   *
   * @param message what is wrong
   * @param at the expression concerned
   */
  constructor(message: string, at: { line: number; column: number }) {
    super(message);
    this.name = "ExpressionError";
    this.line = at.line;
    this.column = at.column;
  }
}

/**
 * Evaluates an expression against a run's variables. Unknown variables evaluate to undefined
 * (which `EXISTS` tests); the validator reports them before a run starts.
 *
 * @example
 * ```ts
 * import { parseExpression } from "./parser.ts";
 * import { ExecutionContext } from "./execution_context.ts";
 * import { evaluate } from "./evaluate.ts";
 * const ctx = new ExecutionContext("r", { items: [1, 2, 3] });
 * console.log(evaluate(parseExpression('"n=" + items.count'), ctx)); // "n=3"
 * ```
 */
export function evaluate(expr: Expr, ctx: ExecutionContext): unknown {
  switch (expr.kind) {
    case "literal":
      return expr.value;
    case "path":
      return readPath(expr, ctx, rootValue(expr.root, ctx));
    case "array": {
      const out = new Array(expr.items.length);
      for (let i = 0; i < expr.items.length; i++) out[i] = evaluate(expr.items[i], ctx);
      return out;
    }
    case "object": {
      const out: Record<string, unknown> = {};
      for (const e of expr.entries) setOwn(out, e.key, evaluate(e.value, ctx));
      return out;
    }
    case "unary":
      if (expr.op === "not") return !truthy(evaluate(expr.operand, ctx));
      return -toNumber(evaluate(expr.operand, ctx), "-", expr);
    case "exists": {
      const v = evaluate(expr.operand, ctx);
      const present = v !== undefined && v !== null && v !== "";
      return expr.negated ? !present : present;
    }
    case "binary": {
      const op = expr.op;
      if (op === "and") {
        return truthy(evaluate(expr.left, ctx)) && truthy(evaluate(expr.right, ctx));
      }
      if (op === "or") return truthy(evaluate(expr.left, ctx)) || truthy(evaluate(expr.right, ctx));
      const l = evaluate(expr.left, ctx);
      const r = evaluate(expr.right, ctx);
      switch (op) {
        case "+":
          if (typeof l === "number" && typeof r === "number") return l + r;
          if (typeof l === "string" || typeof r === "string") return toText(l) + toText(r);
          return toNumber(l, "+", expr) + toNumber(r, "+", expr);
        case "-":
          return toNumber(l, "-", expr) - toNumber(r, "-", expr);
        case "*":
          return toNumber(l, "*", expr) * toNumber(r, "*", expr);
        case "/":
          return toNumber(l, "/", expr) / toNumber(r, "/", expr);
        case "==":
          // deno-lint-ignore eqeqeq
          return l == r;
        case "!=":
          // deno-lint-ignore eqeqeq
          return l != r;
        case "<":
          return (l as number) < (r as number);
        case ">":
          return (l as number) > (r as number);
        case "<=":
          return (l as number) <= (r as number);
        case ">=":
          return (l as number) >= (r as number);
      }
    }
  }
  // Unreachable for a well-formed AST.
  throw new ExpressionError(`cannot evaluate ${(expr as Expr).kind}`, expr as Expr);
}

/**
 * The value of a bare action argument (`b=unknown`, `arr=load.list`): the variable when its root
 * exists, otherwise the text as written.
 */
export function resolveBare(path: PathExpr, ctx: ExecutionContext): unknown {
  const vars = ctx.vars;
  let root = vars.get(path.root);
  if (root === undefined && !vars.has(path.root)) {
    if (!Object.hasOwn(ctx.results, path.root)) return path.text;
    root = ctx.results[path.root];
  }
  return path.segments.length === 0 ? root : readPath(path, ctx, root);
}

/** QPlan truthiness (JavaScript's). */
export function truthy(v: unknown): boolean {
  return Boolean(v);
}

function rootValue(name: string, ctx: ExecutionContext): unknown {
  const v = ctx.vars.get(name);
  if (v !== undefined) return v;
  if (ctx.vars.has(name)) return undefined;
  return Object.hasOwn(ctx.results, name) ? ctx.results[name] : undefined;
}

function readPath(path: PathExpr, ctx: ExecutionContext, root: unknown): unknown {
  let value = root;
  const segments = path.segments;
  for (let i = 0; i < segments.length; i++) {
    if (value === undefined || value === null) return undefined;
    const seg = segments[i];
    const key = seg.kind === "prop" ? seg.name : evaluate(seg.index, ctx);
    value = member(value, key);
  }
  return value;
}

function member(value: unknown, key: unknown): unknown {
  if (Array.isArray(value)) {
    if (key === "length" || key === "count") return value.length;
    if (typeof key === "number") return value[key];
    if (typeof key === "string" && /^\d+$/.test(key)) return value[Number(key)];
    return Object.hasOwn(value, key as PropertyKey) ? value[key as never] : undefined;
  }
  if (typeof value === "string") {
    if (key === "length" || key === "count") return value.length;
    if (typeof key === "number") return value[key];
    return undefined;
  }
  if (typeof value === "object") {
    const k = typeof key === "number" ? String(key) : key;
    if (typeof k !== "string") return undefined;
    return Object.hasOwn(value as object, k) ? (value as Record<string, unknown>)[k] : undefined;
  }
  return undefined;
}

function toNumber(v: unknown, op: string, at: { line: number; column: number }): number {
  if (typeof v === "number") return v;
  if (typeof v === "string" && v.trim() !== "") {
    const n = Number(v);
    if (!Number.isNaN(n)) return n;
  }
  if (typeof v === "boolean") return v ? 1 : 0;
  throw new ExpressionError(`operator '${op}' needs numbers, got ${describeValue(v)}`, at);
}

function toText(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === undefined) return "undefined";
  if (v !== null && typeof v === "object") {
    try {
      return JSON.stringify(v);
    } catch {
      return String(v);
    }
  }
  return String(v);
}

/** A short description of a value for error messages: `"abc"`, `42`, `a list`, `undefined`. */
export function describeValue(v: unknown): string {
  if (v === undefined) return "undefined";
  if (v === null) return "null";
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? `${v.slice(0, 37)}...` : v);
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return `a list of ${v.length}`;
  if (v instanceof Promise) return "a future";
  return typeof v === "object" ? "an object" : typeof v;
}
