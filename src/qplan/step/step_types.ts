/**
 * The step model of seed 000 §3: `StepNode` as the parser produces it, with the fields the
 * resolver fills (`order`, `path`, `parent`), and the tables the resolver builds around it.
 *
 * @module
 */
import type { SourcePosition, Statement } from "../core/ast.ts";

/**
 * What a step does when one of its statements fails (seed 000 §7). Same shape as the step-flow
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
 * A step block (seed 000 §3). The parser fills `id`, `desc`, `type`, `errorPolicy` and `children`;
 * the resolver fills the auto-generated `order`, `path` and `parent` (non-enumerable, so the AST
 * stays printable as JSON).
 */
export interface StepNode extends SourcePosition {
  /** Node kind. */
  kind: "step";
  /**
   * The step id. A description-only step (`step "Read file" { … }`, seed 000 §2 basic form) gets
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

/**
 * One hop of the way from the script's top level down to a step: the statement at `index` of
 * `block` is either the step itself (last hop) or the construct that contains the next hop's block.
 */
export interface EntryHop {
  /** The block (statement array) holding the statement. */
  block: Statement[];
  /** The statement's index in the block. */
  index: number;
}

/** What the resolver knows about one step. */
export interface ResolvedStep {
  /** The step node. */
  node: StepNode;
  /** Nesting depth (0 for a top-level step). */
  depth: number;
  /** The enclosing step's id. */
  parentId?: string;
  /** Outputs of the step's own actions and `var`s (nested steps excluded), in first-seen order. */
  outputs: string[];
  /** The way from the top level down to the step, used to resume execution there after a jump. */
  entry: EntryHop[];
  /** The resolved policy (`fail` when none or invalid). */
  policy: StepErrorPolicy;
}

/** A problem the resolver found (duplicate ids). */
export interface StepResolutionIssue extends SourcePosition {
  /** What is wrong. */
  message: string;
  /** How to fix it. */
  hint?: string;
}

/** The step tables of a script. */
export interface StepResolution {
  /** Every step in script order (pre-order). */
  steps: ResolvedStep[];
  /** Top-level steps (depth 0) in order. */
  roots: ResolvedStep[];
  /** Steps by id (the first one wins when ids repeat). */
  byId: Map<string, ResolvedStep>;
  /** Steps by node. */
  byNode: Map<StepNode, ResolvedStep>;
  /** Duplicate-id problems. */
  issues: StepResolutionIssue[];
}
