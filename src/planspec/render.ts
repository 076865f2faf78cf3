import { assertPlanDepth } from "./depth.ts";
import { STATUS_MARKERS } from "./syntax.ts";
import { planProgress, progressText, walkSteps } from "./tree.ts";
import { type PlanSpec, PlanStatus, type PlanStep } from "./types.ts";

/** Options of {@linkcode renderPlan} and {@linkcode renderPlanTree}. */
export interface RenderOptions {
  /** ANSI colours (the CLI turns them on for a TTY unless `NO_COLOR` is set). Default false. */
  color?: boolean;
  /** Apply the folding rules (default true); false shows every node body. */
  fold?: boolean;
}

const BADGE_WIDTH = 9; // "[SUBTASK]"

const ANSI = {
  reset: "\x1b[0m",
  bold: "\x1b[1m",
  dim: "\x1b[2m",
  red: "\x1b[31m",
  green: "\x1b[32m",
  yellow: "\x1b[33m",
  blue: "\x1b[34m",
  magenta: "\x1b[35m",
  cyan: "\x1b[36m",
};

const STATUS_COLORS: Record<PlanStatus, string> = {
  pending: "",
  done: ANSI.green,
  active: ANSI.yellow + ANSI.bold,
  blocked: ANSI.red + ANSI.bold,
  skipped: ANSI.dim,
};

const TYPE_COLORS: Record<string, string> = {
  reason: ANSI.magenta,
  act: ANSI.blue,
  decide: ANSI.yellow,
  subtask: ANSI.cyan,
};

/** `[REASON]`, `[ACT]`, `[DECIDE]`, `[SUBTASK]` (any other type upper-cased the same way). */
export function typeBadge(stepType: string): string {
  return `[${stepType.toUpperCase()}]`;
}

/**
 * Renders the step tree the way `/showplan` does: one row per step (`id  [status]  [BADGE]
 * description → outputs | result`), children under `├─` / `└─` glyphs, node bodies shown by the
 * folding rules (active and blocked steps expanded, `expanded` flags first).
 *
 * @example
 * ```ts
 * import { parsePlan, renderPlanTree } from "./mod.ts";
 * console.log(renderPlanTree(parsePlan("Goal: g\n1. [x] [act] Build → app | ok\n")));
 * // 1  [x]  [ACT]      Build → app | ok
 * ```
 */
export function renderPlanTree(plan: PlanSpec, options: RenderOptions = {}): string {
  const out: string[] = [];
  const paint = painter(options.color === true);
  const fold = options.fold !== false;
  assertPlanDepth(plan.steps);
  for (const step of plan.steps) renderStep(out, step, "", "", "", fold, paint);
  return out.join("\n");
}

type Paint = (code: string, text: string) => string;

function painter(color: boolean): Paint {
  return color ? (code, text) => (code === "" ? text : code + text + ANSI.reset) : (_c, t) => t;
}

function renderStep(
  out: string[],
  step: PlanStep,
  glyph: string,
  linePrefix: string,
  belowPrefix: string,
  fold: boolean,
  paint: Paint,
): void {
  const marker = STATUS_MARKERS[step.status] ?? "[?]";
  const badge = typeBadge(step.stepType);
  const head = `${step.stepId}  ${marker}  ${badge.padEnd(BADGE_WIDTH)}  `;
  let text = step.description;
  if (step.outputs.length > 0) text += (text === "" ? "→ " : " → ") + step.outputs.join(", ");
  let tail = "";
  if (step.result !== "") tail += " | " + step.result;
  if (step.doneCount !== 0 || step.totalCount !== null) {
    tail += " | Progress: " + step.doneCount +
      (step.totalCount === null ? "" : "/" + step.totalCount);
  }
  const statusColor = STATUS_COLORS[step.status] ?? "";
  out.push(
    linePrefix + glyph +
      paint(ANSI.dim, step.stepId) + "  " + paint(statusColor, marker) + "  " +
      paint(TYPE_COLORS[step.stepType] ?? ANSI.red, badge) +
      " ".repeat(Math.max(0, BADGE_WIDTH - badge.length)) + "  " +
      paint(step.status === PlanStatus.SKIPPED ? ANSI.dim : "", text) +
      paint(step.status === PlanStatus.BLOCKED ? ANSI.red : ANSI.dim, tail),
  );
  let showBody = true;
  let showChildren = true;
  if (step.expanded === false) showBody = showChildren = false;
  else if (fold && step.expanded !== true) {
    showBody = step.status === PlanStatus.ACTIVE || step.status === PlanStatus.BLOCKED;
  }
  const children = showChildren ? step.children : [];
  if (showBody) {
    const pad = belowPrefix + " ".repeat(head.length);
    if (step.inputs.length > 0) out.push(pad + paint(ANSI.dim, "> ← " + step.inputs.join(", ")));
    for (const line of step.detail) {
      out.push(pad + paint(ANSI.dim, line === "" ? ">" : "> " + line));
    }
  }
  for (let i = 0; i < children.length; i++) {
    const last = i === children.length - 1;
    renderStep(
      out,
      children[i],
      last ? "└─ " : "├─ ",
      belowPrefix,
      belowPrefix + (last ? "   " : "│  "),
      fold,
      paint,
    );
  }
}

/**
 * Renders a whole plan for the terminal (`/showplan`): a title banner, goal, constraints and
 * progress, the step tree of {@linkcode renderPlanTree}, and a footer with step counts by type.
 *
 * @example
 * ```ts
 * import { parsePlan, renderPlan } from "./mod.ts";
 * console.log(renderPlan(parsePlan("# Plan: Demo\nGoal: g\n1. [x] [act] Build\n2. [act] Test\n")));
 * ```
 */
export function renderPlan(plan: PlanSpec, options: RenderOptions = {}): string {
  assertPlanDepth(plan.steps);
  const paint = painter(options.color === true);
  const progress = planProgress(plan);
  const progressLine = `Progress: ${progressText(progress)}`;
  const out: string[] = [];
  out.push(paint(ANSI.bold, `═══ PlanSpec: ${plan.title === "" ? "(untitled)" : plan.title} ═══`));
  out.push("");
  out.push(`${paint(ANSI.bold, "Goal:")} ${plan.goal}`);
  for (const line of plan.goalDetail) out.push(paint(ANSI.dim, "> " + line));
  if (plan.constraints.length > 0) {
    out.push("");
    out.push(paint(ANSI.bold, "Constraints:"));
    for (const c of plan.constraints) out.push("  - " + c);
  }
  out.push("");
  out.push(progressLine);
  out.push("");
  const tree = renderPlanTree(plan, options);
  if (tree !== "") out.push(tree);
  out.push("");
  out.push("───");
  const byType = new Map<string, number>([["reason", 0], ["act", 0], ["decide", 0], [
    "subtask",
    0,
  ]]);
  countTypes(plan.steps, byType);
  const counts = [...byType].map(([type, n]) => `${type}: ${n}`).join(" | ");
  out.push(`Steps: ${progress.total} | ${counts}`);
  const statuses = (["active", "blocked", "skipped"] as const)
    .filter((s) => progress[s] > 0)
    .map((s) => `${s}: ${progress[s]}`);
  out.push(progressLine + (statuses.length > 0 ? ` | ${statuses.join(" | ")}` : ""));
  return out.join("\n") + "\n";
}

function countTypes(steps: PlanStep[], byType: Map<string, number>): void {
  walkSteps(steps, (step) => void byType.set(step.stepType, (byType.get(step.stepType) ?? 0) + 1));
}
