/**
 * The real MCP servers from npm the MCP tests talk to (`@modelcontextprotocol/server-everything`,
 * `@modelcontextprotocol/server-filesystem`), and process checks.
 *
 * The servers are looked up in `$STEPFLOW_MCP_SERVERS_BIN`, then in `tmp/mcp-servers` (where
 * `.ci/run` installs them), then on `PATH` (`npm install -g`). When none has them, they are installed
 * into `tmp/mcp-servers` with npm — once, under a lock, whichever test file asks first.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { pidAlive } from "../../src/pid_alive.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** Where `.ci/run` and the tests install the servers. */
export const SERVERS_DIR = join(ROOT, "tmp/mcp-servers");
const PACKAGES = [
  "@modelcontextprotocol/server-everything",
  "@modelcontextprotocol/server-filesystem",
];

let found: Promise<string> | undefined;

/** The folder holding `mcp-server-everything` and `mcp-server-filesystem`. */
export function serversBin(): Promise<string> {
  found ??= locate();
  return found;
}

/** The path of one server executable. */
export async function serverCommand(
  name: "mcp-server-everything" | "mcp-server-filesystem",
): Promise<string> {
  return join(await serversBin(), name);
}

async function locate(): Promise<string> {
  const candidates = [
    Deno.env.get("STEPFLOW_MCP_SERVERS_BIN"),
    join(SERVERS_DIR, "node_modules/.bin"),
    ...(Deno.env.get("PATH") ?? "").split(":"),
  ].filter((d): d is string => !!d);
  for (const dir of candidates) if (await hasBoth(dir)) return dir;
  await install();
  const bin = join(SERVERS_DIR, "node_modules/.bin");
  if (!(await hasBoth(bin))) throw new Error(`npm install did not provide the servers in ${bin}`);
  return bin;
}

async function hasBoth(dir: string): Promise<boolean> {
  const exists = (f: string) => Deno.stat(join(dir, f)).then((s) => s.isFile, () => false);
  return (await exists("mcp-server-everything")) && (await exists("mcp-server-filesystem"));
}

async function install(): Promise<void> {
  await Deno.mkdir(SERVERS_DIR, { recursive: true });
  const lock = join(SERVERS_DIR, ".installing");
  // Another isolate may be installing: mkdir is the lock; wait for its release.
  for (;;) {
    try {
      await Deno.mkdir(lock);
      break;
    } catch {
      if (await hasBoth(join(SERVERS_DIR, "node_modules/.bin"))) return;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    const out = await new Deno.Command("npm", {
      args: ["install", "--prefix", SERVERS_DIR, "--no-audit", "--no-fund", ...PACKAGES],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(
        `npm install of the MCP test servers failed:\n${new TextDecoder().decode(out.stderr)}`,
      );
    }
  } finally {
    await Deno.remove(lock).catch(() => {});
  }
}

/** Running: it exists and is not a zombie (a killed orphan waits as a zombie for its reaper). */
export function running(pid: number): boolean {
  if (!pidAlive(pid)) return false;
  const stat = procStat(pid);
  return stat !== undefined && stat.state !== "Z";
}

/** Every live (not zombie) process in process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const stat = procStat(Number(entry.name));
    if (stat && stat.pgrp === pgid && stat.state !== "Z") members.push(Number(entry.name));
  }
  return members;
}

/** Waits (bounded, polling) until no live process is left in group `pgid`; returns those left. */
export async function groupGone(pgid: number, attempts = 300): Promise<number[]> {
  for (let i = 0; i < attempts; i++) {
    const left = groupMembers(pgid);
    if (left.length === 0) return [];
    await new Promise((r) => setTimeout(r, 20));
  }
  return groupMembers(pgid);
}

function procStat(pid: number): { state: string; pgrp: number } | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { state: fields[0], pgrp: Number(fields[2]) };
  } catch {
    return undefined;
  }
}

/** A free TCP port on 127.0.0.1 (closed again; the caller binds it next). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** server-everything serving streamable HTTP on a free loopback port; `close()` kills it. */
export interface HttpEverything {
  /** Its MCP endpoint. */
  url: string;
  /** Stops it (its whole process group). */
  close(): Promise<void>;
}

/** Starts server-everything in its streamable HTTP mode and waits for its "listening" line. */
export async function startHttpEverything(): Promise<HttpEverything> {
  const everything = await serverCommand("mcp-server-everything");
  const port = freePort();
  const server = new Deno.Command(everything, {
    args: ["streamableHttp"],
    env: { PORT: String(port) },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    detached: true,
  }).spawn();
  const close = async () => {
    try {
      Deno.kill(-server.pid, "SIGKILL");
    } catch { /* gone */ }
    await server.status;
  };
  try {
    // Wait for the server's own "listening" line, not for a fixed time.
    const reader = server.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    while (!/listening on port/i.test(seen)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the HTTP server ended: ${seen}`);
      seen += value;
    }
    void (async () => {
      while (!(await reader.read()).done) { /* drain */ }
    })().catch(() => {});
  } catch (error) {
    await close();
    throw error;
  }
  return { url: `http://127.0.0.1:${port}/mcp`, close };
}
