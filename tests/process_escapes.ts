/**
 * Helpers of the process tests: a Bash command that leaves processes behind in every way a shell
 * can, the pids it wrote, and a bounded wait for processes to be gone.
 *
 * @module
 */
import { join } from "node:path";
import { running } from "./mcp/npm_servers.ts";

/**
 * A Bash command that leaves five processes behind in five ways, each writing its pid to a file
 * in the working folder, waits until all five wrote it, and then runs `last`.
 */
export const ESCAPES: Record<string, string> = {
  "setsid_f": "setsid -f sh -c 'echo $$ > setsid_f.pid; exec sleep 4701' >/dev/null 2>&1",
  "setsid_bg": "setsid sh -c 'echo $$ > setsid_bg.pid; exec sleep 4702' >/dev/null 2>&1 &",
  "nohup": "nohup sh -c 'echo $$ > nohup.pid; exec sleep 4703' >/dev/null 2>&1 &",
  "double_fork": "( sh -c 'echo $$ > double_fork.pid; exec sleep 4704' >/dev/null 2>&1 & )",
  "background": "sh -c 'echo $$ > background.pid; exec sleep 4705' &",
};

/** The escapes, then `last`. */
export function escapingCommand(last: string): string {
  const names = Object.keys(ESCAPES).map((name) => `${name}.pid`).join(" ");
  return [
    ...Object.values(ESCAPES),
    `for f in ${names}; do until [ -s "$f" ]; do sleep 0.02; done; done`,
    last,
  ].join("\n");
}

/**
 * Waits until each escape wrote its pid (the files appear: an event, not a sleep; bounded by a
 * minute for a command that never writes them).
 */
export async function escapePids(dir: string, signal?: AbortSignal): Promise<Map<string, number>> {
  const pids = new Map<string, number>();
  const until = performance.now() + 60_000;
  while (pids.size < Object.keys(ESCAPES).length) {
    signal?.throwIfAborted();
    if (performance.now() > until) throw new Error(`no pid files after a minute: ${[...pids]}`);
    for (const name of Object.keys(ESCAPES)) {
      if (pids.has(name)) continue;
      const text = await Deno.readTextFile(join(dir, `${name}.pid`)).catch(() => "");
      if (/^\d+\n$/.test(text)) pids.set(name, Number(text));
    }
    if (pids.size < Object.keys(ESCAPES).length) await new Promise((r) => setTimeout(r, 20));
  }
  return pids;
}

/** The pids still alive (not zombies) after waiting for them to go (bounded, polling). */
export async function stillAlive(pids: Iterable<number>, waitMs = 15_000): Promise<number[]> {
  const until = performance.now() + waitMs;
  let left = [...pids].filter(running);
  while (left.length > 0 && performance.now() < until) {
    await new Promise((r) => setTimeout(r, 25));
    left = left.filter(running);
  }
  return left;
}
