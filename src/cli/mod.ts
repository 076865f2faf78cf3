/**
 * The command line of stepflow, as a library. `stepflow <subcommand>` runs in-process with
 * {@linkcode stepflowMain} (injectable stdio, environment and working directory); the commands it
 * prints come from one function, {@linkcode commandLine}, which turns a next step
 * (`{ action: "resume", runId }`) into a command that works where the user stands. Also here: parse
 * a command line against an agent's declared parameters, scaffold a new agent with
 * {@linkcode initAgent}, and the older entries — {@linkcode main} (the old `run-agent` form),
 * {@linkcode planMain} (`plan`, PlanSpec), {@linkcode runPlanMain} (`run-plan`, tool plans),
 * {@linkcode qplanMain} (`qplan`, QPlan scripts), {@linkcode evalMain} (`eval`, an agent over a
 * file of cases) and {@linkcode uiMain} (`ui`, the local web dashboard over recorded runs, with
 * {@linkcode serveDashboard} to embed it).
 *
 * Installed as the one `stepflow` command: `deno task install` in the checkout, or
 * `deno install -g -A -n stepflow jsr:@stepflow/core/cli` (this module runs it when executed):
 * `stepflow run AGENT …`, `stepflow show RUN_ID`, `stepflow qplan run FILE`, …
 *
 * @example Run the CLI in-process and capture its output
 * ```ts ignore
 * import { stepflowMain } from "jsr:@stepflow/core/cli";
 *
 * let stdout = "";
 * const code = await stepflowMain(
 *   ["run", "issue-solver", "--script", "answers.yaml", "--topic", "Fix it", "--json"],
 *   { stdout: { write: (text) => void (stdout += text) }, cwd: "/path/to/project" },
 * );
 * console.log(code, JSON.parse(stdout).completionReason); // 0 "completed"
 * ```
 *
 * @example Parse a command line against an agent's parameters
 * ```ts
 * import { parseCommandLine } from "./mod.ts";
 *
 * const { flags, params } = parseCommandLine(["--agent", "a", "--count", "3", "--dry-run=false"], {
 *   parameters: { count: { type: "number" }, "dry-run": { type: "boolean" } },
 * });
 * console.log(flags.agent, params); // "a" { count: 3, "dry-run": false }
 * ```
 *
 * @module
 */
export { type CliIo, type CliWriter, main } from "./run_agent.ts";
export {
  type CliFlags,
  type CommandLine,
  type ParameterTable,
  type ParameterValue,
  parseCommandLine,
  type ParseOptions,
  usageText,
} from "./args.ts";
export { EXIT_CODES, type ExitCode } from "./kit/exit_codes.ts";
export { initAgent, type InitAgentOptions, type InitAgentResult } from "./init.ts";
export { type MigrateCliResult, runMigrateCli } from "./migrate.ts";
export { migrateClimpt, type MigratedAgent, type MigrateOptions } from "../migrate/mod.ts";
export { type PlanCliIo, planMain } from "./plan.ts";
export { type QPlanCliIo, qplanMain } from "./qplan.ts";
export { main as runPlanMain, type RunPlanIo, type RunPlanWriter } from "./run_plan.ts";
export { type UiCliIo, uiMain } from "./ui.ts";
export { evalMain } from "./eval.ts";
export {
  type ActionOutcome,
  type DashboardAction,
  type DashboardActionOptions,
  dashboardHandler,
  type DashboardHandlerOptions,
  type DashboardSource,
  discoverStores,
  type DiscoverStoresOptions,
  type ListedRun,
  type NamedStore,
  type RunCheckpoint,
  type RunLock,
  type RunLogEntry,
  type RunningDashboard,
  type RunPage,
  type RunQuery,
  type RunStatus,
  type RunStore,
  type RunSummary,
  serveDashboard,
  type ServeDashboardOptions,
} from "../ui/mod.ts";
/** A declared agent parameter (agent.json `parameters.<key>`), as {@linkcode parseCommandLine} reads it. */
export type { ParameterDefinition } from "../definition/schema.ts";

export { STEPFLOW_COMMANDS, stepflowCli, stepflowHelp, stepflowMain } from "./stepflow.ts";
export {
  commandLine,
  type CommandPlace,
  type InvocationOptions,
  type NextStep,
  type StepflowAction,
} from "../invocation.ts";
import { stepflowCli } from "./stepflow.ts";

// Executed (`stepflow …` once installed, or `deno run -A jsr:@stepflow/core/cli …`): every command.
if (import.meta.main) await stepflowCli();
