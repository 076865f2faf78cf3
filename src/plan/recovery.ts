/**
 * LLM recovery of a failed step (the `ask` `onError` strategy, docs/tool-plans.md): the prompt, the
 * call, and the parsing of the decision, with one re-ask when the answer is unusable.
 *
 * @module
 */
import { z } from "zod";
import { askStructured, readSchemaAnswer } from "../engine/ask_structured.ts";
import { renderPromptTemplate } from "../engine/prompt_template.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import type { LlmBackend, LlmRequest } from "../llm/types.ts";
import { formatToolList, loadPlanPrompt } from "./prompts.ts";
import { stepFromNew } from "./new_step.ts";
import { formatIssue, RecoveryDecisionSchema } from "./schema.ts";
import type { Plan, PlanToolRegistry, RecoveryDecision, Step } from "./types.ts";

/** The scripted-backend step id of recovery calls. */
export const RECOVER_STEP_ID = "plan.recover";

/** Checks a decision against the plan; `problems` are sent back to the LLM on the re-ask. */
export type RecoveryCheck = (
  decision: RecoveryDecision,
) => { ok: true } | { ok: false; problems: string[] };

/** Inputs of {@linkcode askRecovery}. */
export interface RecoveryRequest {
  /** The plan (for the step list in the prompt). */
  plan: Plan;
  /** The failed step. */
  step: Step;
  /** The error message. */
  error: string;
  /** 1-based recovery round for this step. */
  attempt: number;
  /** The backend to ask. */
  backend: LlmBackend;
  /** The tools (listed in the prompt). */
  tools: PlanToolRegistry;
  /** Working folder passed to the backend. */
  cwd: string;
  /** Model override. */
  model?: string;
  /** Cancels the call. */
  signal?: AbortSignal;
  /** Validates a decision before it is accepted. */
  check?: RecoveryCheck;
}

let decisionSchema: Record<string, unknown> | undefined;

/**
 * Asks the backend how to recover; returns a valid decision or throws `RECOVERY_FAILED` after one
 * re-ask. Calls use step id {@linkcode RECOVER_STEP_ID} (`kind: "step"`, then `"reask"`).
 */
export async function askRecovery(request: RecoveryRequest): Promise<RecoveryDecision> {
  const template = await loadPlanPrompt("recover");
  const prompt = renderPromptTemplate(template, {
    task: request.plan.task ?? request.plan.taskId,
    description: request.step.description,
    error: request.error,
    step_id: request.step.id,
    tool: request.step.tool,
    args: JSON.stringify(request.step.args),
    attempt: String(request.attempt),
    plan: formatPlanSteps({
      ...request.plan,
      steps: request.plan.steps.map((s) => (s.id === request.step.id ? request.step : s)),
    }),
    tools: formatToolList(request.tools.describe()),
  });
  decisionSchema ??= z.toJSONSchema(RecoveryDecisionSchema, { io: "input" }) as Record<
    string,
    unknown
  >;
  const req: LlmRequest = {
    kind: "step",
    agent: "plan",
    stepId: RECOVER_STEP_ID,
    iteration: request.attempt,
    prompt,
    outputSchema: decisionSchema,
    cwd: request.cwd,
  };
  if (request.model) req.model = request.model;
  const asked = await askStructured({
    request: req,
    call: async (call) => {
      try {
        return await request.backend.complete(call, { signal: request.signal });
      } catch (error) {
        request.signal?.throwIfAborted();
        throw new StepflowError(
          "RECOVERY_FAILED",
          `Recovery of step "${request.step.id}" failed: the ${request.backend.name} backend call failed: ${
            errorMessage(error)
          }`,
          { cause: error, details: { stepId: request.step.id } },
        );
      }
    },
    read: (response) =>
      readSchemaAnswer(response, RecoveryDecisionSchema, {
        formatIssue,
        check: (decision) => {
          const shape = shapeProblems(decision);
          if (shape.length > 0) return shape;
          const checked = request.check?.(decision) ?? { ok: true };
          return checked.ok ? [] : checked.problems;
        },
        checkReason: DECISION_REJECTED,
      }),
  });
  if (asked.ok) return asked.value;
  const problems = asked.errors.length > 0 ? asked.errors : [asked.reason];
  throw new StepflowError(
    "RECOVERY_FAILED",
    `Recovery of step "${request.step.id}" failed: the answer was unusable twice:\n  ${
      problems.join("\n  ")
    }`,
    { details: { stepId: request.step.id, problems } },
  );
}

/** Why a decision that parses but cannot be applied was rejected, as the re-ask says it. */
const DECISION_REJECTED = "your decision could not be used";

function shapeProblems(decision: RecoveryDecision): string[] {
  if (decision.action === "insert" && (!decision.steps || decision.steps.length === 0)) {
    return ['action "insert" needs a non-empty "steps" list'];
  }
  return [];
}

/** One line per step: `- id [status] tool — description (after: deps)`, at most 200 lines. */
export function formatPlanSteps(plan: Plan, limit = 200): string {
  const lines = plan.steps.slice(0, limit).map((s) =>
    `- ${s.id} [${s.status}] ${s.tool} — ${s.description}${
      s.dependsOn.length ? ` (after: ${s.dependsOn.join(", ")})` : ""
    }${s.status === "failed" && s.result?.error ? ` error: ${s.result.error.slice(0, 200)}` : ""}`
  );
  if (plan.steps.length > limit) lines.push(`… and ${plan.steps.length - limit} more steps`);
  return lines.join("\n");
}

/** The steps a recovery decision inserts (new steps, numbered from 1 until the plan renumbers them). */
export function insertedSteps(decision: RecoveryDecision): Step[] {
  return (decision.steps ?? []).map((s, k) => stepFromNew(s, k + 1));
}

/**
 * The plan's steps as they would be after `decision` on the failed `step` (new args; inserted steps
 * before it, which it then depends on), without changing `steps`: what the decision is checked on.
 */
export function stepsAfterDecision(
  steps: readonly Step[],
  step: Step,
  decision: RecoveryDecision,
): Step[] {
  const candidate = steps.map((s) => s === step ? { ...s, args: decision.args ?? s.args } : s);
  if (decision.action === "insert") {
    const newSteps = insertedSteps(decision);
    const at = candidate.findIndex((s) => s.id === step.id);
    candidate[at] = {
      ...candidate[at],
      dependsOn: [...step.dependsOn, ...newSteps.map((s) => s.id)],
    };
    candidate.splice(at, 0, ...newSteps);
  }
  return candidate;
}
