/**
 * The step-flow runner and its parts.
 *
 * @module
 */
export * from "./types.ts";
export { newRunId, type RunnerState, StepFlowRunner } from "./runner.ts";
export { handoffKey, interpretGate, mapIntent, readPath } from "./gate.ts";
export type { GateInterpretation } from "./gate.ts";
export { type Route, routeTransition } from "./router.ts";
export { CHECK_RESPONSE_SCHEMA, type CheckVerdict, interpretCheck } from "./check.ts";
export { backoffDelay, type BackoffOptions } from "./backoff.ts";
