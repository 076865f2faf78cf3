/**
 * `buildScriptPrompt`: the prompt that teaches an LLM the QPlan grammar and the modules of a
 * registry, so it can write a script for a task; and `extractScript`, which takes the script out
 * of the answer.
 *
 * @module
 */
import type { ToolDescriptor } from "../tools/registry.ts";
import type { QPlanToolRegistry } from "./core/tool_types.ts";

/** Options of {@linkcode buildScriptPrompt}. */
export interface ScriptPromptOptions {
  /** Inputs the script will receive as params (they are declared with `@params`). */
  params?: string[];
}

const GRAMMAR = `## QPlan in brief
- One statement per line. Comments: # … , // … , /* … */. Keywords are case-insensitive.
- Names (variables, step ids, modules) start with a letter or _, then letters, digits or _.
- Values: numbers, "text" or 'text', true/false/null, JSON lists [1, 2] and objects {"k": 1},
  variable paths (total, read.data, items[0], list.length), or (expression).

### Steps
Group the work into steps; give every step an id so results and jumps can name it:
    step id="load" desc="Read the input" {
        file read path="input.txt" -> raw
        return text=raw
    }
- Attributes: id="…" (required), desc="…", type="…", onError="…", and "-> alias" before "{".
- onError: "fail" (default, stop the plan), "continue" (go on), "retry=3" (run the step again up
  to 3 more times), "jump=\\"cleanup\\"" (go to step cleanup).
- Steps may contain steps. A later step reads an earlier step's result as stepId.field.
- A step's result is its return object: return key=expr … or return a b (shorthand for a=a b=b).
  Without return, the result is an object of the step's own outputs.

### Actions (modules)
    module [op] key=value … [-> output]
- The first bare word after the module is its op: math add a=1 b=2 -> x equals
  math op="add" a=1 b=2 -> x. Several options: http get AND cache.
- "-> name" stores the result in a variable. Quote literal text: format="iso", not format=iso.
- Expressions as arguments need parentheses: math add a=(count + 1) b=2 -> x.
- Special forms: ai "prompt" USING a, b -> out    and    print "text", key=value, variable

### Variables and control flow
    var 0 -> total                      # create a variable (var needs "-> name")
    set total = total + n               # update an existing variable
    if total > 10 and not done { … } else { … }
    while count < 3 { … }               # break / continue inside loops
    each item in items { … }            # each (item, i) in items { … }
    parallel concurrency=2 ignoreErrors=true { … }   # statements run concurrently
    jump to="stepId"                    # resume at that step
    skip                                # end the current step
    stop                                # end the whole plan
- Operators: + - * / (+ joins text), == != < > <= >=, and, or, not, x EXISTS, x NOT_EXISTS.
- Lists have .length and .count.
- Use a variable only after the line that creates it (action output, var, loop variable, step id,
  or a declared param).

### Plan header (optional, first lines)
    @title "Short title"
    @summary "One sentence"
    @params "keyword, limit"            # inputs the caller must pass`;

/**
 * Builds the prompt that asks an LLM to write a QPlan script for `task`, listing every module of
 * `registry` with its description and inputs (from the tools' zod schemas).
 *
 * @example
 * ```ts
 * import { createQPlanRegistry } from "./modules/registry.ts";
 * import { buildScriptPrompt } from "./prompt.ts";
 * const prompt = buildScriptPrompt("Average the numbers in data.txt", createQPlanRegistry());
 * console.log(prompt.includes("math")); // true
 * ```
 */
export function buildScriptPrompt(
  task: string,
  registry: Pick<QPlanToolRegistry, "describe">,
  options: ScriptPromptOptions = {},
): string {
  const modules = registry.describe().map(describeModule).join("\n");
  const params = options.params?.length
    ? `\n\nThe caller passes these params: ${
      options.params.join(", ")
    }. Declare them with @params "${options.params.join(", ")}" and use them as variables.`
    : "";
  return `You write QPlan scripts: small step-based plans that the stepflow engine runs.
Write one script that performs the task below.

## Task
${task.trim()}${params}

${GRAMMAR}

## Modules you can use (no others exist)
${modules}

## Example
    @title "Average of a file"
    step id="load" desc="Read numbers" {
        file read path="numbers.txt" -> raw
        return text=raw
    }
    step id="stats" desc="Compute the average" onError="continue" {
        math avg arr=load.text -> mean
        if mean > 50 {
            print "high average:", mean
        }
        return mean=mean
    }

## Answer
Reply with the script only, inside one \`\`\`qplan fenced block, with no explanation.`;
}

function describeModule(tool: ToolDescriptor): string {
  const schema = tool.inputSchema as {
    properties?: Record<string, Record<string, unknown>>;
    required?: string[];
    additionalProperties?: unknown;
  };
  const required = new Set(schema.required ?? []);
  const inputs = Object.entries(schema.properties ?? {}).map(([name, prop]) => {
    const parts = [name];
    const type = describeType(prop);
    if (type) parts.push(`(${type}${required.has(name) ? ", required" : ""})`);
    else if (required.has(name)) parts.push("(required)");
    if (typeof prop.description === "string") parts.push(`— ${prop.description}`);
    return `    ${parts.join(" ")}`;
  });
  const head = `- ${tool.name}: ${tool.description}${
    tool.requiresApproval ? " (needs approval)" : ""
  }`;
  if (inputs.length === 0) {
    return schema.additionalProperties !== false ? `${head}\n    (any key=value arguments)` : head;
  }
  return `${head}\n${inputs.join("\n")}`;
}

function describeType(prop: Record<string, unknown>): string {
  if (Array.isArray(prop.enum)) return prop.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (typeof prop.type === "string") return prop.type;
  if (Array.isArray(prop.anyOf)) {
    return prop.anyOf.map((p) => describeType(p as Record<string, unknown>)).filter(Boolean).join(
      " | ",
    );
  }
  return "";
}

/**
 * Takes the script out of an LLM answer: the first ```qplan (or untagged) fenced block, else the
 * whole answer trimmed.
 *
 * @example
 * ```ts
 * import { extractScript } from "./prompt.ts";
 * console.log(extractScript("Here:\n```qplan\nvar 1 -> x\n```")); // "var 1 -> x"
 * ```
 */
export function extractScript(answer: string): string {
  const fence = /```[ \t]*(qplan)?[ \t]*\r?\n([\s\S]*?)```/i.exec(answer);
  return (fence ? fence[2] : answer).trim();
}
