/**
 * The run page of a run whose tool call waits for permission (`behavior.permissionAsks: "wait"`):
 * an approval card instead of the generic answer form — the step, the tool, what it acts on, the
 * call's full arguments (read from the run log's `tool_turn` line, cut for display), why it asks,
 * the `allowedTools` rule that would allow it without asking, and **Approve** / **Deny**. The two
 * buttons send `{ "decision": "allow" | "deny" }` through the page script's answer form, to the one
 * answer action (POST /runs/ID/answer, `actions.ts`); without `--allow-actions` the card shows the
 * two `run-agent --answer` commands instead. Everything shown came from a model: escaped, bounded.
 *
 * @module
 */
import type { PendingInput, PermissionRequest } from "../flow/input_request.ts";
import type { CommandRenderer } from "../invocation.ts";
import type { RunLogEntry } from "../store/types.ts";
import { type Html, html as h } from "./html.ts";

/** Characters of a waiting call's arguments (as indented JSON) shown on its card. */
export const APPROVAL_ARGS_LIMIT = 20_000;

/** Characters of the rule and the reason shown on the card (the rule holds a whole command). */
export const APPROVAL_LINE_LIMIT = 300;

/** `text` cut to {@linkcode APPROVAL_LINE_LIMIT} characters, marked with `…` when cut. */
function clip(text: string): string {
  return text.length > APPROVAL_LINE_LIMIT ? `${text.slice(0, APPROVAL_LINE_LIMIT)}…` : text;
}

/** A waiting call's arguments as the card shows them: JSON text, cut, and its whole length. */
export interface ApprovalArgs {
  /** The first {@linkcode APPROVAL_ARGS_LIMIT} characters of the indented JSON. */
  text: string;
  /** The length of the whole JSON text. */
  length: number;
}

/** A request that waits for a tool call's permission. */
export type PermissionPending = PendingInput & { permission: PermissionRequest };

/** Whether a waiting run's request is a tool call's permission ask. */
export function isPermissionPending(request: PendingInput): request is PermissionPending {
  const permission = request.permission as Partial<PermissionRequest> | undefined;
  return typeof permission?.tool === "string" && typeof permission.reason === "string";
}

/**
 * The arguments the model gave the waiting call: those of the step's last `tool_turn` line that
 * holds the call's id (the turn the call was asked in), or undefined when the log has none.
 */
export function waitingCallArgs(
  log: readonly RunLogEntry[],
  request: PermissionPending,
): ApprovalArgs | undefined {
  const { callId } = request.permission;
  if (!callId) return undefined;
  for (let i = log.length - 1; i >= 0; i--) {
    const entry = log[i];
    if (entry.type !== "tool_turn" || entry.stepId !== request.stepId) continue;
    const calls = Array.isArray(entry.toolCalls) ? entry.toolCalls : [];
    const call = calls.find((c) =>
      typeof c === "object" && c !== null && (c as { id?: unknown }).id === callId
    ) as { arguments?: unknown } | undefined;
    if (!call) continue;
    const whole = typeof call.arguments === "string"
      ? call.arguments
      : JSON.stringify(call.arguments ?? {}, null, 2);
    return { text: whole.slice(0, APPROVAL_ARGS_LIMIT), length: whole.length };
  }
  return undefined;
}

/** Where the card's answer goes: the page's secret (actions allowed) or the command to print. */
export interface ApprovalCardOptions {
  /** The server's secret: Approve and Deny are shown. */
  csrf?: string;
  /** How the commands shown without actions are written, as they work where the user stands. */
  commandFor: CommandRenderer;
  /** The call's arguments, when the log has them. */
  args?: ApprovalArgs;
}

/** The approval card of a run waiting for a tool call's permission. */
export function approvalCard(
  runId: string,
  request: PermissionPending,
  options: ApprovalCardOptions,
): Html {
  const p = request.permission;
  const fact = (label: string, value: Html | string) => h`<dt>${label}</dt><dd>${value}</dd>`;
  const facts = [
    fact("Step", h`<code>${request.stepId}</code>`),
    fact("Tool", h`<code>${clip(p.tool)}</code>`),
    p.target ? fact("Acts on", h`<code class="target">${clip(p.target)}</code>`) : "",
    fact("Why it asks", h`<span class="reason">${clip(p.reason)}</span>`),
    fact(
      "Allowed without asking by",
      p.suggestion
        ? h`the rule <code class="rule">${
          clip(p.suggestion)
        }</code> in <code>allowedTools</code> (the agent's <code>behavior</code>, or the step)`
        : "no single rule: a wider permissionMode, or a rule of your own in allowedTools",
    ),
    fact("Asked at", request.requestedAt),
  ];
  const args = options.args;
  const argsBlock = args
    ? h`<pre class="args" id="approval-args">${args.text}</pre>${
      args.length > args.text.length
        ? h`<div class="note">Showing ${args.text.length} of ${args.length} characters.</div>`
        : ""
    }`
    : h`<p class="note">The run log holds no arguments for call <code>${p.callId}</code>.</p>`;
  return h`<section class="waiting approval" id="approval-card" data-tool="${p.tool}">
    <h2>Waiting for approval: step <code>${request.stepId}</code> asks to run <code>${p.tool}</code></h2>
    <dl class="facts">${facts}</dl>
    <h3>Arguments</h3>${argsBlock}${
    request.expiresAt
      ? h`<p class="note">The wait passes at ${request.expiresAt}; then a resume takes the intent "${
        request.timeoutIntent ?? ""
      }".</p>`
      : ""
  }${options.csrf ? buttons(runId, request, options.csrf) : commands(runId, options.commandFor)}
  </section>`;
}

/** Approve and Deny: the page script's answer form, the decision set by the button pressed. */
function buttons(runId: string, request: PendingInput, csrf: string): Html {
  return h`<form id="answer-form" class="answer actions approval-actions" data-csrf="${csrf}"
      data-run="${`/runs/${encodeURIComponent(runId)}`}" data-request="${request.requestId}">
      <input type="hidden" id="approval-decision" data-path="${
    JSON.stringify(["decision"])
  }" data-kind="choice" data-required="true" value="">
      <input type="text" id="approval-reason" class="approval-reason" maxlength="500" data-path="${
    JSON.stringify(["reason"])
  }" data-kind="string" placeholder="Reason (optional; told to the model with a denial)" value="">
      <button type="submit" class="approve" data-choice="${
    JSON.stringify("allow")
  }">Approve</button>
      <button type="submit" class="deny" data-choice="${JSON.stringify("deny")}">Deny</button>
      <span id="answer-result" role="status"></span>
      <p class="note">Approve runs the call; Deny refuses it and the model is told, then the step goes on. The call's record names the dashboard as who decided.</p>
    </form>`;
}

/** The two commands that answer the run, for a dashboard without `--allow-actions`. */
function commands(runId: string, commandFor: CommandRenderer): Html {
  const line = (decision: string) =>
    commandFor({ action: "answer", runId, args: ["--value", JSON.stringify({ decision })] });
  return h`<div class="approval-commands"><p class="note">Answer it from a terminal (or start the dashboard with --allow-actions to answer here):</p>
    <div>Approve:</div><pre class="command" id="approve-command">${line("allow")}</pre>
    <div>Deny:</div><pre class="command" id="deny-command">${line("deny")}</pre></div>`;
}
