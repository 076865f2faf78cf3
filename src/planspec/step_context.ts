/**
 * What a step is told: the variables of its prompt (goal, constraints, its task, the inputs
 * produced so far, the outputs it owes, the recent history), and which of its inputs can no
 * longer arrive.
 *
 * @module
 */
import { isSpanOf } from "../unicode_span.ts";
import type { PlanHistoryEntry } from "./history.ts";
import type { PlanRunContext } from "./run_context.ts";
import { walkSteps } from "./tree.ts";
import { type PlanSpec, PlanStatus, type PlanStep } from "./types.ts";

/**
 * Inputs that can no longer arrive: not produced yet, and every step declaring them as output is
 * blocked or skipped. Inputs nobody declares (given data) are left to the model.
 */
export function unavailableInputs(ctx: PlanRunContext, step: PlanStep): string[] {
  if (step.inputs.length === 0) return [];
  const wanted = new Set(step.inputs.filter((name) => !ctx.variables.has(name)));
  if (wanted.size === 0) return [];
  const producers = new Map<string, PlanStep[]>();
  walkSteps(ctx.plan.steps, (s) => {
    if (s === step) return;
    for (const name of s.outputs) {
      if (wanted.has(name)) producers.set(name, [...(producers.get(name) ?? []), s]);
    }
  });
  const missing: string[] = [];
  for (const [name, list] of producers) {
    if (
      list.every((p) => p.status === PlanStatus.BLOCKED || p.status === PlanStatus.SKIPPED)
    ) {
      missing.push(
        `${name} (${list.map((p) => `step ${p.stepId} is ${p.status}`).join(", ")})`,
      );
    }
  }
  return missing;
}

/** The variables of the step prompt (`prompts/planspec/step.md`). */
export function stepVariables(ctx: PlanRunContext, step: PlanStep): Record<string, string> {
  const limit = ctx.options.valueLimit ?? 2000;
  let inputs: string;
  if (step.inputs.length > 0) {
    inputs = step.inputs.map((name) =>
      ctx.variables.has(name)
        ? `- ${name}: ${truncate(valueText(ctx.variables.get(name)), limit)}`
        : `- ${name}: (not produced by an earlier step; use what you know or report LACK_OF_INFO)`
    ).join("\n");
  } else if (ctx.variables.size > 0) {
    inputs = "No inputs are declared; the values produced so far are:\n" +
      [...ctx.variables].map(([name, value]) => `- ${name}: ${truncate(valueText(value), limit)}`)
        .join("\n");
  } else {
    inputs = "(none)";
  }
  return {
    goal: goalText(ctx.plan),
    constraints: ctx.plan.constraints.length > 0
      ? ctx.plan.constraints.map((c) => `- ${c}`).join("\n")
      : "(none)",
    step_id: step.stepId,
    step_type: step.stepType,
    description: step.description,
    detail: step.detail.join("\n"),
    task_kind: taskKind(step),
    inputs,
    outputs: step.outputs.length > 0
      ? step.outputs.map((name) => `- ${name}`).join("\n")
      : "(none declared)",
    history: historyText(ctx),
  };
}

/** The goal and its detail lines, as prompts show them. */
export function goalText(plan: PlanSpec): string {
  return [plan.goal, ...plan.goalDetail].join("\n");
}

/** The last `historyLimit` history entries (default 20), one line each, as prompts show them. */
export function historyText(ctx: PlanRunContext): string {
  const limit = ctx.options.historyLimit ?? 20;
  const shown: string[] = [];
  for (let i = ctx.history.length - 1; i >= 0 && shown.length < limit; i--) {
    const line = historyLine(ctx.history[i], ctx.options.valueLimit ?? 2000);
    if (line) shown.push(line);
  }
  return shown.length === 0 ? "(nothing yet)" : shown.reverse().join("\n");
}

function taskKind(step: PlanStep): string {
  switch (step.stepType) {
    case "reason":
      return "This is a reasoning step: analyze, infer, extract, summarize or verify.";
    case "act":
      return "This is an action step: carry out the action or computation and report what was done.";
    case "decide":
      if (step.children.length === 0) {
        return "This is a decision step: decide and report the decision as the result.";
      }
      return "This is a decision step. Its branches are:\n" +
        step.children.map((c) => `- ${c.stepId}: ${c.description}`).join("\n") +
        "\nChoose exactly one branch and return its id in `branch`; the other branches are skipped.";
    case "subtask": {
      const progress = step.totalCount === null
        ? `${step.doneCount} iteration(s) done, total unknown`
        : `${step.doneCount}/${step.totalCount} iterations done`;
      return `This is an iterative subtask (${progress}). Do the next iteration(s) and report ` +
        "`progress` as {done, total} (total null when unknown); the step runs again until done " +
        "reaches total.";
    }
    default:
      return "";
  }
}

function historyLine(entry: PlanHistoryEntry, valueLimit: number): string | undefined {
  switch (entry.kind) {
    case "step": {
      let line = `- [round ${entry.round}] step ${entry.stepId} (${entry.stepType}) ${
        JSON.stringify(entry.description ?? "")
      }: ${entry.status} — ${entry.result ?? ""}`;
      if (entry.branch) line += ` (chose ${entry.branch})`;
      if (entry.outputs && Object.keys(entry.outputs).length > 0) {
        line += `\n  outputs: ${truncate(JSON.stringify(entry.outputs), valueLimit)}`;
      }
      return line;
    }
    case "reflection":
      return `- [round ${entry.round}] reflection on step ${entry.stepId}: ${
        entry.decision ?? "no decision"
      }${entry.reason ? ` — ${entry.reason}` : ""}${
        entry.commands?.length ? `\n  ${entry.commands.join("\n  ")}` : ""
      }${entry.question ? `\n  question: ${entry.question}` : ""}`;
    case "interact":
      return `- [round ${entry.round}] the user was asked ${
        JSON.stringify(entry.question)
      } about step ${entry.stepId} and answered: ${entry.answer || "(no answer)"}`;
    case "replan":
      return `- [round ${entry.round}] end-of-round re-planning: ${
        entry.commands?.length ? entry.commands.join("; ") : "no change"
      }`;
    default:
      return undefined;
  }
}

/**
 * Output names that look like variables are required from an OK step. Others (decide branches
 * write `→ <what to do>`, as in PlanSpec's examples) describe a consequence, not a value.
 */
export function isVariableName(name: string): boolean {
  return isSpanOf(name, "[\\p{L}\\p{N}_.-]", "[\\p{L}_]");
}

function valueText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value) ?? String(value);
}

function truncate(text: string, limit: number): string {
  return text.length <= limit
    ? text
    : `${text.slice(0, limit)}… (${text.length - limit} more chars)`;
}
