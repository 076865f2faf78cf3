/**
 * The run page of an interrupted run whose resume would stop at an unfinished tool call: the run
 * was killed (or its worker died) while a call whose tool is not idempotent ran, before its result
 * was saved, so `--resume` stops with `TOOL_CALL_UNFINISHED` rather than repeat its effect. The
 * page says so before anyone clicks Resume — which call (tool and what it acted on), what to check —
 * and offers **Resume, re-running TOOL TARGET** behind a confirm step: the one resume action with
 * `--rerun-unfinished-call` (for a run the workers hold, `--submit`: the run goes back to them).
 * The calls are found as the resume finds them (`resumedStepOf`, the run log's `tool_call_start`
 * lines without a `tool_call`); a held run also carries the workers' message in its summary.
 * Everything shown came from a model or a log: escaped, bounded.
 *
 * @module
 */
import { resumedStepOf, type UnfinishedCall } from "../flow/tool_call_resume.ts";
import { isOpenStatus } from "../run_statuses.ts";
import type { CommandRenderer } from "../invocation.ts";
import type { RunCheckpoint, RunLogEntry, RunSummary } from "../store/types.ts";
import { type Html, html as h } from "./html.ts";

/** Characters of a call's target (a command, a path) the page repeats. */
const TARGET_LIMIT = 200;

/** Why a resume of an interrupted run would stop, and at which calls. */
export interface UnfinishedCallNotice {
  /** The step the run was killed in. */
  stepId: string;
  /** The unfinished calls whose tools are not idempotent (empty when the log does not say). */
  calls: UnfinishedCall[];
  /**
   * For a run the workers hold: their message (the summary's error). Such a run goes back to the
   * workers (`--submit`) rather than on in the dashboard's own child process.
   */
  held?: string;
}

/**
 * The notice of a run nobody drives whose resume would stop at an unfinished call, or undefined
 * when a resume would go on (no such call, the run is live, waiting or ended).
 *
 * @example
 * ```ts
 * import { unfinishedCallNotice } from "./unfinished_call.ts";
 * const notice = unfinishedCallNotice(
 *   {
 *     version: 2, runId: "r", agent: "a", status: "running", startedAt: "", updatedAt: "",
 *     logEntries: 1, state: { currentStepId: "fix", iteration: 0, inStep: { stepId: "fix", iteration: 1, fromLine: 0 } },
 *   },
 *   { runId: "r", agent: "a", status: "running", startedAt: "", updatedAt: "", live: false },
 *   [{ ts: "", runId: "r", type: "tool_call_start", stepId: "fix", iteration: 1, call: 0, turn: 1,
 *      callId: "c1", tool: "Bash", target: "make deploy", idempotent: false }],
 * );
 * console.log(notice?.calls[0].target); // "make deploy"
 * ```
 */
export function unfinishedCallNotice(
  checkpoint: RunCheckpoint | undefined,
  summary: RunSummary | undefined,
  log: readonly RunLogEntry[],
): UnfinishedCallNotice | undefined {
  if (!checkpoint || !isOpenStatus(checkpoint.status) || summary?.live !== false) return undefined;
  const resumed = resumedStepOf(checkpoint.state, log);
  const calls = resumed?.unfinished.filter((c) => !c.idempotent) ?? [];
  // An open run with an error is one the workers hold (the queue's mark on its row).
  const held = summary.error;
  if (calls.length === 0 && held === undefined) return undefined;
  const current = checkpoint.state.currentStepId;
  return {
    stepId: resumed?.marker.stepId ?? (typeof current === "string" ? current : ""),
    calls,
    ...(held !== undefined ? { held } : {}),
  };
}

/** The call ids a confirmation names: what the re-run action checks the run still stops at. */
export function confirmedCallIds(notice: UnfinishedCallNotice): string[] {
  return notice.calls.map((c) => c.callId).sort();
}

/** `Bash make deploy`: the tool and what it acted on, bounded. */
export function callLabel(call: UnfinishedCall): string {
  const target = call.target ?? "";
  const cut = target.length > TARGET_LIMIT ? `${target.slice(0, TARGET_LIMIT)}…` : target;
  return cut ? `${call.tool} ${cut}` : call.tool;
}

/** What to check before running the call again, by tool (its target is named beside it). */
function whatToCheck(call: UnfinishedCall): string {
  if (call.tool === "Bash") {
    return "whether the command ran already — the files, services or remote state it changes";
  }
  if (call.tool === "Write" || call.tool === "Edit") {
    return "whether the file already holds the change";
  }
  return `whether ${call.tool} already did its work (what it changes)`;
}

/**
 * The notice block of the run page: the step, each unfinished call and what to check, how the two
 * ways on behave — and, without actions, the commands that do the same.
 *
 * @param options.commandFor how the read-only hint's command is written where the user stands
 */
export function unfinishedCallBlock(
  runId: string,
  notice: UnfinishedCallNotice,
  options: { actions: boolean; commandFor: CommandRenderer },
): Html {
  const rerun = options.commandFor({
    action: "resume",
    runId,
    args: ["--rerun-unfinished-call", ...(notice.held !== undefined ? ["--submit"] : [])],
  });
  const calls = notice.calls.map((c) =>
    h`<li data-tool="${c.tool}"><code>${callLabel(c)}</code> — check ${whatToCheck(c)}.</li>`
  );
  return h`<div id="unfinished-call" class="notice warn"${
    notice.held !== undefined ? h` data-held="true"` : ""
  }>
<p><strong>Resume would stop here.</strong> The run was stopped (killed or crashed) in step
<code>${notice.stepId}</code> while ${
    calls.length === 1 ? "this tool call was" : "these tool calls were"
  } running, before ${
    calls.length === 1 ? "its" : "their"
  } result was saved. The tool is not idempotent: it may have done its work already, and running it
again could repeat the effect.</p>
${calls.length > 0 ? h`<ul class="unfinished-calls">${calls}</ul>` : ""}${
    notice.held !== undefined
      ? h`<p class="held">The workers hold this run (their message is above): no worker takes it
until someone decides.</p>`
      : ""
  }
<p>${
    options.actions
      ? h`Once checked, <em>Resume, re-running</em> runs ${
        calls.length === 1 ? "it" : "them"
      } again and goes on${
        notice.held !== undefined ? " on the workers" : ""
      }; plain <em>Resume</em> stops and says why.`
      : h`Once checked, run it again and go on with <code>${rerun}</code>.`
  }</p>
</div>`;
}

/**
 * The Resume-with-re-run control of the actions block: a first button that opens the confirm
 * step (what will run again), then the button that sends the action with the calls confirmed.
 */
export function rerunControl(notice: UnfinishedCallNotice): Html {
  const label = notice.calls.length > 0
    ? notice.calls.map(callLabel).join(", ")
    : "the unfinished call";
  const body = JSON.stringify({ calls: confirmedCallIds(notice) });
  return h`<button type="button" data-arm="rerun-confirm">Resume, re-running ${label}</button>
<span id="rerun-confirm" class="confirm" hidden>Run ${label} again${
    notice.held !== undefined ? " on the workers" : ""
  }? Its effect may happen twice.
<button type="button" data-action="rerun" data-body="${body}">Yes, re-run and resume</button>
<button type="button" data-disarm="rerun-confirm">Not now</button></span>`;
}
