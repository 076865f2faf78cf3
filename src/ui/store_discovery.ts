/**
 * Which run stores a project has, found again while the dashboard runs. {@linkcode discoverStores}
 * reads the project's folders once; a list it returned is kept up to date by
 * {@linkcode refreshStores}: an agent added to `.agent/` (or whose agent.json changed), or a run
 * folder that appeared under `tmp/logs/agents/` or the `--store` folder — the first run of an agent
 * that never ran — adds its store to the same list. Cheap: the list is found again only when the
 * stamp of those folders changed (a directory read and a few `stat`s), never on a run's own files.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { StepflowError } from "../errors.ts";
import { listAgents, loadAgentDefinition } from "../definition/load.ts";
import { FileRunStore } from "../store/file.ts";
import { DEFAULT_RUN_DIRECTORY, runStoreFor } from "../store/location.ts";
import { isPostgresUrl, redactUrl } from "../store/pg_connection.ts";
import { PostgresRunStore } from "../store/postgres.ts";
import { resolveStoreSetting, STORE_ENV } from "../store/select.ts";
import type { RunStore } from "../store/types.ts";

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

/** Options of {@linkcode discoverStores}. */
export interface DiscoverStoresOptions {
  /** Environment: `STEPFLOW_STORE` names a PostgreSQL store to show too (default: none). */
  env?: Record<string, string | undefined>;
}

/**
 * A stamp newer than this (ms) may hide a change made in the same clock tick: the list is found
 * again on the next look rather than trusted (as the file store trusts a directory's mtime).
 */
const SETTLED_AFTER_MS = 1_000;

/** How a list was discovered, to find it again. */
interface Discovery {
  cwd: string;
  store?: string;
  env: Record<string, string | undefined>;
  /** The folders' stamp when the list was last found (undefined: find it again next time). */
  stamp?: string;
  /** A look in progress (concurrent requests share it). */
  looking?: Promise<number>;
}

/** Lists returned by {@linkcode discoverStores} that can be found again (not a PostgreSQL URL's). */
const discoveries = new WeakMap<NamedStore[], Discovery>();

/**
 * The run stores of a project. With `store` a PostgreSQL URL (`postgres://…`), that database's
 * runs (every agent); with `store` a directory (a run directory, or a folder of run directories
 * such as `tmp/logs/agents`), those. Without `store`: every agent's run directory (agent.json
 * `logging.directory`), the folders under `tmp/logs/agents`, and every PostgreSQL store the agents
 * record into by the run store selection of `run-agent` (`STEPFLOW_STORE` in `env`, else agent.json
 * `logging.store`). Nothing connects until a page is read.
 *
 * A dashboard given this list keeps it up to date: a store that appears later (an agent added to
 * `.agent/`, the first run of an agent that never ran) is appended to it when a page is read.
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
  }
  const discovery: Discovery = { cwd, env: options.env ?? {} };
  if (store !== undefined) discovery.store = store;
  const stores: NamedStore[] = [];
  // The stamp is taken before the folders are read: a change landing while they are read makes
  // the next stamp differ, so it is never taken for part of this list.
  const stamp = await folderStamp(discovery, stores);
  stores.push(...await findStores(discovery));
  if (stamp.settled) discovery.stamp = stamp.key;
  discoveries.set(stores, discovery);
  return stores;
}

/**
 * Finds the stores of a list {@linkcode discoverStores} returned again when the project's folders
 * changed, and appends the new ones to it (existing entries, and so their indexes and caches, stay).
 * Resolves with the number appended; 0 for any other list.
 */
export function refreshStores(stores: NamedStore[]): Promise<number> {
  const discovery = discoveries.get(stores);
  if (!discovery) return Promise.resolve(0);
  discovery.looking ??= look(discovery, stores).finally(() => discovery.looking = undefined);
  return discovery.looking;
}

async function look(discovery: Discovery, stores: NamedStore[]): Promise<number> {
  const stamp = await folderStamp(discovery, stores);
  if (discovery.stamp !== undefined && stamp.key === discovery.stamp) return 0;
  const known = new Set(stores.map((s) => s.name));
  let added = 0;
  for (const found of await findStores(discovery)) {
    if (known.has(found.name)) continue;
    stores.push(found);
    added++;
  }
  discovery.stamp = stamp.settled ? stamp.key : undefined;
  return added;
}

/** The stores of a discovery, read from the folders now. */
async function findStores(discovery: Discovery): Promise<NamedStore[]> {
  const { cwd, store, env } = discovery;
  const dirs = new Set<string>();
  const urls = new Set<string>();
  if (store !== undefined) {
    await addRunDirs(resolve(cwd, store), dirs);
  } else {
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

/**
 * The stamp of what a discovery reads: the folder of run folders (`--store DIR`, else
 * `tmp/logs/agents`) and each of its sub-folders not shown yet (one holding a first run appears, or
 * gets its first file), and without `--store` the agents' folder and each agent's definition files
 * (an agent added, or its `logging.directory` changed). Runs of a store already shown do not change
 * it. `settled` is false when a part changed within {@linkcode SETTLED_AFTER_MS}.
 */
async function folderStamp(
  discovery: Discovery,
  stores: readonly NamedStore[],
): Promise<{ key: string; settled: boolean }> {
  const shown = new Set(stores.map((s) => s.name));
  const parts: string[] = [];
  let newest = 0;
  const stamp = async (path: string) => {
    const info = await Deno.stat(path).catch(() => undefined);
    const mtime = info?.mtime?.getTime() ?? 0;
    newest = Math.max(newest, mtime);
    parts.push(info ? `${path}:${info.ino ?? 0}:${mtime}:${info.size}` : `${path}:-`);
  };
  const folders = async (root: string, each: (path: string) => Promise<void>) => {
    await stamp(root);
    const names: string[] = [];
    try {
      for await (const entry of Deno.readDir(root)) {
        if (entry.isDirectory || entry.isSymlink) names.push(entry.name);
      }
    } catch {
      return;
    }
    for (const name of names.sort()) await each(join(root, name));
  };
  const runFolders = resolve(
    discovery.cwd,
    discovery.store ?? DEFAULT_RUN_DIRECTORY,
  );
  await folders(runFolders, async (dir) => {
    if (!shown.has(dir)) await stamp(dir);
  });
  if (discovery.store === undefined) {
    const agents = resolve(discovery.cwd, ".agent");
    await folders(agents, async (dir) => {
      await stamp(join(dir, "agent.json"));
      await stamp(join(dir, "steps_registry.json"));
    });
  }
  return { key: parts.join("|"), settled: Date.now() - newest > SETTLED_AFTER_MS };
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
