/**
 * Parses the step grammar (docs/qplan.md, "Steps") into a {@linkcode StepNode}:
 *
 * ```text
 * step "Description" [-> alias] { … }                                   basic form
 * step ["desc"] id="x" [desc="…"] [type="…"] [onError="…"] [-> alias] { … }   extended form
 * ```
 *
 * @module
 */
import type { Statement } from "../core/ast.ts";
import type { Token } from "../core/tokenizer.ts";
import { parseOnErrorPolicy, QPLAN_ON_ERROR } from "../../on_error.ts";
import type { StepAttribute, StepErrorPolicy, StepNode } from "./step_types.ts";

/** What the step parser needs from the statement parser that hosts it. */
export interface StepParserHost {
  /** The token `k` positions ahead (0 = current). */
  peek(k?: number): Token;
  /** Consumes and returns the current token. */
  next(): Token;
  /** Consumes an identifier or fails with a syntax error that says `expected`. */
  expectIdent(expected: string): Token;
  /** Fails with a syntax error at `token`. */
  fail(problem: string, token: Token, expected: string): never;
  /** Parses `{ statements }`; `owner` names the construct in error messages. */
  parseBlock(owner: string, opener: Token): Statement[];
}

/** The step attributes QPlan knows (matched case-insensitively). */
export const STEP_ATTRIBUTES: readonly string[] = ["id", "desc", "type", "onError"];

/**
 * Parses one `step` statement; the host's current token is the `step` keyword.
 *
 * @example
 * ```ts
 * import { parseScript } from "../core/parser.ts";
 * const script = parseScript('step id="read" desc="Read file" onError="retry=2" { var 1 -> x }');
 * const step = script.body[0];
 * if (step.kind === "step") console.log(step.id, step.errorPolicy); // read { kind: "retry", count: 2 }
 * ```
 */
export function parseStepStatement(host: StepParserHost): StepNode {
  const keyword = host.next();
  let positionalDesc: string | undefined;
  if (host.peek().type === "string") positionalDesc = host.next().value;

  const attributes: StepAttribute[] = [];
  for (;;) {
    const t = host.peek();
    if (t.type !== "ident" || !isOp(host.peek(1), "=")) break;
    host.next();
    host.next();
    const v = host.peek();
    if (v.type !== "string" && v.type !== "number" && v.type !== "ident") {
      host.fail(
        `step attribute ${t.value}= needs a value`,
        v,
        'a quoted string, a name or a number (e.g. id="load")',
      );
    }
    host.next();
    attributes.push({ name: t.value, value: v.value, line: t.line, column: t.column });
  }

  let alias: string | undefined;
  if (isOp(host.peek(), "->")) {
    host.next();
    alias = host.expectIdent('a name for the step\'s result after "->"').value;
  }

  const opener = host.peek();
  if (!isOp(opener, "{")) {
    const bad = opener.type === "ident" ? `'${opener.value}'` : undefined;
    host.fail(
      bad ? `unexpected ${bad} in the step header` : 'expected "{" to open the step block',
      opener,
      bad
        ? 'id="…", desc="…", type="…", onError="…", "-> alias" or "{"'
        : '"{" to open the step block',
    );
  }
  const children = host.parseBlock("step", opener);

  const attr = (name: string) => {
    const lower = name.toLowerCase();
    let found: StepAttribute | undefined;
    for (const a of attributes) if (a.name.toLowerCase() === lower) found = a;
    return found?.value;
  };
  const idAttr = attr("id");
  const descAttr = attr("desc");
  const onError = attr("onError");
  const node: StepNode = {
    kind: "step",
    id: idAttr ?? "",
    autoId: idAttr === undefined && positionalDesc !== undefined && attributes.length === 0,
    order: 0,
    path: [],
    children,
    attributes,
    line: keyword.line,
    column: keyword.column,
  };
  const desc = descAttr ?? positionalDesc;
  if (desc !== undefined) node.desc = desc;
  const type = attr("type");
  if (type !== undefined) node.type = type;
  if (onError !== undefined) {
    node.onError = onError;
    const policy = parseStepErrorPolicy(onError);
    if (policy) node.errorPolicy = policy;
  }
  if (alias !== undefined) node.alias = alias;
  return node;
}

/**
 * Parses an `onError` value ({@linkcode QPLAN_ON_ERROR} of the one grammar): `fail`, `continue`,
 * `retry=N`, `jump="id"` / `jump='id'` / `jump=id` (case-insensitive, spaces around `=` allowed).
 * Returns undefined for anything else.
 *
 * @example
 * ```ts
 * import { parseStepErrorPolicy } from "./step_parser.ts";
 * parseStepErrorPolicy("retry=3"); // { kind: "retry", count: 3 }
 * parseStepErrorPolicy('jump="cleanup"'); // { kind: "jump", target: "cleanup" }
 * parseStepErrorPolicy("sometimes"); // undefined
 * ```
 */
export function parseStepErrorPolicy(raw: string): StepErrorPolicy | undefined {
  return parseOnErrorPolicy(raw, QPLAN_ON_ERROR) as StepErrorPolicy | undefined;
}

function isOp(t: Token, value: string): boolean {
  return t.type === "op" && t.value === value;
}
