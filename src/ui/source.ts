/**
 * Where the dashboard reads from: the run stores (one per agent run directory, the PostgreSQL
 * stores the agents record into, or the stores a caller passes) and the agents' folders. Only the
 * {@linkcode RunStore} interface is needed, so any store can be shown; a store that can page its
 * own listing ({@linkcode PagedRunStore}, the PostgreSQL store) is filtered and paged by its server.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { errorMessage, StepflowError } from "../errors.ts";
import { AgentDefinitionError } from "../definition/errors.ts";
import { listAgents, loadAgentDefinition } from "../definition/load.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { FileRunStore } from "../store/file.ts";
import { DEFAULT_RUN_DIRECTORY, runStoreFor } from "../store/location.ts";
import { isPostgresUrl, redactUrl } from "../store/pg_connection.ts";
import { PostgresRunStore, type RunPageQuery, type RunPageResult } from "../store/postgres.ts";
import { shownStatus } from "../store/run_status.ts";
import { resolveStoreSetting, STORE_ENV } from "../store/select.ts";
import { compareDesc } from "../store/summary.ts";
import type { RunStore, RunSummary } from "../store/types.ts";

/** A run store and a name for it (shown when runs of several stores are listed). */
export interface NamedStore {
  /** Shown in messages (a directory, a URL without credentials). */
  name: string;
  /** The store. */
  store: RunStore;
  /**
   * The `STEPFLOW_STORE` value under which `run-agent` records into this store (a PostgreSQL
   * URL): resumed and redriven runs are started with it. Absent for file stores (run-agent finds
   * those through agent.json `logging.directory`).
   */
  runAgentStore?: string;
}

/**
 * A store that filters, counts and pages its listing itself (the PostgreSQL store): the runs list
 * then costs one query per page however many runs the store holds.
 */
export interface PagedRunStore extends RunStore {
  /** One page of the listing, newest first, with counts and agent names. */
  listPage(query: RunPageQuery): Promise<RunPageResult>;
  /** One run's listing line, or undefined when the store has no such run. */
  summary(runId: string): Promise<RunSummary | undefined>;
}

/** Whether a store pages its own listing. */
export function isPagedStore(store: RunStore): store is PagedRunStore {
  const s = store as Partial<PagedRunStore>;
  return typeof s.listPage === "function" && typeof s.summary === "function";
}

/** What the dashboard shows. */
export interface DashboardSource {
  /** The run stores to list. */
  stores: NamedStore[];
  /** The user's directory: agents are looked up in `<cwd>/.agent/`, PlanSpec plans in `planspec/`. */
  cwd: string;
  /** Folder of tool plans (`*.json`), relative to `cwd` (default `plans`). */
  toolPlans?: string;
}

/** A run summary and the store holding it. */
export interface ListedRun extends RunSummary {
  /** Index into {@linkcode DashboardSource.stores}. */
  storeIndex: number;
}

/** A page of the runs list. */
export interface RunPage {
  /** The runs on this page, newest first. */
  runs: ListedRun[];
  /** Runs matching the filter. */
  total: number;
  /** Runs in every store. */
  all: number;
  /** Agent names seen (for the filter). */
  agents: string[];
  /** The page (1-based) and the page size. */
  page: number;
  /** Page size. */
  size: number;
}

/** Filter and page of the runs list. */
export interface RunQuery {
  /** Only runs of this agent. */
  agent?: string;
  /** Only runs started in this group (`RunOptions.group`; `deno task eval` gives one per eval). */
  group?: string;
  /** Only runs shown with this status ({@linkcode shownStatus}: `interrupted`, `queued`…). */
  status?: string;
  /** 1-based page. */
  page?: number;
  /** Page size (default 50, at most 500). */
  size?: number;
}

/** One agent on the agents index. */
export interface AgentOverview {
  /** Folder name. */
  name: string;
  /** agent.json `displayName`, when readable. */
  displayName?: string;
  /** agent.json `description`, when readable (also for an agent that does not load). */
  description?: string;
  /** Why the agent does not load, one line per problem (empty when it loads). */
  problems: string[];
  /** Load-time warnings of an agent that loads. */
  warnings: number;
  /** Its newest run in any store. */
  lastRun?: ListedRun;
}

/** Options of {@linkcode discoverStores}. */
export interface DiscoverStoresOptions {
  /** Environment: `STEPFLOW_STORE` names a PostgreSQL store to show too (default: none). */
  env?: Record<string, string | undefined>;
}

/**
 * The run stores of a project. With `store` a PostgreSQL URL (`postgres://…`), that database's
 * runs (every agent); with `store` a directory (a run directory, or a folder of run directories
 * such as `tmp/logs/agents`), those. Without `store`: every agent's run directory (agent.json
 * `logging.directory`), the folders under `tmp/logs/agents`, and every PostgreSQL store the agents
 * record into by the run store selection of `run-agent` (`STEPFLOW_STORE` in `env`, else agent.json
 * `logging.store`). Nothing connects until a page is read.
 *
 * @throws {StepflowError} `UI_STORE_UNSUPPORTED` for a URL of another scheme, `UI_STORE_NOT_FOUND`
 * for a directory that does not exist
 */
export async function discoverStores(
  cwd: string,
  store?: string,
  options: DiscoverStoresOptions = {},
): Promise<NamedStore[]> {
  if (store !== undefined && isPostgresUrl(store)) return [postgresStore(store)];
  if (store !== undefined && /^[a-z][a-z0-9+.-]*:\/\//i.test(store)) {
    throw new StepflowError(
      "UI_STORE_UNSUPPORTED",
      `--store ${
        redactUrl(store).replace(/\/\/[^@/]*@/, "//…@")
      }: this stepflow has no run store for that URL scheme (a store URL is postgres://user@host:5432/database). Pass a PostgreSQL URL, a run directory (e.g. --store tmp/logs/agents/NAME), or leave --store out to show every agent's runs.`,
      { details: { store: redactUrl(store) } },
    );
  }
  const dirs = new Set<string>();
  const urls = new Set<string>();
  if (store !== undefined) {
    const root = resolve(cwd, store);
    const info = await Deno.stat(root).catch(() => undefined);
    if (!info?.isDirectory) {
      throw new StepflowError(
        "UI_STORE_NOT_FOUND",
        `--store ${store}: no directory ${root}. Pass the run directory of an agent (agent.json logging.directory, default tmp/logs/agents/NAME), a folder of them, or a postgres:// URL.`,
        { details: { store: root } },
      );
    }
    await addRunDirs(root, dirs);
  } else {
    const env = options.env ?? {};
    const fromEnv = env[STORE_ENV];
    if (fromEnv !== undefined && isPostgresUrl(fromEnv)) urls.add(fromEnv);
    for (const agent of await listAgents({ cwd })) {
      try {
        const definition = await loadAgentDefinition(agent.name, { cwd });
        dirs.add(runStoreFor(definition, { cwd }).dir);
        const setting = resolveStoreSetting(definition, { env });
        if (setting.value !== "file") urls.add(setting.value);
      } catch {
        // A broken agent still has runs under the default directory, scanned below.
      }
    }
    await addRunDirs(resolve(cwd, DEFAULT_RUN_DIRECTORY), dirs);
  }
  return [
    ...[...dirs].sort().map((dir) => ({
      name: dir,
      store: new FileRunStore(dir, { onWarning: () => {}, listSettledFromCache: true }),
    })),
    ...[...urls].sort().map(postgresStore),
  ];
}

/** A PostgreSQL store over every agent's runs (the dashboard takes no leases, so no warnings). */
function postgresStore(url: string): NamedStore {
  return {
    name: redactUrl(url),
    store: new PostgresRunStore(url, { onWarning: () => {} }),
    runAgentStore: url,
  };
}

/** Adds `root` when it holds runs, and each sub-folder that does. */
async function addRunDirs(root: string, out: Set<string>): Promise<void> {
  let holdsRuns = false;
  try {
    for await (const entry of Deno.readDir(root)) {
      if (entry.isFile && /\.(jsonl|checkpoint\.json)$/.test(entry.name)) holdsRuns = true;
      else if (entry.isDirectory) {
        const sub = join(root, entry.name);
        for await (const inner of Deno.readDir(sub)) {
          if (inner.isFile && /\.(jsonl|checkpoint\.json)$/.test(inner.name)) {
            out.add(sub);
            break;
          }
        }
      }
    }
  } catch {
    return;
  }
  if (holdsRuns) out.add(root);
}

/**
 * Reads runs and agents for the pages. Listings come from the stores' `list()` (checkpoints, which
 * the file store caches by mtime), so a page of 10 000 runs parses no run log.
 */
export class DashboardData {
  /** What is shown. */
  readonly source: DashboardSource;
  readonly #where = new Map<string, number>();
  readonly #agents = new Map<
    string,
    { key: string; definition?: AgentDefinition; error?: unknown }
  >();

  /** Reads `source`. */
  constructor(source: DashboardSource) {
    this.source = source;
  }

  /** Every run of every store, newest first (reads whole listings: pages use `runPage`). */
  async allRuns(): Promise<ListedRun[]> {
    return this.#merge(await Promise.all(this.source.stores.map((s) => s.store.list())));
  }

  /** Reads the listings of the stores that do not page themselves (their caches warm up). */
  async warm(): Promise<void> {
    await Promise.all(
      this.source.stores.map((s) => isPagedStore(s.store) ? undefined : s.store.list()),
    );
  }

  /**
   * One page of the runs list. A {@linkcode PagedRunStore} filters and pages in its server (alone,
   * it reads just the page; beside other stores, the first `page × size` matching runs, merged);
   * other stores are listed and filtered here.
   */
  async runPage(query: RunQuery): Promise<RunPage> {
    const size = Math.min(500, Math.max(1, query.size ?? 50));
    const wanted = Math.max(1, query.page ?? 1);
    const filter = (r: RunSummary) =>
      (!query.agent || r.agent === query.agent) &&
      (!query.group || r.group === query.group) &&
      (!query.status || shownStatus(r) === query.status);
    const only = this.source.stores.length === 1 ? this.source.stores[0].store : undefined;
    if (only && isPagedStore(only)) {
      const ask = (page: number) =>
        only.listPage({ ...this.#filterOf(query), offset: (page - 1) * size, limit: size });
      let result = await ask(wanted);
      const pages = Math.max(1, Math.ceil(result.total / size));
      const page = Math.min(pages, wanted);
      if (page !== wanted) result = await ask(page);
      return {
        runs: result.runs.map((run) => this.#listed(run, 0)),
        total: result.total,
        all: result.all,
        agents: result.agents,
        page,
        size,
      };
    }
    const parts = await Promise.all(this.source.stores.map(async ({ store }) => {
      if (isPagedStore(store)) {
        return await store.listPage({ ...this.#filterOf(query), limit: wanted * size });
      }
      const all = await store.list();
      const matching = all.filter(filter);
      return {
        runs: matching.slice(0, wanted * size),
        total: matching.length,
        all: all.length,
        agents: [...new Set(all.map((r) => r.agent))],
      };
    }));
    const total = parts.reduce((n, p) => n + p.total, 0);
    const pages = Math.max(1, Math.ceil(total / size));
    const page = Math.min(pages, wanted);
    const merged = this.#merge(parts.map((p) => p.runs));
    return {
      runs: merged.slice((page - 1) * size, page * size),
      total,
      all: parts.reduce((n, p) => n + p.all, 0),
      agents: [...new Set(parts.flatMap((p) => p.agents))].sort(),
      page,
      size,
    };
  }

  /** A run's listing line and the store holding it, or undefined when no store knows it. */
  async summaryOf(runId: string): Promise<ListedRun | undefined> {
    const known = this.#where.get(runId);
    const order = this.source.stores.map((_, i) => i);
    if (known !== undefined) order.unshift(known);
    // A store that cannot be read (a database that went down) does not hide the runs of the
    // others; when no store has the run, its error is the answer rather than "no such run".
    let failure: unknown;
    for (const storeIndex of new Set(order)) {
      const { store } = this.source.stores[storeIndex];
      try {
        const found = isPagedStore(store)
          ? await store.summary(runId)
          : (await store.list()).find((r) => r.runId === runId);
        if (found) return this.#listed(found, storeIndex);
      } catch (error) {
        // An id no store could hold is simply not there.
        if (!(error instanceof StepflowError && error.code === "RUN_ID_INVALID")) failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
    return undefined;
  }

  /** The store holding a run, or undefined when no store knows it. */
  async storeOf(runId: string): Promise<RunStore | undefined> {
    const found = await this.summaryOf(runId);
    return found === undefined ? undefined : this.source.stores[found.storeIndex].store;
  }

  /**
   * The store of the child run `childId` that agent step `stepId` of a run of `parentAgent`
   * started: the store that lists it, else the folder of the step's child agent (where the runner
   * records it, also while its files cannot be read); undefined when neither is shown here.
   */
  async childStoreOf(
    childId: string,
    parentAgent: string | undefined,
    stepId: string,
  ): Promise<RunStore | undefined> {
    const listed = await this.storeOf(childId).catch(() => undefined);
    if (listed || parentAgent === undefined) return listed;
    const steps = (await this.agent(parentAgent)).definition?.steps;
    const child = steps && Object.hasOwn(steps, stepId) ? steps[stepId].child : undefined;
    if (!child) return undefined;
    const dir = runStoreFor(child, { cwd: this.source.cwd }).dir;
    return this.source.stores.find(({ store }) =>
      store instanceof FileRunStore && store.dir === dir
    )
      ?.store;
  }

  /** The {@linkcode NamedStore} holding a run. */
  async namedStoreOf(runId: string): Promise<NamedStore | undefined> {
    const found = await this.summaryOf(runId);
    return found === undefined ? undefined : this.source.stores[found.storeIndex];
  }

  #filterOf(query: RunQuery): { agent?: string; group?: string; status?: string } {
    return {
      ...(query.agent ? { agent: query.agent } : {}),
      ...(query.group ? { group: query.group } : {}),
      ...(query.status ? { status: query.status } : {}),
    };
  }

  #listed(run: RunSummary, storeIndex: number): ListedRun {
    this.#where.set(run.runId, storeIndex);
    return { ...run, storeIndex };
  }

  /** Lists of each store (index = store index), newest first, merged newest first. */
  #merge(lists: RunSummary[][]): ListedRun[] {
    const runs: ListedRun[] = [];
    lists.forEach((list, storeIndex) => {
      for (const run of list) runs.push(this.#listed(run, storeIndex));
    });
    if (lists.length > 1) {
      runs.sort((a, b) => compareDesc(a.startedAt, b.startedAt) || compareDesc(a.runId, b.runId));
    }
    return runs;
  }

  /**
   * An agent's definition from `<cwd>/.agent/<name>`, reloaded when its files change; `error`
   * when it cannot be loaded (the page shows the problems).
   */
  async agent(name: string): Promise<{ definition?: AgentDefinition; error?: unknown }> {
    const dir = join(resolve(this.source.cwd, ".agent"), name);
    const key = await folderKey(dir);
    const cached = this.#agents.get(name);
    if (cached && cached.key === key) return cached;
    let entry: { key: string; definition?: AgentDefinition; error?: unknown };
    try {
      entry = { key, definition: await loadAgentDefinition(name, { cwd: this.source.cwd }) };
    } catch (error) {
      entry = { key, error };
    }
    this.#agents.set(name, entry);
    return entry;
  }

  /**
   * Every agent in `<cwd>/.agent/` with its description, whether it loads (and why not), and its
   * newest run: the agents index.
   */
  async agentOverview(): Promise<AgentOverview[]> {
    const agents = await listAgents({ cwd: this.source.cwd });
    return await Promise.all(agents.map(async (summary) => {
      const [loaded, runs] = await Promise.all([
        this.agent(summary.name),
        this.runPage({ agent: summary.name, size: 1 }),
      ]);
      const row: AgentOverview = {
        name: summary.name,
        problems: loaded.error === undefined
          ? []
          : loaded.error instanceof AgentDefinitionError
          ? [...loaded.error.problems]
          : [errorMessage(loaded.error)],
        warnings: loaded.definition?.warnings.length ?? 0,
      };
      if (summary.displayName !== undefined) row.displayName = summary.displayName;
      if (summary.description !== undefined) row.description = summary.description;
      if (runs.runs[0] !== undefined) row.lastRun = runs.runs[0];
      return row;
    }));
  }
}

/** Modification times of an agent's definition files (a cheap change detector). */
async function folderKey(dir: string): Promise<string> {
  const parts: string[] = [];
  for (const file of ["agent.json", "steps_registry.json"]) {
    const info = await Deno.stat(join(dir, file)).catch(() => undefined);
    parts.push(`${info?.mtime?.getTime() ?? 0}:${info?.size ?? -1}`);
  }
  return parts.join("|");
}
