/**
 * Re-planning: the end-of-round re-planning call, and the LLM-layer plan commands that it and
 * step reflection produce — `ADD`, `SKIP`, `REVISE`, `REPLAN <id>` (new children are written by
 * the model) and `REPLAN ALL` (a whole new plan).
 *
 * @module
 */
import { renderPromptTemplate } from "../engine/prompt_template.ts";
import { type AnswerReading, askStructured, rejectAnswer } from "../engine/ask_structured.ts";
import { StepflowError } from "../errors.ts";
import { applyCommand, formatPlanCommand, parsePlanCommands } from "./commands.ts";
import { requestPlan } from "./generate.ts";
import type { PlanHistoryEntry } from "./history.ts";
import { parseStepLines } from "./parse.ts";
import { askText, callBackend, oneLine, planRequest, type PlanRunContext } from "./run_context.ts";
import { PLAN_RUN_STEP_IDS } from "./run_types.ts";
import { serializePlan } from "./serialize.ts";
import { goalText, historyText } from "./step_context.ts";
import { findStep, planProgress, replaceChildren, walkSteps } from "./tree.ts";
import { type PlanCommand, type PlanSpec, PlanStatus, type PlanStep } from "./types.ts";
import { planErrors, validatePlan } from "./validate.ts";

/** End-of-round re-planning. Returns true when the plan changed. */
export async function replanRound(ctx: PlanRunContext): Promise<boolean> {
  const issues = unresolved(ctx.plan);
  ctx.log(`round ${ctx.round} not converged (${issues.length} issue(s)); re-planning`);
  const text = await askText(
    ctx,
    PLAN_RUN_STEP_IDS.replan,
    renderPromptTemplate(ctx.prompts.replan, {
      goal: goalText(ctx.plan),
      round: String(ctx.round),
      max_rounds: String(ctx.options.maxRounds ?? 3),
      issues: issues.join("\n"),
      plan_state: serializePlan(ctx.plan, { fold: true }),
      history: historyText(ctx),
    }),
  );
  const entry: PlanHistoryEntry = { kind: "replan", round: ctx.round, at: "" };
  const commands = parseCommands(ctx, text);
  if (commands.length === 0) {
    entry.commands = [];
    await ctx.record(entry);
    return false;
  }
  const applied = await applyLlmCommands(ctx, commands, entry);
  return applied.changed;
}

/** The `PLAN_CMD:` lines of an answer; ignored lines are logged. */
export function parseCommands(ctx: PlanRunContext, text: string): PlanCommand[] {
  return parsePlanCommands(text, {
    onIgnored: (_n, line, reason) => ctx.log(`ignored ${line}: ${reason}`),
  });
}

/**
 * Applies LLM-layer commands. `REPLAN ALL` regenerates the whole plan (other commands of the
 * batch referred to the old plan and are dropped); `REPLAN <id>` clears a container and
 * generates its new children; view commands are ignored.
 */
export async function applyLlmCommands(
  ctx: PlanRunContext,
  commands: PlanCommand[],
  entry: PlanHistoryEntry,
): Promise<{ changed: boolean; regenerated: boolean }> {
  const all = commands.find((c) => c.op === "REPLAN" && c.stepId === "ALL");
  if (all) {
    entry.commands = [formatPlanCommand(all)];
    const ok = await regenerateAll(ctx, all.result || entry.reason || "");
    if (!ok.ok) entry.errors = [ok.error];
    await ctx.record(entry);
    return { changed: ok.ok, regenerated: ok.ok };
  }
  const applied: string[] = [];
  const errors: string[] = [];
  for (const cmd of commands) {
    if (cmd.op === "EXPAND" || cmd.op === "COLLAPSE") {
      ctx.log(`ignored ${cmd.op} ${cmd.stepId}: view commands are not part of re-planning`);
      continue;
    }
    const target = cmd.op === "REVISE" ? findStep(ctx.plan, cmd.stepId)?.step : undefined;
    const error = applyCommand(ctx.plan, cmd);
    if (error !== "") {
      errors.push(error);
      ctx.log(`command failed: ${error}`);
      continue;
    }
    applied.push(formatPlanCommand(cmd));
    ctx.log(`applied ${formatPlanCommand(cmd).split("\n")[0].slice(10)}`);
    if (target) ctx.forgetCounters(target);
    if (cmd.op === "REPLAN") {
      const regenerated = await regenerateChildren(ctx, cmd.stepId, cmd.result);
      if (regenerated !== "") errors.push(regenerated);
    }
  }
  entry.commands = applied;
  if (errors.length > 0) entry.errors = errors;
  await ctx.record(entry);
  await ctx.save();
  return { changed: applied.length > 0, regenerated: false };
}

/** Phase 2 of `REPLAN <id>`: new children for the container. Returns an error or `""`. */
async function regenerateChildren(
  ctx: PlanRunContext,
  stepId: string,
  reason: string,
): Promise<string> {
  const container = findStep(ctx.plan, stepId)?.step;
  if (!container) return `REPLAN ${stepId}: step vanished`;
  const prompt = renderPromptTemplate(ctx.prompts.children, {
    goal: goalText(ctx.plan),
    plan_state: serializePlan(ctx.plan, { fold: true }),
    step_id: stepId,
    step_type: container.stepType,
    description: container.description,
    reason: reason || "(no reason given)",
  });
  const asked = await askStructured({
    request: planRequest(ctx, PLAN_RUN_STEP_IDS.children(stepId), prompt),
    call: (req) => callBackend(ctx, req),
    read: (response) => readChildren(ctx.plan, response.text, stepId),
    expected: `the corrected sub-steps of step ${stepId}, one step line each ` +
      `("${stepId}.1. [act] description → outputs")`,
  });
  if (asked.ok) {
    replaceChildren(ctx.plan, stepId, asked.value);
    ctx.log(`step ${stepId}: ${asked.value.length} new sub-step(s) written`);
    await ctx.save();
    return "";
  }
  const errors = asked.errors.length > 0 ? asked.errors : [asked.reason];
  const message = `REPLAN ${stepId}: new children invalid after a re-ask: ${errors.join("; ")}`;
  ctx.mark(container, "BLOCKED", oneLine(message));
  ctx.log(message);
  return message;
}

/** The new children of container `stepId` in an answer, checked against the whole plan. */
function readChildren(plan: PlanSpec, text: string, stepId: string): AnswerReading<PlanStep[]> {
  const parsed = parseChildren(text, stepId);
  if (typeof parsed === "string") {
    return { ok: false, rejection: rejectAnswer(CHILDREN_REJECTED, [parsed]) };
  }
  const check = planErrors(validatePlan({ ...plan, steps: parsed }));
  if (check.length > 0) return { ok: false, rejection: rejectAnswer(CHILDREN_REJECTED, check) };
  return { ok: true, value: parsed };
}

/** `REPLAN ALL`: a new plan replaces the current one (in place). */
async function regenerateAll(
  ctx: PlanRunContext,
  reason: string,
): Promise<{ ok: true } | { ok: false; error: string }> {
  const prompt = renderPromptTemplate(ctx.prompts.regenerate, {
    goal: goalText(ctx.plan),
    reason: reason || "(no reason given)",
    plan_state: serializePlan(ctx.plan, { fold: true }),
    history: historyText(ctx),
  });
  try {
    const generated = await requestPlan(
      prompt,
      PLAN_RUN_STEP_IDS.regenerate,
      {
        backend: ctx.options.backend,
        model: ctx.options.model,
        cwd: ctx.options.cwd,
        signal: ctx.options.signal,
        iteration: ctx.round,
      },
    );
    Object.assign(ctx.plan, generated.plan);
    ctx.forgetCounters();
    ctx.log(`plan regenerated (REPLAN ALL): ${planProgress(ctx.plan).total} steps`);
    await ctx.save();
    return { ok: true };
  } catch (error) {
    if (error instanceof StepflowError && error.code === "PLAN_GENERATION_INVALID") {
      ctx.log(`REPLAN ALL failed, keeping the current plan: ${error.message}`);
      return { ok: false, error: error.message };
    }
    throw error;
  }
}

function unresolved(plan: PlanSpec): string[] {
  const issues: string[] = [];
  walkSteps(plan.steps, (s) => {
    if (s.children.length > 0 && s.status !== PlanStatus.BLOCKED) return;
    if (s.status === PlanStatus.BLOCKED) {
      issues.push(`- step ${s.stepId} [${s.stepType}] is blocked: ${s.result || "(no reason)"}`);
    } else if (s.status === PlanStatus.PENDING || s.status === PlanStatus.ACTIVE) {
      issues.push(`- step ${s.stepId} [${s.stepType}] is still ${s.status}`);
    }
  });
  return issues.length > 0 ? issues : ["- (no blocked or unfinished step is listed)"];
}

/** Why new children were rejected, as the re-ask says it. */
const CHILDREN_REJECTED = "your sub-steps could not be used";

/** Parses the children an LLM wrote for container `stepId`, numbered `<id>.k` or from 1. */
function parseChildren(text: string, stepId: string): PlanStep[] | string {
  const body = text.replace(/```[^\n]*\n?/g, "");
  try {
    const steps = parseStepLines(body, stepId);
    if (steps.length > 0) return steps;
  } catch {
    // Maybe numbered from 1: tried below.
  }
  try {
    const steps = parseStepLines(body, "");
    if (steps.length > 0) return steps;
    return `no step lines found; write lines like "${stepId}.1. [act] description → outputs"`;
  } catch (error) {
    return (error as Error).message;
  }
}
