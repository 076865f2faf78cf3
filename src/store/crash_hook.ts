/**
 * TEST-ONLY crash injection for the file store's crash tests. Nothing here runs unless the
 * environment variable `STEPFLOW_TEST_CRASH_AT` is set (and readable), as `<point>:<n>`:
 *
 * - `checkpoint-unlogged:N` — SIGKILL when the N-th checkpoint of the process is about to be
 *   appended to the run log: the iteration's entries are there, its checkpoint is not.
 * - `checkpoint-torn:N` — the N-th checkpoint's log line is written only half, then SIGKILL.
 * - `checkpoint-logged:N` — SIGKILL right after the N-th checkpoint's log line was written (and
 *   flushed, in `"fsync"` mode), before the checkpoint file (the cache) is touched.
 * - `checkpoint-temp:N` — the N-th write of the checkpoint file (the cache) wrote its temp file,
 *   then the process kills itself (SIGKILL) before the rename: a crash *during* a cache write.
 * - `checkpoint-removed:N` — SIGKILL after the N-th cache write removed the old checkpoint file,
 *   before the temp file is renamed into its place.
 * - `checkpoint-renamed:N` — SIGKILL right after the N-th cache write's rename.
 * - `append-torn:N` — the N-th log append writes only the first half of its line, then SIGKILL: a
 *   torn last line.
 *
 * @module
 */

/** The crash points of {@linkcode CrashHook}. */
export type CrashPoint =
  | "checkpoint-unlogged"
  | "checkpoint-torn"
  | "checkpoint-logged"
  | "checkpoint-temp"
  | "checkpoint-removed"
  | "checkpoint-renamed"
  | "append-torn";

/** Counts store operations and kills the process at the configured one. */
export interface CrashHook {
  /** True when this call of `point` is the one to crash at. */
  due(point: CrashPoint): boolean;
  /** Kills the process at once, like a power cut would stop it. */
  crash(): never;
}

/** The hook configured by `STEPFLOW_TEST_CRASH_AT`, or undefined (the normal case). */
export function crashHookFromEnv(): CrashHook | undefined {
  let spec: string | undefined;
  try {
    const name = "STEPFLOW_TEST_CRASH_AT";
    if (Deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") return;
    spec = Deno.env.get(name);
  } catch {
    return;
  }
  const match = spec?.match(
    /^(checkpoint-(?:unlogged|torn|logged|temp|removed|renamed)|append-torn):(\d+)$/,
  );
  if (!match) return;
  const point = match[1] as CrashPoint;
  const n = Number(match[2]);
  let count = 0;
  return {
    due: (p) => p === point && ++count === n,
    crash: () => {
      Deno.kill(Deno.pid, "SIGKILL");
      throw new Error("unreachable: SIGKILL did not stop the process");
    },
  };
}
