/**
 * The tool calls of a timeline row on the page: one line per call — tool, an excerpt of its
 * arguments, how it ended (duration, refused, error, running), the permission decision and who
 * made it, an excerpt of its result — each opening on demand to the arguments and result as the
 * log recorded them. Bounded: a row shows its first and last {@linkcode CALLS_SHOWN_AT_EACH_END}
 * calls and "… N more calls" between them (opened on demand, at most
 * {@linkcode HIDDEN_CALLS_SHOWN}), so a step with thousands of calls does not make a huge page; and
 * only the last {@linkcode CALL_ROWS_OPEN} rows with calls draw them with the page, so neither
 * does a run of thousands of iterations.
 * Everything shown is escaped (model-controlled text).
 *
 * @module
 */
import { formatDuration, formatTime, json, rowPartHref as partHref } from "./display_format.ts";
import { type Html, html as h, raw } from "./html.ts";
import type { IterationRow, Row } from "./timeline.ts";
import type { ToolCallView } from "./tool_calls.ts";

/** Calls shown at the start and at the end of a row; the ones between are behind a link. */
export const CALLS_SHOWN_AT_EACH_END = 10;

/** Rules allowed for the rest of the run shown on a row (a log could hold any number). */
const GRANTS_SHOWN = 10;

/** Calls the "… N more calls" section shows when opened; the rest are counted. */
export const HIDDEN_CALLS_SHOWN = 500;

/** Characters of the arguments and of the result shown on a call's line. */
export const CALL_LINE_EXCERPT = 120;

/** Characters of a call's short fields (tool, id, who decided) shown when it is opened. */
export const CALL_FIELD_LIMIT = 1_000;

/** Characters of the arguments or result shown when a call is opened. */
export const CALL_TEXT_LIMIT = 20_000;

/** The row part that lists a row's calls (the first and last ones). */
export const CALLS_PART = "calls";

/** The row part that lists the calls between the first and last ones a row shows. */
export const HIDDEN_CALLS_PART = "morecalls";

/**
 * Iteration rows of a run page whose calls are drawn with the page (the last ones); the calls of
 * earlier rows load when opened.
 */
export const CALL_ROWS_OPEN = 20;

/** How a call is shown now. */
export type CallState = "ok" | "error" | "denied" | "invalid" | "asking" | "running" | "unfinished";

/**
 * The state of a call: finished (ok, error, denied, invalid), or not finished yet — running (or
 * waiting for its permission decision) while the run is `live`, else it did not finish.
 */
export function callState(call: ToolCallView, live: boolean): CallState {
  if (call.decision === "deny") return "denied";
  if (call.decision === "invalid") return "invalid";
  if (!call.finished) {
    if (!live || call.stopped) return "unfinished";
    return call.decision === undefined ? "asking" : "running";
  }
  return call.isError ? "error" : "ok";
}

/**
 * The tool calls section of an iteration row (nothing for a row without calls): the counts, and
 * the calls' lines — drawn in the page when `open`, else loaded when the reader opens it (the
 * {@linkcode CALLS_PART} part), so a run of many iterations does not carry every call's line.
 * `live`: the run is followed live, so an unfinished call is running, not abandoned.
 */
export function toolCallsBlock(
  runId: string,
  row: IterationRow,
  live: boolean,
  open: boolean,
): Html | string {
  const calls = row.calls;
  if (!calls || (calls.list.length === 0 && calls.grants.length === 0)) return "";
  let summary = callsSummary(calls.list, live);
  if (calls.turns) summary += ` · in ${calls.turns} model turns`;
  if (calls.grants.length) summary += ` · ${calls.grants.length} allowed for the run`;
  const src = partHref(runId, row.index, CALLS_PART);
  return h`<details class="calls" data-calls="${calls.list.length}" data-src="${src}" data-version="${
    callsVersion(row)
  }"${open ? raw(' open data-loaded="true"') : ""}><summary>${summary}</summary><div class="body">${
    open ? callsList(runId, row, live) : ""
  }</div></details>`;
}

/**
 * The lines of a row's calls (the {@linkcode CALLS_PART} part): its first and last
 * {@linkcode CALLS_SHOWN_AT_EACH_END} calls and, between them, "… N more calls" (the
 * {@linkcode HIDDEN_CALLS_PART} part); undefined for a row without calls.
 */
export function callsList(runId: string, row: IterationRow, live: boolean): Html | undefined {
  const calls = row.calls?.list;
  if (!calls || (calls.length === 0 && row.calls!.grants.length === 0)) return undefined;
  const total = calls.length;
  const cut = total > 2 * CALLS_SHOWN_AT_EACH_END;
  const head = cut ? CALLS_SHOWN_AT_EACH_END : total;
  const tailFrom = cut ? total - CALLS_SHOWN_AT_EACH_END : total;
  const items = (from: number, to: number) => {
    const out: Html[] = [];
    for (let i = from; i < to; i++) out.push(callItem(runId, row.index, i, calls[i], live));
    return out;
  };
  return h`${grantLines(row)}<ol class="calls-list">${items(0, head)}</ol>${
    cut
      ? h`<details class="calls-more" data-src="${
        partHref(runId, row.index, HIDDEN_CALLS_PART)
      }" data-version="${callsVersion(row)}"><summary>… ${tailFrom - head} more calls (${
        head + 1
      }–${tailFrom})</summary><div class="body"></div></details><ol class="calls-list" start="${
        tailFrom + 1
      }">${items(tailFrom, total)}</ol>`
      : ""
  }`;
}

/**
 * The rows of a run page whose calls are drawn open: the last {@linkcode CALL_ROWS_OPEN} rows
 * with calls, and a row whose step has not ended (it is being followed).
 */
export function rowsWithCallsOpen(rows: readonly Row[]): Set<number> {
  const open = new Set<number>();
  let drawn = 0;
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i];
    if (row.kind !== "iteration" || !row.calls) continue;
    if (drawn < CALL_ROWS_OPEN || !row.end) open.add(row.index);
    drawn++;
  }
  return open;
}

/** The rules allowed for the rest of the run during the iteration (the first ten). */
function grantLines(row: IterationRow): Html[] {
  const grants = row.calls!.grants;
  const lines = grants.slice(0, GRANTS_SHOWN).map((g) =>
    h`<div class="grant">⊕ Allowed for the rest of the run: <code>${excerpt(g.rule)}</code>${
      g.grantedBy !== undefined ? ` · by ${excerpt(g.grantedBy)}` : ""
    }${g.grantedAt !== undefined ? ` at ${formatTime(excerpt(g.grantedAt))}` : ""}</div>`
  );
  if (grants.length > GRANTS_SHOWN) {
    lines.push(h`<div class="note">… and ${grants.length - GRANTS_SHOWN} more rules.</div>`);
  }
  return lines;
}

/** What a section of calls shows changed when a call was added or finished: reload it then. */
function callsVersion(row: IterationRow): string {
  const calls = row.calls!;
  return `${calls.list.length}-${calls.open.size}-${calls.grants.length}`;
}

/**
 * The calls a row hides between its first and last ones (the `morecalls` part), at most
 * {@linkcode HIDDEN_CALLS_SHOWN}; undefined when the row hides none.
 */
export function hiddenCalls(runId: string, row: IterationRow, live: boolean): Html | undefined {
  const calls = row.calls?.list;
  if (!calls || calls.length <= 2 * CALLS_SHOWN_AT_EACH_END) return undefined;
  const from = CALLS_SHOWN_AT_EACH_END;
  const to = calls.length - CALLS_SHOWN_AT_EACH_END;
  const end = Math.min(to, from + HIDDEN_CALLS_SHOWN);
  const out: Html[] = [];
  for (let i = from; i < end; i++) out.push(callItem(runId, row.index, i, calls[i], live));
  return h`<ol class="calls-list" start="${from + 1}">${out}</ol>${
    end < to
      ? h`<div class="note">Showing ${end - from} of the ${to - from} calls hidden here; calls ${
        end + 1
      }–${to} are in the run log (its <code>tool_call</code> lines).</div>`
      : ""
  }`;
}

/** The call of a row part named `callN`, or undefined. */
export function callOfPart(row: IterationRow, name: string): ToolCallView | undefined {
  const match = /^call(\d+)$/.exec(name);
  return match ? row.calls?.list[Number(match[1])] : undefined;
}

/** A call opened: every field the log recorded, the arguments and the result. */
export function callDetails(call: ToolCallView, live: boolean): Html {
  const field = (label: string, value: Html | string) =>
    h`<div><span>${label}</span>${value}</div>`;
  const fields = [
    field("Tool", h`<code>${clipped(call.tool)}</code>`),
    field("Call id", h`<code>${clipped(call.callId)}</code>`),
    field("State", stateText(call, callState(call, live))),
    field("Decision", clipped(call.decision ?? "not decided yet")),
    call.decidedBy !== undefined ? field("Decided by", clipped(call.decidedBy)) : "",
    call.decidedAt !== undefined ? field("Decided at", formatTime(clipped(call.decidedAt))) : "",
    call.durationMs !== undefined ? field("Duration", formatDuration(call.durationMs)) : "",
    field("Logged at", formatTime(clipped(call.ts))),
  ];
  return h`<div class="meta call-meta">${fields}</div><div class="k">Arguments</div>${
    call.args === undefined
      ? h`<div class="note">None recorded.</div>`
      : cutText(prettyArgs(call.args))
  }<div class="k">Result</div>${
    call.result === undefined
      ? h`<div class="note">${call.finished ? "None recorded." : "Not finished."}</div>`
      : cutText(call.result)
  }`;
}

/** One call's line (its details load when opened). */
function callItem(
  runId: string,
  rowIndex: number,
  index: number,
  call: ToolCallView,
  live: boolean,
) {
  const state = callState(call, live);
  const tool = excerpt(call.tool) || "?";
  const args = call.args === undefined ? "" : excerpt(call.args);
  const result = call.result === undefined ? "" : excerpt(call.result);
  return h`<li class="call ${state}" data-call="${index}" data-tool="${tool}" data-state="${state}"><details data-src="${
    partHref(runId, rowIndex, `call${index}`)
  }" data-version="${state}"><summary><span class="mark">${MARKS[state]}</span> <b>${tool}</b>${
    args ? h` <code class="args">${args}</code>` : ""
  } <span class="state">${stateText(call, state)}</span>${
    call.decision !== undefined ? h` <span class="k decision">${decisionText(call)}</span>` : ""
  }${
    result ? h` <span class="result">→ ${result}</span>` : ""
  }</summary><div class="body"></div></details></li>`;
}

const MARKS: Record<CallState, string> = {
  ok: "✓",
  error: "✗",
  denied: "⊘",
  invalid: "✗",
  asking: "…",
  running: "◌",
  unfinished: "?",
};

function stateText(call: ToolCallView, state: CallState): string {
  switch (state) {
    case "ok":
      return formatDuration(call.durationMs ?? 0);
    case "error":
      return `error · ${formatDuration(call.durationMs ?? 0)}`;
    case "denied":
      return "refused";
    case "invalid":
      return "invalid call";
    case "asking":
      return "waiting for a permission decision…";
    case "running":
      return "running…";
    case "unfinished":
      return "did not finish";
  }
}

/**
 * `allowed · rule Edit`; a refused call's line already says `refused`: `by rule Bash(rm:*)`;
 * `invalid`.
 */
function decisionText(call: ToolCallView): string {
  const when = call.decidedAt ? ` at ${formatTime(excerpt(call.decidedAt))}` : "";
  const by = call.decidedBy === undefined ? "" : excerpt(call.decidedBy);
  if (call.decision === "deny") return `${by ? `by ${by}` : "by the permissions"}${when}`;
  const word = call.decision === "allow" ? "allowed" : excerpt(call.decision!);
  return by ? `${word} · ${by}${when}` : `${word}${when}`;
}

/** The counts of a row's calls: `4 tool calls · 1 refused · 1 running`. */
function callsSummary(calls: readonly ToolCallView[], live: boolean): string {
  const counts = new Map<CallState, number>();
  for (const call of calls) {
    const state = callState(call, live);
    counts.set(state, (counts.get(state) ?? 0) + 1);
  }
  const parts = [`${calls.length} tool call${calls.length === 1 ? "" : "s"}`];
  const named: [CallState, string][] = [
    ["denied", "refused"],
    ["invalid", "invalid"],
    ["error", "failed"],
    ["asking", "waiting for a decision"],
    ["running", "running"],
    ["unfinished", "did not finish"],
  ];
  for (const [state, word] of named) {
    const n = counts.get(state);
    if (n) parts.push(`${n} ${word}`);
  }
  return parts.join(" · ");
}

/** The first {@linkcode CALL_LINE_EXCERPT} characters, whitespace flattened (cut before: linear). */
function excerpt(text: string): string {
  const head = text.slice(0, CALL_LINE_EXCERPT + 1).replace(/\s+/g, " ");
  return head.length > CALL_LINE_EXCERPT ? `${head.slice(0, CALL_LINE_EXCERPT)}…` : head;
}

/** A short field (a name, an id, who decided) as the log has it, cut if a log made it long. */
function clipped(text: string): string {
  return text.length > CALL_FIELD_LIMIT ? `${text.slice(0, CALL_FIELD_LIMIT)}…` : text;
}

/** The arguments indented when they are whole JSON (a cut excerpt is shown as logged). */
function prettyArgs(args: string): string {
  if (args.length > CALL_TEXT_LIMIT || !args.startsWith("{")) return args;
  try {
    return json(JSON.parse(args));
  } catch {
    return args;
  }
}

function cutText(text: string): Html {
  if (text.length <= CALL_TEXT_LIMIT) return h`<pre>${text}</pre>`;
  return h`<pre>${
    text.slice(0, CALL_TEXT_LIMIT)
  }</pre><div class="note">Showing ${CALL_TEXT_LIMIT} of ${text.length} characters.</div>`;
}
