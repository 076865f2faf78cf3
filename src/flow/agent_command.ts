/**
 * Runs one of an agent's allowed commands (agent.json `commands`) for a command step or a step
 * validator: argv only, no shell, `{uv-<name>}` substituted per argument, and only when the caller
 * allowed commands (`allowRun` / `--allow-run`). Spawning goes through the `run_command` tool, the
 * project's one way of running a process (timeout, bounded output, cancellation).
 *
 * @module
 */
import type { CommandSpec } from "../definition/schema.ts";
import { StepflowError } from "../errors.ts";
import { createRunCommandTool, type RunCommandResult } from "../tools/builtin_command.ts";

/** Timeout of an agent command when its spec sets none. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 300_000;
/** Output kept per stream (the rest is dropped): a command's output goes into prompts and logs. */
export const MAX_COMMAND_OUTPUT_BYTES = 256 * 1024;

/** What {@linkcode runAgentCommand} needs. */
export interface AgentCommandContext {
  /** agent.json `commands`. */
  commands: Readonly<Record<string, CommandSpec>> | undefined;
  /** True when the caller allowed commands (`allowRun`). */
  allowRun: boolean | undefined;
  /** `{uv-<name>}` values. */
  args: Readonly<Record<string, unknown>>;
  /** Working folder of the command. */
  cwd: string;
  /** Cancels it. */
  signal?: AbortSignal;
  /** Agent and step, for messages. */
  agent: string;
  /** The step that runs it. */
  stepId: string;
}

/**
 * The argv of a command with `{uv-<name>}` substituted. An argument that is exactly `{uv-<name>}`
 * of an array value expands to one argument per element; elsewhere arrays join with commas.
 *
 * @throws StepflowError `COMMAND_VARIABLE_MISSING` naming every variable without a value
 */
export function commandArgv(
  argv: readonly string[],
  args: Readonly<Record<string, unknown>>,
): string[] {
  const missing: string[] = [];
  const out: string[] = [];
  const text = (v: unknown) =>
    Array.isArray(v) ? v.join(",") : typeof v === "string" ? v : JSON.stringify(v);
  for (const arg of argv) {
    const whole = /^\{uv-([A-Za-z0-9_][A-Za-z0-9_.-]*)\}$/.exec(arg);
    if (whole && Array.isArray(args[whole[1]])) {
      out.push(...(args[whole[1]] as unknown[]).map((v) => text(v)));
      continue;
    }
    out.push(arg.replace(/\{uv-([A-Za-z0-9_][A-Za-z0-9_.-]*)\}/g, (all, name: string) => {
      const v = Object.hasOwn(args, name) ? args[name] : undefined;
      if (v === undefined || v === null) {
        if (!missing.includes(name)) missing.push(name);
        return all;
      }
      return text(v);
    }));
  }
  if (missing.length > 0) {
    throw new StepflowError(
      "COMMAND_VARIABLE_MISSING",
      `The command's arguments use ${missing.map((m) => `{uv-${m}}`).join(", ")}, which ${
        missing.length === 1 ? "has" : "have"
      } no value: pass ${missing.map((m) => `--${m} <value>`).join(" ")} (or run({ args })).`,
      { details: { missing } },
    );
  }
  return out;
}

/**
 * Runs the command `name`. A non-zero exit is a result, not an error; a refused, unknown, missing
 * or timed-out command throws a {@linkcode StepflowError}.
 */
export async function runAgentCommand(
  name: string,
  ctx: AgentCommandContext,
): Promise<RunCommandResult> {
  const spec = ctx.commands && Object.hasOwn(ctx.commands, name) ? ctx.commands[name] : undefined;
  if (!spec) {
    throw new StepflowError(
      "COMMAND_UNKNOWN",
      `Step "${ctx.stepId}" runs the command "${name}", which agent.json commands does not list.`,
      { details: { stepId: ctx.stepId, command: name } },
    );
  }
  if (!ctx.allowRun) {
    throw new StepflowError(
      "COMMAND_NOT_ALLOWED",
      `Step "${ctx.stepId}" of agent "${ctx.agent}" runs the command "${name}" (${
        spec.argv.join(" ")
      }), but running commands was not allowed. Pass --allow-run (or the runner option allowRun: true) to let the agent run the commands its agent.json lists.`,
      { details: { stepId: ctx.stepId, command: name } },
    );
  }
  const [program, ...rest] = commandArgv(spec.argv, ctx.args);
  const tool = createRunCommandTool({
    allowedCommands: [program],
    timeoutMs: spec.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    maxOutputBytes: MAX_COMMAND_OUTPUT_BYTES,
    workspaceRoot: ctx.cwd,
  });
  return await tool.execute(
    { command: program, args: rest, allowFailure: true },
    { workspaceRoot: ctx.cwd, signal: ctx.signal, stepId: ctx.stepId },
  );
}

/** stdout and stderr of a result as one text (what retry prompts and handoff see). */
export function commandOutput(result: RunCommandResult): string {
  const parts = [result.stdout.trimEnd(), result.stderr.trimEnd()].filter((p) => p !== "");
  return parts.join("\n");
}
