/**
 * The PostgreSQL server of the store and worker tests: `STEPFLOW_TEST_PG_URL` (set by `.ci/run`),
 * else a throwaway cluster started here with `.ci/pg_cluster.sh` and stopped when the test file
 * ends. In CI (`CI=true`) a server that cannot start fails the tests; elsewhere they are skipped
 * with a loud message.
 *
 * @module
 */
import { join } from "node:path";
import { REPO } from "./helpers.ts";

/** A server to test against. */
export interface PgTestServer {
  /** `postgres://…` URL. */
  url: string;
}

async function startServer(): Promise<PgTestServer | undefined> {
  const given = Deno.env.get("STEPFLOW_TEST_PG_URL");
  if (given) return { url: given };
  const tmp = await Deno.makeTempDir({ prefix: "stepflow-pg-" });
  const dir = join(tmp, "pg");
  const out = await new Deno.Command("bash", {
    args: [join(REPO, ".ci", "pg_cluster.sh"), "start", dir],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const url = new TextDecoder().decode(out.stdout).trim();
  if (out.code !== 0 || !url.startsWith("postgres://")) {
    const why = new TextDecoder().decode(out.stderr).trim();
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    if (Deno.env.get("CI") === "true") {
      throw new Error(
        `PostgreSQL tests need a server and none could be started (CI=true, so this fails): ${why}`,
      );
    }
    console.error(
      `\n!!! SKIPPING PostgreSQL store/worker tests: no STEPFLOW_TEST_PG_URL and no local cluster could be started (${why}). Install the Debian package postgresql, or set STEPFLOW_TEST_PG_URL. !!!\n`,
    );
    return undefined;
  }
  globalThis.addEventListener("unload", () => {
    new Deno.Command("bash", {
      args: [join(REPO, ".ci", "pg_cluster.sh"), "stop", dir],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    try {
      Deno.removeSync(tmp, { recursive: true });
    } catch {
      // already gone
    }
  });
  return { url };
}

/** The server, or undefined (tests then skip; never in CI). */
export const pg: PgTestServer | undefined = await startServer();

/** A fresh schema name per test, so tests never see each other's runs. */
export function freshSchema(): string {
  return `t_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
}

/** Creates a fresh database on the server and returns its URL (for CLI tests: default schema). */
export async function freshDatabase(server: PgTestServer): Promise<string> {
  const name = freshSchema();
  const { Client } = await import("pg");
  const client = new Client({ connectionString: server.url });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A cluster of one test's own, which it may freeze (SIGSTOP) without disturbing other tests. */
export interface PrivatePgCluster extends PgTestServer {
  /** Stops every process of the server (postmaster and backends) with SIGSTOP. */
  freeze(): Promise<void>;
  /** Lets them run again (SIGCONT); safe to call when not frozen. */
  thaw(): void;
  /** Thaws, stops the cluster and deletes its files. */
  stop(): Promise<void>;
  /**
   * The same, synchronously: for an `unload` listener, which the process does not wait for (an
   * async stop there never ran, and every test file left its cluster running).
   */
  stopSync(): void;
}

/**
 * Starts a throwaway cluster for one test (even when `STEPFLOW_TEST_PG_URL` names a shared
 * server: freezing that one would stall every other test using it). Undefined when PostgreSQL is
 * not installed (the caller skips, as with {@linkcode pg}).
 */
export async function startPrivateCluster(): Promise<PrivatePgCluster | undefined> {
  const tmp = await Deno.makeTempDir({ prefix: "stepflow-pg-own-" });
  const dir = join(tmp, "pg");
  const script = join(REPO, ".ci", "pg_cluster.sh");
  const out = await new Deno.Command("bash", {
    args: [script, "start", dir],
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const url = new TextDecoder().decode(out.stdout).trim();
  if (out.code !== 0 || !url.startsWith("postgres://")) {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    return undefined;
  }
  let frozen: number[] = [];
  const children = async (parent: number): Promise<number[]> => {
    const pids: number[] = [];
    for await (const entry of Deno.readDir("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      try {
        const status = await Deno.readTextFile(`/proc/${entry.name}/status`);
        if (new RegExp(`^PPid:\\s+${parent}$`, "m").test(status)) pids.push(Number(entry.name));
      } catch {
        // ended meanwhile
      }
    }
    return pids;
  };
  const thaw = () => {
    for (const pid of frozen) {
      try {
        Deno.kill(pid, "SIGCONT");
      } catch {
        // gone
      }
    }
    frozen = [];
  };
  return {
    url,
    async freeze() {
      const postmaster = Number(
        (await Deno.readTextFile(join(dir, "data", "postmaster.pid"))).split("\n")[0],
      );
      // The postmaster first, so it forks no backend the scan of its children would miss.
      Deno.kill(postmaster, "SIGSTOP");
      frozen.push(postmaster);
      for (const pid of await children(postmaster)) {
        Deno.kill(pid, "SIGSTOP");
        frozen.push(pid);
      }
    },
    thaw,
    async stop() {
      thaw();
      await new Deno.Command("bash", {
        args: [script, "stop", dir],
        stdout: "null",
        stderr: "null",
      }).output();
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
    },
    stopSync() {
      thaw();
      new Deno.Command("bash", { args: [script, "stop", dir], stdout: "null", stderr: "null" })
        .outputSync();
      try {
        Deno.removeSync(tmp, { recursive: true });
      } catch {
        // already gone
      }
    },
  };
}
