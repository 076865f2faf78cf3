/**
 * The semantic validator: everything that can be known about a parsed script before it runs.
 * Errors stop a run; warnings are advice (placeholders, bare words that are not variables).
 *
 * @module
 */
import type { QPlanToolRegistry } from "./tool_types.ts";
import type { Expr, PlanMetaEntry, Script, Statement } from "./ast.ts";
import { PLAN_META_KEYS } from "./ast.ts";
import { isIdentifier, KEYWORDS } from "./tokenizer.ts";
import { closestMatch } from "../../definition/suggest.ts";
import { configuredMcpServers, unknownMcpToolMessage } from "../../mcp/tool_names.ts";
import { blockingConstruct, resolveSteps, stepLabel } from "../step/step_resolver.ts";
import { STEP_ATTRIBUTES } from "../step/step_parser.ts";
import type { ResolvedStep, StepResolution } from "../step/step_types.ts";

/** One problem found in a script. */
export interface ValidationIssue {
  /** `error` stops a run; `warning` is advice. */
  severity: "error" | "warning";
  /** Stable identifier of the kind of problem, e.g. `undefined-variable`. */
  code: string;
  /** What is wrong (QPlan's message texts are kept verbatim). */
  message: string;
  /** 1-based line. */
  line?: number;
  /** 1-based column. */
  column?: number;
  /** How to fix it. */
  hint?: string;
}

/** Options of {@linkcode validateAst}. */
export interface ValidateAstOptions {
  /** Names that exist before the script starts (the params passed to the run). */
  params?: Iterable<string>;
  /** When given, module names are checked against it. */
  registry?: QPlanToolRegistry;
  /** Step tables already built for this script. */
  resolution?: StepResolution;
}

/** The names a script declares with `@params`, and the problems of that line. */
export interface ParsedParams {
  /** Declared names, in order, without duplicates. */
  names: string[];
  /** Problems with the line (empty entries, invalid names). */
  issues: ValidationIssue[];
}

/**
 * Parses `@params "a, b"` into names.
 *
 * @example
 * ```ts
 * import { parseParamsMeta } from "./validator.ts";
 * console.log(parseParamsMeta("keyword, item").names); // ["keyword", "item"]
 * ```
 */
export function parseParamsMeta(value: string, at?: PlanMetaEntry): ParsedParams {
  const names: string[] = [];
  const issues: ValidationIssue[] = [];
  const where = at ? { line: at.line, column: at.column } : {};
  if (value.trim() === "") return { names, issues };
  for (const raw of value.split(",")) {
    const name = raw.trim();
    if (name === "") {
      issues.push({
        severity: "error",
        code: "params-empty",
        message: "@params contains an empty entry",
        hint: 'List names separated by single commas: @params "keyword, item".',
        ...where,
      });
    } else if (!isIdentifier(name)) {
      issues.push({
        severity: "error",
        code: "params-invalid",
        message: `@params contains invalid identifier '${name}'`,
        hint: "A name starts with a letter or _ and continues with letters, digits or _.",
        ...where,
      });
    } else if (!names.includes(name)) names.push(name);
  }
  return { names, issues };
}

/** Statements a misspelt module name may have meant (`jmp to="x"` parses as a module call). */
const STATEMENT_WORDS = ["jump", "stop", "skip", "break", "continue", "return", "set", "var"];

/** ` (did you mean '<prefix><closest>'?)` when a candidate is close to `word`, else "". */
function didYouMean(word: string, candidates: readonly string[], prefix = ""): string {
  const guess = closestMatch(word, candidates);
  return guess === undefined ? "" : ` (did you mean '${prefix}${guess}'?)`;
}

/** ` (did you mean "jump=…"?)` for a misspelt policy word of an onError value, else "". */
function onErrorGuess(value: string): string {
  const word = /^\s*([A-Za-z]+)/.exec(value)?.[1];
  if (word === undefined) return "";
  const policies = ["fail", "continue", "retry", "jump"];
  const guess = policies.includes(word.toLowerCase()) ? undefined : closestMatch(word, policies);
  return guess === undefined ? "" : ` (did you mean "${guess}${value.trim().slice(word.length)}"?)`;
}

/**
 * Validates a parsed script: step ids (missing, invalid, duplicate), `onError` policies, jump
 * targets, variables used before they are defined, `var` without `-> name`, `set` of an unknown
 * variable, misplaced `return`/`skip`/`break`/`continue`, plan meta, reserved names, and (with a
 * registry) unknown modules. Issues come in script order, each with a line.
 *
 * @example
 * ```ts
 * import { parseScript } from "./parser.ts";
 * import { validateAst } from "./validator.ts";
 * const { issues } = validateAst(parseScript(`step id="a" { return x=missing }`));
 * console.log(issues[0].message); // "variable 'missing' (step 'a') is not defined"
 * ```
 */
export function validateAst(
  script: Script,
  options: ValidateAstOptions = {},
): { issues: ValidationIssue[]; resolution: StepResolution } {
  const resolution = options.resolution ?? resolveSteps(script);
  const issues: ValidationIssue[] = [];
  const defined = new Set<string>(options.params ?? []);

  // Plan meta
  const seenMeta = new Map<string, PlanMetaEntry>();
  for (const entry of script.meta) {
    const key = entry.key.toLowerCase();
    if (!PLAN_META_KEYS.includes(key)) {
      issues.push({
        severity: "error",
        code: "unknown-meta",
        message: `unknown plan meta '@${entry.key}'${didYouMean(entry.key, PLAN_META_KEYS, "@")}`,
        hint: `Supported: ${PLAN_META_KEYS.map((k) => `@${k}`).join(", ")}.`,
        line: entry.line,
        column: entry.column,
      });
      continue;
    }
    const first = seenMeta.get(key);
    if (first) {
      issues.push({
        severity: "error",
        code: "duplicate-meta",
        message: `plan meta '@${entry.key}' is given twice (lines ${first.line} and ${entry.line})`,
        hint: "Keep one line per key.",
        line: entry.line,
        column: entry.column,
      });
      continue;
    }
    seenMeta.set(key, entry);
    if (key === "params") {
      const parsed = parseParamsMeta(entry.value, entry);
      issues.push(...parsed.issues);
      for (const name of parsed.names) defined.add(name);
    }
  }

  // Steps
  for (const resolved of resolution.steps) checkStep(resolved, resolution, issues);
  for (const dup of resolution.issues) {
    issues.push({ severity: "error", code: "duplicate-step-id", ...dup });
  }

  // Statements
  const known = options.registry;
  const walker = new Walker(resolution, issues, defined, known);
  walker.block(script.body, { stepId: undefined, inLoop: false, inStep: false, blocks: [] });

  issues.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
  return { issues, resolution };
}

function checkStep(resolved: ResolvedStep, resolution: StepResolution, issues: ValidationIssue[]) {
  const node = resolved.node;
  const at = { line: node.line, column: node.column };
  if (!node.autoId && (!isIdentifier(node.id) || KEYWORDS.has(node.id.toLowerCase()))) {
    issues.push({
      severity: "error",
      code: "step-id",
      message: 'step requires id="<identifier>"',
      hint: node.id === ""
        ? `Give the step an id (letters, digits, _; not starting with a digit), e.g. step id="load" desc="${
          node.desc ?? "…"
        }" { … }.`
        : `"${node.id}" is not usable as an id: use letters, digits and _, not starting with a digit, and not a QPlan keyword.`,
      ...at,
    });
  }
  const seen = new Set<string>();
  for (const attr of node.attributes) {
    const lower = attr.name.toLowerCase();
    if (!STEP_ATTRIBUTES.some((a) => a.toLowerCase() === lower)) {
      issues.push({
        severity: "error",
        code: "step-attribute",
        message: `unknown step attribute '${attr.name}' on step '${stepLabel(node)}'${
          didYouMean(attr.name, STEP_ATTRIBUTES)
        }`,
        hint: `Step attributes are ${STEP_ATTRIBUTES.join(", ")}.`,
        line: attr.line,
        column: attr.column,
      });
    } else if (seen.has(lower)) {
      issues.push({
        severity: "error",
        code: "step-attribute",
        message: `step attribute '${attr.name}' is given twice on step '${stepLabel(node)}'`,
        hint: "Give each attribute once.",
        line: attr.line,
        column: attr.column,
      });
    }
    seen.add(lower);
  }
  if (node.onError !== undefined && !node.errorPolicy) {
    issues.push({
      severity: "error",
      code: "on-error",
      message: `step '${stepLabel(node)}' has invalid onError "${node.onError}"${
        onErrorGuess(node.onError)
      }`,
      hint:
        'Use onError="fail", "continue", "retry=3" or "jump=\\"stepId\\"" (or jump=\'stepId\').',
      ...at,
    });
  }
  const policy = node.errorPolicy;
  if (policy?.kind === "jump") {
    const target = resolution.byId.get(policy.target);
    if (!target) {
      issues.push({
        severity: "error",
        code: "jump-target",
        message: `step '${
          stepLabel(node)
        }' has onError jump target '${policy.target}' but no such step exists`,
        hint:
          `Add step '${policy.target}' or change the onError jump target to an existing step id.`,
        ...at,
      });
    } else {
      const from = new Set(resolved.entry.map((h) => h.block));
      checkJumpWay(target, from, issues, at);
    }
  }
  if (node.alias !== undefined) {
    if (KEYWORDS.has(node.alias.toLowerCase())) reserved(node.alias, at, issues);
    const other = resolution.byId.get(node.alias);
    if (other && other !== resolved) {
      issues.push({
        severity: "error",
        code: "alias",
        message: `step '${
          stepLabel(node)
        }' stores its result as '${node.alias}', which is the id of the step at line ${other.node.line}`,
        hint: "Pick an alias that is not another step's id.",
        ...at,
      });
    }
  }
}

function checkJumpWay(
  target: ResolvedStep,
  sourceBlocks: Set<unknown>,
  issues: ValidationIssue[],
  at: { line: number; column: number },
) {
  let k = target.entry.length - 1;
  while (k > 0 && !sourceBlocks.has(target.entry[k].block)) k--;
  const blocking = blockingConstruct(target, k);
  if (blocking) {
    const what = blocking.kind === "parallel" ? "parallel block" : `${blocking.kind} loop`;
    issues.push({
      severity: "error",
      code: "jump-into-loop",
      message:
        `jump to '${target.node.id}' would enter the ${what} at line ${blocking.line} part-way`,
      hint: "Jump to the step that contains the loop, or move the target step out of it.",
      ...at,
    });
  }
}

function reserved(name: string, at: { line: number; column: number }, issues: ValidationIssue[]) {
  issues.push({
    severity: "error",
    code: "reserved-name",
    message: `'${name}' is a QPlan keyword and cannot be used as a name`,
    hint: "Rename it (keywords such as step, if, each, in, and, return are reserved).",
    ...at,
  });
}

interface Scope {
  stepId: string | undefined;
  inLoop: boolean;
  inStep: boolean;
  blocks: Statement[][];
}

class Walker {
  constructor(
    readonly resolution: StepResolution,
    readonly issues: ValidationIssue[],
    readonly defined: Set<string>,
    readonly registry: QPlanToolRegistry | undefined,
  ) {}

  block(block: Statement[], scope: Scope): void {
    const inner: Scope = { ...scope, blocks: [...scope.blocks, block] };
    for (const stmt of block) this.statement(stmt, inner);
  }

  define(name: string, at: { line: number; column: number }): void {
    if (KEYWORDS.has(name.toLowerCase())) reserved(name, at, this.issues);
    this.defined.add(name);
  }

  /** The issue of an action whose module is not in the registry, with the closest name. */
  unknownModule(module: string): { code: string; message: string; hint: string } {
    const names = this.registry!.list().map((t) => t.name);
    const servers = configuredMcpServers(names, this.registry!.mcpServerNames?.());
    const mcp = unknownMcpToolMessage(module, names, servers);
    if (mcp !== undefined) {
      return {
        code: "unknown-module",
        message: `unknown module '${module}': ${mcp}`,
        hint: "MCP tools are modules named mcp__<server>__<tool>.",
      };
    }
    const guess = closestMatch(module, [...names, ...STATEMENT_WORDS]);
    const meant = guess === undefined
      ? ""
      : names.includes(guess)
      ? ` (did you mean '${guess}'?)`
      : ` (did you mean the '${guess}' statement?)`;
    return {
      code: "unknown-module",
      message: `unknown module '${module}'${meant}`,
      hint: `Available modules: ${names.join(", ") || "(none)"}.`,
    };
  }

  statement(stmt: Statement, scope: Scope): void {
    const at = { line: stmt.line, column: stmt.column };
    switch (stmt.kind) {
      case "action": {
        const tool = this.registry?.get(stmt.module);
        if (this.registry && !tool) {
          this.issues.push({ severity: "error", ...this.unknownModule(stmt.module), ...at });
        } else if (tool?.unavailable !== undefined) {
          this.issues.push({
            severity: "error",
            code: "module-unavailable",
            message: `module '${stmt.module}' cannot run: ${tool.unavailable}`,
            hint: "Nothing runs until every module the script calls can run.",
            ...at,
          });
        }
        for (const arg of stmt.args) {
          if (arg.bare && arg.value.kind === "path") this.bare(arg.key, arg.value, scope, arg);
          else this.expr(arg.value, scope);
        }
        for (const item of stmt.printItems ?? []) {
          if (item.bare && item.value.kind === "path") {
            this.bare(item.label, item.value, scope, item);
          } else this.expr(item.value, scope);
        }
        if (stmt.output) this.define(stmt.output, at);
        break;
      }
      case "var":
        this.expr(stmt.value, scope);
        if (stmt.name === undefined) {
          this.issues.push({
            severity: "error",
            code: "var-output",
            message: "var requires '-> outputVar'",
            hint: "Name the variable: var 0 -> total.",
            ...at,
          });
        } else this.define(stmt.name, at);
        break;
      case "set":
        if (!this.defined.has(stmt.name)) {
          this.issues.push({
            severity: "error",
            code: "set-target",
            message: `set target '${stmt.name}' does not exist`,
            hint: `Create it first (var … -> ${stmt.name}); set only updates existing variables.`,
            ...at,
          });
        }
        this.expr(stmt.value, scope);
        break;
      case "if":
        this.expr(stmt.condition, scope);
        this.block(stmt.then, scope);
        if (stmt.else) this.block(stmt.else, scope);
        break;
      case "while":
        this.expr(stmt.condition, scope);
        this.block(stmt.body, { ...scope, inLoop: true });
        break;
      case "each":
        this.expr(stmt.iterable, scope);
        this.define(stmt.item, at);
        if (stmt.index) this.define(stmt.index, at);
        this.block(stmt.body, { ...scope, inLoop: true });
        break;
      case "parallel":
        if (stmt.concurrency) this.expr(stmt.concurrency, scope);
        this.block(stmt.body, scope);
        break;
      case "step":
        this.block(stmt.children, { ...scope, stepId: stmt.id, inLoop: false, inStep: true });
        if (stmt.id) this.defined.add(stmt.id);
        if (stmt.alias) this.defined.add(stmt.alias);
        break;
      case "return":
        if (!scope.inStep) this.misplaced("return", "inside a step", at);
        for (const entry of stmt.entries) this.expr(entry.value, scope);
        break;
      case "skip":
        if (!scope.inStep) this.misplaced("skip", "inside a step", at);
        break;
      case "break":
      case "continue":
        if (!scope.inLoop) {
          this.misplaced(stmt.kind, "inside an each or while loop (of the same step)", at);
        }
        break;
      case "jump": {
        const target = this.resolution.byId.get(stmt.target);
        if (!target) {
          this.issues.push({
            severity: "error",
            code: "jump-target",
            message: `jump target '${stmt.target}' not found`,
            hint:
              `Use jump to="${stmt.target}" only if that step exists, or rename the jump target.`,
            ...at,
          });
        } else checkJumpWay(target, new Set(scope.blocks), this.issues, at);
        break;
      }
      case "placeholder":
        this.issues.push({
          severity: "warning",
          code: "placeholder",
          message: `placeholder '${stmt.text}' does nothing`,
          hint: "Replace it with real statements.",
          ...at,
        });
        break;
      case "stop":
        break;
    }
  }

  misplaced(what: string, where: string, at: { line: number; column: number }): void {
    this.issues.push({
      severity: "error",
      code: "misplaced",
      message: `${what} is only allowed ${where}`,
      hint: `Move the ${what} statement or remove it.`,
      ...at,
    });
  }

  bare(
    key: string | undefined,
    path: Expr & { kind: "path" },
    scope: Scope,
    at: { line: number; column: number },
  ): void {
    for (const seg of path.segments) if (seg.kind === "index") this.expr(seg.index, scope);
    if (this.defined.has(path.root)) return;
    const shown = key === undefined ? path.text : `${key}=${path.text}`;
    this.issues.push({
      severity: "warning",
      code: "bare-word",
      message: `'${path.root}' is not a variable here; ${shown} passes the text "${path.text}"`,
      hint: key === undefined
        ? `Quote it ("${path.text}") if you mean the text, or define the variable first.`
        : `Quote it (${key}="${path.text}") if you mean the text, or define the variable first.`,
      line: at.line,
      column: at.column,
    });
  }

  expr(e: Expr, scope: Scope, underExists = false): void {
    switch (e.kind) {
      case "literal":
        return;
      case "path":
        for (const seg of e.segments) if (seg.kind === "index") this.expr(seg.index, scope);
        if (!this.defined.has(e.root)) {
          const where = scope.stepId ? ` (step '${scope.stepId}')` : "";
          this.issues.push({
            severity: underExists ? "warning" : "error",
            code: "undefined-variable",
            message: `variable '${e.text}'${where} is not defined`,
            hint:
              `Create '${e.root}' before using it (an action output, var, or an earlier step's id); if it is an input, declare it in @params and pass it as a param.`,
            line: e.line,
            column: e.column,
          });
        }
        return;
      case "array":
        for (const item of e.items) this.expr(item, scope);
        return;
      case "object":
        for (const entry of e.entries) this.expr(entry.value, scope);
        return;
      case "unary":
        return this.expr(e.operand, scope);
      case "binary":
        this.expr(e.left, scope);
        this.expr(e.right, scope);
        return;
      case "exists":
        return this.expr(e.operand, scope, true);
    }
  }
}
