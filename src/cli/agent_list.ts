/**
 * The agents under `.agent/` as the list command shows them: each with its display name and
 * description, and — like the dashboard's Agents page — a mark on every agent that does not load,
 * with how many problems it has and the first one, so that a broken agent is seen before it is
 * run.
 *
 * @module
 */
import { listAgents, loadAgentDefinition } from "../definition/load.ts";
import { AgentDefinitionError } from "../definition/errors.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { errorMessage } from "../errors.ts";
import type { AgentSummary } from "../definition/load.ts";

/** One listed agent: its summary, and whether it loads (`problems` when it does not). */
export interface ListedAgent extends AgentSummary {
  /** True when the agent loads (its definition is valid). */
  loads: boolean;
  /** Why it does not load: every problem, one message each (absent when it loads). */
  problems?: string[];
}

/** An agent of {@linkcode checkAgents}, with its definition when it loads. */
export interface CheckedAgent {
  /** What the list shows (and `--json` prints). */
  listed: ListedAgent;
  /** The loaded definition (absent when the agent does not load). */
  definition?: AgentDefinition;
}

/** The most characters of an agent's first problem the list shows. */
const PROBLEM_CHARS = 160;

/**
 * Lists the agents under `cwd`'s `.agent/` and loads each one, sorted by name: what the list
 * shows, and the definitions of those that load.
 *
 * @example
 * ```ts ignore
 * const agents = await checkAgents(Deno.cwd());
 * agents.filter((a) => !a.listed.loads).map((a) => a.listed.name); // ["broken"]
 * ```
 */
export async function checkAgents(cwd: string): Promise<CheckedAgent[]> {
  const agents = await listAgents({ cwd });
  return await Promise.all(agents.map(async (summary): Promise<CheckedAgent> => {
    try {
      const definition = await loadAgentDefinition(summary.name, { cwd });
      return { listed: { ...summary, loads: true }, definition };
    } catch (error) {
      const problems = error instanceof AgentDefinitionError
        ? [...error.problems]
        : [errorMessage(error)];
      return { listed: { ...summary, loads: false, problems } };
    }
  }));
}

/**
 * The lines of the agent list: one per agent (`name  display name — description`), an agent that
 * does not load marked under it (`✗ does not load (3 problems): <the first>`), and, when any does
 * not load, a closing line with the command that shows every problem (`validate(name)`).
 *
 * @example
 * ```ts
 * import { agentListLines } from "./agent_list.ts";
 * const lines = agentListLines([
 *   { name: "haiku", dir: "/x/haiku", description: "Writes a haiku", loads: true },
 *   { name: "broken", dir: "/x/broken", loads: false, problems: ["agent.json: bad key"] },
 * ], (name) => `stepflow validate ${name}`);
 * console.log(lines[1]); // "          ✗ does not load (1 problem): agent.json: bad key"
 * ```
 */
export function agentListLines(
  agents: readonly ListedAgent[],
  validate: (agent: string) => string,
): string[] {
  const width = Math.max(0, ...agents.map((a) => a.name.length)) + 2;
  const lines: string[] = [];
  for (const a of agents) {
    const about = [a.displayName, a.description].filter(Boolean).join(" — ");
    lines.push(`  ${a.name.padEnd(width)}${about}`.trimEnd());
    if (a.loads) continue;
    const problems = a.problems ?? [];
    const first = oneLine(problems[0] ?? "it cannot be read");
    lines.push(
      `  ${" ".repeat(width)}✗ does not load (${problems.length} problem${
        problems.length === 1 ? "" : "s"
      }): ${first.length > PROBLEM_CHARS ? `${first.slice(0, PROBLEM_CHARS - 1)}…` : first}`,
    );
  }
  const broken = agents.filter((a) => !a.loads);
  if (broken.length > 0) {
    lines.push(
      "",
      `${
        broken.length === 1 ? "1 agent does" : `${broken.length} agents do`
      } not load; see why with: ${validate(broken[0].name)}`,
    );
  }
  return lines;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}
