/**
 * Command-line parsing of `run-agent` (docs/cli.md): the CLI's own flags plus the agent's declared
 * `parameters` as `--<key> value` options, type-checked, with defaults applied.
 *
 * Parsing happens in two passes because the parameters an agent accepts are only known once the
 * agent is loaded: {@linkcode scanCommandLine} reads the CLI's own flags leniently (to find `--agent`,
 * `--help`, …), then {@linkcode parseCommandLine} parses strictly against the CLI flags plus the
 * agent's parameters.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { ParameterDefinition } from "../definition/schema.ts";
import { closestMatch } from "../definition/suggest.ts";
import {
  parameterFlag,
  type ParameterValue,
  parseParameterText,
} from "../definition/parameters.ts";
import { UsageError } from "../errors.ts";
import { parameterList } from "./parameter_list.ts";
import { ownValue, setOwn } from "../own_record.ts";
import {
  cleanParseMessage,
  declaredTable,
  type FlagDecls,
  flagHelpLines,
  flagLabel,
  type FlagsOf,
  type OptionTable,
  optionTable,
  readDeclaredFlags,
  rejectUnknownFlags,
  unknownFlagMessage,
  unknownFlags,
} from "./kit/flags.ts";

export type { FlagSpec } from "./kit/flags.ts";
export { parameterList } from "./parameter_list.ts";

export { CLI_FLAGS, type CliFlags, RUN_AGENT_FLAGS } from "./run_agent_flags.ts";
import { CLI_FLAGS, type CliFlags, RUN_AGENT_FLAGS } from "./run_agent_flags.ts";

/** A parameter value after type-checking (`array` parameters give a list). */
export type { ParameterValue };

/** The result of {@linkcode parseCommandLine}. */
export interface CommandLine {
  /** The CLI's own flags. */
  flags: CliFlags;
  /** The agent's parameters (`{uv-<key>}` values), defaults applied. */
  params: Record<string, ParameterValue>;
}

/** Declared parameters, keyed by name (agent.json `parameters`). */
export type ParameterTable = Readonly<Record<string, ParameterDefinition>>;

/** Options of {@linkcode parseCommandLine}. */
export interface ParseOptions {
  /** The agent's declared parameters; none when no agent is involved (`--list`, `--init`). */
  parameters?: ParameterTable;
  /** The agent's name, for messages. */
  agentName?: string;
}

const FLAG_BY_NAME = new Map(CLI_FLAGS.map((f) => [f.name, f]));

/**
 * Reads the CLI's own flags without failing on anything else (unknown options are the agent's
 * parameters, which are not known yet). Use {@linkcode parseCommandLine} for the real parse.
 *
 * @example
 * ```ts
 * import { scanCommandLine } from "./args.ts";
 * scanCommandLine(["--agent", "issue-solver", "--topic", "x"]).agent; // "issue-solver"
 * ```
 */
export function scanCommandLine(argv: readonly string[]): CliFlags {
  const { values } = parseArgs({
    args: [...argv],
    options: cliOptions(),
    strict: false,
    allowPositionals: true,
  });
  return readDeclaredFlags(RUN_AGENT_FLAGS, values, { lenient: true });
}

/**
 * Parses the command line strictly: the CLI's flags plus the agent's parameters as `--<key> value`.
 * Values are type-checked (`number` must parse; `boolean` accepts `--key`, `--key true|false` and
 * `--key=true|false`), required parameters must be present and defaults are applied. Every problem is a
 * {@linkcode UsageError} that names the flag and lists the agent's parameters.
 *
 * @example
 * ```ts
 * import { parseCommandLine } from "./args.ts";
 * const { flags, params } = parseCommandLine(["--agent", "a", "--count", "3", "--dry-run"], {
 *   parameters: { count: { type: "number" }, "dry-run": { type: "boolean" } },
 * });
 * console.log(flags.agent, params); // "a" { count: 3, "dry-run": true }
 * ```
 */
export function parseCommandLine(
  argv: readonly string[],
  options: ParseOptions = {},
): CommandLine {
  return parseWithParameters(argv, RUN_AGENT_FLAGS, options);
}

/** What {@linkcode parseWithParameters} adds to {@linkcode ParseOptions}. */
export interface ParameterParseOptions extends ParseOptions {
  /** Appended to an unknown flag's error (default: `Run with --help for every CLI flag.`). */
  flagsHint?: string;
}

/**
 * {@linkcode parseCommandLine} against a subcommand's own flags (`decls`): the agent's parameters
 * as `--<key> value`, every other flag one of `decls`.
 */
export function parseWithParameters<D extends FlagDecls>(
  argv: readonly string[],
  decls: D,
  options: ParameterParseOptions = {},
): { flags: FlagsOf<D>; params: Record<string, ParameterValue> } {
  // Parameters are parsed by their flag (`flag`, else the key) and stored under their key. The
  // loader rejects a flag that clashes with the CLI's own; this guard covers callers that pass
  // parameters which never went through the loader.
  const byKey = options.parameters ?? {};
  const parameters: Record<string, ParameterDefinition> = Object.create(null);
  const keyOfFlag = new Map<string, string>();
  for (const [key, def] of Object.entries(byKey)) {
    const flag = parameterFlag(key, def);
    if (FLAG_BY_NAME.has(flag) || flag === "h") {
      throw new UsageError(
        `Agent ${
          agentLabel(options)
        }declares the parameter "${key}", which clashes with the CLI flag --${flag}. Set its "flag" to another name in agent.json.`,
      );
    }
    parameters[flag] = def;
    keyOfFlag.set(flag, key);
  }
  const args = normalizeArgv(argv, parameters);
  const known: OptionTable = optionTable(declaredTable(decls));
  for (const [flag, def] of Object.entries(parameters)) {
    known[flag] = def.type === "boolean"
      ? { type: "boolean" }
      : def.type === "array"
      ? { type: "string", multiple: true }
      : { type: "string" };
  }
  rejectUnknownFlags(args, known, parameterHelp(options, options.flagsHint ?? FLAGS_HINT));

  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: known,
      strict: true,
      allowPositionals: true,
      tokens: true,
    });
  } catch (error) {
    throw new UsageError(`${cleanParseMessage(error)}${parameterHelp(options)}`);
  }
  const repeated = new Set<string>();
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== "option") continue;
    if (seen.has(token.name) && parameters[token.name]?.type !== "array") repeated.add(token.name);
    seen.add(token.name);
  }
  if (repeated.size > 0) {
    const names = [...repeated].map((n) => `--${n}`).join(", ");
    throw new UsageError(`${names} given more than once; pass each flag once.`);
  }

  const values = parsed.values as Record<string, unknown>;
  // Parameter values from the tokens, in a Map: node's `values` object drops `--__proto__ x`.
  // Every occurrence is kept (an array parameter takes its flag more than once).
  const optionValues = new Map<string, string[]>();
  for (const token of parsed.tokens) {
    if (token.kind === "option" && typeof token.value === "string") {
      const list = optionValues.get(token.name);
      if (list) list.push(token.value);
      else optionValues.set(token.name, [token.value]);
    }
  }
  const byFlag: Record<string, ParameterValue> = {};
  // A boolean parameter may be followed by `true`/`false`; any other positional is an error.
  const tokens = parsed.tokens;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token.kind === "option-terminator") continue;
    if (token.kind === "positional") {
      throw new UsageError(
        `Unexpected argument "${token.value}". Every value belongs to a flag (--<name> value); quote values that contain spaces.${
          parameterHelp(options)
        }`,
      );
    }
    const def = parameterOf(parameters, token.name);
    if (!def || def.type !== "boolean") continue;
    const next = tokens[i + 1];
    if (next?.kind === "positional" && next.index === token.index + 1) {
      setOwn(byFlag, token.name, parseBoolean(token.name, next.value, options));
      i++;
    } else {
      setOwn(byFlag, token.name, true);
    }
  }

  const missing: string[] = [];
  for (const [flag, def] of Object.entries(parameters)) {
    const given = optionValues.get(flag);
    if (def.type === "boolean") {
      if (!Object.hasOwn(byFlag, flag) && def.default !== undefined) {
        setOwn(byFlag, flag, Boolean(def.default));
      }
    } else if (given !== undefined) {
      const parsedValue = parseParameterText(flag, def, given);
      if (parsedValue.error !== undefined) {
        throw new UsageError(`${parsedValue.error}${parameterHelp(options)}`);
      }
      setOwn(byFlag, flag, parsedValue.value);
    } else if (def.default !== undefined) {
      setOwn(byFlag, flag, def.default);
    } else if (def.required) {
      missing.push(flag);
    }
  }
  const params: Record<string, ParameterValue> = {};
  for (const [flag, value] of Object.entries(byFlag)) {
    setOwn(params, keyOfFlag.get(flag) ?? flag, value);
  }
  const flags = readDeclaredFlags(decls, values);
  if (missing.length > 0 && !(flags as { help?: boolean }).help) {
    const list = missing.map((k) => `--${k}`).join(", ");
    throw new UsageError(
      `Missing required parameter${missing.length === 1 ? "" : "s"} ${list}${
        options.agentName ? ` for agent "${options.agentName}"` : ""
      }.${parameterHelp(options)}`,
    );
  }
  return { flags, params };
}

/**
 * The full `--help` text: synopsis, every CLI flag, exit codes, and — when given — the agent's
 * parameters.
 */
export function usageText(options: ParseOptions = {}): string {
  const parameterLabel = "--<parameter> value";
  const width = Math.max(parameterLabel.length, ...CLI_FLAGS.map((f) => flagLabel(f).length)) + 2;
  const lines = [
    "Usage: run-agent --agent NAME [--<parameter> value ...] [options]",
    "       run-agent --list | --init NAME | --agent NAME --validate | --agent NAME --graph",
    "       run-agent --agent NAME --runs | --show RUN_ID | --resume RUN_ID | --redrive RUN_ID",
    "       run-agent --agent NAME --answer RUN_ID --value '<json>'",
    "",
    "The old form of the agent subcommands, kept for a release: each mode flag is now a",
    "subcommand (stepflow run AGENT, stepflow validate AGENT, stepflow show RUN_ID, …; see",
    "stepflow --help). Relative paths (.agent, --script, --agent DIR) resolve against the",
    "directory you ran the task from (INIT_CWD). Text piped on stdin becomes {input_text}.",
    "",
    "Options:",
    ...flagHelpLines(CLI_FLAGS, { width }),
    `  ${
      "--<parameter> value".padEnd(width)
    }A parameter the agent declares in agent.json (see below)`,
    "",
    "Exit codes: 0 success, 1 the flow ran and did not succeed, 2 usage, definition or backend",
    "            setup error (e.g. missing API key), 3 a person declined the run at an input step,",
    "            4 the run waits for an answer (no terminal to ask; answer with --answer), 5 its",
    "            budget stopped the run (resumable), 130 cancelled with Ctrl-C, 143 cancelled with",
    "            SIGTERM, 70 internal error (a bug).",
  ];
  if (options.parameters) {
    lines.push("", parameterList(options.parameters, options.agentName));
  } else {
    lines.push("", "Run with --agent NAME --help to see the parameters an agent accepts.");
  }
  lines.push(
    "",
    "Examples:",
    '  stepflow run issue-solver --topic "Fix the flaky login test"',
    "  stepflow run haiku --script .agent/haiku/demo.script.yaml --topic autumn --json",
    "  stepflow init my-agent",
  );
  return lines.join("\n");
}

// -------------------------------------------------------------------------------------------------

function cliOptions(): OptionTable {
  return optionTable(CLI_FLAGS);
}

/**
 * Rewrites what node's parser cannot take as is: `--flag=false` for a boolean parameter becomes
 * `--flag false`, and `--count -5` for a number parameter becomes `--count=-5` (node refuses a value
 * that starts with a dash unless it is inline).
 */
function normalizeArgv(argv: readonly string[], parameters: ParameterTable): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      out.push(...argv.slice(i));
      break;
    }
    const eq = /^--([^=]+)=(.*)$/s.exec(arg);
    if (eq && parameterOf(parameters, eq[1])?.type === "boolean") {
      out.push(`--${eq[1]}`, eq[2]);
      continue;
    }
    const name = arg.startsWith("--") ? arg.slice(2) : undefined;
    const next = argv[i + 1];
    if (
      name && parameterOf(parameters, name)?.type === "number" && next !== undefined &&
      /^-(\d|\.\d)/.test(next)
    ) {
      out.push(`${arg}=${next}`);
      i++;
      continue;
    }
    out.push(arg);
  }
  return out;
}

/**
 * Throws the unknown-flag error for the first flag of `argv` that is not a CLI flag but looks like a
 * typo of one (`--lst` → `--list`). Used when no agent is named: any other flag may be one of the
 * agent's parameters, so it is not an error yet.
 */
export function rejectMistypedCliFlags(argv: readonly string[]): void {
  const known = Object.keys(cliOptions());
  for (const rawName of unknownFlags(argv, cliOptions())) {
    if (closestMatch(rawName.replace(/^-+/, ""), known)) {
      throw new UsageError(
        `${unknownFlagMessage(rawName, known)}\nRun with --help for every CLI flag.`,
      );
    }
  }
}

/**
 * Throws the unknown-flag error (ending with `hint`) for the first flag of `argv` that `decls` does
 * not declare but that looks like a typo of one of them; any other flag may be a parameter of an
 * agent not named yet.
 */
export function rejectMistypedFlags(argv: readonly string[], decls: FlagDecls, hint: string): void {
  const table = optionTable(declaredTable(decls));
  const known = Object.keys(table);
  for (const rawName of unknownFlags(argv, table)) {
    if (closestMatch(rawName.replace(/^-+/, ""), known)) {
      throw new UsageError(`${unknownFlagMessage(rawName, known)}\n${hint}`);
    }
  }
}

/** The declared parameter `name` (own keys only: `--constructor` is not Object's). */
function parameterOf(parameters: ParameterTable, name: string): ParameterDefinition | undefined {
  return ownValue(parameters, name);
}

function parseBoolean(key: string, raw: string, options: ParseOptions): boolean {
  const v = raw.toLowerCase();
  if (v === "true") return true;
  if (v === "false") return false;
  throw new UsageError(
    `--${key} is a boolean: use --${key}, --${key} true or --${key} false (got "${raw}").${
      parameterHelp(options)
    }`,
  );
}

function agentLabel(options: ParseOptions): string {
  return options.agentName ? `"${options.agentName}" ` : "";
}

const FLAGS_HINT = "Run with --help for every CLI flag.";

/** The parameter list appended to usage errors, so the fix is on screen. */
function parameterHelp(options: ParseOptions, flagsHint?: string): string {
  const hint = flagsHint ? `\n${flagsHint}` : "";
  if (!options.parameters) return hint;
  return `\n\n${parameterList(options.parameters, options.agentName)}${hint}`;
}
