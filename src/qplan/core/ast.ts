/**
 * The typed AST of a QPlan script. Every node carries the 1-based `line` and `column` of its first
 * token. Blocks are plain statement arrays: their identity is what jumps use to find where to resume.
 *
 * @module
 */
/** Where a node starts in the script: 1-based line and column. */
export interface SourcePosition {
  /** 1-based line. */
  line: number;
  /** 1-based column. */
  column: number;
}

/** A constant: number, string, boolean or null. */
export interface LiteralExpr extends SourcePosition {
  /** Node kind. */
  kind: "literal";
  /** The constant value. */
  value: string | number | boolean | null;
}

/** One step of a variable path after its root: `.name` or `[expr]`. */
export type PathSegment =
  | ({ kind: "prop"; name: string } & SourcePosition)
  | ({ kind: "index"; index: Expr } & SourcePosition);

/** A variable path such as `total`, `read.data`, `items[0]` or `rows[i].name`. */
export interface PathExpr extends SourcePosition {
  /** Node kind. */
  kind: "path";
  /** The variable (or step namespace) the path starts at. */
  root: string;
  /** The segments after the root (empty for a plain name). */
  segments: PathSegment[];
  /** The path as written, used when a bare action argument names no variable. */
  text: string;
}

/** A JSON-style array whose items may be any expression. */
export interface ArrayExpr extends SourcePosition {
  /** Node kind. */
  kind: "array";
  /** The items. */
  items: Expr[];
}

/** A JSON-style object whose values may be any expression. */
export interface ObjectExpr extends SourcePosition {
  /** Node kind. */
  kind: "object";
  /** The entries, in the order written. */
  entries: { key: string; value: Expr }[];
}

/** `-x` or `not x`. */
export interface UnaryExpr extends SourcePosition {
  /** Node kind. */
  kind: "unary";
  /** The operator. */
  op: "-" | "not";
  /** The operand. */
  operand: Expr;
}

/** The binary operators, arithmetic, comparison and logical. */
export type BinaryOperator =
  | "+"
  | "-"
  | "*"
  | "/"
  | "=="
  | "!="
  | "<"
  | ">"
  | "<="
  | ">="
  | "and"
  | "or";

/** `left op right`. */
export interface BinaryExpr extends SourcePosition {
  /** Node kind. */
  kind: "binary";
  /** The operator. */
  op: BinaryOperator;
  /** Left operand. */
  left: Expr;
  /** Right operand. */
  right: Expr;
}

/** `x EXISTS` / `x NOT_EXISTS` (undefined, null and `""` count as missing). */
export interface ExistsExpr extends SourcePosition {
  /** Node kind. */
  kind: "exists";
  /** True for `NOT_EXISTS`. */
  negated: boolean;
  /** The tested value. */
  operand: Expr;
}

/** Any expression. */
export type Expr =
  | LiteralExpr
  | PathExpr
  | ArrayExpr
  | ObjectExpr
  | UnaryExpr
  | BinaryExpr
  | ExistsExpr;

/** One `key=value` argument of an action. */
export interface ActionArg extends SourcePosition {
  /** The argument name. */
  key: string;
  /** The value expression. */
  value: Expr;
  /**
   * True when the value is a bare word or path (`b=unknown`, `arr=load.list`): it reads the
   * variable when one exists, otherwise it is the text itself, as in the reference implementation.
   */
  bare: boolean;
}

/** One item of `print "text", k=v, var`. */
export interface PrintItem extends SourcePosition {
  /** The `k` of a `k=v` item. */
  label?: string;
  /** The printed value. */
  value: Expr;
  /** True for a bare name: printed as its own text when no such variable exists. */
  bare: boolean;
}

/** `module [option {AND option}] ["prompt" [USING a, b]] key=value … [-> out]`. */
export interface ActionStatement extends SourcePosition {
  /** Node kind. */
  kind: "action";
  /** The module (tool) name. */
  module: string;
  /** The bare options after the module name; the first becomes the `op` argument. */
  options: string[];
  /** The arguments in the order written (options and `USING` are folded in as `op` / `context`). */
  args: ActionArg[];
  /** Items of the `print` special form. */
  printItems?: PrintItem[];
  /** Variable names after `USING` (the `ai "prompt" USING x, y` form). */
  using?: string[];
  /** The output variable after `->`. */
  output?: string;
  /** Call-site number, unique within the script (executors key per-site caches on it). */
  site: number;
}

/** `var <expr> -> name` (also `var value=<expr> -> name`). */
export interface VarStatement extends SourcePosition {
  /** Node kind. */
  kind: "var";
  /** The value. */
  value: Expr;
  /** The variable created; undefined when `-> name` is missing (a validation error). */
  name?: string;
}

/** `set name = expr`: updates an existing variable. */
export interface SetStatement extends SourcePosition {
  /** Node kind. */
  kind: "set";
  /** The variable updated. */
  name: string;
  /** The new value. */
  value: Expr;
}

/** `if cond { … } else { … }` (`else if` chains nest another `if` in the else block). */
export interface IfStatement extends SourcePosition {
  /** Node kind. */
  kind: "if";
  /** The condition. */
  condition: Expr;
  /** Statements run when the condition holds. */
  then: Statement[];
  /** Statements run otherwise. */
  else?: Statement[];
}

/** `while cond { … }`. */
export interface WhileStatement extends SourcePosition {
  /** Node kind. */
  kind: "while";
  /** The condition, tested before each iteration. */
  condition: Expr;
  /** The loop body. */
  body: Statement[];
}

/** `each x in list { … }` or `each (v, i) in list { … }`. */
export interface EachStatement extends SourcePosition {
  /** Node kind. */
  kind: "each";
  /** The variable holding the current item. */
  item: string;
  /** The variable holding the 0-based index. */
  index?: string;
  /** The list iterated. */
  iterable: Expr;
  /** The loop body. */
  body: Statement[];
}

/** `parallel [concurrency=N] [ignoreErrors=true] { … }`. */
export interface ParallelStatement extends SourcePosition {
  /** Node kind. */
  kind: "parallel";
  /** At most this many statements run at once (all when undefined). */
  concurrency?: Expr;
  /** Drop failing statements instead of failing. */
  ignoreErrors: boolean;
  /** The statements run concurrently. */
  body: Statement[];
}

/** One entry of `return`. */
export interface ReturnEntry extends SourcePosition {
  /** The key in the returned object. */
  key: string;
  /** The value. */
  value: Expr;
}

/** `return k=expr …` / `return a b total=sum`. */
export interface ReturnStatement extends SourcePosition {
  /** Node kind. */
  kind: "return";
  /** The entries. */
  entries: ReturnEntry[];
}

/** `jump to="id"`. */
export interface JumpStatement extends SourcePosition {
  /** Node kind. */
  kind: "jump";
  /** The target step id. */
  target: string;
}

/** `stop`, `skip`, `break` or `continue`. */
export interface ControlStatement extends SourcePosition {
  /** Node kind. */
  kind: "stop" | "skip" | "break" | "continue";
}

/**
 * `...` or `<statements>`: an elided body as written in specifications. It does nothing; the
 * validator warns about it.
 */
export interface PlaceholderStatement extends SourcePosition {
  /** Node kind. */
  kind: "placeholder";
  /** The placeholder as written. */
  text: string;
}

/** Any statement. */
export type Statement =
  | ActionStatement
  | VarStatement
  | SetStatement
  | IfStatement
  | WhileStatement
  | EachStatement
  | ParallelStatement
  | StepNode
  | ReturnStatement
  | JumpStatement
  | ControlStatement
  | PlaceholderStatement;

/** One `@key value` line of the plan header. */
export interface PlanMetaEntry extends SourcePosition {
  /** The key without `@`. */
  key: string;
  /** The value (quoted string, or the rest of the line). */
  value: string;
}

/** A parsed script. */
export interface Script extends SourcePosition {
  /** Node kind. */
  kind: "script";
  /** True when the script was wrapped in `plan { … }`. */
  planBlock: boolean;
  /** The plan header lines in order. */
  meta: PlanMetaEntry[];
  /** The top-level statements. */
  body: Statement[];
  /** How many call sites (actions) the script has. */
  sites: number;
}

/** The plan-header keys QPlan knows. */
export const PLAN_META_KEYS: readonly string[] = ["title", "summary", "version", "since", "params"];

/**
 * What a step does when one of its statements fails (docs/qplan.md, "Steps"). Same shape as the
 * step-flow
 * `ErrorPolicy` of `src/definition`.
 */
export type StepErrorPolicy =
  | { kind: "fail" }
  | { kind: "continue" }
  | { kind: "retry"; count: number }
  | { kind: "jump"; target: string };

/** One `name=value` attribute of a step header, as written. */
export interface StepAttribute extends SourcePosition {
  /** The attribute name (`id`, `desc`, `type`, `onError`, or an unknown one the validator reports). */
  name: string;
  /** The value. */
  value: string;
}

/**
 * A step block (docs/qplan.md, "Steps"). The parser fills `id`, `desc`, `type`, `errorPolicy` and
 * `children`; the resolver fills the auto-generated `order`, `path` and `parent` (non-enumerable,
 * so the AST stays printable as JSON).
 */
export interface StepNode extends SourcePosition {
  /** Node kind. */
  kind: "step";
  /**
   * The step id. A description-only step (`step "Read file" { … }`, the basic form) gets
   * `step_<order>` from the resolver.
   */
  id: string;
  /** True when the id was generated (basic form without `id=`). */
  autoId: boolean;
  /** The description (`step "desc"` or `desc="…"`). */
  desc?: string;
  /** Free-form tag such as task, group or loop. */
  type?: string;
  /** The parsed `onError` policy; undefined when absent (fail) or invalid (the validator says why). */
  errorPolicy?: StepErrorPolicy;
  /** `onError` as written. */
  onError?: string;
  /** `-> alias`: the namespace under which the result is also stored. */
  alias?: string;
  /** 1-based position of the step in the script (pre-order), filled by the resolver. */
  order: number;
  /** Each ancestor's desc (or id), then the step's own, filled by the resolver. */
  path: string[];
  /** The enclosing step, filled by the resolver. */
  parent?: StepNode;
  /** The statements of the step block. */
  children: Statement[];
  /** Every header attribute as written, for validation. */
  attributes: StepAttribute[];
}
