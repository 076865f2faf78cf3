/**
 * The command a hint prints to act on a recorded run (resume, redrive): the CLI as it works where
 * the user stands, the agent, and the store the user named.
 *
 * @module
 */
import { runAgentCommand, shellQuote } from "../invocation.ts";
import { redactUrl } from "../store/pg_connection.ts";

/**
 * The command that acts on a recorded run of `agent` from `userDir`, up to the run flag, as hints
 * print it: {@linkcode runAgentCommand}, `--agent`, and `--store` when the user gave one on the
 * command line (a PostgreSQL password shown as `***`: type it, or set `STEPFLOW_STORE`). A hint
 * appends `--resume RUN_ID` or `--redrive RUN_ID`; the run's recorded backend needs no flag.
 *
 * @example
 * ```ts
 * import { agentRunCommand } from "./run_hint.ts";
 * agentRunCommand("/tmp/elsewhere", "demo"); // "deno run -A --config … --agent demo"
 * ```
 */
export function agentRunCommand(userDir: string, agent: string, store?: string): string {
  const storeFlag = store === undefined ? "" : " --store " + shellQuote(redactUrl(store));
  return `${runAgentCommand(userDir)} --agent ${shellQuote(agent)}${storeFlag}`;
}
