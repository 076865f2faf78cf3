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
import { runStoreFor } from "../store/location.ts";
import type { RunPageQuery, RunPageResult } from "../store/postgres.ts";
import { shownStatus } from "../store/run_status.ts";
import { compareDesc } from "../store/summary.ts";
import type { RunStore, RunSummary } from "../store/types.ts";
import { type NamedStore, refreshStores } from "./store_discovery.ts";

export { discoverStores, type DiscoverStoresOptions, type NamedStore } from "./store_discovery.ts";

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
  /**
   * The run stores to list. A list {@linkcode discoverStores} returned grows while it is shown:
   * stores that appear later (an agent added, the first run of an agent that never ran) are
   * appended when a page is read.
   */
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
    await refreshStores(this.source.stores);
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
    await refreshStores(this.source.stores);
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
    const seek = async (storeIndexes: Iterable<number>) => {
      for (const storeIndex of storeIndexes) {
        const { store } = this.source.stores[storeIndex];
        try {
          const found = isPagedStore(store)
            ? await store.summary(runId)
            : (await store.list()).find((r) => r.runId === runId);
          if (found) return this.#listed(found, storeIndex);
        } catch (error) {
          // An id no store could hold is simply not there.
          if (!(error instanceof StepflowError && error.code === "RUN_ID_INVALID")) {
            failure ??= error;
          }
        }
      }
      return undefined;
    };
    const shown = this.source.stores.length;
    const found = await seek(new Set(order)) ??
      // A run of a store that appeared since (the first run of a new agent).
      (await refreshStores(this.source.stores) > 0
        ? await seek([...this.source.stores.keys()].slice(shown))
        : undefined);
    if (found) return found;
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
