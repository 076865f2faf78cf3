/**
 * The one mechanism of the SIGKILL campaigns (tool plans, PlanSpec, QPlan): run a real CLI
 * process, wait for a moment of its run given by an event (the lock taken, a request in flight,
 * a save's temp file appearing, …) and kill it there; run it again when it ended before its moment.
 * Each campaign supplies its moments and its checks; the sizes are in CONTRIBUTING.md.
 *
 * @module
 */
import assert from "node:assert/strict";
import { basename } from "node:path";

/** The full size of the sized loops (CONTRIBUTING.md "Run one test"). */
export const FULL_CAMPAIGN: boolean = Deno.env.get("STEPFLOW_FULL_CAMPAIGN") === "1";

/** Resolves after `ms` milliseconds. */
export const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A whole number of milliseconds below `maxMs`: where exactly in a pause a kill lands. */
export const jitter = (maxMs: number): number => Math.floor(Math.random() * maxMs);

/**
 * Resolves once `count` temp files (`*.tmp`, named `.<basename of file>.…` when `file` is given)
 * were created under the watched folder, or when the watcher is closed. A temp file appears in the
 * middle of an atomic write: it is written and flushed before its rename.
 */
export async function tempFilesCreated(
  watcher: Deno.FsWatcher,
  count: number,
  file?: string,
): Promise<void> {
  // Names only: some systems report the folder's real path (macOS: /private/var/… for /var/…).
  const prefix = file === undefined ? "" : `.${basename(file)}.`;
  let seen = 0;
  for await (const event of watcher) {
    if (event.kind !== "create") continue;
    seen += event.paths.filter((p) => basename(p).startsWith(prefix) && p.endsWith(".tmp")).length;
    if (seen >= count) return;
  }
}

/** One kill of a campaign; see {@linkcode killAtMoment}. */
export interface KillAtMoment {
  /** How the moment is named in a failure. */
  describe: string;
  /** Runs that end before their moment are tried this many times before the campaign fails. */
  tries: number;
  /** The moment is the run's end, where the kill races the exit: a run that got there first is fine. */
  atEnd?: boolean;
  /** A folder to watch for temp files, from before the process starts (so no write is missed). */
  watch?: string;
  /** Starts the CLI process. */
  spawn: () => Deno.ChildProcess;
  /**
   * Called before each start (so it can note the state the run starts from): returns what
   * resolves when the moment has come for `child`. `ended` aborts when the process ends first.
   */
  arm: (
    watcher: Deno.FsWatcher | undefined,
  ) => (child: Deno.ChildProcess, ended: AbortSignal) => Promise<unknown>;
  /** Checks after each run, killed or not (the files are whole, nothing ran twice, …). */
  afterRun: (killed: boolean) => Promise<void> | void;
}

/**
 * Runs the CLI until one run is killed at its moment (or, for a moment at the run's end, until one
 * run was killed or ended there). Returns whether the last run was killed.
 */
export async function killAtMoment(kill: KillAtMoment): Promise<boolean> {
  for (let attempt = 1;; attempt++) {
    const watcher = kill.watch === undefined ? undefined : Deno.watchFs(kill.watch);
    const reached = kill.arm(watcher);
    const child = kill.spawn();
    const ended = new AbortController();
    const status = child.status.finally(() => {
      ended.abort();
      watcher?.close();
    });
    await Promise.race([reached(child, ended.signal), status]);
    try {
      child.kill("SIGKILL");
    } catch {
      // it already ended
    }
    // Streams that are not piped throw on access: nothing to drain then.
    await Promise.resolve().then(() => child.stdout.cancel()).catch(() => {});
    await Promise.resolve().then(() => child.stderr.cancel()).catch(() => {});
    const killed = (await status).signal === "SIGKILL";
    await kill.afterRun(killed);
    if (killed || kill.atEnd) return killed;
    assert.ok(attempt < kill.tries, `no kill at ${kill.describe} in ${attempt} runs`);
  }
}
