/**
 * The agent step (`"kind": "agent"`): another agent does the sub-task as its own recorded run (a
 * child run, in the same store, linked both ways). The step maps the child's parameters from
 * `args` ({@linkcode childArgs}), runs or continues the child through `StepDependencies.runChild`,
 * and routes on how the child's drive ended: completed → `transitions.next` (or the parent
 * completes when there is none) with the child's final output handed off (`handoffFields` pick
 * from it; `{handoff.output}` holds all of it when the step names none); the child waits for an
 * answer → the parent waits on the same question; a person declined the child's question → the
 * parent ends `declined` too; anything else → the step's `onError`, as for a command step.
 *
 * @module
 */
import { argReference, argTypeProblem } from "../definition/agent_step.ts";
import type { FlowStep } from "../definition/types.ts";
import { StepflowError } from "../errors.ts";
import { handoffKey, readPath } from "./gate.ts";
import { ownValue, setOwn } from "../own_record.ts";
import type { RunnerState } from "./run_state.ts";
import { waitFor } from "./run_wait.ts";
import type { StepHandler, StepResult } from "./step_handler.ts";
import type { StepFlowResult } from "./types.ts";
import { BudgetExceeded } from "./spend_ledger.ts";

/**
 * The child's parameters from the step's `args`: `{handoff.<key>}` takes the latest handoff value
 * of the key, `{uv-<name>}` the parent's parameter, `{item}` / `{item.<path>}` the fan-out item
 * (`item`) or a path in it, anything else is passed as written. A reference
 * with no value leaves the parameter out, and its `default` applies as on the command line; the
 * child's declared parameters then check what is left (required ones present, types right).
 *
 * @throws {StepflowError} `AGENT_STEP_ARGS` naming the parameter, its value and the fix
 */
export function childArgs(
  step: FlowStep,
  state: RunnerState,
  item?: { value: unknown },
): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const [name, written] of Object.entries(step.args ?? {})) {
    const ref = argReference(written);
    const value = ref === undefined
      ? written
      : "handoff" in ref
      ? ownValue(state.latestHandoff, ref.handoff)
      : "parameter" in ref
      ? ownValue(state.args, ref.parameter)
      : item === undefined
      ? undefined
      : ref.item === ""
      ? item.value
      : readPath(item.value, ref.item);
    if (value !== undefined) setOwn(args, name, value);
  }
  const params = step.child?.agent.parameters ?? {};
  for (const [name, def] of Object.entries(params)) {
    const value = ownValue(args, name);
    if (value === undefined) {
      // As run-agent does for a parameter not given: its default.
      if (def.default !== undefined) setOwn(args, name, def.default);
      else if (def.required) {
        throw argsError(
          step,
          name,
          `has no value (args.${name} is ${
            JSON.stringify(step.args?.[name] ?? null)
          }, which nothing set yet)`,
        );
      }
      continue;
    }
    const problem = argTypeProblem(value, def.type);
    if (problem) throw argsError(step, name, problem);
    if (def.enum && !(Array.isArray(value) ? value : [value]).every((v) => def.enum!.includes(v))) {
      throw argsError(
        step,
        name,
        `is ${JSON.stringify(value)}, not one of ${def.enum.join(", ")}.`,
      );
    }
  }
  return args;
}

function argsError(step: FlowStep, name: string, problem: string): StepflowError {
  return new StepflowError(
    "AGENT_STEP_ARGS",
    `Agent step "${step.id}": the parameter "${name}" of agent "${step.child?.name}" ${problem} Fix args.${name} in the step (a {handoff.<key>} an earlier step hands off, a {uv-<name>} of this run, or a literal).`,
    { details: { stepId: step.id, parameter: name } },
  );
}

/**
 * Runs one iteration of an agent step: the child run, its handoff, the route of how it ended — or,
 * for a fan-out step (`forEach`), one child per item (`fan_out.ts`).
 */
export const runAgentStep: StepHandler = async (step, state, deps) => {
  await deps.started();
  await deps.waitIfPaused();
  if (step.forEach !== undefined) return await deps.fanOut();
  const args = childArgs(step, state);
  const child = await deps.runChild(args);
  const record = {
    child: {
      runId: child.runId,
      agent: step.child!.name,
      completionReason: child.completionReason,
      usage: { ...child.usage },
    },
  };
  if (child.completionReason === "waiting" && child.waiting) {
    return {
      outcome: waitFor({ kind: "child", runId: child.runId, request: child.waiting }),
    };
  }
  if (child.completionReason === "budget_exceeded") {
    // Its budget or this run's stopped it: this run stops too, and a resume continues the child.
    throw new BudgetExceeded(
      undefined,
      `Agent step "${step.id}": its child run ${child.runId} (agent ${step.child?.name}) was stopped by a budget: ${
        child.error?.message ?? "budget exceeded"
      }`,
    );
  }
  if (child.completionReason === "declined" && child.declined) {
    // The person answered this run's question (its child asked it): their "no" ends this run too.
    const declined = { ...child.declined, stepId: step.id, childRunId: child.runId };
    return { record, outcome: { kind: "end", reason: "declined", transition: "abort", declined } };
  }
  if (!child.success) return { record, error: childFailed(step, child) };
  const handoff = childHandoff(step, child.output);
  const parts: Omit<StepResult, "outcome" | "error"> = {
    record,
    handoff,
    response: { text: "", structuredOutput: child.output },
  };
  const next = step.transitions.next?.target;
  return {
    ...parts,
    outcome: next !== undefined
      ? { kind: "goto", stepId: next, transition: "next" }
      : { kind: "end", reason: "completed", transition: "complete", output: child.output },
  };
};

/** What the step hands off: the `handoffFields` picked from the child's output, else all of it. */
function childHandoff(step: FlowStep, output: unknown): Record<string, unknown> {
  const handoff: Record<string, unknown> = {};
  if (step.handoffFields === undefined) {
    if (output !== undefined) handoff.output = output;
    return handoff;
  }
  for (const path of step.handoffFields) {
    const value = readPath(output, path);
    if (value !== undefined) setOwn(handoff, handoffKey(path), value);
  }
  return handoff;
}

function childFailed(step: FlowStep, child: StepFlowResult): StepflowError {
  const why = child.error ? `${child.error.code}: ${child.error.message}` : child.completionReason;
  return new StepflowError(
    "AGENT_STEP_FAILED",
    `Agent step "${step.id}": the child run ${child.runId} of agent "${step.child?.name}" ended ${child.completionReason} (${why}); the child run's history shows why, and the step's onError decides what the parent does.`,
    {
      details: {
        stepId: step.id,
        childRunId: child.runId,
        next: { action: "show", runId: child.runId },
        completionReason: child.completionReason,
      },
    },
  );
}
