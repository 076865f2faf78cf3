/**
 * Every subcommand of `stepflow`, with its one-line summary and how to load it. A subcommand is
 * loaded only when it is chosen (`stepflow qplan` does not load the run store), or for `--help`
 * and shell completion, which read every declaration.
 *
 * The agent subcommands (`run` … `submit`, `completions`) are declared and implemented in a file of
 * their own here; the older commands (`worker`, `ui`, `mcp`, `eval`, `migrate`, `plan`,
 * `run-plan`, `qplan`) keep their declaration and implementation in `src/cli/<name>.ts`.
 *
 * @module
 */
import type { StepflowAction } from "../../invocation.ts";
import type { FlagDecls } from "../kit/flags.ts";
import { type CliIo, fullIo, processIo, userDirOf } from "../kit/io.ts";
import { listenForInterrupt } from "../kit/interrupt.ts";
import { exitProcess, startTelemetryExport } from "../kit/telemetry_export.ts";
import type { Operand, Subcommand } from "./command.ts";

/** A subcommand's flags and operands, for completion (and the nested ones of `plan`, `qplan`). */
export interface CommandShape {
  /** Its flags. */
  flags: FlagDecls;
  /** Its operands, in order. */
  operands: readonly Operand[];
  /** Nested subcommands (`plan run`, `qplan validate`) and their shapes. */
  nested?: Readonly<Record<string, { flags: FlagDecls; operands: readonly Operand[] }>>;
  /** Whether it also takes the agent's declared parameters (`run`, `submit`). */
  parameters?: boolean;
}

/** A loaded subcommand. */
export interface LoadedCommand extends CommandShape {
  /** Runs it in-process (returns the exit code), when it can be. */
  main?: (argv: readonly string[], io: Partial<CliIo>) => Promise<number>;
  /** Runs it on the real process (signals, stdio) and exits with its code. */
  cli(argv: readonly string[]): Promise<never>;
}

/** One subcommand of the registry. */
export interface CommandEntry {
  /** The subcommand. */
  name: StepflowAction;
  /** One line for `stepflow --help`. */
  summary: string;
  /** Loads it. */
  load(): Promise<LoadedCommand>;
}

/**
 * Runs a subcommand's `main` on the real process: the first Ctrl-C (or SIGTERM) cancels the run in
 * flight and still prints its result, a second one (0.5 s later or more) quits at once; after
 * SIGTERM the exit code is 143. Spans and metrics are exported over OTLP when the environment asks
 * for it (OTEL_EXPORTER_OTLP_ENDPOINT) and flushed before the exit.
 */
export async function onProcess(
  main: (argv: readonly string[], io: Partial<CliIo>) => Promise<number>,
  argv: readonly string[],
): Promise<never> {
  await startTelemetryExport();
  using interrupt = listenForInterrupt({
    message: "\nCancelling the run… (press Ctrl-C again to quit at once)\n",
  });
  const code = await main(argv, { ...processIo(), signal: interrupt.signal });
  return await exitProcess(interrupt.exitCode(code));
}

/** A subcommand declared with `defineSubcommand`, as the registry loads it. */
function declared(command: Subcommand): LoadedCommand {
  return {
    flags: command.flags,
    operands: command.operands,
    ...(command.parameters ? { parameters: true } : {}),
    main: command.main,
    cli: (argv) => onProcess(command.main, argv),
  };
}

const none: readonly Operand[] = [];

/** Every subcommand, in the order `stepflow --help` lists them. */
export const COMMANDS: readonly CommandEntry[] = Object.freeze(
  [
    {
      name: "run",
      summary: "run an agent",
      load: async () => declared((await import("./run.ts")).command),
    },
    {
      name: "validate",
      summary: "check an agent's files; print every problem",
      load: async () => declared((await import("./validate.ts")).command),
    },
    {
      name: "graph",
      summary: "print an agent's flow as a Mermaid chart",
      load: async () => declared((await import("./graph.ts")).command),
    },
    {
      name: "list",
      summary: "list the agents under .agent/",
      load: async () => declared((await import("./list.ts")).command),
    },
    {
      name: "init",
      summary: "scaffold a new agent in .agent/NAME",
      load: async () => declared((await import("./init.ts")).command),
    },
    {
      name: "runs",
      summary: "list recorded runs (of one agent, or of all)",
      load: async () => declared((await import("./runs.ts")).command),
    },
    {
      name: "show",
      summary: "print one recorded run's history",
      load: async () => declared((await import("./show.ts")).command),
    },
    {
      name: "resume",
      summary: "continue an interrupted run where it stopped",
      load: async () => declared((await import("./resume.ts")).command),
    },
    {
      name: "redrive",
      summary: "restart a failed run from its failed step",
      load: async () => declared((await import("./redrive.ts")).command),
    },
    {
      name: "answer",
      summary: "answer a run that waits for a person, and continue it",
      load: async () => declared((await import("./answer.ts")).command),
    },
    {
      name: "submit",
      summary: "queue a run for the workers (PostgreSQL)",
      load: async () => declared((await import("./submit.ts")).command),
    },
    {
      name: "worker",
      summary: "take queued runs from PostgreSQL and drive them",
      load: async () => {
        const m = await import("../worker.ts");
        return { flags: m.WORKER_FLAGS, operands: none, cli: m.workerCli };
      },
    },
    {
      name: "ui",
      summary: "the local dashboard over recorded runs",
      load: async () => {
        const [m, f] = await Promise.all([import("../ui.ts"), import("../ui_flags.ts")]);
        return { flags: f.UI_FLAGS, operands: none, cli: m.uiCli };
      },
    },
    {
      name: "mcp",
      summary: "serve the agents to MCP clients as tools",
      load: async () => {
        const m = await import("../mcp.ts");
        return { flags: m.MCP_FLAGS, operands: none, cli: m.mcpCli };
      },
    },
    {
      name: "eval",
      summary: "run an agent over a file of cases; pass rates",
      load: async () => {
        const m = await import("../eval.ts");
        return { flags: m.EVAL_FLAGS, operands: none, main: m.evalMain, cli: m.evalCli };
      },
    },
    {
      name: "migrate",
      summary: "convert climpt agents",
      load: async () => {
        const m = await import("../migrate.ts");
        return {
          flags: m.MIGRATE_FLAGS,
          operands: [{ name: "FROM", complete: ["climpt"] }, { name: "PATH", complete: "dir" }],
          main: async (argv, io) => {
            const full = fullIo(io);
            const result = await m.runMigrateCli(argv, userDirOf(full));
            full.stdout.write(result.stdout);
            full.stderr.write(result.stderr);
            return result.code;
          },
          cli: m.migrateCli,
        };
      },
    },
    {
      name: "plan",
      summary: "PlanSpec plan trees: new, show, list, validate, run",
      load: async () => {
        const m = await import("../plan.ts");
        const nested = Object.fromEntries(
          Object.entries(m.PLAN_SUBCOMMAND_FLAGS).map(([name, flags]) => [
            name,
            {
              flags,
              operands: name === "list" ? none : [{ name: "PLAN", complete: "file" as const }],
            },
          ]),
        );
        return {
          flags: {},
          operands: [{ name: "COMMAND", complete: Object.keys(nested) }],
          nested,
          main: (argv, io) => m.planMain([...argv], io),
          cli: m.planCli,
        };
      },
    },
    {
      name: "run-plan",
      summary: "run a tool plan (a DAG of tool calls) with approvals",
      load: async () => {
        const m = await import("../run_plan.ts");
        return {
          flags: m.RUN_PLAN_FLAGS,
          operands: [{ name: "PLAN", optional: true, complete: "file" }],
          main: m.main,
          cli: m.runPlanCli,
        };
      },
    },
    {
      name: "qplan",
      summary: "run and validate QPlan scripts",
      load: async () => {
        const m = await import("../qplan.ts");
        const file = [{ name: "FILE", complete: "file" as const }];
        return {
          flags: {},
          operands: [{ name: "COMMAND", complete: ["run", "validate", "prompt"] }],
          nested: {
            run: { flags: m.QPLAN_FLAGS, operands: file },
            validate: { flags: m.QPLAN_FLAGS, operands: file },
            prompt: { flags: m.QPLAN_FLAGS, operands: [{ name: "TASK" }] },
          },
          main: (argv, io) => m.qplanMain([...argv], io),
          cli: m.qplanCli,
        };
      },
    },
    {
      name: "completions",
      summary: "shell completion for bash, zsh or fish",
      load: async () => declared((await import("./completions.ts")).command),
    },
  ] satisfies CommandEntry[],
);

/** The entry of `name`, if it is a subcommand. */
export function commandEntry(name: string): CommandEntry | undefined {
  return COMMANDS.find((c) => c.name === name);
}
