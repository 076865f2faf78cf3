/**
 * Permission asks that wait: with `behavior.permissionAsks: "wait"` (or the runner's
 * `permissionAsks` option), a tool call that asks for permission when nobody can be asked does not
 * refuse — the run records the request and waits, exactly as at an input step (status `waiting`,
 * answered with `--answer RUN_ID --value '{"decision":"allow"}'`, the dashboard's form,
 * `StepFlowRunner.answer`, workers). The answer's shape is fixed (`{ "decision": "allow" | "deny" }`);
 * the answer resumes the run inside the step (its turns and finished calls replayed from the run
 * log) and the call runs or is refused, its record naming who answered. The wait itself is returned,
 * not thrown: the run's permission hook answers `"wait"`, the tool loop stops at the call and
 * returns it, and the step's handler returns it as its outcome (`run_wait.ts`).
 *
 * @module
 */
import type { PermissionAsk, PermissionReply } from "../engine/tool_loop.ts";
import { oneLine, toolCallTarget } from "../events/tool_call_line.ts";
import {
  type PendingInput,
  PERMISSION_SCHEMA_REF,
  type PermissionRequest,
  type RecordedAnswer,
} from "./input_request.ts";

/** The request a run waits on for `ask` (its prompt says what runs and how to answer). */
export function permissionPending(ask: PermissionAsk, now: Date): PendingInput {
  const target = toolCallTarget(ask, 120);
  const permission: PermissionRequest = {
    tool: ask.tool,
    callId: ask.callId ?? "",
    reason: ask.reason,
    ...(ask.suggestion ? { suggestion: ask.suggestion } : {}),
    ...(target ? { target } : {}),
  };
  // The rule may hold a whole command: the prompt shows it bounded (the request keeps it whole).
  const rule = ask.suggestion
    ? ` (to allow it without asking next time, add "${
      oneLine(ask.suggestion, 300)
    }" to allowedTools)`
    : "";
  return {
    requestId: crypto.randomUUID(),
    stepId: ask.stepId,
    prompt: `Step "${ask.stepId}" asks to run ${ask.tool}${
      target ? ` ${target}` : ""
    }: ${ask.reason} Allow it? Answer {"decision":"allow"} or {"decision":"deny"} (a denial may add a "reason" the model is told)${rule}.`,
    schemaRef: PERMISSION_SCHEMA_REF,
    requestedAt: now.toISOString(),
    permission,
  };
}

/**
 * The permission hook of a step: a recorded answer to this very call (same step, tool and call
 * id) decides it, once; otherwise `undefined` (the run's other answerers are asked next, and,
 * when asks wait, the call waits).
 */
export function answeredPermission(
  state: { answer?: RecordedAnswer },
  ask: PermissionAsk,
): PermissionReply | undefined {
  const answer = state.answer;
  const asked = answer?.permission;
  if (
    !answer || !asked || answer.stepId !== ask.stepId || asked.tool !== ask.tool ||
    asked.callId !== ask.callId
  ) {
    return undefined;
  }
  delete state.answer;
  const { decision, reason } = answer.value as { decision?: unknown; reason?: unknown };
  const allow = decision === "allow";
  const by = `${allow ? "approved" : "denied"} when asked by ${answer.answeredBy}`;
  // A denial's reason is told to the model with the refusal.
  return !allow && typeof reason === "string" && reason.trim()
    ? { allow, by, message: oneLine(reason, 500) }
    : { allow, by };
}
