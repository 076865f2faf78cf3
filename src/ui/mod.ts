/**
 * The local web dashboard over the run stores (`deno task ui`, docs/dashboard.md): the server,
 * the store discovery and the pieces a custom server can reuse.
 *
 * @module
 */
export {
  CONTENT_SECURITY_POLICY,
  dashboardHandler,
  type DashboardHandlerOptions,
  isLoopback,
  type RunningDashboard,
  serveDashboard,
  type ServeDashboardOptions,
} from "./server.ts";
export type { ActionOutcome, DashboardAction, DashboardActionOptions } from "./actions.ts";
export {
  type DashboardSource,
  discoverStores,
  type DiscoverStoresOptions,
  isPagedStore,
  type ListedRun,
  type NamedStore,
  type PagedRunStore,
  type RunPage,
  type RunQuery,
} from "./source.ts";
export type { RunPageQuery, RunPageResult } from "../store/postgres.ts";
export { escapeHtml, Html, html, type HtmlValue, raw } from "./html.ts";
export { type GraphEdge, type GraphNode, graphSvg, type NodeProgress } from "./graph_svg.ts";
export {
  CHART_LIMITS,
  type ChartBar,
  type ChartGeometry,
  chartGeometry,
  type ChartGroup,
  type ChartLane,
  type ChartLimits,
  type ChartOptions,
  type ChartRow,
  type StatusKind,
  statusKind,
  timelineChart,
} from "./timeline_chart.ts";
export type {
  RunCheckpoint,
  RunLock,
  RunLogEntry,
  RunStatus,
  RunStore,
  RunSummary,
} from "../store/types.ts";
