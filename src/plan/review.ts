/**
 * The plan review table (docs/tool-plans.md), as text for terminals.
 *
 * @module
 */
import type { Plan, PlanToolRegistry, Step, StepStatus } from "./types.ts";

/** Options of {@linkcode renderPlanReview}. */
export interface ReviewOptions {
  /** Why each step needs approval, by step id (steps absent here need none). */
  approvals?: ReadonlyMap<string, string>;
  /** Inner width of the box (default: fits the content, 49 to 96 columns). */
  width?: number;
  /** Footer line (default: none). `run-plan`'s is `[Edit Plan]  [Start Execution]  [Cancel]`. */
  footer?: string;
}

const MARK: Record<StepStatus, string> = {
  pending: "☐",
  blocked: "☐",
  ready: "☐",
  running: "◐",
  completed: "☑",
  failed: "☒",
  skipped: "⊘",
};

/**
 * Renders the review box: one entry per step with its number, description, tool, arguments,
 * dependencies, status and approval note.
 *
 * @example
 * ```ts
 * import { renderPlanReview } from "./review.ts";
 * import { parsePlan } from "./schema.ts";
 * const plan = parsePlan({
 *   id: "p", taskId: "t", version: 1, createdAt: "2025-01-01T00:00:00Z",
 *   steps: [{ id: "step_1", description: "Read config.json", tool: "read_file", args: { path: "config.json" } }],
 * });
 * console.log(renderPlanReview(plan));
 * ```
 */
export function renderPlanReview(plan: Plan, options: ReviewOptions = {}): string {
  const body: string[] = [];
  const steps = [...plan.steps].sort((a, b) => a.order - b.order);
  const numberOf = new Map(steps.map((s, i) => [s.id, i + 1]));
  for (const [i, step] of steps.entries()) {
    body.push("");
    body.push(`${MARK[step.status]} ${i + 1}. ${step.description}`);
    body.push(`     Tool: ${step.tool}`);
    body.push(`     Args: ${formatArgs(step.args)}`);
    if (step.dependsOn.length > 0) {
      body.push(
        `     After: ${
          step.dependsOn.map((d) => (numberOf.has(d) ? `${numberOf.get(d)} (${d})` : d)).join(", ")
        }`,
      );
    }
    const status = statusNote(step);
    if (status) body.push(`     ${status}`);
    const approval = options.approvals?.get(step.id);
    if (approval) body.push(`     Requires approval ⚠ (${approval})`);
  }
  body.push("");
  const title = `Plan Review — ${plan.task ? truncate(plan.task, 60) : plan.id} (v${plan.version})`;
  const natural = Math.max(title.length, ...body.map((l) => l.length)) + 2;
  const width = options.width ?? Math.min(96, Math.max(49, natural));
  const line = (text: string) => `│ ${pad(truncate(text, width - 2), width - 2)} │`;
  const out = [
    `┌${"─".repeat(width)}┐`,
    line(title),
    `├${"─".repeat(width)}┤`,
    ...body.map(line),
  ];
  if (options.footer) {
    out.push(`├${"─".repeat(width)}┤`, line(options.footer));
  }
  out.push(`└${"─".repeat(width)}┘`);
  return out.join("\n");
}

function statusNote(step: Step): string | undefined {
  if (step.status === "pending" || step.status === "ready" || step.status === "blocked") {
    return step.status === "blocked" && step.result?.error
      ? `Blocked: ${step.result.error}`
      : undefined;
  }
  if (step.status === "completed") return "Completed";
  if (step.status === "failed") return `Failed: ${step.result?.error ?? "unknown error"}`;
  if (step.status === "skipped") {
    return `Skipped${step.result?.error ? `: ${step.result.error}` : ""}`;
  }
  return "Running";
}

/** `{ path: "config.json", n: 2 }`: JSON values with bare keys, long strings shortened. */
export function formatArgs(args: Record<string, unknown>): string {
  const entries = Object.entries(args);
  if (entries.length === 0) return "{}";
  const parts = entries.map(([k, v]) => {
    const key = /^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k);
    let value = typeof v === "string"
      ? JSON.stringify(truncate(v, 40))
      : JSON.stringify(v) ?? "undefined";
    if (value.length > 48) value = `${value.slice(0, 47)}…`;
    return `${key}: ${value}`;
  });
  return `{ ${parts.join(", ")} }`;
}

function truncate(text: string, max: number): string {
  const flat = text.replace(/[\r\n\t]+/g, " ");
  return [...flat].length > max ? `${[...flat].slice(0, max - 1).join("")}…` : flat;
}

function pad(text: string, width: number): string {
  return text + " ".repeat(Math.max(0, width - [...text].length));
}

/**
 * The approval notes of {@linkcode renderPlanReview}: per step still to run, why it will ask for an
 * approval — the step asks, or its tool does for these arguments (where they are known already).
 */
export async function approvalNotes(
  plan: Plan,
  tools: PlanToolRegistry,
  workspaceRoot: string,
): Promise<Map<string, string>> {
  const notes = new Map<string, string>();
  for (const step of plan.steps) {
    if (step.status === "completed" || step.status === "skipped") continue;
    if (step.requiresApproval) {
      notes.set(step.id, "the step asks for approval");
      continue;
    }
    if (!tools.has(step.tool)) continue;
    const reason = await tools.approvalReason(step.tool, step.args, { workspaceRoot }).catch(
      () => undefined,
    );
    if (reason) notes.set(step.id, reason);
  }
  return notes;
}
