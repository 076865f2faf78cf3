/**
 * TEST-ONLY crash injection for the file store's crash tests. Nothing here runs unless the
 * environment variable `STEPFLOW_TEST_CRASH_AT` is set (and readable), as `<point>:<n>`:
 *
 * - `checkpoint-temp:N` — the N-th checkpoint of the process is written to its temp file, then the
 *   process kills itself (SIGKILL) before the rename: a crash *during* a checkpoint write.
 * - `checkpoint-removed:N` — with durability `"process"`: SIGKILL after the old checkpoint was
 *   removed, before the temp file is renamed into its place.
 * - `checkpoint-renamed:N` — SIGKILL right after the N-th checkpoint's rename.
 * - `append-torn:N` — the N-th log append writes only the first half of its line, then SIGKILL: a
 *   torn last line.
 *
 * @module
 */

/** The crash points of {@linkcode CrashHook}. */
export type CrashPoint =
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
    /^(checkpoint-temp|checkpoint-removed|checkpoint-renamed|append-torn):(\d+)$/,
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
