/**
 * `@stepflow/core/runner`: the step-flow runner in detail. {@linkcode StepFlowRunner} with its
 * options and result (also in the root entry point), and the types those reach: a run's history
 * entries and transitions, the permission asks a tool call raises and their replies, child-run
 * links, the spend per step, and the names of the OpenTelemetry spans and metrics the runner
 * records. The runner's pure parts (gates, routing, checks) are its own business and stay in their
 * files.
 *
 * @example Walk a finished run's history
 * ```ts
 * import { loadAgentDefinition, StepFlowRunner } from "jsr:@stepflow/core";
 * import type { HistoryEntry } from "jsr:@stepflow/core/runner";
 *
 * const definition = await loadAgentDefinition("haiku");
 * const result = await new StepFlowRunner(definition).run({ args: { topic: "autumn" } });
 * const steps = result.state.history.map((entry: HistoryEntry) => entry.stepId);
 * console.log(steps.join(" → "));
 * ```
 *
 * @module
 */
export type {
  CompletionReason,
  DeclinedAnswer,
  HistoryEntry,
  ParentRunLink,
  PermissionAnswer,
  PermissionAsk,
  PermissionGrant,
  PermissionReply,
  RerunUnfinishedCallCheck,
  RunOptions,
  RunPermissionAsk,
  RunUsage,
  StepFlowResult,
  StepFlowRunnerOptions,
  ToolCallSummary,
  Transition,
} from "./types.ts";
export { MAX_HISTORY_TOOL_CALLS } from "./permission_asks.ts";
export { MAX_OUTPUT_DEPTH } from "../engine/ask_structured.ts";
export { type RunHandle, type RunnerState, StepFlowRunner } from "./runner.ts";
export type { ChildRunLink, FanOutMark } from "./run_state.ts";
export {
  type ChildQueue,
  FanOutSuspended,
  type QueuedChild,
  type QueuedFanOut,
} from "./child_queue.ts";
export type { StepSpend } from "./spend_records.ts";
export type { InStepMarker } from "./tool_call_resume.ts";
export { DEFAULT_MAX_AGENT_DEPTH } from "./child_run.ts";
export type {
  AnswerOptions,
  PendingInput,
  PermissionRequest,
  RecordedAnswer,
} from "./input_request.ts";
export {
  metricsEnabled,
  SEMCONV_VERSION,
  SPAN_ATTRIBUTES,
  TRACER_NAME,
  tracingEnabled,
} from "./telemetry.ts";
export type { ReachedPath } from "../tools/types.ts";
