/**
 * The backend calls of one run: each call goes through `callBackend` (step timeout, pause,
 * cancellation, usage) with the run's hooks — who answers a tool call that asks for permission,
 * each tool call reported once (events, log, the iteration's history entry), the run's MCP
 * servers, and, when the run is recorded, each model turn and tool call made durable through the
 * iteration's call journal (`step_call_journal.ts`) and each call kept for the iteration's
 * `step_end` line (replay files).
 *
 * @module
 */
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import type { EventEmitter } from "../events/emitter.ts";
import type { ToolCallEvent } from "../events/types.ts";
import type { RecordedCall } from "../llm/replay_file.ts";
import type { ToolTurnResponse } from "../llm/tool_turn.ts";
import type { LlmBackend, LlmRequest, LlmResponse } from "../llm/types.ts";
import { callBackend, type CallContext } from "./backend_call.ts";
import { callNotices } from "./call_notices.ts";
import type { RunJournal } from "./checkpoint.ts";
import { recordedCall } from "./llm_call_log.ts";
import { type IterationToolCalls, noteToolCall, runPermissionHook } from "./permission_asks.ts";
import { answeredPermission } from "./permission_wait.ts";
import type { RunnerControl } from "./run_control.ts";
import type { RunMcpServers } from "./run_mcp_servers.ts";
import { type RunnerState, stepInfo } from "./run_state.ts";
import type { StepCallJournal } from "./step_call_journal.ts";
import { isWait, type WaitOutcome } from "./run_wait.ts";
import { toolCallLogFields } from "./tool_call_log.ts";
import type { StepFlowRunnerOptions } from "./types.ts";

/** What a run's calls need from the run. */
export interface RunCallContext {
  /** The backend the run calls (traced when a tracer provider is registered). */
  readonly backend: LlmBackend;
  /** The agent. */
  readonly definition: AgentDefinition;
  /** The runner's options. */
  readonly options: StepFlowRunnerOptions;
  /** The run's events. */
  readonly events: EventEmitter;
  /** The run's log and checkpoints. */
  readonly journal: RunJournal;
  /** The run's pause and stop. */
  readonly control: RunnerControl;
  /** The run's MCP servers (started on first use, closed when the run ends). */
  readonly mcpServers: RunMcpServers;
  /** Warns the person running the agent. */
  warn(message: string): void;
}

/** The backend calls of one run; see the module documentation. */
export class RunCalls {
  readonly #run: RunCallContext;

  /** The calls of the run `run` describes. */
  constructor(run: RunCallContext) {
    this.#run = run;
  }

  /**
   * One backend call of the current iteration (see `callBackend`), kept in `calls` for the
   * iteration's `step_end` entry when the run is recorded. `inStep` is the iteration's call
   * journal (a recorded step with tools). A tool call whose permission waits makes it return the
   * run's wait (see `run_wait.ts`), not a response.
   */
  async call(
    request: LlmRequest,
    state: RunnerState,
    step: FlowStep,
    calls: RecordedCall[],
    toolCalls: IterationToolCalls,
    inStep: StepCallJournal | undefined,
  ): Promise<LlmResponse | WaitOutcome> {
    const run = this.#run;
    // Nothing to keep without a store (the hot path of in-memory runs stays as lean as the call).
    if (!run.journal.recording) {
      return this.#send(request, state, step, undefined, calls.length, toolCalls, inStep);
    }
    // The model's turns of a step with tools, so a recording asks for the same tool calls.
    const turns: ToolTurnResponse[] = [];
    // Its place among the iteration's calls names a tool-loop call's lines in the run log.
    const callIndex = calls.length;
    const keep = (outcome: { response: LlmResponse } | { error: string }) => {
      const model = (run.options.backend ?? run.backend) as { model?: unknown };
      const name = typeof model.model === "string" ? model.model : undefined;
      calls.push(recordedCall(request, outcome, name, turns));
    };
    let response: LlmResponse | WaitOutcome;
    try {
      response = await this.#send(request, state, step, turns, callIndex, toolCalls, inStep);
    } catch (error) {
      // A failed call is part of the recording (a replay fails the same way); a stopped run's is not.
      if (
        !run.control.stopCause &&
        !(error instanceof StepflowError && error.code.startsWith("REPLAY_"))
      ) {
        keep({ error: errorMessage(error) });
      }
      throw error;
    }
    // A call that waits is no call of the iteration's record: the step runs again once answered.
    if (!isWait(response)) keep({ response });
    return response;
  }

  /** Sends one call through the retry policy, the step timeout and pause. */
  #send(
    request: LlmRequest,
    state: RunnerState,
    step: FlowStep,
    turns: ToolTurnResponse[] | undefined,
    callIndex: number,
    toolCalls: IterationToolCalls,
    inStep: StepCallJournal | undefined,
  ): Promise<LlmResponse | WaitOutcome> {
    const run = this.#run;
    // The tool loop's hooks exist only for a step that offers tools.
    const tools = request.allowedTools?.length
      ? this.#toolHooks(state, step, turns, callIndex, toolCalls, inStep)
      : undefined;
    return callBackend(run.backend, request, state, step, {
      signal: run.control.signal,
      timeoutMs: step.timeoutMs ?? run.options.stepTimeoutMs ?? run.definition.limits.stepTimeoutMs,
      waitIfPaused: () => run.control.waitIfPaused(),
      // The calls of a backend that runs its own tools (claude-code) take the same path.
      onBackendToolCall: ({ stepId: _stepId, ...call }) =>
        this.#reportToolCall(state, step, call, toolCalls, false),
      ...tools,
      // Streamed text costs an event per piece: only when someone listens.
      ...(run.events.has("onStepText")
        ? {
          onText: (text: string) => void run.events.emit("onStepText", stepInfo(state, step), text),
        }
        : {}),
      ...callNotices(run.events, run.journal, state, step, run.options),
    });
  }

  /**
   * The tool loop's hooks of a step with tools: who answers a call that asks (a recorded answer
   * to a wait, the run's grants, then `onPermissionRequest`, else the run waits when asks wait),
   * each call reported (events, log, the history's summary), the run's MCP servers, each model
   * turn kept for a recording — and, when the run is recorded, each turn and call made durable
   * (`step_call_journal.ts`).
   */
  #toolHooks(
    state: RunnerState,
    step: FlowStep,
    turns: ToolTurnResponse[] | undefined,
    callIndex: number,
    toolCalls: IterationToolCalls,
    inStep: StepCallJournal | undefined,
  ): Pick<
    CallContext,
    "onToolCallEvent" | "onTurn" | "mcpServers" | "resume" | "onPermissionRequest"
  > {
    const run = this.#run;
    const recorder = inStep?.recorder(callIndex);
    // Calls that finished before an interruption are replayed, not run: the iteration's record
    // of its calls takes them as they were logged.
    for (const done of recorder?.resume?.finished.values() ?? []) {
      if (done.call) noteToolCall(toolCalls, done.call);
    }
    const asks = run.options.permissionAsks ?? run.definition.agent.behavior.permissionAsks;
    // A wait needs the step recorded (its answer resumes the run inside the step).
    const waits = asks === "wait" && inStep !== undefined;
    const ask = runPermissionHook({
      runId: state.runId,
      agent: state.agent,
      iteration: state.iteration,
      cwd: state.cwd,
      grants: () => state.permissionGrants ?? [],
      signal: run.control.signal,
      ...(run.options.onPermissionRequest ? { answerer: run.options.onPermissionRequest } : {}),
      recordGrant: async (grant) => {
        (state.permissionGrants ??= []).push(grant);
        await run.journal.log(state, { type: "permission_grant", ...grant });
      },
      warn: (message) => run.warn(message),
    });
    return {
      mcpServers: run.mcpServers,
      onPermissionRequest: async (request, signal) => {
        const answered = answeredPermission(state, request);
        if (answered !== undefined) return answered;
        const reply = await ask(request, signal);
        if (reply !== undefined) return reply;
        // Nobody answered: with asks that wait, the call waits (the tool loop returns it).
        return waits ? "wait" : undefined;
      },
      ...(recorder?.resume ? { resume: recorder.resume } : {}),
      onToolCallEvent: async ({ stepId: _stepId, idempotent, ...call }) => {
        await recorder?.moment(call, idempotent);
        await this.#reportToolCall(state, step, call, toolCalls, recorder !== undefined);
      },
      onTurn: async (response: ToolTurnResponse, replayed: boolean) => {
        turns?.push(response);
        await recorder?.turn(response, replayed);
      },
    };
  }

  /**
   * The one path of a tool call's moments, whoever ran it (the tool loop, or a backend that runs
   * its own tools): an `onToolCall` event each, and once it ended its summary in the iteration's
   * history entry and a `tool_call` line in the run log.
   */
  async #reportToolCall(
    state: RunnerState,
    step: FlowStep,
    call: ToolCallEvent,
    toolCalls: IterationToolCalls,
    recorded: boolean,
  ): Promise<void> {
    const run = this.#run;
    await run.events.emit("onToolCall", stepInfo(state, step), call);
    if (call.phase !== "finished") return;
    noteToolCall(toolCalls, call);
    // A recorded tool-loop call has its lines written by the step's call journal already.
    if (!recorded) void run.journal.log(state, toolCallLogFields(step.id, call));
  }
}
