/**
 * The flags of every stepflow command line. A command declares its flags once with
 * {@linkcode defineFlags} — an object whose keys are the properties of its parsed flags and whose
 * entries carry type, value placeholder, short alias, description, `parse` and `default` — and from
 * that one declaration follow the type of its parsed flags ({@linkcode FlagsOf}), the strict parser
 * ({@linkcode parseCommandFlags}, on `node:util` `parseArgs`), the `Options:` rows of its `--help`
 * ({@linkcode declaredHelpLines}), the did-you-mean error of a mistyped flag and the error of a flag
 * given twice. Exit codes are the one table of `exit_codes.ts`, used by name.
 *
 * Why in-house and not `commander` or `citty`: this module adds about 150 lines to a parser that was
 * already here and already on `parseArgs`. A library would replace the parser but not the messages
 * every CLI test checks (did-you-mean, "given more than once", "needs a value", exit 2 without a
 * stack trace), which would then be re-worded from its errors; it would not fit `run-agent`, whose
 * flags include each agent's parameters, known only after the agent is loaded (two passes,
 * `src/cli/args.ts`); and it would be a new dependency behind an import alias for every user of
 * `jsr:@stepflow/core/cli`. It would remove less than it adds.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { closestMatch } from "../../definition/suggest.ts";
import { errorMessage, UsageError } from "../../errors.ts";

/** One flag of a CLI, as shown by `--help`. */
export interface FlagSpec {
  /** Long name without dashes (`max-iterations`). */
  name: string;
  /** `string` flags take a value, `boolean` flags do not. */
  type: "string" | "boolean";
  /** Placeholder of the value in the help text (`NAME`, `FILE`, `N`). */
  value?: string;
  /** Single-letter alias. */
  short?: string;
  /** The flag may be given more than once; its values are collected in a list. */
  multiple?: boolean;
  /** Description in the help; `\n` starts a continuation line. */
  description: string;
}

/** The option table of node's `parseArgs`. */
export type OptionTable = Record<
  string,
  { type: "string" | "boolean"; short?: string; multiple?: boolean }
>;

/** A parsed flag value: text, a switch, or the list of a `multiple` flag. */
export type FlagValue = string | boolean | string[] | undefined;

/** What {@linkcode parseFlags} returns. */
export interface ParsedFlags {
  /** Values by flag name (own keys only). */
  values: Record<string, FlagValue>;
  /** Arguments that are not flags, in order. */
  positionals: string[];
}

/** Options of {@linkcode parseFlags}. */
export interface ParseFlagsOptions {
  /** Appended to every usage error: where to look next (`\nRun with --help …`, the usage text). */
  hint?: string;
  /** Whether arguments that are not flags are allowed (default true). */
  positionals?: boolean;
}

/** `table` as node's option table (null prototype: `--constructor` is not Object's). */
export function optionTable(table: readonly FlagSpec[]): OptionTable {
  const options: OptionTable = Object.create(null);
  for (const f of table) {
    options[f.name] = {
      type: f.type,
      ...(f.short ? { short: f.short } : {}),
      ...(f.multiple ? { multiple: true } : {}),
    };
  }
  return options;
}

/** `-h, --help` / `--agent NAME`: a flag as its help line names it. */
export function flagLabel(f: FlagSpec): string {
  const long = `--${f.name}${f.value ? ` ${f.value}` : ""}`;
  return f.short ? `-${f.short}, ${long}` : long;
}

/**
 * The help lines of `table`: `  <label padded to width><description>`; continuation lines of a
 * description align under it; a label too long for the column gets its description on the next
 * line. `width` defaults to the longest label plus 2.
 */
export function flagHelpLines(
  table: readonly FlagSpec[],
  { width, indent = "  " }: { width?: number; indent?: string } = {},
): string[] {
  const column = width ?? Math.max(...table.map((f) => flagLabel(f).length)) + 2;
  const lines: string[] = [];
  for (const f of table) {
    const [first, ...rest] = f.description.split("\n");
    const label = flagLabel(f);
    if (label.length >= column) {
      lines.push(`${indent}${label}`, `${indent}${" ".repeat(column)}${first}`);
    } else {
      lines.push(`${indent}${label.padEnd(column)}${first}`);
    }
    for (const more of rest) lines.push(`${indent}${" ".repeat(column)}${more}`);
  }
  return lines;
}

/**
 * Parses `argv` strictly against `table`. Every problem is a {@linkcode UsageError} ending with
 * `options.hint`: an unknown flag (with the closest known one: `Unknown option --lst. Did you mean
 * --list?`), a missing value, a value given to a switch, a flag given twice (only `multiple` flags
 * may repeat), a positional argument where none is allowed.
 *
 * @example
 * ```ts
 * import { parseFlags } from "./flags.ts";
 * const { values, positionals } = parseFlags(["plan.json", "--yes"], [
 *   { name: "yes", type: "boolean", short: "y", description: "Start without asking" },
 * ]);
 * console.log(values.yes, positionals); // true ["plan.json"]
 * ```
 */
export function parseFlags(
  argv: readonly string[],
  table: readonly FlagSpec[],
  options: ParseFlagsOptions = {},
): ParsedFlags {
  const hint = options.hint ?? "";
  const known = optionTable(table);
  rejectUnknownFlags(argv, known, hint);
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: known,
      strict: true,
      allowPositionals: options.positionals ?? true,
      tokens: true,
    });
  } catch (error) {
    throw new UsageError(`${cleanParseMessage(error)}${hint}`);
  }
  const seen = new Set<string>();
  const repeated: string[] = [];
  for (const token of parsed.tokens) {
    if (token.kind !== "option") continue;
    if (seen.has(token.name) && !known[token.name]?.multiple) repeated.push(`--${token.name}`);
    seen.add(token.name);
  }
  if (repeated.length > 0) {
    throw new UsageError(
      `${[...new Set(repeated)].join(", ")} given more than once; pass each flag once.${hint}`,
    );
  }
  const values: Record<string, FlagValue> = Object.create(null);
  for (const [name, value] of Object.entries(parsed.values)) values[name] = value as FlagValue;
  return { values, positionals: parsed.positionals };
}

/**
 * Throws the unknown-flag {@linkcode UsageError} for the first flag of `argv` that `known` lacks,
 * naming the closest known flag when there is one.
 */
export function rejectUnknownFlags(argv: readonly string[], known: OptionTable, hint = ""): void {
  const [unknown] = unknownFlags(argv, known);
  if (unknown !== undefined) {
    throw new UsageError(`${unknownFlagMessage(unknown, Object.keys(known))}${hint}`);
  }
}

/**
 * The flags in `argv` that `known` declares neither by name nor by short alias, as written
 * (`--lst`, `-x`), in order.
 *
 * @example
 * ```ts
 * import { unknownFlags } from "./flags.ts";
 * unknownFlags(["--lst", "--json"], { json: { type: "boolean" } }); // ["--lst"]
 * ```
 */
export function unknownFlags(argv: readonly string[], known: OptionTable): string[] {
  const { tokens } = parseArgs({
    args: [...argv],
    options: known,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const shorts = new Set(Object.values(known).map((o) => o.short).filter(Boolean));
  return tokens.flatMap((token) =>
    token.kind === "option" && !Object.hasOwn(known, token.name) && !shorts.has(token.name)
      ? [token.rawName]
      : []
  );
}

/** `Unknown option --lst. Did you mean --list?` (the suggestion only when one is close). */
export function unknownFlagMessage(rawName: string, known: readonly string[]): string {
  const suggestion = closestMatch(rawName.replace(/^-+/, ""), [...known]);
  return `Unknown option ${rawName}.${suggestion ? ` Did you mean --${suggestion}?` : ""}`;
}

/** node's parse errors, reworded without its internal codes. */
export function cleanParseMessage(error: unknown): string {
  const message = errorMessage(error);
  const missing = /^Option '(-[^ ']+)(?: <value>)?' argument missing/.exec(message);
  if (missing) {
    const flag = missing[1].replace(/^-h$/, "--help");
    return `${flag} needs a value (${flag} VALUE).`;
  }
  const ambiguous = /^Option '(--?[^ ']+)' argument is ambiguous/.exec(message);
  if (ambiguous) {
    return `${ambiguous[1]} needs a value, but the next argument starts with "-". Write ${
      ambiguous[1]
    }=VALUE to pass a value that starts with a dash.`;
  }
  const noArg = /^Option '(?:-\w, )?(--?[^ ']+)' does not take an argument/.exec(message);
  if (noArg) return `${noArg[1]} is a flag and takes no value.`;
  const positional = /^Unexpected argument '([^']*)'/.exec(message);
  if (positional) return `Unexpected argument "${positional[1]}": this command takes only flags.`;
  return message.split("\n")[0].replace(/\. To specify a positional.*$/s, ".");
}

/**
 * A whole number written in decimal digits only (`"8420"`), or `undefined`: unlike `Number()`, it
 * refuses `""`, `" 1"`, `"0x50"`, `"1e3"`, `"+1"`, `"1.0"` and numbers past 2^53. The one parser of
 * whole-number flags (`--port`, `--concurrency`, …).
 *
 * @example
 * ```ts
 * import { parseWholeNumber } from "./flags.ts";
 * console.log(parseWholeNumber("8420"), parseWholeNumber("0x50"), parseWholeNumber("")); // 8420 undefined undefined
 * ```
 */
/**
 * The `parse` of a flag that takes one of `choices`: the value, or a usage error naming them.
 *
 * @example
 * ```ts
 * import { choiceFlag } from "./flags.ts";
 * choiceFlag("--mode", ["fast", "safe"] as const)("safe"); // "safe"
 * ```
 */
export function choiceFlag<T extends string>(
  flag: string,
  choices: readonly T[],
): (raw: string) => T {
  return (raw) => {
    if ((choices as readonly string[]).includes(raw)) return raw as T;
    throw new UsageError(`${flag} expects ${choices.join(" or ")}, got "${raw}".`);
  };
}

export function parseWholeNumber(raw: string): number | undefined {
  if (!/^\d{1,15}$/.test(raw)) return undefined;
  return Number(raw);
}

/**
 * A TCP port flag (`--port`): `fallback` when absent, 0–65535 in decimal digits, else a
 * {@linkcode UsageError} that says what a port is.
 *
 * @example
 * ```ts
 * import { portFlag } from "./flags.ts";
 * console.log(portFlag({ port: "0" }, 8420), portFlag({}, 8420)); // 0 8420
 * ```
 */
export function portFlag(values: Record<string, FlagValue>, fallback: number): number {
  const raw = values.port;
  if (raw === undefined) return fallback;
  const n = typeof raw === "string" ? parseWholeNumber(raw) : undefined;
  if (n === undefined || n > 65535) {
    throw new UsageError(
      `--port ${
        JSON.stringify(raw)
      }: give a port number 0-65535 in decimal digits (0 picks a free one).`,
    );
  }
  return n;
}

// -- typed declarations: one per command --------------------------------------------------------

/**
 * One flag of a command's declaration ({@linkcode defineFlags}): its `--help` row plus how its
 * value is read. The flag's name is its key in kebab-case (`dryRun` → `--dry-run`) unless `name`
 * says otherwise.
 */
export interface FlagDecl {
  /** `string` flags take a value, `boolean` flags do not. */
  type: "string" | "boolean";
  /** Description in the help; `\n` starts a continuation line. */
  description: string;
  /** Placeholder of the value in the help text (`NAME`, `FILE`, `N`). */
  value?: string;
  /** Single-letter alias. */
  short?: string;
  /** The flag may be given more than once; its values are collected in a list. */
  multiple?: boolean;
  /** The flag's name when it is not the key in kebab-case. */
  name?: string;
  /**
   * Reads and checks one value of a `string` flag; throws a {@linkcode UsageError} that names the
   * flag and the fix when the value is wrong. Without it the value is the text as given.
   */
  parse?: (raw: string) => unknown;
  /** The value when the flag is absent (without one, an absent `string` flag is an absent key). */
  default?: unknown;
  /**
   * What shell completion offers for the value of a `string` flag: the given words, the agents
   * under `.agent/`, the recorded run ids, files or folders. Without it: files for a `FILE`/`PATH`
   * placeholder, folders for `DIR`, nothing otherwise.
   */
  complete?: readonly string[] | "agent" | "run" | "file" | "dir";
}

/** A command's flags: key (the property of the parsed flags) → declaration, in `--help` order. */
export type FlagDecls = Readonly<Record<string, FlagDecl>>;

type ParsedValue<F> = F extends { parse: (raw: string) => infer T } ? T
  : F extends { type: "boolean" } ? boolean
  : string;
type AlwaysSet<F> = F extends { type: "boolean" } ? true
  : F extends { multiple: true } ? true
  : F extends { default: unknown } ? true
  : false;
type FlagValueOf<F> = F extends { multiple: true } ? ParsedValue<F>[]
  : F extends { default: infer D } ? ParsedValue<F> | D
  : ParsedValue<F>;

/**
 * The parsed flags of a declaration: a switch is a `boolean`, a `multiple` flag a list, a flag with
 * `parse` what it returns, a flag with a `default` always set; any other flag is an optional key,
 * absent when not given.
 */
export type FlagsOf<D extends FlagDecls> = Flatten<
  & { -readonly [K in keyof D as AlwaysSet<D[K]> extends true ? K : never]: FlagValueOf<D[K]> }
  & { -readonly [K in keyof D as AlwaysSet<D[K]> extends true ? never : K]?: FlagValueOf<D[K]> }
>;
/** One object type instead of an intersection (readable in hovers, comparable with `Exactly`). */
type Flatten<T> = { [K in keyof T]: T[K] };

/**
 * Declares a command's flags once: from the declaration follow the type of its parsed flags
 * ({@linkcode FlagsOf}), its parser ({@linkcode parseCommandFlags}), its `--help` rows
 * ({@linkcode declaredHelpLines}) and its did-you-mean and given-twice errors.
 *
 * @example
 * ```ts
 * import { defineFlags, type FlagsOf, parseCommandFlags, parsePositiveInt } from "./flags.ts";
 * const FLAGS = defineFlags({
 *   dryRun: { type: "boolean", description: "Show what would run" },
 *   concurrency: { type: "string", value: "N", description: "Parallel steps", parse: parsePositiveInt("--concurrency"), default: 4 },
 * });
 * const { flags }: { flags: FlagsOf<typeof FLAGS> } = parseCommandFlags(["--dry-run"], FLAGS);
 * console.log(flags.dryRun, flags.concurrency); // true 4
 * ```
 */
export function defineFlags<const D extends FlagDecls>(decls: D): D {
  return Object.freeze(decls);
}

/** The flag name of `key` in `decls`: its `name`, else the key in kebab-case. */
export function declaredName(key: string, decl: FlagDecl): string {
  return decl.name ?? key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** The declaration as help/parser rows ({@linkcode FlagSpec}), in declaration order. */
export function declaredTable(decls: FlagDecls): FlagSpec[] {
  return Object.entries(decls).map(([key, d]) => ({
    name: declaredName(key, d),
    type: d.type,
    description: d.description,
    ...(d.value !== undefined ? { value: d.value } : {}),
    ...(d.short !== undefined ? { short: d.short } : {}),
    ...(d.multiple ? { multiple: true } : {}),
  }));
}

/** The `Options:` rows of a declaration's `--help` (see {@linkcode flagHelpLines}). */
export function declaredHelpLines(
  decls: FlagDecls,
  options: { width?: number; indent?: string } = {},
): string[] {
  return flagHelpLines(declaredTable(decls), options);
}

/**
 * The typed flags of `decls` from the raw `values` of a parse: switches default to false, lists to
 * empty, values go through `parse`, absent flags take their `default`. With `lenient`, a value
 * `parse` refuses is left out instead of thrown (a first scan before the real parse).
 */
export function readDeclaredFlags<D extends FlagDecls>(
  decls: D,
  values: Record<string, unknown>,
  { lenient = false }: { lenient?: boolean } = {},
): FlagsOf<D> {
  const flags: Record<string, unknown> = {};
  for (const [key, decl] of Object.entries(decls)) {
    const raw = values[declaredName(key, decl)];
    if (decl.type === "boolean") {
      flags[key] = raw === true;
      continue;
    }
    const texts = Array.isArray(raw) ? raw : typeof raw === "string" ? [raw] : [];
    if (decl.multiple) {
      flags[key] = decl.parse ? texts.map(decl.parse) : texts;
      continue;
    }
    if (texts.length === 0) {
      if (decl.default !== undefined) flags[key] = decl.default;
      continue;
    }
    try {
      flags[key] = decl.parse ? decl.parse(texts[0]) : texts[0];
    } catch (error) {
      if (!lenient) throw error;
    }
  }
  return flags as FlagsOf<D>;
}

/**
 * Parses `argv` strictly against a command's declaration ({@linkcode defineFlags}): the checks of
 * {@linkcode parseFlags} (unknown flag with did-you-mean, missing value, a flag given twice), then
 * each value read by {@linkcode readDeclaredFlags}.
 */
export function parseCommandFlags<D extends FlagDecls>(
  argv: readonly string[],
  decls: D,
  options: ParseFlagsOptions = {},
): { flags: FlagsOf<D>; positionals: string[] } {
  const { values, positionals } = parseFlags(argv, declaredTable(decls), options);
  return { flags: readDeclaredFlags(decls, values), positionals };
}

/**
 * A `parse` for a flag that takes a positive whole number (decimal digits only): the message says
 * `<flag> expects a positive integer, got "<raw>".` unless `message` words it otherwise.
 */
export function parsePositiveInt(
  flag: string,
  message: (raw: string) => string = (raw) => `${flag} expects a positive integer, got "${raw}".`,
): (raw: string) => number {
  return (raw) => {
    const n = parseWholeNumber(raw);
    if (n === undefined || n < 1) throw new UsageError(message(raw));
    return n;
  };
}
