/**
 * Step reflection (the runner's third stage, docs/planspec.md): after a step answers with a status
 * other than `OK`, the model sees the folded plan and decides — `RETRY`, `ACCEPT`, `INTERACT` (ask
 * the user) or
 * `PLAN_CMD` lines that change the plan.
 *
 * @module
 */
import { renderPromptTemplate } from "../engine/prompt_template.ts";
import type { StepInfo as EventStepInfo } from "../events/types.ts";
import type { PlanHistoryEntry } from "./history.ts";
import { applyLlmCommands, parseCommands } from "./replanning.ts";
import { askStep, oneLine, type PlanRunContext } from "./run_context.ts";
import { PLAN_RUN_STEP_IDS, type PlanRunnerOptions } from "./run_types.ts";
import { type Reflection, ReflectionSchema, type StepOutput } from "./runner_schemas.ts";
import { serializePlan } from "./serialize.ts";
import { goalText, historyText } from "./step_context.ts";
import { walkSteps } from "./tree.ts";
import { type PlanSpec, PlanStatus, type PlanStep } from "./types.ts";

/** Step reflection: decide what to do about a non-OK step. */
export async function reflect(
  ctx: PlanRunContext,
  step: PlanStep,
  output: StepOutput,
  info: EventStepInfo,
): Promise<void> {
  const counters = ctx.countersOf(step);
  const maxAttempts = ctx.options.maxAttempts ?? 3;
  const failure = oneLine(`${output.status}: ${output.result}`);
  const interactive = canInteract(ctx.options);
  step.expanded = true;
  let planState: string;
  try {
    planState = serializePlan(ctx.plan, { fold: true });
  } finally {
    delete step.expanded;
  }
  const answer = await askStep(
    ctx,
    PLAN_RUN_STEP_IDS.reflect(step.stepId),
    renderPromptTemplate(ctx.prompts.reflect, {
      goal: goalText(ctx.plan),
      step_id: step.stepId,
      description: step.description,
      status: output.status,
      result: output.result,
      plan_state: planState,
      can_interact: interactive ? "yes" : "no",
      attempt: String(counters.attempts),
      max_attempts: String(maxAttempts),
      history: historyText(ctx),
    }),
    ReflectionSchema,
  );
  if (!answer.ok) {
    ctx.mark(step, "BLOCKED", `${failure} (reflection gave no usable decision)`);
    await ctx.record({
      kind: "reflection",
      stepId: step.stepId,
      errors: answer.errors,
    });
    ctx.log(`step ${step.stepId}: reflection unusable (${answer.errors.join("; ")}); blocked`);
    return;
  }
  const reflection: Reflection = answer.value;
  const decision = reflection.decision;
  ctx.log(`step ${step.stepId}: ${output.status} → ${decision} (${reflection.reason})`);
  const entry: PlanHistoryEntry = {
    kind: "reflection",
    round: ctx.round,
    at: "",
    stepId: step.stepId,
    decision,
    reason: reflection.reason,
  };
  switch (decision) {
    case "RETRY":
      await ctx.record(entry);
      if (counters.attempts >= maxAttempts) {
        ctx.mark(step, "BLOCKED", `${failure} (gave up after ${counters.attempts} attempts)`);
      } else {
        await ctx.events.emit("onStepRetry", info, counters.attempts, failure);
      }
      return;
    case "ACCEPT":
      await ctx.record(entry);
      ctx.complete(step, output);
      return;
    case "INTERACT": {
      const question = (reflection.question ?? "").trim() || reflection.reason;
      entry.question = question;
      await ctx.record(entry);
      await interact(ctx, step, question, failure, counters.attempts >= maxAttempts);
      return;
    }
    case "PLAN_CMD": {
      const text = Array.isArray(reflection.commands)
        ? reflection.commands.join("\n")
        : reflection.commands ?? "";
      const commands = parseCommands(ctx, text);
      if (commands.length === 0) {
        await ctx.record(entry);
        ctx.mark(step, "BLOCKED", `${failure} (reflection gave no usable PLAN_CMD)`);
        return;
      }
      const before = new Set<PlanStep>();
      walkSteps(ctx.plan.steps, (s) => void before.add(s));
      const applied = await applyLlmCommands(ctx, commands, entry);
      if (applied.regenerated) return;
      if (step.status !== PlanStatus.ACTIVE) return; // skipped, revised or re-planned
      if (addedBefore(ctx.plan, step, before) && counters.attempts < maxAttempts) {
        step.status = PlanStatus.PENDING; // runs again after the inserted steps
        return;
      }
      ctx.mark(step, "BLOCKED", failure);
      return;
    }
  }
}

/** Asks the user the reflection's question, or blocks the step with it when nobody can answer. */
async function interact(
  ctx: PlanRunContext,
  step: PlanStep,
  question: string,
  failure: string,
  exhausted: boolean,
): Promise<void> {
  if (!canInteract(ctx.options)) {
    ctx.mark(step, "BLOCKED", oneLine(`needs input: ${question}`));
    return;
  }
  const answer = (await ctx.options.ask!(question, step))?.trim() ?? "";
  await ctx.record({ kind: "interact", stepId: step.stepId, question, answer });
  if (answer === "") {
    ctx.mark(step, "BLOCKED", oneLine(`needs input: ${question} (no answer)`));
  } else if (exhausted) {
    ctx.mark(step, "BLOCKED", `${failure} (gave up after the attempt limit)`);
  }
  // Otherwise the step stays active and runs again with the answer in its history.
}

function canInteract(options: PlanRunnerOptions): boolean {
  return options.interactive === true && typeof options.ask === "function";
}

/** True when a step not in `before` now comes before `step` in document order. */
function addedBefore(plan: PlanSpec, step: PlanStep, before: Set<PlanStep>): boolean {
  let seenStep = false;
  let added = false;
  walkSteps(plan.steps, (s) => {
    if (s === step) seenStep = true;
    else if (!seenStep && !before.has(s)) added = true;
  });
  return added;
}
