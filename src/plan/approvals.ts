/**
 * Approval gates of the tool-plan executor: whether a step needs an approval, whether
 * `autoApprove` covers it, and asking the approver. The executor owns the scheduling side (a step
 * waiting for its approver gives its concurrency slot back); this file owns the decision.
 *
 * @module
 */
import { errorMessage } from "../errors.ts";
import type {
  ApprovalRequest,
  Approver,
  PlanToolContext,
  PlanToolRegistry,
  Step,
} from "./types.ts";

/** An approval decision, as the executor acts on it. */
export interface ApprovalOutcome {
  /** Whether the step may run. */
  approved: boolean;
  /** Why (shown when denied). */
  reason?: string;
}

/** Writes one line to the step's progress log. */
export type ApprovalNote = (level: "info" | "warn", message: string) => void;

/**
 * Why running `step` with `args` needs an approval (the step asks for one, or its tool does for
 * these arguments), or `undefined` when it does not.
 */
export async function approvalReason(
  step: Step,
  args: Record<string, unknown>,
  tools: PlanToolRegistry,
  ctx: PlanToolContext,
): Promise<string | undefined> {
  if (step.requiresApproval) return "the step asks for approval";
  return await tools.approvalReason(step.tool, args, ctx);
}

/** True when `autoApprove` (`true`, or a list of tool names) covers `tool`. */
export function autoApproves(auto: boolean | readonly string[] | undefined, tool: string): boolean {
  return auto === true || (Array.isArray(auto) && auto.includes(tool));
}

/**
 * Asks the approver about one step. Requests are not serialised: several steps may wait for an
 * answer at once (an interactive approver queues its own questions, as `run-plan` does). No
 * approver, a cancelled run or a failing approver all deny, with a reason that says which.
 */
export async function askApprover(
  approver: Approver | undefined,
  request: ApprovalRequest,
  signal: AbortSignal,
  note: ApprovalNote,
): Promise<ApprovalOutcome> {
  if (!approver) {
    note("warn", `needs approval (${request.reason}) but no approver is configured`);
    return {
      approved: false,
      reason:
        `needs approval: ${request.reason}; no approver is configured (CLI: answer on a terminal, or pass --yes or --approve ${request.tool})`,
    };
  }
  if (signal.aborted) return { approved: false, reason: "cancelled" };
  note("info", `waiting for approval (${request.reason})`);
  try {
    const answer = await approver(request, signal);
    const decision = typeof answer === "boolean" ? { approved: answer } : answer;
    note(
      "info",
      decision.approved ? "approved" : `denied${decision.reason ? `: ${decision.reason}` : ""}`,
    );
    return decision;
  } catch (error) {
    return { approved: false, reason: `the approver failed: ${errorMessage(error)}` };
  }
}
