/**
 * `stepflow`: one command for every command line of stepflow, for use outside the checkout
 * (`deno task install` puts it on the PATH; `deno install -g -A -n stepflow jsr:@stepflow/core/cli`
 * from JSR). `stepflow <command> …` runs `run-agent`, `plan`, `run-plan`, `qplan`, `ui`, `worker`
 * or `migrate` exactly as `deno task <command> …` does in the checkout; anything else is
 * `run-agent` (`stepflow --agent NAME …`), so `deno run -A jsr:@stepflow/core/cli --agent NAME`
 * keeps working.
 *
 * @module
 */

/** The commands `stepflow` dispatches to, with one line each for its help. */
export const STEPFLOW_COMMANDS: Readonly<Record<string, string>> = Object.freeze({
  "run-agent": "run, resume and inspect agents (the default: stepflow --agent NAME …)",
  plan: "PlanSpec plan trees: new, show, validate, run",
  "run-plan": "run a tool plan (a DAG of tool calls) with approvals",
  qplan: "run and validate QPlan scripts",
  ui: "the local dashboard over recorded runs",
  worker: "run queued runs from PostgreSQL",
  migrate: "convert climpt agents",
});

/** The text `stepflow --help` prints. */
export function stepflowHelp(): string {
  const width = Math.max(...Object.keys(STEPFLOW_COMMANDS).map((c) => c.length)) + 2;
  return [
    "Usage: stepflow <command> [options]      (stepflow <command> --help for its options)",
    "       stepflow --agent NAME [options]    (the same as stepflow run-agent --agent NAME …)",
    "",
    "Commands:",
    ...Object.entries(STEPFLOW_COMMANDS).map(([name, about]) => `  ${name.padEnd(width)}${about}`),
    "",
    "Relative paths resolve against the folder you run it from.",
  ].join("\n");
}

/**
 * Runs `stepflow` on the real process: the named command's own entry (which handles Ctrl-C and
 * exits with its code), `run-agent` when the first argument names no command.
 *
 * @example
 * ```ts ignore
 * import { stepflowCli } from "./stepflow.ts";
 * await stepflowCli(["qplan", "validate", "plan.qplan"]); // exits like `deno task qplan validate …`
 * ```
 */
export async function stepflowCli(argv: readonly string[] = Deno.args): Promise<never> {
  const [first, ...rest] = argv;
  switch (first) {
    case "help":
    case "--help":
    case "-h":
      console.log(stepflowHelp());
      Deno.exit(0);
      break;
    // Each command is imported only when chosen: `stepflow qplan` does not load the store or pg.
    case "run-agent":
      return await (await import("./run_agent.ts")).runCli(rest);
    case "plan":
      return await (await import("./plan.ts")).planCli(rest);
    case "run-plan":
      return await (await import("./run_plan.ts")).runPlanCli(rest);
    case "qplan":
      return await (await import("./qplan.ts")).qplanCli(rest);
    case "ui":
      return Deno.exit(await (await import("./ui.ts")).uiMain(rest));
    case "worker":
      return await (await import("./worker.ts")).workerCli(rest);
    case "migrate":
      return await (await import("./migrate.ts")).migrateCli(rest);
  }
  return await (await import("./run_agent.ts")).runCli(argv);
}
