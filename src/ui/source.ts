/**
 * Where the dashboard reads from: the run stores (one per agent run directory, or the stores a
 * caller passes) and the agents' folders. Only the {@linkcode RunStore} interface is used, so any
 * store — the file store, the memory store, a database store — can be shown.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { StepflowError } from "../errors.ts";
import { listAgents, loadAgentDefinition } from "../definition/load.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { FileRunStore } from "../store/file.ts";
import { DEFAULT_RUN_DIRECTORY, runStoreFor } from "../store/location.ts";
import { compareDesc } from "../store/summary.ts";
import type { RunStore, RunSummary } from "../store/types.ts";

/** A run store and a name for it (shown when runs of several stores are listed). */
export interface NamedStore {
  /** Shown in messages (a directory, a URL without credentials). */
  name: string;
  /** The store. */
  store: RunStore;
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
  /** Only runs with this status. */
  status?: string;
  /** 1-based page. */
  page?: number;
  /** Page size (default 50, at most 500). */
  size?: number;
}

/**
 * The run stores of a project: with `store` a directory (a run directory, or a folder of run
 * directories such as `tmp/logs/agents`), else every agent's run directory (agent.json
 * `logging.directory`) plus the folders under `tmp/logs/agents`. A URL (`postgres://…`) is refused
 * with `UI_STORE_UNSUPPORTED` until a store for it is available.
 */
export async function discoverStores(cwd: string, store?: string): Promise<NamedStore[]> {
  if (store !== undefined && /^[a-z][a-z0-9+.-]*:\/\//i.test(store)) {
    throw new StepflowError(
      "UI_STORE_UNSUPPORTED",
      `--store ${
        store.replace(/\/\/[^@/]*@/, "//…@")
      }: this stepflow has no run store for that URL scheme. Pass a run directory (e.g. --store tmp/logs/agents/NAME) or leave --store out to show every agent's runs.`,
      { details: { store } },
    );
  }
  const dirs = new Set<string>();
  if (store !== undefined) {
    const root = resolve(cwd, store);
    const info = await Deno.stat(root).catch(() => undefined);
    if (!info?.isDirectory) {
      throw new StepflowError(
        "UI_STORE_NOT_FOUND",
        `--store ${store}: no directory ${root}. Pass the run directory of an agent (agent.json logging.directory, default tmp/logs/agents/NAME) or a folder of them.`,
        { details: { store: root } },
      );
    }
    await addRunDirs(root, dirs);
  } else {
    for (const agent of await listAgents({ cwd })) {
      try {
        dirs.add(runStoreFor(await loadAgentDefinition(agent.name, { cwd }), { cwd }).dir);
      } catch {
        // A broken agent still has runs under the default directory, scanned below.
      }
    }
    await addRunDirs(resolve(cwd, DEFAULT_RUN_DIRECTORY), dirs);
  }
  return [...dirs].sort().map((dir) => ({
    name: dir,
    store: new FileRunStore(dir, { onWarning: () => {}, listSettledFromCache: true }),
  }));
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

  /** Every run of every store, newest first. */
  async allRuns(): Promise<ListedRun[]> {
    const lists = await Promise.all(this.source.stores.map((s) => s.store.list()));
    const runs: ListedRun[] = [];
    lists.forEach((list, storeIndex) => {
      for (const run of list) {
        runs.push({ ...run, storeIndex });
        this.#where.set(run.runId, storeIndex);
      }
    });
    if (lists.length > 1) {
      runs.sort((a, b) => compareDesc(a.startedAt, b.startedAt) || compareDesc(a.runId, b.runId));
    }
    return runs;
  }

  /** One page of the runs list. */
  async runPage(query: RunQuery): Promise<RunPage> {
    const all = await this.allRuns();
    const agents = [...new Set(all.map((r) => r.agent))].sort();
    const matching = all.filter((r) =>
      (!query.agent || r.agent === query.agent) && (!query.status || r.status === query.status)
    );
    const size = Math.min(500, Math.max(1, query.size ?? 50));
    const pages = Math.max(1, Math.ceil(matching.length / size));
    const page = Math.min(pages, Math.max(1, query.page ?? 1));
    return {
      runs: matching.slice((page - 1) * size, page * size),
      total: matching.length,
      all: all.length,
      agents,
      page,
      size,
    };
  }

  /** The store holding a run, or undefined when no store knows it. */
  async storeOf(runId: string): Promise<RunStore | undefined> {
    let index = this.#where.get(runId);
    if (index === undefined) {
      await this.allRuns();
      index = this.#where.get(runId);
    }
    return index === undefined ? undefined : this.source.stores[index].store;
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

  /** The agents in `<cwd>/.agent/`. */
  agentNames(): Promise<string[]> {
    return listAgents({ cwd: this.source.cwd }).then((list) => list.map((a) => a.name));
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
