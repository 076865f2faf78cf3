/**
 * `run-agent`'s replay flags (docs/testing.md): `--record FILE` writes the replay file of the run
 * just made, `--show RUN_ID --as-script` prints a recorded run as one, `--replay MODE` says how a
 * replay `--script` treats a changed prompt (read by the backend factory).
 *
 * @module
 */
import { resolve } from "node:path";
import { writeFileAtomic } from "../atomic_write.ts";
import { StepflowError, UsageError } from "../errors.ts";
import { type ReplayDocument, replayFromLog, replayText, replayYaml } from "../llm/replay_file.ts";
import type { RunLogEntry, RunStore } from "../store/types.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { type ChildRunLog, childRunLogs } from "../flow/child_logs.ts";
import type { CliFlags } from "./args.ts";
import { displayPath } from "./kit/display_path.ts";
import type { CliWriter } from "./kit/io.ts";

/** `--as-script` belongs to `--show`, `--replay` to a `--script`, `--record` to a run. */
export function rejectMisplacedReplayFlags(scan: CliFlags): void {
  if (scan.asScript && scan.show === undefined) {
    throw new UsageError(
      "--as-script prints a recorded run as a replay file: add --show RUN_ID (list the runs with --runs).",
    );
  }
  if (scan.asScript && scan.json) {
    throw new UsageError("--as-script and --json cannot be combined: a replay file is YAML.");
  }
  if (scan.replay !== undefined && scan.script === undefined) {
    throw new UsageError(
      "--replay says how a replay file is checked: add --script FILE (a file written by --record or --as-script).",
    );
  }
  if (scan.record !== undefined && (scan.runs || scan.show !== undefined || scan.submit)) {
    throw new UsageError(
      "--record writes the replay file of a run made here; to turn a recorded run into one, use --show RUN_ID --as-script > FILE.",
    );
  }
}

/** `--replay` says how a replay `--script` is checked: without `--script` it means nothing. */
export function checkReplayFlags(flags: { replay?: unknown; script?: string }): void {
  if (flags.replay !== undefined && flags.script === undefined) {
    throw new UsageError(
      "--replay says how a replay file is checked: add --script FILE (a file written by --record, or by show --as-script).",
    );
  }
}

/**
 * `--show RUN_ID --as-script`: the YAML replay file of a recorded run, redacted with `env`, with
 * its child runs' calls when their logs are given (`childRunLogs`).
 */
export function replayFileOfRun(
  log: RunLogEntry[],
  agent: string,
  runId: string,
  env: Record<string, string | undefined>,
  children?: readonly ChildRunLog[],
): string {
  return replayYaml(replayFromLog(log, { agent, runId, env, ...(children ? { children } : {}) }));
}

/**
 * Writes the replay file of the run just made (`--record FILE`), atomically; given the agent's
 * definition (not only its name), with the calls of its child runs.
 */
export async function writeRecording(
  file: string,
  store: RunStore,
  runId: string,
  agent: string | AgentDefinition,
  ctx: { userDir: string; io: { env: Record<string, string | undefined>; stderr: CliWriter } },
): Promise<void> {
  const path = resolve(ctx.userDir, file);
  let doc: ReplayDocument;
  try {
    const log = await store.readLog(runId);
    const children = typeof agent === "string" ? [] : await childRunLogs(store, agent, log);
    doc = replayFromLog(log, {
      agent: typeof agent === "string" ? agent : agent.name,
      runId,
      env: ctx.io.env,
      children,
    });
  } catch (error) {
    if (error instanceof StepflowError && error.code === "REPLAY_NOT_RECORDED") {
      ctx.io.stderr.write(
        `warning: --record ${file}: the run made no backend call; nothing written.\n`,
      );
      return;
    }
    throw error;
  }
  await writeFileAtomic(path, replayText(doc, path));
  const shown = displayPath(path, ctx.userDir);
  ctx.io.stderr.write(
    `Recorded ${doc.count} backend call${
      doc.count === 1 ? "" : "s"
    } of run ${runId} in ${shown}; replay it with --script ${shown}.\n`,
  );
}
