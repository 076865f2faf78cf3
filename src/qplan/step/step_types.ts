/**
 * The step model of QPlan (docs/qplan.md, "Steps"): the tables the resolver builds around each
 * `StepNode` (the node itself, with the fields the resolver fills — `order`, `path`, `parent` — is
 * in `core/ast.ts`).
 *
 * @module
 */
import type { SourcePosition, Statement, StepErrorPolicy, StepNode } from "../core/ast.ts";

// The step node and its parts are AST nodes (they hold statements): they live in the AST file,
// and are named here too for the step system.
export type { StepAttribute, StepErrorPolicy, StepNode } from "../core/ast.ts";

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
