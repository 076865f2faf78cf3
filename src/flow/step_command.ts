/**
 * Command steps (`"kind": "command"`): the step runs an allowed command instead of calling the
 * model. Exit code 0 follows `transitions.next` (or completes the run when there is none); any
 * other exit is a step failure that the step's `onError` handles. stdout, stderr and the exit code
 * are handed off (`{handoff.stdout}`, `{handoff.stderr}`, `{handoff.exitCode}`).
 * {@linkcode runCommandKindStep} is the step kind's handler; {@linkcode runCommandStep} runs the
 * command.
 *
 * @module
 */
import type { FlowStep } from "../definition/types.ts";
import { StepflowError } from "../errors.ts";
import { type AgentCommandContext, runAgentCommand } from "./agent_command.ts";
import type { StepHandler } from "./step_handler.ts";

/** What a command step did. */
export interface CommandStepResult {
  /** Values handed off under the step. */
  handoff: { stdout: string; stderr: string; exitCode: number };
  /** Where a successful run goes: the next step, or undefined to complete the run. */
  next?: string;
  /** Set when the command exited non-zero (the runner applies `onError`). */
  error?: StepflowError;
}

/**
 * Runs a command step.
 *
 * @example
 * ```ts ignore
 * const { handoff, next, error } = await runCommandStep(step, ctx);
 * ```
 */
export async function runCommandStep(
  step: FlowStep,
  ctx: AgentCommandContext,
): Promise<CommandStepResult> {
  const result = await runAgentCommand(step.command!, ctx);
  const handoff = { stdout: result.stdout, stderr: result.stderr, exitCode: result.code };
  const out: CommandStepResult = { handoff };
  const next = step.transitions.next?.target;
  if (next !== undefined) out.next = next;
  if (result.code !== 0) {
    const tail = (result.stderr.trim() || result.stdout.trim()).split("\n").slice(-5).join("\n");
    out.error = new StepflowError(
      "COMMAND_FAILED",
      `Command step "${step.id}" ("${step.command}": ${
        [result.command, ...result.args].join(" ")
      }) exited with code ${result.code}${tail ? `:\n${tail}` : ""}`,
      { details: { stepId: step.id, command: step.command, exitCode: result.code } },
    );
  }
  return out;
}

/** Runs one iteration of a command step: the command, its handoff, the route of its exit code. */
export const runCommandKindStep: StepHandler = async (step, _state, deps) => {
  await deps.started();
  await deps.waitIfPaused();
  const result = await runCommandStep(step, deps.commandContext());
  const parts = {
    record: { command: { name: step.command!, exitCode: result.handoff.exitCode } },
    handoff: result.handoff,
    response: { text: `${result.handoff.stdout}\n${result.handoff.stderr}` },
  };
  if (result.error) return { ...parts, error: result.error };
  return {
    ...parts,
    outcome: result.next !== undefined
      ? { kind: "goto", stepId: result.next, transition: "next" }
      : { kind: "end", reason: "completed", transition: "complete", output: result.handoff },
  };
};
