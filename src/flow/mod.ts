/**
 * The step-flow runner and its parts.
 *
 * @module
 */
export * from "./types.ts";
export { type RunnerState, StepFlowRunner } from "./runner.ts";
export { newRunId } from "../store/run_id.ts";
export { handoffKey, interpretGate, mapIntent, readPath } from "./gate.ts";
export type { GateInterpretation } from "./gate.ts";
export { type Route, routeTransition } from "./router.ts";
export { CHECK_RESPONSE_SCHEMA, type CheckVerdict, interpretCheck } from "./check.ts";
export { backoffDelay, type BackoffOptions } from "../backoff.ts";
