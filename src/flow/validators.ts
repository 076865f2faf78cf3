/**
 * Step validators (climpt's closure validators / failure patterns): after a step answers, each
 * validator runs an allowed command; the first failure decides the retry prompt — the pattern of the
 * failing validator (when its `match`, if any, matches the output) selects `f_failed_<pattern>.md` —
 * and the command output becomes `{validation.output}`.
 *
 * @module
 */
import type { C3lPromptRef, StepValidation } from "../definition/schema.ts";
import type { FlowStep } from "../definition/types.ts";
import { retryPromptRef } from "../definition/validate_features.ts";
import { type AgentCommandContext, commandOutput, runAgentCommand } from "./agent_command.ts";

/** Re-runs after a failed validation when the step sets no `maxRetries`. */
export const DEFAULT_VALIDATION_RETRIES = 3;

/** One validator run (each is a history entry). */
export interface ValidatorRun {
  /** The command's name in agent.json `commands`. */
  command: string;
  /** Its exit code. */
  exitCode: number;
  /** Whether it passed (`successWhen`). */
  ok: boolean;
  /** Why it failed, for messages: `exit 2`, or `exit 0 with output` under `successWhen: "empty"`. */
  reason?: string;
  /** The failure pattern that applies (failed runs only). */
  pattern?: string;
  /** stdout + stderr (bounded). */
  output: string;
  /** ISO start time. */
  startedAt: string;
  /** Duration in milliseconds. */
  durationMs: number;
}

/** The outcome of {@linkcode runStepValidators}. */
export interface ValidationOutcome {
  /** Every validator that ran, in order (they stop at the first failure). */
  runs: ValidatorRun[];
  /** The failing run, when one failed. */
  failure?: ValidatorRun;
}

/**
 * Runs a step's validators in order until one fails.
 *
 * @example
 * ```ts ignore
 * const { failure } = await runStepValidators(step.validation!, ctx);
 * if (failure) console.log(failure.pattern, failure.output);
 * ```
 */
export async function runStepValidators(
  validation: StepValidation,
  ctx: AgentCommandContext,
): Promise<ValidationOutcome> {
  const runs: ValidatorRun[] = [];
  for (const validator of validation.validators) {
    const started = new Date();
    const result = await runAgentCommand(validator.command, ctx);
    const output = commandOutput(result);
    const ok = result.code === 0 &&
      (validator.successWhen !== "empty" || output.trim() === "");
    const run: ValidatorRun = {
      command: validator.command,
      exitCode: result.code,
      ok,
      output,
      startedAt: started.toISOString(),
      durationMs: Date.now() - started.getTime(),
    };
    if (!ok) {
      run.reason = result.code !== 0
        ? `exit ${result.code}`
        : 'exit 0 with output (successWhen "empty")';
    }
    if (!ok && validator.pattern !== undefined) {
      if (validator.match === undefined || new RegExp(validator.match).test(output)) {
        run.pattern = validator.pattern;
      }
    }
    runs.push(run);
    if (!ok) return { runs, failure: run };
  }
  return { runs };
}

/**
 * The retry prompt of a failed validation: `<retryPrompt>/f_failed_<pattern>.md` (or `f_failed.md`
 * when no pattern applies). Undefined when the step declares no `retryPrompt`: then the step's own
 * prompt runs again with {@linkcode appendValidationReport}.
 */
export function validationRetryPrompt(
  step: FlowStep,
  retry: { pattern?: string },
): C3lPromptRef | undefined {
  const base = step.validation?.retryPrompt;
  return base ? retryPromptRef(base, retry.pattern) : undefined;
}

/** The step's own prompt plus the failed validation (used when no retry prompt is declared). */
export function appendValidationReport(
  prompt: string,
  retry: { command: string; output: string; pattern?: string },
): string {
  return `${prompt}\n\n---\nYour previous answer failed the check "${retry.command}"${
    retry.pattern ? ` (${retry.pattern})` : ""
  }:\n\n\`\`\`\n${retry.output}\n\`\`\`\nFix the cause, then answer again.`;
}
