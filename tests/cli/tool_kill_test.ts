/**
 * SIGKILL campaign of durable tool calls (tests/kill_campaign.ts): a real `run-agent` of an agent
 * whose step calls Read, then Bash (`echo done >> out.txt`: not idempotent, counted by the lines
 * of out.txt) and Glob, then Read, is killed
 *
 * - while the Bash call runs (its start durable, no end): `--resume` refuses (TOOL_CALL_UNFINISHED,
 *   exit 2) and runs nothing; `--resume --rerun-unfinished-call` runs it again (the
 *   user's choice: a second line) and the run completes;
 * - while the model answers the turn after the Bash call (its end durable): `--resume` continues
 *   inside the step — Bash is not run again — and the run completes.
 *
 * On the file store and on PostgreSQL; every completed run's history equals an uninterrupted run's.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { comparableHistory, seed001Files, seed001Script, writeAgent } from "../flow/fixtures.ts";
import { killAtMoment, pause } from "../kill_campaign.ts";
import { finish, spawnCli } from "./helpers.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { historyFromLog } from "../../src/store/format.ts";
import type { RunStore } from "../../src/store/types.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

const SCRIPT = JSON.stringify(seed001Script({
  s_a8f3: ["Plan: append a line."],
  s_b2c1: [
    { toolCalls: [{ name: "Read", arguments: { file_path: "src/app.ts" } }] },
    {
      toolCalls: [
        // The sleep keeps the call running long enough to be killed in it.
        { name: "Bash", arguments: { command: "echo done >> out.txt && sleep 0.5" } },
        { name: "Glob", arguments: { pattern: "*.txt" } },
      ],
    },
    // Long enough to be killed in, after the Bash call's end was made durable.
    { delayMs: 800, toolCalls: [{ name: "Read", arguments: { file_path: "out.txt" } }] },
    "Appended one line.",
  ],
}));
const ARGS = ["--agent", "code-improver", "--script", "tool.script.json", "--topic", "t"];

async function setup(): Promise<string> {
  const user = await Deno.makeTempDir({ prefix: "stepflow-tool-kill-" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Read", "Glob", "Bash"],
    permissionMode: "bypassPermissions",
  });
  await writeAgent(user, "code-improver", files);
  await Deno.mkdir(join(user, "src"));
  await Deno.writeTextFile(join(user, "src/app.ts"), "export const answer = 41;\n");
  await Deno.writeTextFile(join(user, "tool.script.json"), SCRIPT);
  return user;
}

const bashLines = async (user: string) =>
  (await Deno.readTextFile(join(user, "out.txt")).catch(() => "")).split("\n").filter(Boolean)
    .length;

/** The history without its times. */
async function historyOf(store: RunStore, runId: string) {
  const checkpoint = (await store.loadCheckpoint(runId))!;
  assert.equal(checkpoint.status, "completed", runId);
  return comparableHistory(
    historyFromLog(await store.readLog(runId), checkpoint.state.historyLength as number),
  );
}

/** Resolves once `found()` is true (checked every 20 ms), or when the process ended first. */
async function until(found: () => Promise<boolean>, ended: AbortSignal): Promise<void> {
  while (!ended.aborted && !(await found())) await pause(20);
}

type Moment = "bash-running" | "after-bash";

interface Target {
  name: string;
  flags: string[];
  store: () => RunStore;
  /** True once the Bash call's end is durable. */
  bashEndDurable: (user: string) => Promise<boolean>;
  close?: () => Promise<void>;
}

function fileTarget(user: string): Target {
  const runs = join(user, "tmp", "logs", "agents", "code-improver");
  return {
    name: "file store",
    flags: [],
    store: () => new FileRunStore(runs),
    bashEndDurable: async () => {
      const logs = await Array.fromAsync(Deno.readDir(runs)).catch(() => []);
      for (const entry of logs) {
        if (!entry.name.endsWith(".jsonl")) continue;
        const lines = (await Deno.readTextFile(join(runs, entry.name))).split("\n");
        const end = lines.findIndex((l) => l.includes('"tool_call"') && l.includes('"Bash"'));
        // The Bash call's end, then the checkpoint line that flushed it.
        return end >= 0 && lines.slice(end + 1).some((l) => l.includes('"store_checkpoint"'));
      }
      return false;
    },
  };
}

function pgTarget(url: string): Target {
  const stores: PostgresRunStore[] = [];
  const poller = new PostgresRunStore(url, { agent: "code-improver" });
  stores.push(poller);
  return {
    name: "PostgreSQL",
    flags: ["--store", url],
    store: () => {
      const store = new PostgresRunStore(url, { agent: "code-improver" });
      stores.push(store);
      return store;
    },
    bashEndDurable: async () => {
      // Committed lines only: on PostgreSQL a line is there once its checkpoint committed it.
      const runs = (await poller.list().catch(() => [])).filter((r) => r.status === "running");
      if (runs.length === 0) return false;
      const log = await poller.readLog(runs[0].runId);
      return log.some((e) => e.type === "tool_call" && e.tool === "Bash");
    },
    close: async () => {
      for (const s of stores) await s.close();
    },
  };
}

async function campaign(
  user: string,
  target: Target,
  moment: Moment,
  expected: unknown,
  rerun: boolean,
) {
  const what = `${target.name}, ${moment}`;
  await killAtMoment({
    describe: what,
    tries: 3,
    spawn: () =>
      spawnCli("run-agent", [...ARGS, ...target.flags], {
        userDir: user,
        stdout: "null",
        stderr: "null",
      }),
    arm: () => {
      // A run that ended before its moment is tried again, from no line.
      try {
        Deno.removeSync(join(user, "out.txt"));
      } catch {
        // none yet
      }
      return (_child, ended) =>
        moment === "bash-running"
          ? until(async () => await bashLines(user) > 0, ended)
          : until(() => target.bashEndDurable(user), ended);
    },
    afterRun: () => {},
  });
  assert.equal(await bashLines(user), 1, `${what}: Bash ran once before the kill`);
  const store = target.store();
  const runs = (await store.list()).filter((r) => r.status === "running");
  assert.equal(runs.length, 1, `${what}: one interrupted run`);
  const runId = runs[0].runId;
  const resume = (...more: string[]) =>
    finish(
      spawnCli("run-agent", [...ARGS.slice(0, 4), ...target.flags, "--resume", runId, ...more], {
        userDir: user,
      }),
    );
  let resumed = await resume();
  if (moment === "bash-running") {
    assert.equal(resumed.code, 2, `${what}: the resume is refused: ${resumed.stderr}`);
    assert.match(resumed.stderr, /was stopped \(killed or crashed\) in step "s_b2c1"/, what);
    assert.match(resumed.stderr, /Bash \(echo done >> out\.txt && sleep 0\.5\)/, what);
    assert.match(resumed.stderr, /--rerun-unfinished-call/, what);
    assert.doesNotMatch(resumed.stderr, /\n\s+at /, `${what}: no stack trace`);
    assert.equal(await bashLines(user), 1, `${what}: the refused resume ran nothing`);
    if (!rerun) return;
    resumed = await resume("--rerun-unfinished-call");
    assert.equal(resumed.code, 0, `${what}: ${resumed.stderr}`);
    assert.equal(await bashLines(user), 2, `${what}: re-run as the user asked`);
  } else {
    assert.equal(resumed.code, 0, `${what}: ${resumed.stderr}`);
    assert.equal(await bashLines(user), 1, `${what}: Bash was not run again`);
    const log = await store.readLog(runId);
    assert.ok(log.some((e) => e.type === "run_resume" && e.inStep), `${what}: resumed inside`);
  }
  assert.deepEqual(await historyOf(store, runId), expected, what);
}

Deno.test("run-agent killed (SIGKILL) inside a step with tools: no Bash call runs twice unasked, history as uninterrupted (file store, PostgreSQL)", async () => {
  const user = await setup();
  const pgUrl = pg ? await freshDatabase(pg) : undefined;
  const pgT = pgUrl ? pgTarget(pgUrl) : undefined;
  try {
    const file = fileTarget(user);
    // The uninterrupted run.
    const clean = await finish(spawnCli("run-agent", ARGS, { userDir: user }));
    assert.equal(clean.code, 0, clean.stderr);
    assert.equal(await bashLines(user), 1);
    const cleanStore = file.store();
    const expected = await historyOf(cleanStore, (await cleanStore.list())[0].runId);
    await Deno.remove(join(user, "tmp"), { recursive: true });

    await campaign(user, file, "bash-running", expected, true);
    await Deno.remove(join(user, "tmp"), { recursive: true }).catch(() => {});
    await campaign(user, file, "after-bash", expected, true);
    if (pgT) {
      // The first ends completed, so the second finds only its own run interrupted.
      await campaign(user, pgT, "after-bash", expected, false);
      await campaign(user, pgT, "bash-running", expected, false);
    }
  } finally {
    await pgT?.close?.();
    await Deno.remove(user, { recursive: true });
  }
});
