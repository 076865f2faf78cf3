/**
 * A tool call's permission, as the tool loop settles it: the step's policy decides, an "ask" goes
 * to whoever can answer (`onPermissionRequest`), and nobody to ask is a refusal the model is told
 * how to lift.
 *
 * @module
 */
import type { ToolCallRequest } from "../llm/tool_turn.ts";
import type { LlmRequest } from "../llm/types.ts";
import type { ToolRegistry } from "../tools/registry.ts";
import {
  decidePermission,
  type PermissionDecision,
  type PermissionPolicy,
  refusalByRules,
} from "../tools/permissions.ts";
import type { ReachedPath } from "../tools/types.ts";

/** A call waiting for someone to allow it (a terminal prompt, the dashboard, code). */
export interface PermissionAsk {
  /** The step. */
  stepId: string;
  /** The call's id (the backend's, or one stepflow gave it). */
  callId: string;
  /** The tool. */
  tool: string;
  /** Its validated arguments. */
  args: Record<string, unknown>;
  /** Why it asks. */
  reason: string;
  /** The `allowedTools` rule that would allow it without asking. */
  suggestion?: string;
  /**
   * The paths the call reaches, as written and as they really are (through symbolic links): what
   * the rules judged, and what an "always" grant must cover.
   */
  paths?: ReachedPath[];
}

/**
 * An answer to a {@linkcode PermissionAsk} that says more than yes or no: who answered (recorded as
 * the call's `decidedBy`), and for a refusal what the model is told.
 *
 * @example
 * ```ts
 * import type { PermissionReply } from "./tool_loop.ts";
 * const reply: PermissionReply = { allow: false, by: "reviewer", message: "Not on a Friday." };
 * ```
 */
export interface PermissionReply {
  /** True runs the call. */
  allow: boolean;
  /**
   * Allow every call the ask's `suggestion` rule covers for the rest of the run. The runner
   * remembers it (`StepFlowRunnerOptions.onPermissionRequest`); the loop alone runs this call.
   */
  always?: boolean;
  /**
   * Who answered, as the call's `decidedBy` (default here: `approved when asked` / `denied when
   * asked`; the runner's: `onPermissionRequest`).
   */
  by?: string;
  /** For a refusal: a sentence the model is told with it. */
  message?: string;
}

/**
 * What whoever is asked may answer: allow or refuse (`true`, `false`, a {@linkcode PermissionReply}),
 * `undefined` when nobody could answer (the call is refused), or `"wait"`: nobody can answer now,
 * and the call waits — the loop stops at it and returns the ask ({@linkcode PermissionWaits}).
 */
export type PermissionAnswerOrWait = boolean | PermissionReply | "wait" | undefined;

/** What deciding a call needs from the loop. */
export interface PermissionDeciders {
  /** The registry (a read-only tool is decided as such). */
  tools: ToolRegistry;
  /** The step's permissions. */
  policy: PermissionPolicy;
  /** Answers an ask (see {@linkcode PermissionAnswerOrWait}); none: nobody could. */
  onPermissionRequest?: (
    ask: PermissionAsk,
    signal?: AbortSignal,
  ) => PermissionAnswerOrWait | Promise<PermissionAnswerOrWait>;
}

/** A call whose ask waits for an answer nobody can give now: nothing is decided, nothing runs. */
export interface PermissionWaits {
  /** Tells it from a decision. */
  behavior: "wait";
  /** The ask that waits. */
  ask: PermissionAsk;
}

/**
 * The decision, with an "ask" answered by whoever can, or refused when nobody can; `by` says who
 * decided and `at` when. An ask whose answerer says `"wait"` is no decision: it is returned as
 * {@linkcode PermissionWaits}.
 */
export async function decide(
  call: ToolCallRequest,
  args: Record<string, unknown>,
  request: LlmRequest,
  loop: PermissionDeciders,
  signal: AbortSignal | undefined,
  paths?: readonly ReachedPath[],
): Promise<(PermissionDecision & { by: string; at: string }) | PermissionWaits> {
  const tool = call.name;
  const readOnly = loop.tools.descriptor(tool)?.readOnly ?? false;
  const decision = decidePermission(loop.policy, {
    tool,
    args,
    cwd: request.cwd,
    readOnly,
    ...(paths ? { paths } : {}),
  });
  const by = decision.rule ? `rule ${decision.rule}` : `${loop.policy.mode} mode`;
  if (decision.behavior !== "ask") return { ...decision, by, at: new Date().toISOString() };
  const ask: PermissionAsk = {
    stepId: request.stepId,
    callId: call.id,
    tool,
    args,
    reason: decision.reason,
  };
  if (decision.suggestion) ask.suggestion = decision.suggestion;
  if (paths?.length) ask.paths = structuredClone([...paths]);
  const answer = await loop.onPermissionRequest?.(ask, signal);
  if (answer === "wait") return { behavior: "wait", ask };
  const at = new Date().toISOString();
  if (answer === undefined) {
    return {
      ...decision,
      behavior: "deny",
      by: "nobody to ask",
      at,
      reason: `${decision.reason} Nobody can be asked in this run, so the call was refused.`,
    };
  }
  const reply = typeof answer === "boolean" ? { allow: answer } : answer;
  if (reply.allow) {
    return { ...decision, behavior: "allow", by: reply.by ?? "approved when asked", at };
  }
  return {
    ...decision,
    behavior: "deny",
    by: reply.by ?? "denied when asked",
    at,
    reason: `${decision.reason} It was denied when asked${
      reply.message ? `: ${reply.message}` : "."
    }`,
  };
}

/**
 * The decision for a call started before an interruption: it keeps the decision it ran under
 * (nobody is asked twice) — unless `disallowedTools` refuses it now, as a path it reaches may have
 * changed (a symbolic link) since it was decided.
 */
export function decideResumed(
  policy: PermissionPolicy,
  call: ToolCallRequest,
  args: Record<string, unknown>,
  cwd: string,
  startedBy: string,
  paths?: readonly ReachedPath[],
): PermissionDecision & { by: string; at: string } {
  const at = new Date().toISOString();
  const refused = refusalByRules(policy, {
    tool: call.name,
    args,
    cwd,
    ...(paths ? { paths } : {}),
  });
  if (refused) return { ...refused, by: refused.rule ? `rule ${refused.rule}` : "rules", at };
  return { behavior: "allow", reason: "", by: startedBy, at };
}

/** What the model is told of a refused call: why, how the user could allow it, what to do. */
export function refusalText(tool: string, decision: PermissionDecision): string {
  const how = decision.suggestion
    ? ` The user can allow it by adding "${decision.suggestion}" to allowedTools${
      tool === "Write" || tool === "Edit" ? ' or with permissionMode "acceptEdits"' : ""
    }.`
    : "";
  return `Permission denied: ${decision.reason}${how} Do not retry this call; continue without it or answer.`;
}
