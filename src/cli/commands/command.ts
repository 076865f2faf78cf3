/**
 * What a subcommand of `stepflow` declares once — its name, one-line summary, usage, operands,
 * flags and examples — and what follows from it: its `--help` text, its operands split from its
 * flags, its strict parse (did-you-mean for a mistyped flag), and its shell completion
 * (`completions.ts`).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { UsageError } from "../../errors.ts";
import { localizeCommands, type StepflowAction } from "../../invocation.ts";
import {
  declaredHelpLines,
  declaredTable,
  type FlagDecl,
  type FlagDecls,
  type FlagsOf,
  optionTable,
  parseCommandFlags,
  readDeclaredFlags,
} from "../kit/flags.ts";
import type { CliIo } from "../kit/io.ts";

/** A word of a subcommand that is not a flag (`stepflow show RUN_ID`). */
export interface Operand {
  /** As the usage names it (`RUN_ID`, `AGENT`). */
  name: string;
  /** May be left out. */
  optional?: boolean;
  /** What shell completion offers for it. */
  complete?: FlagDecl["complete"];
}

/** A subcommand of `stepflow` implemented on its declaration (the agent subcommands). */
export interface Subcommand<D extends FlagDecls = FlagDecls> {
  /** The subcommand's name (its one-line summary is in the registry, `registry.ts`). */
  name: StepflowAction;
  /** The usage lines after `stepflow ` (`resume RUN_ID [options]`). */
  usage: readonly string[];
  /** What it does, in a few lines (shown by its `--help`). */
  about: string;
  /** Its operands, in order. */
  operands: readonly Operand[];
  /** Its flags, declared once. */
  flags: D;
  /** Whether it also takes the agent's declared parameters (`--<parameter> value`). */
  parameters?: boolean;
  /** Whole command lines, starting `stepflow `: shown by `--help`, checked by the tests. */
  examples: readonly string[];
  /** Runs it in-process: never exits, returns the exit code. */
  main(argv: readonly string[], io: Partial<CliIo>): Promise<number>;
}

/** Declares a subcommand (identity, typed: its flags keep their literal declaration). */
export function defineSubcommand<D extends FlagDecls>(command: Subcommand<D>): Subcommand<D> {
  return Object.freeze(command);
}

/**
 * The `--help` text of `command`, its commands written as they work from `userDir`; `extra` is
 * appended before the examples (an agent's parameters).
 */
export function subcommandHelp(command: Subcommand, userDir: string, extra?: string): string {
  const lines = [
    ...command.usage.map((u, i) => `${i === 0 ? "Usage: " : "       "}stepflow ${u}`),
    "",
    command.about,
    "",
    "Options:",
    ...declaredHelpLines(command.flags),
  ];
  if (command.parameters) {
    lines.push("  --<parameter> value  A parameter the agent declares in agent.json");
  }
  if (extra !== undefined) lines.push("", extra);
  lines.push("", "Examples:", ...command.examples.map((e) => `  ${e}`));
  return localizeCommands(lines.join("\n"), userDir);
}

/** Whether `argv` asks for help (`--help` or `-h` before a `--`). */
export function wantsHelp(argv: readonly string[]): boolean {
  for (const arg of argv) {
    if (arg === "--") return false;
    if (arg === "--help" || arg === "-h") return true;
  }
  return false;
}

/**
 * Splits `argv` into the command's operands (at most `count`) and the rest (flags, their values,
 * and anything left over, which the strict parse then reports). A word that follows an undeclared
 * flag may be that flag's value (an agent parameter, `--topic autumn`): it is taken as an operand
 * only when no other word is.
 *
 * @example
 * ```ts
 * import { splitOperands } from "./command.ts";
 * splitOperands(["--topic", "x", "haiku", "--json"], { json: { type: "boolean", description: "" } }, 1);
 * // { operands: ["haiku"], rest: ["--topic", "x", "--json"] }
 * ```
 */
export function splitOperands(
  argv: readonly string[],
  decls: FlagDecls,
  count: number,
): { operands: string[]; rest: string[] } {
  const table = optionTable(declaredTable(decls));
  const shorts = new Map(
    Object.entries(table).flatMap(([name, o]) => o.short ? [[o.short, name] as const] : []),
  );
  // Each word that is not a flag or a declared flag's value: [index, follows an undeclared flag].
  const words: [number, boolean][] = [];
  let end = argv.length;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      end = i;
      break;
    }
    if (arg.startsWith("-") && arg !== "-") {
      if (arg.includes("=")) continue;
      const name = arg.startsWith("--") ? arg.slice(2) : shorts.get(arg.slice(1)) ?? arg.slice(1);
      const declared = Object.hasOwn(table, name) ? table[name] : undefined;
      if (declared?.type === "string") i++;
      else if (!declared && i + 1 < argv.length && !argv[i + 1].startsWith("-")) {
        words.push([i + 1, true]);
        i++;
      }
      continue;
    }
    words.push([i, false]);
  }
  const chosen = [
    ...words.filter(([, maybeValue]) => !maybeValue),
    ...words.filter(([, maybeValue]) => maybeValue),
  ].slice(0, count).map(([i]) => i).sort((a, b) => a - b);
  const taken = new Set(chosen);
  return {
    operands: chosen.map((i) => argv[i]),
    rest: argv.filter((_, i) => !taken.has(i) || i >= end),
  };
}

/**
 * Reads the command's own flags without failing on anything else (a first look, before the agent
 * whose parameters complete the command line is loaded).
 */
export function scanFlags<D extends FlagDecls>(argv: readonly string[], decls: D): FlagsOf<D> {
  const { values } = parseArgs({
    args: [...argv],
    options: optionTable(declaredTable(decls)),
    strict: false,
    allowPositionals: true,
  });
  return readDeclaredFlags(decls, values, { lenient: true });
}

/**
 * Parses a subcommand without agent parameters strictly: its operands (a missing one, or one too
 * many, is a usage error naming the usage) and its flags (a mistyped one gets a did-you-mean).
 */
export function parseSubcommand<D extends FlagDecls>(
  command: Subcommand<D>,
  argv: readonly string[],
): { flags: FlagsOf<D>; operands: string[] } {
  const hint = `\nRun \`stepflow ${command.name} --help\` for its options.`;
  const { flags, positionals } = parseCommandFlags(argv, command.flags, { hint });
  // `--help` needs no operands.
  const required = wantsHelp(argv) ? 0 : command.operands.filter((o) => !o.optional).length;
  if (positionals.length > command.operands.length) {
    throw new UsageError(
      `Unexpected argument "${positionals[command.operands.length]}": stepflow ${
        command.usage[0]
      }; quote a value that holds spaces.${hint}`,
    );
  }
  if (positionals.length < required) {
    throw new UsageError(
      `stepflow ${command.name} needs ${command.operands[positionals.length].name}: stepflow ${
        command.usage[0]
      }.${hint}`,
    );
  }
  return { flags, operands: positionals };
}
