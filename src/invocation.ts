/**
 * How to start a stepflow command from where the user stands, for the next steps and hints the
 * commands print (and the files they write: the `--init` script's comment, MIGRATION.md):
 * `deno task run-agent` works only inside the checkout that defines the task.
 *
 * @module
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** The command that runs the CLI from JSR (when this module was not loaded from a checkout). */
export const JSR_RUN_AGENT = "deno run -A jsr:@stepflow/core/cli";

/** The commands of stepflow: `deno task <name>` in a checkout, `stepflow <name>` once installed. */
export type StepflowCommandName =
  | "run-agent"
  | "plan"
  | "run-plan"
  | "qplan"
  | "ui"
  | "worker"
  | "migrate";

/** Where {@linkcode stepflowCommand} looks. */
export interface InvocationOptions {
  /** The URL of this module (a `file:` URL in a checkout, `https:` from JSR). */
  moduleUrl?: string;
  /** The `PATH` searched for an installed `stepflow` (default: the process's; "" for none). */
  path?: string;
}

/**
 * The command that starts stepflow's `name` command from `userDir`, as the user would type it:
 * - inside the checkout (where its deno.json and tasks are found): `deno task <name>`;
 * - elsewhere, when `stepflow` is installed on the `PATH` (`deno task install`): `stepflow <name>`
 *   (`stepflow` alone for run-agent);
 * - elsewhere, from a checkout: `deno run -A --config <checkout>/deno.json
 *   <checkout>/src/cli/<name>.ts` (the config supplies the checkout's import map);
 * - loaded from JSR: `deno run -A jsr:@stepflow/core/cli <name>`.
 *
 * @example
 * ```ts
 * import { stepflowCommand } from "./invocation.ts";
 * stepflowCommand("qplan", "/tmp/elsewhere", { path: "" });
 * // "deno run -A --config /…/deno.json /…/src/cli/qplan.ts"
 * ```
 */
export function stepflowCommand(
  name: StepflowCommandName,
  userDir: string,
  options: InvocationOptions = {},
): string {
  const sub = name === "run-agent" ? "" : ` ${name}`;
  const url = new URL(options.moduleUrl ?? import.meta.url);
  if (url.protocol === "file:") {
    const root = resolve(dirname(fileURLToPath(url)), "..");
    const config = join(root, "deno.json");
    if (isWithin(root, resolve(userDir)) && existsSync(config)) return `deno task ${name}`;
    if (installedStepflow(options.path)) return `stepflow${sub}`;
    return `deno run -A --config ${shellQuote(config)} ${
      shellQuote(join(root, "src", "cli", `${name.replace("-", "_")}.ts`))
    }`;
  }
  if (installedStepflow(options.path)) return `stepflow${sub}`;
  return `${JSR_RUN_AGENT}${sub}`;
}

/**
 * `text` (a usage or help text) with every `deno task <command>` of stepflow written the way
 * {@linkcode stepflowCommand} says it works from `userDir`.
 *
 * @example
 * ```ts
 * import { localizeCommands } from "./invocation.ts";
 * localizeCommands("Usage: deno task qplan run FILE", "/tmp/elsewhere", { path: "" });
 * // "Usage: deno run -A --config /…/deno.json /…/src/cli/qplan.ts run FILE"
 * ```
 */
export function localizeCommands(
  text: string,
  userDir: string,
  options: InvocationOptions = {},
): string {
  const seen = new Map<string, string>();
  return text.replace(
    /deno task (run-agent|run-plan|plan|qplan|ui|worker|migrate)\b/g,
    (_all, name: StepflowCommandName) => {
      let command = seen.get(name);
      if (command === undefined) {
        command = stepflowCommand(name, userDir, options);
        seen.set(name, command);
      }
      return command;
    },
  );
}

/**
 * The command that starts `run-agent` from `userDir` ({@linkcode stepflowCommand} for run-agent).
 *
 * @example
 * ```ts
 * import { runAgentCommand } from "./invocation.ts";
 * runAgentCommand("/tmp/elsewhere"); // "stepflow" once installed, else "deno run -A --config …"
 * ```
 */
export function runAgentCommand(
  userDir: string,
  moduleUrl: string = import.meta.url,
  path?: string,
): string {
  return stepflowCommand("run-agent", userDir, {
    moduleUrl,
    ...(path !== undefined ? { path } : {}),
  });
}

/**
 * True when a `stepflow` on the `PATH` is stepflow's CLI: the script `deno install` wrote for
 * `src/cli/mod.ts` of a checkout or for `jsr:@stepflow/core/cli` (another program of that name
 * is not ours, and printing it would send the user astray).
 */
export function installedStepflow(path: string | undefined = processPath()): boolean {
  for (const dir of path.split(delimiter)) {
    if (dir === "") continue;
    const file = join(dir, "stepflow");
    try {
      const info = statSync(file);
      // A deno install script is a few hundred bytes; never read a large binary.
      if (!info.isFile || info.size > 8192) continue;
      const text = readFileSync(file, "utf8");
      if (/src\/cli\/mod\.ts|@stepflow\/core\/cli/.test(text)) return true;
    } catch {
      // Not there, or not readable: look on.
    }
  }
  return false;
}

function processPath(): string {
  try {
    return Deno.env.get("PATH") ?? "";
  } catch {
    return ""; // No --allow-env: no PATH to search.
  }
}

function isWithin(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** Quotes `text` for a POSIX shell when it holds anything but safe characters. */
export function shellQuote(text: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
