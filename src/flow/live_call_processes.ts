/**
 * A resume must not take a tool call for "unfinished" while the process it started still works: a
 * user told to check the effect and re-run the call would otherwise check too early and get the
 * effect twice. Every process a run starts carries the run's id in its environment
 * (`STEPFLOW_RUN_ID`, see `process_containment.ts`), so the resume looks for them on this machine.
 *
 * Under the default containment (`supervisor`) a killed run's processes die with it, so there is
 * usually nothing to find, or only processes being killed at that moment (they get
 * {@linkcode LIVE_PROCESS_GRACE_MS} to go). Under `session` containment, what left its process group
 * outlives a `kill -9` of the run, and this is what stops the resume.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import { liveRunProcesses, type TaggedProcess } from "../process_containment.ts";
import type { ResumedStep } from "./tool_call_resume.ts";

/**
 * How long a resume waits for the processes of a run that was just killed to go before it refuses
 * (a supervisor killing what was below it takes milliseconds; a busy machine, more).
 */
export const LIVE_PROCESS_GRACE_MS = 3_000;

/**
 * Refuses (`TOOL_CALL_STILL_RUNNING`) to resume a run stopped inside a step with tools while a
 * call was unfinished, as long as a process the run started still runs on this machine. Does
 * nothing when the run stopped with no call under way.
 *
 * @throws StepflowError `TOOL_CALL_STILL_RUNNING`, naming the processes (pid and command line)
 *
 * @example
 * ```ts
 * import { refuseWhileCallsRun } from "./live_call_processes.ts";
 * await refuseWhileCallsRun("20261130T101010Z-abcdef", "demo", undefined); // nothing to check
 * ```
 */
export async function refuseWhileCallsRun(
  runId: string,
  agent: string,
  resumed: ResumedStep | undefined,
  graceMs: number = LIVE_PROCESS_GRACE_MS,
): Promise<void> {
  if (!resumed?.unfinished.length) return;
  let live = await liveRunProcesses(runId);
  const until = performance.now() + graceMs;
  while (live.length > 0 && performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    live = await liveRunProcesses(runId);
  }
  if (live.length > 0) throw stillRunningError(runId, agent, resumed, live);
}

function stillRunningError(
  runId: string,
  agent: string,
  resumed: ResumedStep,
  live: readonly TaggedProcess[],
): StepflowError {
  const calls = resumed.unfinished.map((c) => `${c.tool}${c.target ? ` (${c.target})` : ""}`)
    .join(", ");
  const shown = live.slice(0, 10);
  const list = shown.map((p) => `pid ${p.pid} (${p.command})`).join(", ") +
    (live.length > shown.length ? ` and ${live.length - shown.length} more` : "");
  const one = live.length === 1;
  return new StepflowError(
    "TOOL_CALL_STILL_RUNNING",
    `Run ${runId} was stopped in step "${resumed.marker.stepId}" while the tool call ${calls} was running, and ${
      one ? "a process the run started is" : `${live.length} processes the run started are`
    } still running on this machine: ${list}. The call is not finished — it may still be doing its work — so it cannot be checked or run again yet. Wait for ${
      one ? "it" : "them"
    } to end, or stop ${one ? "it" : "them"} (kill ${
      live.map((p) => p.pid).join(" ")
    }), then resume the run again. Nothing was changed.`,
    {
      details: {
        runId,
        stepId: resumed.marker.stepId,
        pids: live.map((p) => p.pid),
        calls: resumed.unfinished.map((c) => ({ tool: c.tool, callId: c.callId })),
        agent,
        next: { action: "resume", runId },
      },
    },
  );
}
