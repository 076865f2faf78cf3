/**
 * Errors of loading an agent definition.
 *
 * @module
 */
import { dirname } from "node:path";
import { commandLine } from "../invocation.ts";
import { StepflowError } from "../errors.ts";
import { closestMatch } from "./suggest.ts";

/**
 * Every problem found while loading an agent (JSON syntax, file shapes, flow rules, missing prompt
 * and schema files), collected into one error. `problems` holds each message; `message` lists them
 * all, numbered, under a header naming the agent folder.
 *
 * @example
 * ```ts ignore
 * import { AgentDefinitionError, loadAgentDefinition } from "./mod.ts";
 * try {
 *   await loadAgentDefinition("code-improver");
 * } catch (error) {
 *   if (error instanceof AgentDefinitionError) for (const p of error.problems) console.error(p);
 * }
 * ```
 */
export class AgentDefinitionError extends StepflowError {
  /** Every problem, one message each (multi-line where a seed message is). */
  readonly problems: readonly string[];
  /** Warnings found alongside the problems (unreachable steps, …). */
  readonly warnings: readonly string[];
  /** The agent folder. */
  readonly dir: string;

  /**
   * Builds the error and its message (one numbered line per problem).
   *
   * @param dir the agent folder
   * @param problems the problems (at least one)
   * @param warnings warnings found alongside
   */
  constructor(dir: string, problems: readonly string[], warnings: readonly string[] = []) {
    super("AGENT_DEFINITION_INVALID", formatProblems(dir, problems), {
      details: { dir, problems: [...problems], warnings: [...warnings] },
    });
    this.dir = dir;
    this.problems = Object.freeze([...problems]);
    this.warnings = Object.freeze([...warnings]);
  }
}

/** Thrown when the agent folder or its agent.json does not exist; lists the agents that do. */
export class AgentNotFoundError extends StepflowError {
  /** Names of the agents found under the agent root. */
  readonly available: readonly string[];

  /**
   * Builds the error and its message (the path looked at and the agents that exist).
   *
   * @param what what is missing (the folder or agent.json), as a sentence
   * @param path the path looked at
   * @param agentRoot the folder agents are looked up in
   * @param available agents found there
   * @param requested the name asked for (`--agent my-agnet`), to suggest the closest agent
   */
  constructor(
    what: string,
    path: string,
    agentRoot: string,
    available: readonly string[],
    requested?: string,
  ) {
    const guess = requested === undefined ? undefined : closestMatch(requested, available);
    const list = available.length > 0
      ? `${guess ? `Did you mean ${guess}? ` : ""}Agents in ${agentRoot}: ${available.join(", ")}.`
      : `There are no agents in ${agentRoot} (each agent is a folder holding an agent.json).`;
    super(
      "AGENT_NOT_FOUND",
      `${what}: ${path}. ${list} Create one with \`${
        commandLine({ action: "init", agent: requested ?? "my-agent" }, { cwd: dirname(agentRoot) })
      }\`, or name an existing agent or folder.`,
      {
        details: {
          path,
          agentRoot,
          available: [...available],
          ...(guess ? { guess } : {}),
        },
      },
    );
    this.available = Object.freeze([...available]);
  }
}

function formatProblems(dir: string, problems: readonly string[]): string {
  const n = problems.length;
  const lines = [`Agent definition in ${dir} is invalid (${n} problem${n === 1 ? "" : "s"}):`];
  problems.forEach((problem, i) => {
    const prefix = `${i + 1}. `;
    const pad = " ".repeat(prefix.length + 2);
    lines.push(`  ${prefix}${problem.split("\n").join(`\n${pad}`)}`);
  });
  return lines.join("\n");
}
