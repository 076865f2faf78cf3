/**
 * A `deno lint` plugin that finds long code: a function over {@link MAX_FUNCTION_LINES} lines or a
 * file over {@link MAX_FILE_LINES} lines that does not say at its top why it must be that long.
 *
 * The reason is a comment holding {@link REASON_MARKER}: for a file, in a comment before its first
 * statement (the `@module` JSDoc); for a function, in the comments right before it (its JSDoc, or
 * `//` lines) — a reason excuses only what it stands on top of.
 * Run it through `deno task long-code` (tools/long_code/report.ts), which lists what it finds.
 *
 * @module
 */

/** Lines a function may span before it needs a stated reason. */
export const MAX_FUNCTION_LINES = 150;
/** Lines a file may hold before it needs a stated reason. */
export const MAX_FILE_LINES = 600;
/** The words that open a stated reason, e.g. `Long because: a recursive-descent grammar …`. */
export const REASON_MARKER = "Long because:";

type Node = Deno.lint.Node;

/** 1-based line of a character offset. */
function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) line++;
  }
  return line;
}

/** The node a function's comment stands before: its method, property, variable or export. */
function declarationOf(node: Node): Node {
  let current: Node = node;
  for (;;) {
    const parent = (current as { parent?: Node }).parent;
    if (!parent) return current;
    const climbs = parent.type === "MethodDefinition" ||
      parent.type === "PropertyDefinition" ||
      parent.type === "VariableDeclarator" ||
      parent.type === "VariableDeclaration" ||
      parent.type === "ExportNamedDeclaration" || parent.type === "Property";
    if (!climbs) return current;
    current = parent;
  }
}

/**
 * The comments right before `node`: the run of comments that ends where it starts, with nothing
 * but white space between them (its JSDoc, `//` lines) — not every comment above it in the file.
 */
function leadingComments(
  source: Deno.lint.SourceCode,
  node: Node,
): { value: string }[] {
  const comments = source.getAllComments();
  const found: { value: string }[] = [];
  let end = node.range[0];
  for (let k = comments.length - 1; k >= 0; k--) {
    const comment = comments[k];
    if (comment.range[1] > end) continue;
    if (source.text.slice(comment.range[1], end).trim() !== "") break;
    found.push(comment);
    end = comment.range[0];
  }
  return found;
}

/** The function's name as a reader would say it. */
function nameOf(node: Node): string {
  const own = (node as { id?: { name?: string } | null }).id?.name;
  if (own) return own;
  const parent = (node as { parent?: Node }).parent as
    | { type: string; key?: { name?: string }; id?: { name?: string } }
    | undefined;
  return parent?.key?.name ?? parent?.id?.name ?? "(anonymous)";
}

const plugin: Deno.lint.Plugin = {
  name: "long-code",
  rules: {
    "long-file": {
      create(context) {
        return {
          Program(node) {
            const text = context.sourceCode.text;
            const lines = lineAt(text, text.length) -
              (text.endsWith("\n") ? 1 : 0);
            if (lines <= MAX_FILE_LINES) return;
            // The reason must stand at the top: in a comment before the first statement.
            const codeStart = node.body[0]?.range[0] ?? text.length;
            const top = context.sourceCode.getAllComments().filter((c) => c.range[1] <= codeStart);
            if (top.some((comment) => comment.value.includes(REASON_MARKER))) {
              return;
            }
            context.report({
              node,
              message: `file of ${lines} lines (over ${MAX_FILE_LINES})`,
              hint: `Split it, or say why at its top in a comment with "${REASON_MARKER}".`,
            });
          },
        };
      },
    },
    "long-function": {
      create(context) {
        const check = (node: Node) => {
          const text = context.sourceCode.text;
          const lines = lineAt(text, node.range[1]) -
            lineAt(text, node.range[0]) + 1;
          if (lines <= MAX_FUNCTION_LINES) return;
          const comments = leadingComments(
            context.sourceCode,
            declarationOf(node),
          );
          if (
            comments.some((comment) => comment.value.includes(REASON_MARKER))
          ) return;
          context.report({
            node,
            message: `function ${nameOf(node)} of ${lines} lines (over ${MAX_FUNCTION_LINES})`,
            hint: `Split it, or say why in its comment with "${REASON_MARKER}".`,
          });
        };
        return {
          FunctionDeclaration: check,
          FunctionExpression: check,
          ArrowFunctionExpression: check,
        };
      },
    },
  },
};

// A lint plugin is found by its default export (the one default export in the repository).
export default plugin;
