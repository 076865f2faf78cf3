/**
 * `deno task migrate climpt <path> [--out DIR] [--dry-run] [--force] [--json]`: converts climpt
 * agents into stepflow agents (see docs/migrate.md).
 *
 * Exit codes: 0 every agent converted and loads, 1 converted but some agent does not load,
 * 2 usage error or unreadable source.
 *
 * @module
 */
import { localizeCommands } from "../invocation.ts";
import { relative, resolve } from "node:path";
import { errorMessage, StepflowError, UsageError } from "../errors.ts";
import { findFileAccessError } from "../fs_error.ts";
import { migrateClimpt, type MigratedAgent } from "../migrate/migrate.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import { declaredHelpLines, defineFlags, parseCommandFlags } from "./kit/flags.ts";

/** Every flag of `migrate`, in `--help` order: its type, parser and help rows follow from it. */
export const MIGRATE_FLAGS = defineFlags({
  out: {
    type: "string",
    value: "DIR",
    description: "where the agents are written, one folder each (default .agent)",
  },
  dryRun: { type: "boolean", description: "convert and check, print the summary, write nothing" },
  force: { type: "boolean", description: "replace agent folders that already exist in --out" },
  json: { type: "boolean", description: "print the result as one JSON array on stdout" },
  help: { type: "boolean", short: "h", description: "show this help" },
});

/** The usage text of `stepflow migrate`. */
export const MIGRATE_USAGE =
  `Usage: stepflow migrate climpt <path> [--out DIR] [--dry-run] [--force] [--json]

Converts climpt agents (github.com/tettuan/climpt, v1.13 format) into stepflow agents.
<path> is a climpt repository (agents in .agent/), its .agent folder, or one agent folder.

Options:
${declaredHelpLines(MIGRATE_FLAGS, { width: 12 }).join("\n")}

Each agent gets agent.json, steps_registry.json, prompts/, schemas/, smoke.script.yaml and
MIGRATION.md (field by field: mapped, dropped, needs a person, source defects).
Exit codes: 0 all agents load, 1 some converted agent does not load, 2 usage or source error.

Examples:
  stepflow migrate climpt ../climpt --out .agent
  stepflow migrate climpt ../climpt/.agent/iterator --dry-run`;

/** What {@linkcode runMigrateCli} returns: the exit code and the text written. */
export interface MigrateCliResult {
  /** 0, 1 or 2. */
  code: number;
  /** Text for stdout. */
  stdout: string;
  /** Text for stderr. */
  stderr: string;
}

/**
 * Runs `migrate` with `argv` (without the program name). Never throws for bad input.
 *
 * @example
 * ```ts ignore
 * import { runMigrateCli } from "jsr:@stepflow/core/cli";
 * const { code, stdout } = await runMigrateCli(["climpt", "../climpt", "--out", "migrated"]);
 * ```
 */
export async function runMigrateCli(
  argv: readonly string[],
  cwd: string = Deno.cwd(),
): Promise<MigrateCliResult> {
  let parsed;
  try {
    parsed = parseCommandFlags(argv, MIGRATE_FLAGS);
  } catch (error) {
    return {
      code: EXIT_CODES.usage,
      stdout: "",
      stderr: `${errorMessage(error)}\n\n${localizeCommands(MIGRATE_USAGE, cwd)}\n`,
    };
  }
  const { flags: values, positionals } = parsed;
  if (values.help) {
    return {
      code: EXIT_CODES.success,
      stdout: `${localizeCommands(MIGRATE_USAGE, cwd)}\n`,
      stderr: "",
    };
  }
  try {
    if (positionals[0] !== "climpt") {
      throw new UsageError(
        positionals.length === 0
          ? "Name the source format and path: migrate climpt <path>."
          : `Unknown source format "${positionals[0]}": only "climpt" is supported.`,
      );
    }
    if (positionals.length !== 2) {
      throw new UsageError("Pass exactly one path: migrate climpt <path>.");
    }
    const results = await migrateClimpt(positionals[1], {
      cwd,
      out: values.out,
      dryRun: values.dryRun,
      force: values.force,
    });
    const failed = results.some((r) => r.loadErrors.length > 0);
    const stdout = values.json
      ? `${JSON.stringify(results, null, 2)}\n`
      : `${summary(results, cwd, values.dryRun)}\n`;
    return { code: failed ? EXIT_CODES.failed : EXIT_CODES.success, stdout, stderr: "" };
  } catch (error) {
    // An unreadable source, a folder that cannot be written: the user's situation, exit 2.
    const known = error instanceof StepflowError ? error : findFileAccessError(error);
    const message = known ? known.message : errorMessage(error);
    return {
      code: known ? 2 : 70,
      stdout: "",
      stderr: `migrate: ${message}\n`,
    };
  }
}

function summary(results: MigratedAgent[], cwd: string, dryRun: boolean): string {
  const lines = [
    `${dryRun ? "Would convert" : "Converted"} ${results.length} climpt agent(s)${
      dryRun ? " (dry run: nothing written)" : ""
    }:`,
  ];
  for (const r of results) {
    const state = r.loadErrors.length > 0
      ? `does NOT load (${r.loadErrors.length} problem(s))`
      : `loads${r.loadWarnings.length > 0 ? ` with ${r.loadWarnings.length} warning(s)` : ""}`;
    lines.push(
      `  ${
        r.name.padEnd(14)
      } ${state}; ${r.counts.mapped} mapped, ${r.counts.dropped} dropped, ${r.counts.person} need a person, ${r.counts.defect} source defect(s) → ${
        relative(cwd, resolve(r.dir)) || "."
      }`,
    );
    for (const e of r.loadErrors) lines.push(`      error: ${e.split("\n")[0]}`);
  }
  lines.push(
    "",
    "Read each agent's MIGRATION.md, then try it with the command it gives (smoke run).",
  );
  return lines.join("\n");
}

/** Runs `migrate` on the real process, from `INIT_CWD` (else the current directory). */
export async function migrateCli(argv: readonly string[] = Deno.args): Promise<never> {
  const cwd = Deno.env.get("INIT_CWD") || Deno.cwd();
  const { code, stdout, stderr } = await runMigrateCli([...argv], cwd);
  if (stdout) await Deno.stdout.write(new TextEncoder().encode(stdout));
  if (stderr) await Deno.stderr.write(new TextEncoder().encode(stderr));
  Deno.exit(code);
}

if (import.meta.main) await migrateCli();
