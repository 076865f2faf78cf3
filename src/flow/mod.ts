/**
 * The step-flow runner: {@linkcode StepFlowRunner}, its options and result, and the names of the
 * OpenTelemetry spans it records. The runner's pure parts (gates, routing, checks) are its own
 * business and stay in their files.
 *
 * @module
 */
export type {
  CompletionReason,
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
export { type RunHandle, type RunnerState, StepFlowRunner } from "./runner.ts";
export type { ChildRunLink, FanOutMark } from "./run_state.ts";
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
