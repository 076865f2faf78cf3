/**
 * Who answers a run's permission asks, and what the run remembers of them: a call that would ask
 * goes first to the grants the run was given ("always for this run"), then to the runner's
 * `onPermissionRequest` (code, or `run-agent`'s terminal prompt); with neither, nobody can be asked
 * and the tool loop refuses the call. Each grant is logged (`permission_grant`) before the call it
 * allowed runs and kept in the run's state, so a resume keeps it. Each call is also summed up for
 * its iteration's history entry (bounded by {@linkcode MAX_HISTORY_TOOL_CALLS}).
 *
 * @module
 */
import { errorMessage } from "../errors.ts";
import type { PermissionAsk, PermissionReply, ToolLoopOptions } from "../engine/tool_loop.ts";
import { parsePermissionRule, parsePermissionRules } from "../definition/permission_rule.ts";
import { decidePermission } from "../tools/permissions.ts";
import { toolCallTarget } from "../events/tool_call_line.ts";
import type { ToolCallEvent } from "../events/types.ts";
import type {
  PermissionAnswer,
  PermissionGrant,
  RunPermissionAsk,
  ToolCallSummary,
} from "./types.ts";

/** Tool calls one history entry lists; the rest are counted in `toolCallsOmitted`. */
export const MAX_HISTORY_TOOL_CALLS = 50;

/** Who asks on behalf of a run when nobody says otherwise (the runner option's name). */
const CODE_ANSWERER = "onPermissionRequest";

/** What answering a run's asks needs from the run. */
export interface RunAskContext {
  /** The run id and agent, for the answerer. */
  runId: string;
  /** The agent. */
  agent: string;
  /** The current iteration. */
  iteration: number;
  /** The run's working folder (grants' path rules are relative to it). */
  cwd: string;
  /** The grants the run holds now. */
  grants(): readonly PermissionGrant[];
  /**
   * The run's signal (cancel, Ctrl-C, time limit), for a call that does not pass its own (which
   * also fires on the step's timeout): an ask that is waiting stops with it.
   */
  signal: AbortSignal;
  /** The runner's `onPermissionRequest`, when it has one. */
  answerer?: (ask: RunPermissionAsk) => PermissionAnswer | Promise<PermissionAnswer>;
  /** Keeps a new grant (the run's state and log), before the call it allows runs. */
  recordGrant(grant: PermissionGrant): Promise<void>;
  /** Warns the person running the agent (an answerer that failed or answered nonsense). */
  warn(message: string): void;
}

/**
 * The tool loop's `onPermissionRequest` for one call of a run: a grant covering the ask allows it;
 * else the runner's answerer is asked (an `always` answer becomes a grant); else `undefined`
 * (nobody to ask). An answerer that throws or answers something else refuses the call, with a
 * warning: a broken answerer never lets a call through.
 */
export function runPermissionHook(
  ctx: RunAskContext,
): NonNullable<ToolLoopOptions["onPermissionRequest"]> {
  return async (ask, callSignal) => {
    // The call's signal fires with the run's and on the step's timeout.
    const signal = callSignal ?? ctx.signal;
    const grant = coveringGrant(ctx.grants(), ask, ctx.cwd);
    if (grant) {
      return { allow: true, by: `rule ${grant.rule}, allowed for this run by ${grant.grantedBy}` };
    }
    if (!ctx.answerer) return undefined;
    let answer: unknown;
    try {
      answer = await ctx.answerer({
        ...ask,
        // A copy: what runs is what was decided on, whatever the answerer does with its ask.
        args: structuredClone(ask.args),
        runId: ctx.runId,
        agent: ctx.agent,
        iteration: ctx.iteration,
        signal,
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      ctx.warn(
        `step "${ask.stepId}": onPermissionRequest failed (${
          errorMessage(error)
        }); the ${ask.tool} call was refused`,
      );
      return {
        allow: false,
        by: `${CODE_ANSWERER} failed`,
        message: "the permission request could not be answered.",
      };
    }
    const reply = permissionReply(answer);
    if (!reply) {
      ctx.warn(
        `step "${ask.stepId}": onPermissionRequest answered ${
          shown(answer)
        }; expected true, false, "always" or { allow: boolean }. The ${ask.tool} call was refused`,
      );
      return { allow: false, by: `${CODE_ANSWERER} (invalid answer)` };
    }
    const by = reply.by ?? CODE_ANSWERER;
    if (!reply.allow) return { ...reply, by };
    if (!reply.always) return { allow: true, by };
    const rule = grantRule(ask);
    if (!rule) return { allow: true, by };
    const granted: PermissionGrant = {
      rule,
      stepId: ask.stepId,
      callId: ask.callId,
      grantedBy: by,
      grantedAt: new Date().toISOString(),
    };
    await ctx.recordGrant(granted);
    return { allow: true, by: `${by}, always for this run (${rule})` };
  };
}

/**
 * An answerer's answer as a reply, or `undefined` when it is not one: `true`, `false`, `"always"`,
 * or an object with a boolean `allow` (`always`, `by`, `message` optional and checked).
 *
 * @example
 * ```ts
 * import { permissionReply } from "./permission_asks.ts";
 * permissionReply("always"); // { allow: true, always: true }
 * permissionReply("yes"); // undefined
 * ```
 */
export function permissionReply(answer: unknown): PermissionReply | undefined {
  if (typeof answer === "boolean") return { allow: answer };
  if (answer === "always") return { allow: true, always: true };
  if (typeof answer !== "object" || answer === null || Array.isArray(answer)) return undefined;
  const { allow, always, by, message } = answer as Record<string, unknown>;
  if (typeof allow !== "boolean") return undefined;
  if (always !== undefined && typeof always !== "boolean") return undefined;
  if (by !== undefined && typeof by !== "string") return undefined;
  if (message !== undefined && typeof message !== "string") return undefined;
  const reply: PermissionReply = { allow };
  if (always) reply.always = true;
  // Both are recorded and shown: bounded, one line.
  if (typeof by === "string" && by.trim()) reply.by = oneLine(by, 100);
  if (typeof message === "string" && message.trim()) reply.message = oneLine(message, 500);
  return reply;
}

/** The grant of `grants` whose rule allows the call `ask` describes, if any. */
export function coveringGrant(
  grants: readonly PermissionGrant[],
  ask: Pick<PermissionAsk, "tool" | "args" | "paths">,
  cwd: string,
): PermissionGrant | undefined {
  if (grants.length === 0) return undefined;
  const { rules } = parsePermissionRules(grants.map((g) => g.rule));
  // A grant covers the files the call reaches, judged as the ask was (a link is not its target).
  const decision = decidePermission(
    { mode: "default", allow: rules, deny: [] },
    { tool: ask.tool, args: ask.args, cwd, ...(ask.paths ? { paths: ask.paths } : {}) },
  );
  if (decision.behavior !== "allow" || !decision.rule) return undefined;
  return grants.find((g) => g.rule === decision.rule);
}

/** The rule an "always" answer grants: the ask's suggestion when it parses, else none. */
function grantRule(ask: PermissionAsk): string | undefined {
  const rule = ask.suggestion ?? ask.tool;
  return parsePermissionRule(rule).ok ? rule : undefined;
}

/**
 * The grants recorded in a run log (`permission_grant` lines) that `grants` lacks, added to it: a
 * run that crashed after a grant but before its next checkpoint keeps the grant when resumed.
 */
export function restoreGrants(
  grants: PermissionGrant[],
  log: readonly { type: string; [key: string]: unknown }[],
): void {
  for (const line of log) {
    if (line.type !== "permission_grant" || typeof line.rule !== "string") continue;
    if (grants.some((g) => g.rule === line.rule)) continue;
    if (!parsePermissionRule(line.rule).ok) continue;
    grants.push({
      rule: line.rule,
      stepId: String(line.stepId ?? ""),
      callId: String(line.callId ?? ""),
      grantedBy: String(line.grantedBy ?? "unknown"),
      grantedAt: String(line.grantedAt ?? line.ts ?? ""),
    });
  }
}

/** What a history entry keeps of one call. */
export function toolCallSummary(call: ToolCallEvent): ToolCallSummary {
  const summary: ToolCallSummary = {
    callId: call.callId,
    tool: call.tool,
    decision: call.decision ?? "invalid",
    isError: call.isError ?? false,
    durationMs: call.durationMs ?? 0,
  };
  const target = toolCallTarget(call);
  if (target) summary.target = target;
  if (call.decidedBy) summary.decidedBy = call.decidedBy;
  if (call.decidedAt) summary.decidedAt = call.decidedAt;
  return summary;
}

/** The calls of one iteration, as its history entry lists them. */
export interface IterationToolCalls {
  /** The first {@linkcode MAX_HISTORY_TOOL_CALLS} calls. */
  list: ToolCallSummary[];
  /** Calls after those. */
  omitted: number;
}

/** Adds one call to its iteration's list, or counts it once the list is full. */
export function noteToolCall(calls: IterationToolCalls, call: ToolCallEvent): void {
  if (calls.list.length < MAX_HISTORY_TOOL_CALLS) calls.list.push(toolCallSummary(call));
  else calls.omitted++;
}

function oneLine(text: string, max: number): string {
  // deno-lint-ignore no-control-regex
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

function shown(value: unknown): string {
  try {
    return oneLine(JSON.stringify(value) ?? String(value), 100);
  } catch {
    return typeof value;
  }
}
