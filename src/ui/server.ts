/**
 * The dashboard's HTTP server (`deno task ui`): read-only pages over the run stores, the actions
 * (when allowed), and the security model — loopback only by default (with a Host-header check
 * against DNS rebinding), a token on every request when bound wider, a per-server secret and a
 * same-origin Origin on every action, and no method but GET/HEAD (POST for actions). The routes
 * are one table ({@linkcode DASHBOARD_ROUTES}); the guards on what a request names are in
 * `http_guard.ts`, the live streams in `live.ts`, the response headers in `responses.ts`. It is
 * built on `Deno.serve` alone, without an HTTP framework: "Why the dashboard's server is
 * hand-written" in the architecture page of docs/ gives the measurements.
 *
 * @module
 */
import { isValidRunGroup, MAX_RUN_GROUP_LENGTH } from "../store/run_group.ts";
import { commandLine } from "../invocation.ts";
import { timingSafeEqual } from "node:crypto";
import { resolve } from "node:path";
import { errorMessage, StepflowError } from "../errors.ts";
import {
  answerApproval,
  answerRun,
  type DashboardAction,
  type DashboardActionOptions,
  runAction,
} from "./actions.ts";
import { APP_CSS, APP_JS } from "./assets.ts";
import {
  CHILD_PART,
  childRunOf,
  errorPage,
  rowPart,
  rowPartText,
  runPage,
  runsListPage,
} from "./pages.ts";
import { childTimeline } from "./child_timeline.ts";
import { agentPage, agentsPage } from "./agent_pages.ts";
import { plansPage, planSpecPage, toolPlanFile, toolPlanPage } from "./plans.ts";
import { DashboardData, type DashboardSource } from "./source.ts";
import {
  bindError,
  hostAllowed,
  isLoopback,
  LOOPBACK_HOSTS,
  malformedSegment,
  routeParam,
  sameOriginPath,
} from "./http_guard.ts";
import { liveEvents, loadRunView, planEvents } from "./live.ts";
import {
  asset,
  CONTENT_SECURITY_POLICY,
  jsonResponse,
  page,
  securityHeaders,
  text,
} from "./responses.ts";
import { foldLog, type IterationRow, newTimeline, type Timeline } from "./timeline.ts";
import {
  callDetails,
  callOfPart,
  CALLS_PART,
  callsList,
  HIDDEN_CALLS_PART,
  hiddenCalls,
} from "./tool_calls_view.ts";
import type { Html } from "./html.ts";
import { isOpenStatus } from "../run_statuses.ts";

export { CONTENT_SECURITY_POLICY, isLoopback, malformedSegment, sameOriginPath };

/** Options of {@linkcode dashboardHandler}. */
export interface DashboardHandlerOptions {
  /** What to show. */
  source: DashboardSource;
  /**
   * When set, every request must carry it: `Authorization: Bearer TOKEN`, the `stepflow_token`
   * cookie, or `?token=TOKEN` (which sets the cookie and redirects to the same URL without it).
   */
  token?: string;
  /**
   * Host names the Host header may name (default: `127.0.0.1`, `localhost`, `[::1]`). A request
   * naming another host is refused: a web page elsewhere cannot reach the dashboard through DNS
   * rebinding. Set to `"any"` when bound to a wider interface (the token protects it then).
   */
  allowedHosts?: readonly string[] | "any";
  /** How often the live view reads a running run's new log entries (default 250 ms). */
  liveIntervalMs?: number;
  /** Ends every open live stream (so a server can shut down while pages follow runs). */
  closing?: AbortSignal;
  /**
   * Allows the actions (cancel, resume, redrive a run; approve or deny a waiting tool-plan step)
   * as POST requests; absent = read-only
   * (every POST is 405).
   */
  actions?: DashboardActionOptions;
}

const TOKEN_COOKIE = "stepflow_token";

/**
 * The request handler of the dashboard (used by {@linkcode serveDashboard}; usable with any
 * `Deno.serve`).
 *
 * @example
 * ```ts ignore
 * import { dashboardHandler, discoverStores } from "jsr:@stepflow/core/cli";
 * const cwd = Deno.cwd();
 * const handler = dashboardHandler({ source: { cwd, stores: await discoverStores(cwd) } });
 * Deno.serve({ hostname: "127.0.0.1", port: 8420 }, handler);
 * ```
 */
export function dashboardHandler(
  options: DashboardHandlerOptions,
): (request: Request) => Promise<Response> {
  const data = new DashboardData(options.source);
  const hosts = options.allowedHosts ?? LOOPBACK_HOSTS;
  // The per-server secret every action must echo: a page elsewhere cannot read it (same-origin
  // policy), so it cannot forge an action even with the user's token cookie.
  const csrf = options.actions ? randomHex(24) : undefined;
  // Read every store once now, so the first page does not pay for parsing every checkpoint.
  data.warm().catch(() => {/* the page that needs it reports the problem */});
  return async (request) => {
    try {
      const url = URL.canParse(request.url) ? new URL(request.url) : undefined;
      if (!url) {
        return text(
          400,
          "Bad request: the Host header or the request line is not a valid URL (e.g. an IPv6 address without its closing bracket).",
        );
      }
      const malformed = malformedSegment(url.pathname);
      if (malformed !== undefined) {
        return text(
          400,
          `Bad request: the path segment "${malformed}" is not valid percent-encoded UTF-8 (a "%" must be followed by two hex digits, and the bytes must form UTF-8).`,
        );
      }
      if (hosts !== "any" && !hostAllowed(request.headers.get("host") ?? url.host, hosts)) {
        return text(
          403,
          "Forbidden: unexpected Host header (the dashboard answers loopback names only).",
        );
      }
      if (options.token !== undefined) {
        const denied = checkToken(request, url, options.token);
        if (denied) return denied;
      }
      if (request.method === "POST" && options.actions && csrf) {
        return await action(request, url, data, csrf, options.actions);
      }
      if (request.method !== "GET" && request.method !== "HEAD") {
        return text(
          405,
          options.actions
            ? "Only GET, HEAD and POST (actions) are served."
            : "The dashboard is read-only: only GET requests are served (start it with --allow-actions for cancel, resume, redrive and tool-plan approvals).",
          { allow: options.actions ? "GET, HEAD, POST" : "GET, HEAD" },
        );
      }
      return await route(url, data, options.liveIntervalMs ?? 250, options.closing, csrf);
    } catch (error) {
      return page(500, errorPage("Error", errorMessage(error)));
    }
  };
}

/**
 * An action: POST /runs/ID/cancel|resume|rerun|redrive or /plans/tool/NAME/approvals/STEP/REQUEST/
 * approve|deny, with the secret and a same-origin Origin.
 */
async function action(
  request: Request,
  url: URL,
  data: DashboardData,
  csrf: string,
  options: DashboardActionOptions,
): Promise<Response> {
  const origin = request.headers.get("origin");
  const host = request.headers.get("host") ?? url.host;
  if (origin !== null && origin !== `http://${host}`) {
    return text(403, `Forbidden: an action from another origin (${origin}).`);
  }
  if (!same(request.headers.get("x-stepflow-csrf") ?? "", csrf)) {
    return text(
      403,
      "Forbidden: an action needs this server's secret (x-stepflow-csrf), which the run page sends; reload the page (the secret changes when the dashboard restarts).",
    );
  }
  const approval = url.pathname.match(DASHBOARD_ROUTES.approvalAction.pattern);
  const match = url.pathname.match(DASHBOARD_ROUTES.runAction.pattern);
  const decode = routeParam;
  let outcome;
  if (approval) {
    const [plan, stepId, requestId] = [approval[1], approval[2], approval[3]].map(decode);
    if (plan === undefined || stepId === undefined || requestId === undefined) {
      return text(400, "Malformed percent-encoding in the action's path.");
    }
    outcome = await answerApproval(
      { cwd: data.source.cwd, toolPlans: toolPlansDir(data) },
      plan,
      stepId,
      requestId,
      approval[4] === "approve",
    );
  } else if (match && decode(match[1]) !== undefined && match[2] === "answer") {
    const body = await answerBody(request);
    if (body instanceof Response) return body;
    outcome = await answerRun(data, decode(match[1])!, body, options);
  } else if (match && decode(match[1]) !== undefined && match[2] === "rerun") {
    // The confirmation: the unfinished calls the page showed (see unfinished_call.ts).
    const body = await answerBody(request, "confirmation");
    if (body instanceof Response) return body;
    outcome = await runAction(data, "rerun", decode(match[1])!, options, body);
  } else if (match && decode(match[1]) !== undefined) {
    outcome = await runAction(data, match[2] as DashboardAction, decode(match[1])!, options);
  } else {
    return text(
      404,
      "No such action: POST /runs/ID/cancel, /resume, /rerun, /redrive or /answer, or /plans/tool/NAME/approvals/STEP/REQUEST/approve or /deny.",
    );
  }
  return new Response(JSON.stringify(outcome), {
    status: outcome.status,
    headers: { ...securityHeaders(), "content-type": "application/json; charset=utf-8" },
  });
}

/** A route of the dashboard that takes parameters from its path. */
export interface DashboardRoute {
  /** The method it answers. */
  method: "GET" | "POST";
  /** What the path must match; its `([^/]+)` groups are the parameters. */
  pattern: RegExp;
  /** Every form of the path, a parameter written `{name}` (tests and docs enumerate them). */
  forms: readonly string[];
}

/**
 * Every route with a parameter, by name: the one place the dashboard's paths are matched. A
 * parameter is one path segment (`[^/]+`), percent-decoded by {@linkcode routeParam}; the handler
 * refuses a path whose segments are not valid percent-encoded UTF-8 (400) before any route sees it.
 */
export const DASHBOARD_ROUTES = {
  toolPlanEvents: {
    method: "GET",
    pattern: /^\/plans\/tool\/([^/]+)\/events$/,
    forms: ["/plans/tool/{plan}/events"],
  },
  plan: {
    method: "GET",
    pattern: /^\/plans\/(spec|tool)\/([^/]+)$/,
    forms: ["/plans/spec/{plan}", "/plans/tool/{plan}"],
  },
  agent: { method: "GET", pattern: /^\/agents\/([^/]+)$/, forms: ["/agents/{agent}"] },
  run: {
    method: "GET",
    pattern: /^\/runs\/([^/]+)(?:(\/events)|\/rows\/(\d{1,9})\/([a-z]+\d*)(\/full)?)?$/,
    forms: [
      "/runs/{run}",
      "/runs/{run}/events",
      "/runs/{run}/rows/0/prompt",
      "/runs/{run}/rows/0/prompt/full",
      "/runs/{run}/rows/0/child",
      "/runs/{run}/rows/0/call0",
      "/runs/{run}/rows/0/calls",
      "/runs/{run}/rows/0/morecalls",
    ],
  },
  approvalAction: {
    method: "POST",
    pattern: /^\/plans\/tool\/([^/]+)\/approvals\/([^/]+)\/([^/]+)\/(approve|deny)$/,
    forms: [
      "/plans/tool/{plan}/approvals/{step}/{request}/approve",
      "/plans/tool/{plan}/approvals/{step}/{request}/deny",
    ],
  },
  runAction: {
    method: "POST",
    pattern: /^\/runs\/([^/]+)\/(cancel|resume|rerun|redrive|answer)$/,
    forms: [
      "/runs/{run}/cancel",
      "/runs/{run}/resume",
      "/runs/{run}/rerun",
      "/runs/{run}/redrive",
      "/runs/{run}/answer",
    ],
  },
} as const satisfies Record<string, DashboardRoute>;

async function route(
  url: URL,
  data: DashboardData,
  liveIntervalMs: number,
  closing?: AbortSignal,
  csrf?: string,
): Promise<Response> {
  const path = url.pathname;
  if (path === "/assets/app.css") return asset(APP_CSS, "text/css; charset=utf-8");
  if (path === "/assets/app.js") return asset(APP_JS, "text/javascript; charset=utf-8");
  if (path === "/favicon.ico") {
    return new Response(null, { status: 204, headers: securityHeaders() });
  }
  if (path === "/" || path === "/api/runs") {
    const group = url.searchParams.get("group") || undefined;
    // A group no run can carry matches nothing; say why rather than show an empty list.
    if (group !== undefined && !isValidRunGroup(group)) {
      return text(
        400,
        `Invalid group: a run group is 1-${MAX_RUN_GROUP_LENGTH} letters, digits, "_", "-", "." or ":". Copy it from the runs list or the eval's report.`,
      );
    }
    const query = {
      agent: url.searchParams.get("agent") || undefined,
      group,
      status: url.searchParams.get("status") || undefined,
      page: intParam(url, "page"),
      size: intParam(url, "size"),
    };
    const result = await data.runPage(query);
    if (path === "/api/runs") return jsonResponse(result);
    // The command to start a run, as it works in the project's folder.
    return page(
      200,
      runsListPage(result, query, commandLine({ action: "list" }, { cwd: data.source.cwd })),
    );
  }
  if (path === "/agents") return page(200, agentsPage(await data.agentOverview()));
  const folders = { cwd: data.source.cwd, toolPlans: toolPlansDir(data) };
  if (path === "/plans") return page(200, await plansPage(folders));
  const watched = path.match(DASHBOARD_ROUTES.toolPlanEvents.pattern);
  if (watched) {
    const file = await toolPlanFile(folders, routeParam(watched[1])!);
    if (!file) return text(404, "No such tool plan.");
    return planEvents(file, url.searchParams.get("since") ?? "", liveIntervalMs, closing);
  }
  const plan = path.match(DASHBOARD_ROUTES.plan.pattern);
  if (plan) {
    const name = routeParam(plan[2])!;
    const shown = plan[1] === "spec"
      ? await planSpecPage(folders, name)
      : await toolPlanPage(folders, name, csrf);
    return shown === undefined
      ? page(404, errorPage("No such plan", `No plan "${name}" in ${folders.cwd}.`))
      : page(200, shown);
  }
  let match = path.match(DASHBOARD_ROUTES.agent.pattern);
  if (match) {
    const name = routeParam(match[1])!;
    if (!/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(name)) {
      return page(404, errorPage("No such agent", `Agent names are letters, digits, "_" and "-".`));
    }
    const { definition, error } = await data.agent(name);
    return page(definition ? 200 : 404, agentPage(name, definition, error));
  }
  match = path.match(DASHBOARD_ROUTES.run.pattern);
  if (match) {
    const runId = routeParam(match[1])!;
    const store = await data.storeOf(runId);
    if (!store) {
      return page(
        404,
        errorPage("No such run", `No store shown by this dashboard holds a run "${runId}".`),
      );
    }
    if (match[2]) {
      return liveEvents(data, runId, intParam(url, "from") ?? 0, liveIntervalMs, closing, csrf);
    }
    if (match[3] !== undefined) {
      const timeline = newTimeline();
      foldLog(timeline, await store.readLog(runId));
      const row = timeline.rows[Number(match[3])];
      const child = row?.kind === "iteration" ? childRunOf(row) : undefined;
      if (match[4] === CHILD_PART && child !== undefined && !match[5]) {
        // A child is recorded as a run of its own agent (its own store); older ones beside it.
        const parentAgent = (await data.summaryOf(runId).catch(() => undefined))?.agent;
        const stepId = row.kind === "iteration" ? row.stepId : "";
        const childStore = await data.childStoreOf(child, parentAgent, stepId) ?? store;
        return page(200, await childTimeline(childStore, child));
      }
      const calls = row?.kind === "iteration" && !match[5]
        ? await toolCallPart(data, runId, row, match[4], timeline)
        : undefined;
      if (calls) return page(200, calls);
      const part = rowPartText(row, match[4]);
      if (!row || !part) return text(404, "This run has no such row part.");
      if (match[5]) {
        return text(200, part.text, { "content-security-policy": "sandbox; default-src 'none'" });
      }
      return page(200, rowPart(runId, row, match[4], part));
    }
    const view = await loadRunView(data, runId, { waiting: true });
    if (csrf) view.actions = { csrf };
    return page(200, runPage(view));
  }
  return page(404, errorPage("Not found", `Nothing at ${path}.`));
}

/**
 * A row's tool-call part — `callN` (one call opened), `calls` (the row's calls, first and last
 * ones) or `morecalls` (the calls between them) — or undefined when the row has no such part.
 */
async function toolCallPart(
  data: DashboardData,
  runId: string,
  row: IterationRow,
  name: string,
  timeline: Timeline,
): Promise<Html | undefined> {
  const call = callOfPart(row, name);
  if (!call && name !== CALLS_PART && name !== HIDDEN_CALLS_PART) return undefined;
  // An unfinished call is running only while a process drives the run.
  const summary = row.calls?.open.size && !timeline.runEnd
    ? await data.summaryOf(runId)
    : undefined;
  const live = isOpenStatus(summary?.status) && summary?.live !== false;
  if (call) return callDetails(call, live);
  return name === CALLS_PART ? callsList(runId, row, live) : hiddenCalls(runId, row, live);
}

/** The largest answer body read (an answer is a form's worth of JSON). */
const MAX_ANSWER_BYTES = 1_000_000;

/** The JSON body of POST /runs/ID/answer, or the response refusing it. */
async function answerBody(request: Request, what = "answer"): Promise<unknown | Response> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_ANSWER_BYTES) return text(413, `The ${what} is at most 1 MB of JSON.`);
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.length > MAX_ANSWER_BYTES) return text(413, `The ${what} is at most 1 MB of JSON.`);
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    return text(400, `The ${what} is not JSON: ${errorMessage(error)}`);
  }
}

function toolPlansDir(data: DashboardData): string {
  return resolve(data.source.cwd, data.source.toolPlans ?? "plans");
}

/** Checks the token; returns the response to send instead when it is missing or wrong. */
function checkToken(request: Request, url: URL, token: string): Response | undefined {
  const inQuery = url.searchParams.get("token");
  if (inQuery !== null) {
    if (!same(inQuery, token)) return text(401, "Wrong token.");
    url.searchParams.delete("token");
    return new Response(null, {
      status: 303,
      headers: {
        ...securityHeaders(),
        location: sameOriginPath(url),
        "set-cookie": `${TOKEN_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict`,
      },
    });
  }
  const auth = request.headers.get("authorization");
  if (auth?.startsWith("Bearer ") && same(auth.slice(7), token)) return undefined;
  const cookie = (request.headers.get("cookie") ?? "").split(/;\s*/).find((c) =>
    c.startsWith(`${TOKEN_COOKIE}=`)
  );
  if (cookie && same(cookie.slice(TOKEN_COOKIE.length + 1), token)) return undefined;
  return text(
    401,
    "This dashboard needs its token: open the URL with ?token=… that `stepflow ui` printed.",
  );
}

function randomHex(bytes: number): string {
  return [...crypto.getRandomValues(new Uint8Array(bytes))]
    .map((b) => b.toString(16).padStart(2, "0")).join("");
}

function same(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function intParam(url: URL, name: string): number | undefined {
  const value = url.searchParams.get(name);
  if (value === null || !/^\d{1,9}$/.test(value)) return undefined;
  return Number(value);
}

/** Options of {@linkcode serveDashboard}. */
export interface ServeDashboardOptions extends DashboardHandlerOptions {
  /** Interface to bind (default `127.0.0.1`). */
  hostname?: string;
  /** Port (default 8420; 0 picks a free one). */
  port?: number;
  /** Stops the server. */
  signal?: AbortSignal;
}

/** A running dashboard. */
export interface RunningDashboard {
  /** The base URL (with the token when one is required). */
  url: string;
  /** The port bound. */
  port: number;
  /** The server. */
  server: Deno.HttpServer<Deno.NetAddr>;
  /** Ends the live streams and stops the server (what the `signal` option does). */
  close(): Promise<void>;
}

/**
 * Starts the dashboard. Refuses (`UI_TOKEN_REQUIRED`) to bind a non-loopback interface without a
 * token.
 *
 * @example
 * ```ts ignore
 * import { discoverStores, serveDashboard } from "jsr:@stepflow/core/cli";
 * const cwd = Deno.cwd();
 * const ui = serveDashboard({ source: { cwd, stores: await discoverStores(cwd) }, port: 0 });
 * console.log(ui.url); // http://127.0.0.1:PORT/
 * await ui.server.shutdown();
 * ```
 */
export function serveDashboard(options: ServeDashboardOptions): RunningDashboard {
  const hostname = options.hostname ?? "127.0.0.1";
  const loopback = isLoopback(hostname);
  if (!loopback && !options.token) {
    throw new StepflowError(
      "UI_TOKEN_REQUIRED",
      `The dashboard refuses to listen on ${hostname} without a token: anyone who can reach that interface could read every prompt and answer. Start it through \`stepflow ui --host ${hostname}\` (which generates a token) or pass one.`,
      { details: { hostname } },
    );
  }
  const closing = new AbortController();
  options.signal?.addEventListener("abort", () => closing.abort(), { once: true });
  const port = options.port ?? 8420;
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve(
      { hostname, port, signal: closing.signal, onListen: () => {} },
      dashboardHandler({
        ...options,
        closing: closing.signal,
        allowedHosts: options.allowedHosts ?? (loopback ? undefined : "any"),
      }),
    );
  } catch (error) {
    throw bindError(hostname, port, error);
  }
  const bound = server.addr.port;
  const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
  const url = `http://${shown === "0.0.0.0" ? "127.0.0.1" : shown}:${bound}/${
    options.token ? `?token=${options.token}` : ""
  }`;
  const close = async () => {
    closing.abort();
    await server.finished;
  };
  return { url, port: bound, server, close };
}
