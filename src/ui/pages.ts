/**
 * The dashboard's pages, rendered on the server from store data. Every value goes through
 * {@linkcode html} (escaped); big texts are cut for display with a link to the full text.
 *
 * @module
 */
import type { AgentDefinition } from "../definition/types.ts";
import type { RunCheckpoint, RunSummary } from "../store/types.ts";
import { MAX_RUN_GROUP_LENGTH } from "../store/run_group.ts";
import { SHOWN_STATUSES } from "../run_statuses.ts";
import { shownStatus } from "../store/run_status.ts";
import { iterationsOf, summarizeCheckpoint } from "../store/summary.ts";
import { errorMessage } from "../errors.ts";
import { cacheShare } from "../token_counts.ts";
import { flowGraph } from "./flow_graph.ts";
import { graphSvg } from "./graph_svg.ts";
import { rerunControl, unfinishedCallBlock, type UnfinishedCallNotice } from "./unfinished_call.ts";
import { type Html, html as h, type HtmlValue, raw } from "./html.ts";
import type { RunPage, RunQuery } from "./source.ts";
import { childRunOf, type LoggedText, type Row, type Timeline } from "./timeline.ts";
import { waitingBlock, type WaitingView } from "./waiting_form.ts";
import { isOpenStatus } from "../run_statuses.ts";
import type { CommandRenderer } from "../invocation.ts";
import {
  cost,
  formatDuration,
  formatTime,
  json,
  rowPartHref as partHref,
  runHref,
  usageText,
} from "./display_format.ts";
import { rowsWithCallsOpen, toolCallsBlock } from "./tool_calls_view.ts";
import { budgetStopNote, modelCallsText, spendMeta } from "./spend_meta.ts";
import { runChart } from "./run_chart.ts";
import { waitingForNote } from "./waiting_note.ts";

export { formatDuration, runHref } from "./display_format.ts";
export { waitingForNote } from "./waiting_note.ts";
export { childRunOf } from "./timeline.ts";

/** Characters of a prompt, answer or handoff shown inline; the rest is behind a link. */
export const INLINE_TEXT_LIMIT = 20_000;

/** A whole page. `live` is the event-stream URL of a running run. */
export function layout(title: string, body: Html, live?: string): string {
  return `<!doctype html>${h`
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>${title} · stepflow</title>
        <link rel="stylesheet" href="/assets/app.css">
        <script src="/assets/app.js" defer></script>
      </head>
      <body${
    live
      ? h`
          data-live="${live}"
        `
      : ""
  }>
        <header
          class="top"><a class="brand" href="/">stepflow</a><a href="/">Runs</a><a href="/agents">Agents</a><a href="/plans">Plans</a></header>
        <main>${body}</main>
        </body>
        </html>
  `}`;
}

/**
 * The runs list: filters, one page of runs, the pager.
 *
 * @param listAgents the command that lists the agents where the user stands (for the empty list)
 */
export function runsListPage(
  page: RunPage,
  query: RunQuery,
  listAgents = "stepflow list",
): string {
  const link = (p: number) => {
    const params = new URLSearchParams();
    if (query.agent) params.set("agent", query.agent);
    if (query.group) params.set("group", query.group);
    if (query.status) params.set("status", query.status);
    if (page.size !== 50) params.set("size", String(page.size));
    params.set("page", String(p));
    return `/?${params}`;
  };
  const pages = Math.max(1, Math.ceil(page.total / page.size));
  const rows = page.runs.map((run) =>
    h`
      <tr data-run="${run.runId}">
        <td class="run"><a href="${runHref(run.runId)}">${run.runId}</a>${groupBadge(run.group)}${
      run.problem ? h`<div class="note warn">${run.problem}</div>` : ""
    }${run.error ? h`<div class="note warn">${run.error}</div>` : ""}</td>
        <td class="agent"><a href="${agentHref(run.agent)}">${run.agent}</a></td>
        <td class="state">${statusBadge(run)}${waitingForNote(run)}</td>
        <td class="end">${run.completionReason ?? ""}${
      run.endError ? h`<div class="note warn">${run.endError}</div>` : ""
    }</td>
        <td class="when">${formatTime(run.startedAt)}</td>
        <td class="num">${formatDuration(run.durationMs)}</td>
        <td class="num">${run.iterations ?? run.steps ?? ""}</td>
        <td class="num">${tokens(run)}</td>
        <td class="num">${cost(run.usage?.costUsd, run.usage?.callsWithoutCost)}</td>
      </tr>
    `
  );
  const body = h`
    <h1>Runs</h1>
    <form class="filters" method="get" action="/">
    <label>Agent <select name="agent"><option value="">all</option>${
    page.agents.map((a) => h`<option${a === query.agent ? raw(" selected") : ""}>${a}</option>`)
  }</select></label>
    <label>Status <select name="status"><option value="">all</option>${
    SHOWN_STATUSES.map((s) => h`<option${s === query.status ? raw(" selected") : ""}>${s}</option>`)
  }</select></label>
    <label>Group <input name="group" size="24" maxlength="${MAX_RUN_GROUP_LENGTH}" value="${
    query.group ?? ""
  }" placeholder="any"></label><button type="submit">Filter</button></form>
    <div class="pager"
      id="pager"><span>${page.total} of ${page.all} runs</span>${
    page.page > 1 ? h`<a href="${link(page.page - 1)}" rel="prev">← newer</a>` : ""
  }<span>page ${page.page} / ${pages}</span>${
    page.page < pages ? h`<a href="${link(page.page + 1)}" rel="next">older →</a>` : ""
  }</div>
    <div class="table-scroll"><table id="runs">
      <thead>
        <tr>
          <th>Run</th>
          <th>Agent</th>
          <th>Status</th>
          <th>End</th>
          <th>Started</th>
          <th class="num">Duration</th>
          <th class="num">Iterations</th>
          <th class="num">Tokens in/out</th>
          <th class="num">Cost</th>
        </tr>
      </thead>
      <tbody>${rows}</tbody>
    </table></div>${
    page.all === 0
      ? h`
        <p
          class="note">No runs recorded yet. Run an agent (<code>${listAgents}</code> lists them) and reload.</p>
      `
      : ""
  }
  `;
  return layout("Runs", body);
}

/** Everything the run page shows. */
export interface RunView {
  /** The run. */
  runId: string;
  /** The checkpoint, when readable. */
  checkpoint?: RunCheckpoint;
  /** The listing line (status, duration, live…), when known. */
  summary?: RunSummary;
  /** Why the checkpoint could not be read. */
  problem?: string;
  /** The folded log. */
  timeline: Timeline;
  /** The agent's definition, when it loads. */
  definition?: AgentDefinition;
  /** Why the definition did not load. */
  definitionError?: unknown;
  /** The event-stream URL while the run is followed live. */
  live?: string;
  /** Set when actions are allowed: the secret the page's buttons send. */
  actions?: { csrf: string };
  /** A waiting run's question and answer form. */
  waiting?: WaitingView;
  /** A run whose resume would stop at an unfinished tool call; how its hints write commands. */
  unfinished?: { notice: UnfinishedCallNotice; commandFor: CommandRenderer };
  commandFor?: CommandRenderer; // How the page writes a command where the user stands.
}

/** The run page. */
export function runPage(view: RunView): string {
  const agent = view.checkpoint?.agent ?? view.summary?.agent ?? "";
  const body = h`
    <h1>Run <code>${view.runId}</code> ${
    view.live ? h`<span id="live-badge" class="live">● live</span>` : ""
  }</h1>
    <div id="meta-host">${runMeta(view)}</div>
    ${
    view.unfinished
      ? unfinishedCallBlock(view.runId, view.unfinished.notice, {
        actions: view.actions !== undefined,
        commandFor: view.unfinished.commandFor,
      })
      : ""
  }
    ${view.actions ? runActions(view, view.actions.csrf) : ""}
    ${view.waiting ? waitingBlock(view.runId, view.waiting, view.actions?.csrf) : ""}
    <h2>Flow of agent <a href="${agentHref(agent)}">${agent}</a></h2>
    <div id="graph-host" class="graph-box">${runGraph(view)}</div>
    <h2>Final output</h2>
    <div id="output-host">${finalOutput(view)}</div>
    <h2>Timing</h2>
    <div id="chart-host">${runChart(view.runId, view.timeline, { live: isFollowed(view) })}</div>
    <h2>Timeline</h2>
    <div id="timeline" class="timeline">${timelineRows(view)}</div>
  `;
  return layout(`Run ${view.runId}`, body, view.live);
}

/** The rows of the run page: the calls of the last rows with calls drawn open. */
function timelineRows(view: RunView): Html[] {
  const live = isFollowed(view);
  const callsOpen = rowsWithCallsOpen(view.timeline.rows);
  return view.timeline.rows.map((r) =>
    timelineRow(view.runId, r, { live, callsOpen: callsOpen.has(r.index) })
  );
}

/**
 * Whether the page follows the run live with a process driving it: a tool call not finished yet
 * is then running (in a run nobody drives, it did not finish).
 */
export function isFollowed(view: RunView): boolean {
  return view.live !== undefined && view.summary?.live !== false;
}

/**
 * The action buttons the run's state allows: Cancel while a process drives it, Resume when
 * interrupted (with "Resume, re-running …" first when a plain resume would stop at an unfinished
 * tool call), Redrive once it ended without success (none otherwise: the block still carries the
 * secret). The server checks again on every action.
 */
export function runActions(view: RunView, csrf: string): Html {
  const status = view.checkpoint?.status ?? view.summary?.status;
  const active = isOpenStatus(status);
  const buttons: Html[] = [];
  const button = (action: string, label: string) =>
    h`<button type="button" data-action="${action}">${label}</button>`;
  if (active && view.summary?.live !== false) buttons.push(button("cancel", "Cancel run"));
  if (active && view.summary?.live === false) {
    // Offered first when the plain resume would stop at an unfinished call (which it then says).
    if (view.unfinished) buttons.push(rerunControl(view.unfinished.notice));
    buttons.push(button("resume", "Resume"));
  }
  // A waiting run has not failed: it is answered (its form), not redriven; nor has a run its
  // budget stopped: it goes on with a higher budget, from the command line.
  if (
    status && !active && status !== "completed" && status !== "waiting" &&
    status !== "budget_exceeded"
  ) {
    buttons.push(button("redrive", "Redrive"));
  }
  return h`<div id="run-actions" class="actions" data-csrf="${csrf}"
    data-run="${`/runs/${encodeURIComponent(view.runId)}`}">${buttons}
    <span id="action-result" role="status"></span></div>`;
}

/** The run's header block (status, times, usage). */
export function runMeta(view: RunView): Html {
  const cp = view.checkpoint;
  const s = view.summary;
  // The checkpoint's usage counts calls without usage too (the log's cumulative usage may not).
  const usage = usageOfState(cp) ?? view.timeline.usage ?? s?.usage;
  // A run the queue gave up is failed whatever its checkpoint (if any) says.
  const recorded = (s?.error ? s.status : cp?.status) ?? s?.status;
  const status = recorded ? shownStatus({ status: recorded, live: s?.live }) : "unknown";
  const end = view.timeline.runEnd;
  return h`<div class="meta" id="run-meta" data-status="${status}">
<div><span>Status</span>${h`<span class="status ${status}">${status}</span>`}${
    status === "waiting" && s ? waitingForNote(s) : ""
  }${
    status === "budget_exceeded" ? budgetStopNote(view.runId, cp?.state, view.commandFor) : ""
  }</div>
<div><span>Agent</span>${cp?.agent ?? s?.agent ?? ""}</div>
${
    s?.group
      ? h`<div><span>Group</span>${groupBadge(s.group)}</div>
`
      : ""
  }<div><span>Started</span>${formatTime(cp?.startedAt ?? s?.startedAt ?? "")}</div>
<div><span>Updated</span>${formatTime(cp?.updatedAt ?? s?.updatedAt ?? "")}</div>
<div><span>Iterations</span>${iterationsShown(view)}</div>
<div><span>Tokens in / out</span>${usage ? usageText(usage) : "–"}</div>${
    usage && cacheShare(usage, String)
      ? h`<div><span>Prompt cache</span>${cacheShare(usage, String)} (of the input)</div>`
      : ""
  }
<div><span>Cost</span>${cost(usage?.costUsd, usage?.callsWithoutCost) || "–"}</div>${
    spendMeta(cp?.state)
  }
<div><span>End</span>${end ? String(end.reason ?? "") : "–"}</div>${
    parentOf(cp)
      ? h`<div><span>Parent run</span><a href="${runHref(parentOf(cp)!.runId)}">${
        parentOf(cp)!.runId
      }</a> (agent step <code>${parentOf(cp)!.stepId}</code>)</div>`
      : ""
  }
${view.problem ? h`<div class="warn wide">${view.problem}</div>` : ""}${
    s?.error ? h`<div class="warn wide">${s.error}</div>` : ""
  }</div>`;
}

/** The flow graph with the run's path. */
export function runGraph(view: RunView): Html {
  if (!view.definition) {
    return h`
      <div id="flow-graph"
        class="note">The agent's definition could not be loaded, so its graph is not shown${
      view
          .definitionError
        ? h`: ${errorMessage(view.definitionError)}`
        : ""
    }.</div>
    `;
  }
  const t = view.timeline;
  const running = (view.checkpoint?.status ?? view.summary?.status) === "running";
  const last = [...t.rows].reverse().find((r) => r.kind === "iteration");
  const { nodes, edges } = flowGraph(view.definition, {
    counts: t.counts,
    taken: t.taken,
    firstStep: t.firstStep,
    current: running && last?.kind === "iteration" ? last.stepId : undefined,
  });
  return h`<div id="flow-graph">${graphSvg(nodes, edges, `Flow of ${view.definition.name}`)}</div>`;
}

/**
 * The final output block: how the run ended and what it produced — the run's output as its
 * checkpoint records it (the closing step's output, or the answer of the check-gated step it
 * ended on), the same value `run-agent --json` prints as `output`.
 */
export function finalOutput(view: RunView): Html {
  const end = view.timeline.runEnd;
  if (!end) return h`<div id="final-output" class="note">The run has not ended.</div>`;
  const recorded = endOf(view.checkpoint);
  const output = recorded?.output;
  return h`
    <div
      id="final-output"><div>Ended <b>${String(end.reason ?? "")}</b> at ${
    formatTime(
      end.ts,
    )
  }${
    end.stepId
      ? h`
          on step <code>${String(end.stepId)}</code>
        `
      : ""
  }</div>${end.error ? h`<pre class="errors">${json(end.error)}</pre>` : ""}${
    output !== undefined
      ? h`<div class="note">Output of the run${
        typeof recorded?.stepId === "string" ? h` (step <code>${recorded.stepId}</code>)` : ""
      }:</div>${
        textBlock({
          text: typeof output === "string" ? output : json(output),
          length: -1,
        })
      }`
      : h`<div class="note">The run recorded no output.</div>`
  }</div>
  `;
}

/**
 * The run's iterations as every view counts them ({@linkcode iterationsOf}: its checkpoint's, as
 * `--show`, the runs list and the API say) — not the timeline's iteration rows, which also hold an
 * iteration killed before its checkpoint and one that stopped to wait (each runs again as a row of
 * its own).
 */
function iterationsShown(view: RunView): number | string {
  const state = view.checkpoint?.state;
  return (state ? iterationsOf(state) : undefined) ?? view.summary?.iterations ?? "–";
}

/** The usage of a checkpoint's state (summarized as the run list does), when recorded. */
function usageOfState(checkpoint: RunCheckpoint | undefined): RunSummary["usage"] {
  return checkpoint ? summarizeCheckpoint(checkpoint).usage : undefined;
}

/** The `end` of a checkpoint's state (the runner's: reason, step, output), when it ended. */
function endOf(checkpoint: RunCheckpoint | undefined): Record<string, unknown> | undefined {
  const end = checkpoint?.state.end;
  return end !== null && typeof end === "object" && !Array.isArray(end)
    ? end as Record<string, unknown>
    : undefined;
}

/** How {@linkcode timelineRow} draws a row. */
export interface TimelineRowOptions {
  /**
   * The row is drawn inside its parent run's timeline: its id names its run (the page's own rows
   * keep `row-N`, which the live view swaps), and an agent step's child run shows as a link only
   * (a grandchild is not nested further).
   */
  nested?: boolean;
  /** The run is followed live: a tool call not finished yet is running (else it did not finish). */
  live?: boolean;
  /** Draw the row's tool calls open (default); false: their section loads when opened. */
  callsOpen?: boolean;
}

/** One timeline row. */
export function timelineRow(runId: string, row: Row, options: TimelineRowOptions = {}): Html {
  const rowId = options.nested ? `run-${runId}-row-${row.index}` : `row-${row.index}`;
  if (row.kind === "event") {
    const e = row.entry;
    const extra = e.type === "run_end"
      ? `reason ${e.reason ?? ""}${e.error ? ` — ${json(e.error)}` : ""}`
      : e.type === "run_resume" || e.type === "run_redrive"
      ? `at step ${e.stepId ?? ""}, ${e.historyLength ?? 0} history entries kept`
      : e.type === "run_start"
      ? `at step ${e.stepId ?? ""}${e.args ? ` with ${json(e.args)}` : ""}`
      : e.message !== undefined
      ? String(e.message)
      : "";
    return h`<div class="row event" id="${rowId}" data-type="${row.type}"><span class="k">${
      formatTime(row.ts)
    }</span> <b>${row.type}</b> ${extra}</div>`;
  }
  const end = row.end ?? {};
  const endError = typeof end.error === "string" && row.errors.length === 0 ? [end.error] : [];
  const errors = [...row.errors, ...endError];
  const classes = `row iteration${errors.length ? " failed" : ""}${row.end ? "" : " open"}`;
  const field = (label: string, value: HtmlValue) =>
    h`<span><span class="k">${label}</span> ${value}</span>`;
  const child = childRunOf(row);
  const line = [
    h`<b>#${row.iteration ?? ""}</b>`,
    field(
      "step",
      h`<code>${row.stepId}</code>${
        row.attempt && row.attempt > 1 ? h` <span class="k">attempt ${row.attempt}</span>` : ""
      }`,
    ),
    end.intent !== undefined ? field("intent", String(end.intent)) : "",
    field(
      "transition",
      h`${row.end ? String(end.transition ?? "") : "running…"}${
        typeof end.nextStepId === "string" ? h` → <code>${end.nextStepId}</code>` : ""
      }`,
    ),
    field(
      "duration",
      formatDuration(typeof end.durationMs === "number" ? end.durationMs : undefined),
    ),
    row.tokens
      ? field(
        "tokens",
        `${row.tokens.input} / ${row.tokens.output}${
          row.tokens.costUsd || row.tokens.unknownCostCalls
            ? ` · ${cost(row.tokens.costUsd, row.tokens.unknownCostCalls)}`
            : ""
        }`,
      )
      : "",
    row.models ? field("answered by", modelsText(row.models)) : "",
    row.modelCalls && row.modelCalls.length > 1
      ? field("model calls", modelCallsText(row.modelCalls))
      : "",
    child !== undefined ? field("child run", h`<a href="${runHref(child)}">${child}</a>`) : "",
    h`<span class="k">${formatTime(row.ts)}</span>`,
  ];
  // Prompts, answers and handoffs are fetched when opened: a run of 1000 iterations would
  // otherwise send every prompt and answer with the page.
  const part = (name: string, summary: string) =>
    h`<details class="${name.replace(/\d+$/, "")}" data-src="${
      partHref(runId, row.index, name)
    }"><summary>${summary}</summary><div class="body"></div></details>`;
  return h`<div class="${classes}" id="${rowId}" data-step="${row.stepId}"><div class="line">${line}</div>${
    isCheck(end.checkResult)
      ? h`<div><span class="k">check</span> ${end.checkResult.result}: ${end.checkResult.message}</div>`
      : ""
  }${errors.length ? h`<div class="errors">${errors.map((e) => h`<div>${e}</div>`)}</div>` : ""}${
    row.retries.map((r) => h`<div class="warn">${r}</div>`)
  }${row.prompt ? part("prompt", `Prompt sent (${row.prompt.length} chars)`) : ""}${
    toolCallsBlock(runId, row, options.live === true, options.callsOpen !== false)
  }${
    row.reasks.map((r, i) =>
      h`<div class="reask"><div class="warn">Re-ask ${i + 1}: ${r.reason}</div><ul class="errors">${
        r.errors.map((e) => h`<li>${e}</li>`)
      }</ul>${
        r.answer ? part(`reask${i}`, `Rejected answer (${r.answer.length} chars)`) : ""
      }</div>`
    )
  }${row.answer ? part("answer", `Raw answer (${row.answer.length} chars)`) : ""}${
    row.handoff !== undefined ? part("handoff", "Handoff after this iteration") : ""
  }${
    child !== undefined && !options.nested
      ? part(CHILD_PART, `Child run's timeline (${child})`)
      : ""
  }</div>`;
}

/** `openai gpt-5.4` for one call, `anthropic a, openai b` for calls answered by different models. */
function modelsText(models: readonly string[]): string {
  const distinct = [...new Set(models)];
  return distinct.length === 1 && models.length > 1
    ? `${distinct[0]} (${models.length} calls)`
    : models.join(", ");
}

/** The row part of an agent step's row that opens its child run's timeline nested under it. */
export const CHILD_PART = "child";

/**
 * The text of a row's part (`prompt`, `answer`, `handoff`, `reaskN`) as recorded, or undefined.
 */
export function rowPartText(row: Row | undefined, name: string): LoggedText | undefined {
  if (row?.kind !== "iteration") return undefined;
  if (name === "prompt") return row.prompt;
  if (name === "answer") return row.answer;
  if (name === "handoff" && row.handoff !== undefined) {
    const text = json(row.handoff);
    return { text, length: text.length, entry: -1, field: "handoff" };
  }
  const reask = /^reask(\d+)$/.exec(name);
  return reask ? row.reasks[Number(reask[1])]?.answer : undefined;
}

/** The body of a row's part, cut for display, with a link to the full text. */
export function rowPart(runId: string, row: Row, name: string, text: LoggedText): Html {
  return textBlock(text, `${partHref(runId, row.index, name)}/full`);
}

/** An error page. */
export function errorPage(title: string, message: string): string {
  return layout(
    title,
    h`
      <h1>${title}</h1>
      <p class="errors">${message}</p>
      <p><a href="/">All runs</a></p>
    `,
  );
}

/** A cut text: the first {@linkcode INLINE_TEXT_LIMIT} characters and a link to the whole. */
function textBlock(text: { text: string; length: number }, fullHref?: string): Html {
  const cut = text.text.length > INLINE_TEXT_LIMIT;
  const shown = cut ? text.text.slice(0, INLINE_TEXT_LIMIT) : text.text;
  const total = Math.max(text.length, text.text.length);
  return h`<pre>${shown}</pre>${
    cut || total > text.text.length
      ? h`<div class="note">Showing ${shown.length} of ${total} characters${
        total > text.text.length ? ` (the log recorded ${text.text.length})` : ""
      }.${cut && fullHref ? h` <a href="${fullHref}">Full text</a>` : ""}</div>`
      : ""
  }`;
}

/** Link of an agent page. */
export function agentHref(name: string): string {
  return `/agents/${encodeURIComponent(name)}`;
}

/** A run's group, linking to the list of its group's runs (nothing for a run without one). */
function groupBadge(group: string | undefined): Html | string {
  if (group === undefined) return "";
  const href = `/?${new URLSearchParams({ group })}`;
  return h` <a class="group" href="${href}" title="runs of this group">${group}</a>`;
}

/** A run's status as a badge, in the words every view uses. */
export function statusBadge(run: Pick<RunSummary, "status" | "live">): Html {
  const status = shownStatus(run);
  return h`<span class="status ${status}">${status}</span>`;
}

function tokens(run: RunSummary): string {
  return run.usage ? usageText(run.usage) : "";
}

function isCheck(value: unknown): value is { result: string; message: string } {
  return typeof value === "object" && value !== null &&
    typeof (value as Record<string, unknown>).result === "string";
}

/** The parent run of a child run (agent steps), from its checkpoint's state. */
function parentOf(cp: RunCheckpoint | undefined): { runId: string; stepId: string } | undefined {
  const parent = cp?.state.parent as { runId?: unknown; stepId?: unknown } | undefined;
  return typeof parent?.runId === "string"
    ? { runId: parent.runId, stepId: String(parent.stepId ?? "") }
    : undefined;
}
