/**
 * Builds the step tables of a script (docs/qplan.md, "Steps"): ids (generating `step_<order>` for
 * description-only steps), pre-order numbers, hierarchical paths, parents, each step's own outputs,
 * and the way from the top level down to each step that jumps use to resume there.
 *
 * @module
 */
import type { Script, Statement } from "../core/ast.ts";
import type {
  EntryHop,
  ResolvedStep,
  StepNode,
  StepResolution,
  StepResolutionIssue,
} from "./step_types.ts";

/**
 * Resolves the steps of a parsed script. Fills `order`, `path`, `parent` (and generated ids) on
 * the step nodes and returns the tables. Duplicate ids are reported in `issues`, naming both lines.
 *
 * @example
 * ```ts
 * import { parseScript } from "../core/parser.ts";
 * import { resolveSteps } from "./step_resolver.ts";
 * const res = resolveSteps(parseScript(`
 * step "Full processing" {
 *   step "Read file" { var 1 -> x }
 * }`));
 * console.log(res.steps.map((s) => s.node.path)); // [["Full processing"], ["Full processing", "Read file"]]
 * ```
 */
export function resolveSteps(script: Script | Statement[]): StepResolution {
  const body = Array.isArray(script) ? script : script.body;
  const explicit = new Set<string>();
  collectExplicitIds(body, explicit);

  const resolution: StepResolution = {
    steps: [],
    roots: [],
    byId: new Map(),
    byNode: new Map(),
    issues: [],
  };
  let order = 0;
  const issues: StepResolutionIssue[] = resolution.issues;

  const visit = (block: Statement[], hops: EntryHop[], parent: ResolvedStep | undefined) => {
    for (let index = 0; index < block.length; index++) {
      const stmt = block[index];
      const here = [...hops, { block, index }];
      switch (stmt.kind) {
        case "step": {
          const node = stmt;
          node.order = ++order;
          if (node.autoId) node.id = uniqueId(`step_${node.order}`, explicit);
          node.path = [...(parent?.node.path ?? []), node.desc ?? node.id];
          Object.defineProperty(node, "parent", {
            value: parent?.node,
            enumerable: false,
            configurable: true,
            writable: true,
          });
          const resolved: ResolvedStep = {
            node,
            depth: parent ? parent.depth + 1 : 0,
            outputs: collectOutputs(node.children),
            entry: here,
            policy: node.errorPolicy ?? { kind: "fail" },
          };
          if (parent) resolved.parentId = parent.node.id;
          resolution.steps.push(resolved);
          resolution.byNode.set(node, resolved);
          if (!parent) resolution.roots.push(resolved);
          if (node.id !== "") {
            const first = resolution.byId.get(node.id);
            if (first) {
              issues.push({
                message:
                  `Duplicate step id '${node.id}' (lines ${first.node.line} and ${node.line})`,
                hint: "Give every step its own id; jumps and results are keyed by it.",
                line: node.line,
                column: node.column,
              });
            } else {
              resolution.byId.set(node.id, resolved);
            }
          }
          visit(node.children, here, resolved);
          break;
        }
        case "if":
          visit(stmt.then, here, parent);
          if (stmt.else) visit(stmt.else, here, parent);
          break;
        case "while":
        case "each":
        case "parallel":
          visit(stmt.body, here, parent);
          break;
        default:
          break;
      }
    }
  };
  visit(body, [], undefined);
  return resolution;
}

/**
 * Where a jump to `target` resumes, seen from a block that encloses the jump: the index in
 * `target.entry` of the hop whose block is `block`, or -1 when `block` is not on the way.
 */
export function entryIndexIn(target: ResolvedStep, block: Statement[]): number {
  const entry = target.entry;
  for (let k = entry.length - 1; k >= 0; k--) if (entry[k].block === block) return k;
  return -1;
}

/**
 * The first construct a jump would have to enter from hop `from` down to `target` that cannot be
 * entered part-way: a loop (`each`, `while`) or a `parallel` block (including resuming inside the
 * body of a `parallel`). Undefined when the way only crosses steps and `if` branches.
 */
export function blockingConstruct(target: ResolvedStep, from: number): Statement | undefined {
  const entry = target.entry;
  // Resuming inside a parallel body would run its statements one after another: not allowed.
  if (from > 0) {
    const holder = entry[from - 1].block[entry[from - 1].index];
    if (holder.kind === "parallel") return holder;
  }
  for (let k = from; k < entry.length - 1; k++) {
    const stmt = entry[k].block[entry[k].index];
    if (stmt.kind === "each" || stmt.kind === "while" || stmt.kind === "parallel") return stmt;
  }
  return undefined;
}

/** The outputs (`-> name` of actions and `var`) of a block, nested steps excluded. */
export function collectOutputs(block: Statement[]): string[] {
  const out = new Set<string>();
  const visit = (b: Statement[]) => {
    for (const stmt of b) {
      switch (stmt.kind) {
        case "action":
          if (stmt.output) out.add(stmt.output);
          break;
        case "var":
          if (stmt.name) out.add(stmt.name);
          break;
        case "if":
          visit(stmt.then);
          if (stmt.else) visit(stmt.else);
          break;
        case "while":
        case "each":
        case "parallel":
          visit(stmt.body);
          break;
        default:
          break;
      }
    }
  };
  visit(block);
  return [...out];
}

function collectExplicitIds(block: Statement[], into: Set<string>): void {
  for (const stmt of block) {
    switch (stmt.kind) {
      case "step":
        if (!stmt.autoId && stmt.id) into.add(stmt.id);
        collectExplicitIds(stmt.children, into);
        break;
      case "if":
        collectExplicitIds(stmt.then, into);
        if (stmt.else) collectExplicitIds(stmt.else, into);
        break;
      case "while":
      case "each":
      case "parallel":
        collectExplicitIds(stmt.body, into);
        break;
      default:
        break;
    }
  }
}

function uniqueId(base: string, taken: Set<string>): string {
  let id = base;
  for (let k = 2; taken.has(id); k++) id = `${base}_${k}`;
  taken.add(id);
  return id;
}

/** The id or description a message uses for a step. */
export function stepLabel(node: StepNode): string {
  return node.id || node.desc || `step at line ${node.line}`;
}
