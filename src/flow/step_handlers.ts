/**
 * The step kinds the runner can run, each with its handler: a new kind is its handler's file and
 * one line here (and its `StepKind` in `src/definition/types.ts`; the record below does not
 * compile until every kind that runs has a handler).
 *
 * @module
 */
import type { StepKind } from "../definition/types.ts";
import { runAgentStep } from "./step_agent.ts";
import { runCheckGatedStep } from "./step_check_gated.ts";
import { runCommandKindStep } from "./step_command.ts";
import { runGateRoutedStep } from "./step_gate_routed.ts";
import { runInputStep } from "./step_input.ts";
import type { StepHandler } from "./step_handler.ts";

/** The kinds that run (`section` steps are templates, never run). */
export type RunnableStepKind = Exclude<StepKind, "section">;

/** The handler of each step kind that runs. */
export const STEP_HANDLERS: Readonly<Record<RunnableStepKind, StepHandler>> = Object.freeze({
  check: runCheckGatedStep,
  gate: runGateRoutedStep,
  closing: runGateRoutedStep,
  command: runCommandKindStep,
  input: runInputStep,
  agent: runAgentStep,
});
