/**
 * What `run-plan` says when a plan has run: the closing summary, and which skipped steps count as
 * "not run" (approval was not given) rather than skipped on purpose.
 *
 * @module
 */
import type { ExecutionSummary, Plan, StepStatus } from "../plan/types.ts";

/**
 * Skipped steps that were not skipped on purpose: denied approval (and steps skipped because of
 * them), or skipped by recovery. Steps skipped by the user (`skipStep`), and steps skipped only
 * because one of those was, are intended and do not count.
 */
export function skippedUnintentionally(plan: Plan): Plan["steps"] {
  const byId = new Map(plan.steps.map((st) => [st.id, st]));
  const intended = (id: string): boolean => {
    // Follow "skipped because step X was skipped" back to its first cause (bounded by the plan).
    let step = byId.get(id);
    for (let hops = 0; step && hops <= plan.steps.length; hops++) {
      const reason = step.result?.error ?? "";
      if (reason.startsWith("Skipped by user")) return true;
      const cause = /^Skipped because step "(.+)" was skipped$/.exec(reason);
      if (!cause) return false;
      step = byId.get(cause[1]);
    }
    return false;
  };
  return plan.steps.filter((st) => st.status === "skipped" && !intended(st.id));
}

/** One sentence naming the steps that did not run for want of approval (the first five). */
export function notRunText(steps: Plan["steps"]): string {
  const ids = steps.slice(0, 5).map((st) => st.id).join(", ");
  const more = steps.length > 5 ? ` and ${steps.length - 5} more` : "";
  return `${steps.length} step(s) did not run because approval was not given (${ids}${more})`;
}

/**
 * The closing text of a run: the counts per status, the first failures, the steps that did not run
 * and how to continue.
 */
export function summaryText(
  summary: ExecutionSummary,
  planFile: string,
  notRun: Plan["steps"],
): string {
  const order: StepStatus[] = ["completed", "failed", "skipped", "blocked", "pending"];
  const counts = order.map((status) => `${summary.steps[status].length} ${status}`).join(", ");
  const head = notRun.length > 0
    ? "Plan incomplete"
    : summary.status === "completed"
    ? "Plan completed"
    : summary.status === "cancelled"
    ? "Plan cancelled"
    : summary.status === "aborted"
    ? "Plan aborted"
    : "Plan failed";
  const lines = [
    `${head}: ${counts} (${Math.round(summary.durationMs)} ms). Saved to ${planFile}.`,
  ];
  const problems = summary.plan.steps.filter((st) => st.status === "failed");
  for (const st of problems.slice(0, 5)) {
    lines.push(`  ✖ ${st.id}: ${st.result?.error ?? "failed"}`);
  }
  if (problems.length > 5) lines.push(`  … and ${problems.length - 5} more failed steps`);
  if (problems.length === 0 && summary.error) lines.push(`  ${summary.error}`);
  if (notRun.length > 0) {
    lines.push(
      `  ${notRunText(notRun)}: ${
        notRun.slice(0, 5).map((st) => `${st.id}: ${st.result?.error ?? "skipped"}`).join("; ")
      }.`,
      "  Run again with --approve TOOLS or --yes and --restart to run them, or pass --allow-skipped to accept the plan as it is.",
    );
  }
  if (summary.status !== "completed") {
    lines.push(
      "  Run the same command again to continue: completed and skipped steps are kept, the rest runs.",
    );
  }
  return lines.join("\n");
}
