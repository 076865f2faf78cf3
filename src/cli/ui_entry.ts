/**
 * `@stepflow/core/ui`: the local web dashboard over the recorded runs (docs/dashboard.md). Run it
 * (`deno run -A jsr:@stepflow/core/ui` in a project folder, or {@linkcode uiMain} in-process), or
 * serve it from your own program: {@linkcode serveDashboard} listens, {@linkcode dashboardHandler}
 * is the bare request handler for your own `Deno.serve`, {@linkcode discoverStores} finds the
 * run stores of a folder's agents as the command does.
 *
 * @example Serve the dashboard of the current folder's agents
 * ```ts
 * import { discoverStores, serveDashboard } from "jsr:@stepflow/core/ui";
 *
 * const cwd = Deno.cwd();
 * const ui = serveDashboard({ source: { cwd, stores: await discoverStores(cwd) }, port: 0 });
 * console.log(ui.url);
 * await ui.server.shutdown();
 * ```
 *
 * @module
 */
import { uiMain } from "./ui.ts";

export { type UiCliIo, uiMain } from "./ui.ts";
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
  type RunningDashboard,
  type RunPage,
  type RunQuery,
  serveDashboard,
  type ServeDashboardOptions,
} from "../ui/mod.ts";

// Executed (`deno run -A jsr:@stepflow/core/ui`): the dashboard command.
if (import.meta.main) Deno.exit(await uiMain(Deno.args));
