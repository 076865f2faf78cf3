/**
 * How to run `run-agent` again from where the user stands, for the next steps and hints the CLI
 * prints: `deno task run-agent` works only inside the checkout that defines the task.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isWithin } from "../prompt/c3l_path.ts";
import { redactUrl } from "../store/pg_connection.ts";

/** The command that runs the CLI from JSR (when this module was not loaded from a checkout). */
export const JSR_RUN_AGENT = "deno run -A jsr:@stepflow/core/cli";

/**
 * The command that starts `run-agent` from `userDir`, as the user would type it:
 * - inside the checkout (where its deno.json and `run-agent` task are found): `deno task run-agent`;
 * - elsewhere, from a checkout: `deno run -A --config <checkout>/deno.json
 *   <checkout>/src/cli/run_agent.ts` (the config supplies the checkout's import map);
 * - loaded from JSR: `deno run -A jsr:@stepflow/core/cli`.
 *
 * @example
 * ```ts
 * import { runAgentCommand } from "./invocation.ts";
 * runAgentCommand("/tmp/elsewhere"); // "deno run -A --config /…/deno.json /…/src/cli/run_agent.ts"
 * ```
 */
export function runAgentCommand(userDir: string, moduleUrl: string = import.meta.url): string {
  const url = new URL(moduleUrl);
  if (url.protocol !== "file:") return JSR_RUN_AGENT;
  const root = resolve(dirname(fileURLToPath(url)), "..", "..");
  const config = join(root, "deno.json");
  if (isWithin(root, resolve(userDir)) && existsSync(config)) return "deno task run-agent";
  return `deno run -A --config ${shellQuote(config)} ${
    shellQuote(join(root, "src", "cli", "run_agent.ts"))
  }`;
}

/**
 * The command that acts on a recorded run of `agent` from `userDir`, up to the run flag, as hints
 * print it: {@linkcode runAgentCommand}, `--agent`, and `--store` when the user gave one on the
 * command line (a PostgreSQL password shown as `***`: type it, or set `STEPFLOW_STORE`). A hint
 * appends `--resume RUN_ID` or `--redrive RUN_ID`; the run's recorded backend needs no flag.
 *
 * @example
 * ```ts
 * import { agentRunCommand } from "./invocation.ts";
 * agentRunCommand("/tmp/elsewhere", "demo"); // "deno run -A --config … --agent demo"
 * ```
 */
export function agentRunCommand(userDir: string, agent: string, store?: string): string {
  const storeFlag = store === undefined ? "" : " --store " + shellQuote(redactUrl(store));
  return `${runAgentCommand(userDir)} --agent ${shellQuote(agent)}${storeFlag}`;
}

/** Quotes `text` for a POSIX shell when it holds anything but safe characters. */
export function shellQuote(text: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
