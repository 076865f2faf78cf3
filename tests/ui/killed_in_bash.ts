/**
 * A real run killed inside a Bash call for the dashboard tests: `run-agent` (a real process, a
 * scripted model) of an agent whose step appends a line with Bash — not idempotent — is SIGKILLed
 * while the command runs, so its run log holds the call's `tool_call_start` and no `tool_call`:
 * a plain `--resume` of it stops with TOOL_CALL_UNFINISHED.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FileRunStore } from "../../src/store/file.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import type { RunStore } from "../../src/store/types.ts";
import { seed001Files, seed001Script, writeAgent } from "../flow/fixtures.ts";
import { spawnCli } from "../cli/helpers.ts";
import { pause } from "../kill_campaign.ts";

/** The Bash command: a line appended (counted by out.txt), then long enough to be killed in. */
export const BASH_COMMAND = "echo done >> out.txt && sleep 1.5";

/** The agent's script file in the project (a resume continues on it). */
export const SCRIPT_FILE = "tool.script.json";

/** A project with one run killed in its Bash call. */
export interface KilledRun {
  /** The project folder. */
  root: string;
  /** The run. */
  runId: string;
  /** The agent's store (the file store, or the PostgreSQL store of `url`). */
  store: RunStore;
  /** Lines out.txt holds: one per time the Bash call ran. */
  bashRuns(): Promise<number>;
}

/**
 * Writes the project, starts the run (in the PostgreSQL store of `pgUrl` when given) and kills it
 * once its Bash call runs.
 */
export async function killedInBash(pgUrl?: string): Promise<KilledRun> {
  const root = await Deno.makeTempDir({ prefix: "stepflow-ui-killed-" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Read", "Bash"],
    permissionMode: "bypassPermissions",
  });
  await writeAgent(root, "code-improver", files);
  await Deno.writeTextFile(
    join(root, SCRIPT_FILE),
    JSON.stringify(seed001Script({
      s_a8f3: ["Plan: append a line."],
      s_b2c1: [
        { toolCalls: [{ name: "Bash", arguments: { command: BASH_COMMAND } }] },
        "Appended one line.",
      ],
    })),
  );
  const bashRuns = async () =>
    (await Deno.readTextFile(join(root, "out.txt")).catch(() => "")).split("\n").filter(Boolean)
      .length;
  const child = spawnCli(
    "run-agent",
    [
      "--agent",
      "code-improver",
      "--script",
      SCRIPT_FILE,
      "--topic",
      "t",
      ...(pgUrl ? ["--store", pgUrl] : []),
    ],
    { userDir: root, stdout: "null", stderr: "null" },
  );
  let ended = false;
  const status = child.status.then((s) => (ended = true, s));
  // The line is written by the command itself: the call's start is durable by then.
  while (!ended && await bashRuns() === 0) await pause(20);
  assert.ok(!ended, "run-agent ended before its Bash call could be killed");
  child.kill("SIGKILL");
  await status;
  const store = pgUrl
    ? new PostgresRunStore(pgUrl, { agent: "code-improver" })
    : new FileRunStore(join(root, "tmp", "logs", "agents", "code-improver"));
  const [run] = await store.list();
  assert.equal(run?.status, "running");
  return { root, runId: run.runId, store, bashRuns };
}
