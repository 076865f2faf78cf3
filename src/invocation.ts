/**
 * The commands stepflow prints — next steps, hints, the dashboard's notes, the MCP server's
 * answers, the `init` scaffold's comment, MIGRATION.md — written so that they work when pasted where
 * the user stands. A next step is data ({@linkcode NextStep}: `{ action: "resume", runId }`), and
 * {@linkcode commandLine} is the one function that turns it into a command line.
 *
 * Where the user stands decides the start of the command ({@linkcode stepflowPrefix}): `stepflow`
 * when stepflow's installed command is on the `PATH` (`deno task install`), `deno task stepflow`
 * inside the checkout, else `deno run -A --config <checkout>/deno.json <checkout>/src/cli/mod.ts`
 * (or `deno run -A jsr:@stepflow/core/cli` when stepflow was loaded from JSR).
 *
 * @module
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, delimiter, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { redactUrl } from "./redact_url.ts";

/** The command that runs the CLI from JSR (when this module was not loaded from a checkout). */
export const JSR_RUN_AGENT = "deno run -A jsr:@stepflow/core/cli";

/** A subcommand of `stepflow` (`stepflow <subcommand> …`): what a {@linkcode NextStep} asks to do. */
export type StepflowAction =
  | "run"
  | "validate"
  | "graph"
  | "list"
  | "init"
  | "runs"
  | "show"
  | "resume"
  | "redrive"
  | "answer"
  | "submit"
  | "worker"
  | "ui"
  | "mcp"
  | "eval"
  | "migrate"
  | "plan"
  | "run-plan"
  | "qplan"
  | "completions";

/** Every subcommand of `stepflow`, in the order `--help` lists them. */
export const STEPFLOW_SUBCOMMANDS = [
  "run",
  "validate",
  "graph",
  "list",
  "init",
  "runs",
  "show",
  "resume",
  "redrive",
  "answer",
  "submit",
  "worker",
  "ui",
  "mcp",
  "eval",
  "migrate",
  "plan",
  "run-plan",
  "qplan",
  "completions",
] as const satisfies readonly StepflowAction[];

// Every action is listed: a name missing above does not compile.
const _everyAction: [Exclude<StepflowAction, typeof STEPFLOW_SUBCOMMANDS[number]>] extends [never]
  ? true
  : never = true;

/** The subcommands whose subject is a recorded run (`stepflow show RUN_ID`). */
export const RUN_ACTIONS: ReadonlySet<StepflowAction> = new Set([
  "show",
  "resume",
  "redrive",
  "answer",
]);

/**
 * A next step as data: what to do (`action`, a subcommand of `stepflow`) and on what. Errors carry
 * one in `details.next`, the formatters of recorded runs take one per hint, and
 * {@linkcode commandLine} makes it a command line (the dashboard could make it a button, the MCP
 * server a tool call).
 */
export interface NextStep {
  /** The subcommand. */
  action: StepflowAction;
  /** The run it acts on (`show`, `resume`, `redrive`, `answer`). */
  runId?: string;
  /**
   * The agent: the subject of `run`, `validate`, `graph`, `submit`, `runs` and `init` (the new
   * agent's name); with a run action, `--agent` (needed only when the run id alone does not find
   * the run: an agent outside `.agent/`).
   */
  agent?: string;
  /** The run store the user named (`--store`; a password is shown as `***`). */
  store?: string;
  /** Further arguments, as the command line's words (each is quoted for the shell as needed). */
  args?: readonly string[];
}

/** Where a printed command will be pasted, for {@linkcode stepflowPrefix}. */
export interface InvocationOptions {
  /** The URL of this module (a `file:` URL in a checkout, `https:` from JSR). */
  moduleUrl?: string;
  /** The `PATH` searched for an installed `stepflow` (default: the process's; "" for none). */
  path?: string;
}

/** The folder the user runs commands from, and what {@linkcode InvocationOptions} says. */
export interface CommandPlace extends InvocationOptions {
  /** The user's folder (where the command will be pasted). */
  cwd: string;
}

/**
 * How to start `stepflow` from `userDir`, as the user would type it:
 * - `stepflow` when stepflow's installed command is on the `PATH` (`deno task install`);
 * - inside the checkout (where its deno.json and tasks are found): `deno task stepflow`;
 * - elsewhere, from a checkout: `deno run -A --config <checkout>/deno.json
 *   <checkout>/src/cli/mod.ts` (the config supplies the checkout's import map);
 * - loaded from JSR: `deno run -A jsr:@stepflow/core/cli`.
 *
 * @example
 * ```ts
 * import { stepflowPrefix } from "./invocation.ts";
 * stepflowPrefix("/tmp/elsewhere", { path: "" });
 * // "deno run -A --config /…/deno.json /…/src/cli/mod.ts"
 * ```
 */
export function stepflowPrefix(userDir: string, options: InvocationOptions = {}): string {
  if (installedStepflow(options.path)) return "stepflow";
  const url = new URL(options.moduleUrl ?? import.meta.url);
  if (url.protocol !== "file:") return JSR_RUN_AGENT;
  const root = resolve(dirname(fileURLToPath(url)), "..");
  const config = join(root, "deno.json");
  if (isWithin(root, resolve(userDir)) && existsSync(config)) return "deno task stepflow";
  return `deno run -A --config ${shellQuote(config)} ${
    shellQuote(join(root, "src", "cli", "mod.ts"))
  }`;
}

/**
 * The one renderer of a printed command: `next` as a command line that works when pasted in
 * `place.cwd` — {@linkcode stepflowPrefix}, the subcommand, its subject (the run id, else the
 * agent), `--agent` for a run action that names one, `--store` (password hidden), then `args`.
 *
 * @example
 * ```ts
 * import { commandLine } from "./invocation.ts";
 * commandLine({ action: "resume", runId: "20260101T000000Z-0a1b2c" }, { cwd: "/tmp/x", path: "" });
 * // "deno run -A --config /…/deno.json /…/src/cli/mod.ts resume 20260101T000000Z-0a1b2c"
 * commandLine({ action: "answer", runId: "r1", args: ["--value", '{"ok":true}'] }, { cwd: "/tmp/x" });
 * // "stepflow answer r1 --value '{"ok":true}'" (with stepflow installed)
 * ```
 */
export function commandLine(next: NextStep, place: CommandPlace): string {
  return commandWords(stepflowPrefix(place.cwd, place), next);
}

/**
 * `next` as a command line that starts with `stepflow` wherever it is pasted (the installed
 * command): for text that does not know where it will be read, such as a library's default.
 *
 * @example
 * ```ts
 * import { plainCommandLine } from "./invocation.ts";
 * plainCommandLine({ action: "redrive", runId: "r1" }); // "stepflow redrive r1"
 * ```
 */
export function plainCommandLine(next: NextStep): string {
  return commandWords("stepflow", next);
}

function commandWords(prefix: string, next: NextStep): string {
  const words = [prefix, next.action];
  const onRun = RUN_ACTIONS.has(next.action);
  const subject = onRun ? next.runId : next.agent;
  if (subject !== undefined) words.push(shellQuote(subject));
  if (onRun && next.agent !== undefined) words.push("--agent", shellQuote(next.agent));
  if (next.store !== undefined) words.push("--store", shellQuote(redactUrl(next.store)));
  for (const arg of next.args ?? []) words.push(shellQuote(arg));
  return words.join(" ");
}

/** A function that renders a {@linkcode NextStep}, closed over where it is pasted. */
export type CommandRenderer = (next: NextStep) => string;

/**
 * A {@linkcode CommandRenderer} for `place`, adding `--store` to every step when the user named
 * one (`store`).
 *
 * @example
 * ```ts
 * import { commandRenderer } from "./invocation.ts";
 * const render = commandRenderer({ cwd: Deno.cwd() });
 * render({ action: "show", runId: "r1" }); // "stepflow show r1" once installed
 * ```
 */
export function commandRenderer(place: CommandPlace, store?: string): CommandRenderer {
  return (next) =>
    commandLine(
      store !== undefined && next.store === undefined ? { ...next, store } : next,
      place,
    );
}

/**
 * A {@linkcode NextStep} read back from data (an error's `details.next`, a JSON answer): the step
 * when `value` has the shape of one, else undefined.
 */
export function asNextStep(value: unknown): NextStep | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (!(STEPFLOW_SUBCOMMANDS as readonly unknown[]).includes(v.action)) return undefined;
  for (const key of ["runId", "agent", "store"]) {
    if (v[key] !== undefined && typeof v[key] !== "string") return undefined;
  }
  if (
    v.args !== undefined && (!Array.isArray(v.args) || v.args.some((a) => typeof a !== "string"))
  ) {
    return undefined;
  }
  return v as unknown as NextStep;
}

/**
 * The next step a recorded run's end names — its end error's `details.next`, such as the resume
 * with a raised budget of a run its budget stopped — read from the run's recorded `state` (a
 * checkpoint's); undefined when it names none.
 *
 * @example
 * ```ts
 * import { recordedNextStep } from "./invocation.ts";
 * recordedNextStep({
 *   end: { error: { details: { next: { action: "resume", runId: "r1", args: ["--budget-usd", "2"] } } } },
 * }); // { action: "resume", runId: "r1", args: ["--budget-usd", "2"] }
 * ```
 */
export function recordedNextStep(state: unknown): NextStep | undefined {
  if (typeof state !== "object" || state === null) return undefined;
  const end = (state as { end?: { error?: { details?: { next?: unknown } } } }).end;
  return asNextStep(end?.error?.details?.next);
}

/**
 * How a printed command names the agent in folder `agentDir`: its folder name when it is
 * `.agent/<name>` of `userDir` (where agents are looked up by name), else its path from `userDir`
 * (`./agents/haiku`, or absolute when it is not below `userDir`).
 *
 * @example
 * ```ts
 * import { agentOperand } from "./invocation.ts";
 * agentOperand("/p/.agent/haiku", "/p"); // "haiku"
 * agentOperand("/p/agents/haiku", "/p"); // "./agents/haiku"
 * ```
 */
export function agentOperand(agentDir: string, userDir: string): string {
  const dir = resolve(agentDir);
  const name = basename(dir);
  if (resolve(userDir, ".agent", name) === dir) return name;
  const rel = relative(resolve(userDir), dir);
  if (rel === "" || rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return dir;
  return `./${rel}`;
}

/**
 * The `agent` of a printed command that acts on a run of the agent in `agentDir`: none when the
 * run id alone finds the run (the agent is under `.agent/` of `userDir`), else its path.
 */
export function agentOfRun(agentDir: string, userDir: string): string | undefined {
  const operand = agentOperand(agentDir, userDir);
  return operand === basename(resolve(agentDir)) ? undefined : operand;
}

/**
 * The command that starts stepflow's `name` subcommand from `userDir`:
 * {@linkcode stepflowPrefix} and the name.
 *
 * @example
 * ```ts
 * import { stepflowCommand } from "./invocation.ts";
 * stepflowCommand("qplan", "/tmp/elsewhere", { path: "" });
 * // "deno run -A --config /…/deno.json /…/src/cli/mod.ts qplan"
 * ```
 */
export function stepflowCommand(
  name: StepflowAction,
  userDir: string,
  options: InvocationOptions = {},
): string {
  return `${stepflowPrefix(userDir, options)} ${name}`;
}

/**
 * `text` (a usage or help text) with every `stepflow <subcommand>` written the way
 * {@linkcode stepflowPrefix} says it works from `userDir`.
 *
 * @example
 * ```ts
 * import { localizeCommands } from "./invocation.ts";
 * localizeCommands("Usage: stepflow qplan run FILE", "/tmp/elsewhere", { path: "" });
 * // "Usage: deno run -A --config /…/deno.json /…/src/cli/mod.ts qplan run FILE"
 * ```
 */
export function localizeCommands(
  text: string,
  userDir: string,
  options: InvocationOptions = {},
): string {
  let prefix: string | undefined;
  return text.replace(COMMAND_IN_TEXT, (_all, before: string) => {
    prefix ??= stepflowPrefix(userDir, options);
    return `${before}${prefix} `;
  });
}

/** `stepflow <subcommand>` in a text, after the start of a line, a space, a quote or a bracket. */
const COMMAND_IN_TEXT = new RegExp(
  `(^|[\\s\`'"(])stepflow (?=(?:${
    [...STEPFLOW_SUBCOMMANDS].sort((a, b) => b.length - a.length).join("|")
  })\\b)`,
  "gm",
);

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
