/**
 * A fan-out whose children wait: `run-agent` stops with every child's question (and the command
 * that answers each), `--runs` says `waiting · 3 answers`, and the answers come from other
 * processes in any order — each continues its own child, none waits for another's answer — while
 * a second answer to one child races the first: exactly one is recorded.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFleetAgents } from "../flow/fan_out_fixtures.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { fanOutsOf } from "../../src/store/fan_out_lines.ts";
import { finish, runCli, spawnCli } from "./helpers.ts";
import { fileList } from "./fan_out_cli_fixtures.ts";

const ARGS = ["--agent", "fleet", "--script", "fleet.script.json"];

/** Reviews that go on to ask a person (confirm.file), then close (complete.file), per file. */
function confirmScript(files: string[]): string {
  return JSON.stringify({
    "list.files": [{ output: { files, next_action: { action: "next" } } }],
    "review.file": files.map((path) => ({
      promptIncludes: `Review the file ${path}.`,
      output: { verdict: `ok ${path}`, next_action: { action: "next" } },
    })),
    "complete.file": files.map((path) => ({
      promptIncludes: `Close the review of ${path}`,
      delayMs: 200,
      output: { verdict: `published ${path}`, next_action: { action: "complete" } },
    })),
    "complete.fleet": [{ output: { summary: "reported", next_action: { action: "complete" } } }],
  });
}

Deno.test("run-agent: three children wait; answered from other processes in any order; two answers to one child: one wins", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-fanout-waits-" });
  await writeFleetAgents(dir, { concurrency: 4 }, "confirm");
  const files = fileList(3);
  await Deno.writeTextFile(join(dir, "fleet.script.json"), confirmScript(files));
  const first = await runCli(ARGS, { userDir: dir });
  assert.equal(first.code, 4, first.stderr);
  assert.match(first.stdout, /waits for 3 answers at fan-out step "review\.each"/);
  const commands = [...first.stdout.matchAll(/ answer (\S+) --request-id (\S+) --value/g)];
  assert.equal(commands.length, 3, first.stdout);
  const runId = commands[0][1];
  const requests = commands.map((m) => m[2]);
  const listed = await runCli(["--agent", "fleet", "--runs"], { userDir: dir });
  assert.match(listed.stdout, /waiting · 3 answers/);
  const shown = await runCli(["--agent", "fleet", "--show", runId], { userDir: dir });
  assert.match(shown.stdout, /Waiting for 3 answers \(each child run on its own\):/);
  assert.equal(shown.stdout.split(`--request-id`).length - 1, 3, shown.stdout);
  assert.match(shown.stdout, /3 items · 0 completed · 0 failed · 3 not done/);
  assert.match(shown.stdout, /^1 +src\/f0\.ts +waiting /m);

  // Answers from three processes at once, the last item's first, and a second one to the second.
  const answer = (request: string, note: string) =>
    spawnCli("run-agent", [
      ...ARGS,
      "--answer",
      runId,
      "--request-id",
      request,
      "--value",
      JSON.stringify({ decision: "next", note }),
    ], { userDir: dir });
  const outcomes = await Promise.all([
    finish(answer(requests[2], "third")),
    finish(answer(requests[1], "second")),
    finish(answer(requests[0], "first")),
    finish(answer(requests[1], "second again")),
  ]);
  const codes = outcomes.map((o) => o.code);
  const seen = JSON.stringify(outcomes.map((o) => [o.code, o.stderr]));
  // A recorded answer ends its process with 0 (the run, or its child, went on to the end here) or
  // 4 (it went on here until the run waited on a child whose answer another process was recording
  // at that moment): only the second answer to one child is refused.
  const refused = outcomes.filter((o) => /cannot take this answer/.test(o.stderr));
  assert.equal(refused.length, 1, seen);
  assert.equal(refused[0].code, 2, seen);
  assert.ok(outcomes[1] === refused[0] || outcomes[3] === refused[0], seen);
  assert.ok(outcomes.every((o) => o === refused[0] || o.code === 0 || o.code === 4), seen);
  assert.ok(codes.includes(0), seen);

  // The run went on to its end in one of the answering processes.
  const store = new FileRunStore(join(dir, "tmp", "logs", "agents", "fleet"));
  const children = new FileRunStore(join(dir, "tmp", "logs", "agents", "reviewer"));
  let status = (await store.loadCheckpoint(runId))?.status;
  for (let i = 0; i < 100 && status !== "completed"; i++) {
    await new Promise((r) => setTimeout(r, 100));
    status = (await store.loadCheckpoint(runId))?.status;
  }
  assert.equal(status, "completed");
  const [fanOut] = fanOutsOf(await store.readLog(runId));
  for (const item of fanOut.items.values()) {
    assert.equal(item.children.length, 1);
    const child = item.children[0].childRunId;
    assert.equal((await children.loadCheckpoint(child))?.status, "completed");
    const answers = (await children.readLog(child)).filter((e) => e.type === "input_answer");
    assert.equal(answers.length, 1, `item ${item.index}: one answer recorded`);
  }
  const done = await runCli(["--agent", "fleet", "--show", runId], { userDir: dir });
  assert.match(done.stdout, /3 items · 3 completed · 0 failed/);
});

Deno.test("run-agent: an answer to a waiting child is recorded while another process drives the parent and has not listed the child's wait yet", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-fanout-waits-driven-" });
  await writeFleetAgents(dir, { concurrency: 4 }, "confirm");
  const files = fileList(2);
  await Deno.writeTextFile(join(dir, "fleet.script.json"), confirmScript(files));
  const first = await runCli(ARGS, { userDir: dir });
  assert.equal(first.code, 4, first.stderr);
  const commands = [...first.stdout.matchAll(/ answer (\S+) --request-id (\S+) --value/g)];
  assert.equal(commands.length, 2, first.stdout);
  const runId = commands[0][1];
  const store = new FileRunStore(join(dir, "tmp", "logs", "agents", "fleet"));
  const children = new FileRunStore(join(dir, "tmp", "logs", "agents", "reviewer"));

  // This process drives the parent now, as a drive does while it takes its waiting children up
  // again: it holds the parent's lock, and its checkpoint lists no wait for the moment.
  const lock = await store.lock(runId);
  const waitingCheckpoint = (await store.loadCheckpoint(runId))!;
  const { waiting: _w, waits: _ws, ...rest } = waitingCheckpoint.state as Record<string, unknown>;
  await store.saveCheckpoint({ ...waitingCheckpoint, status: "running", state: rest as never });
  const answered = await runCli([
    ...ARGS,
    "--answer",
    runId,
    "--request-id",
    commands[1][2],
    "--value",
    JSON.stringify({ decision: "next", note: "while driven" }),
  ], { userDir: dir });
  assert.equal(answered.code, 0, answered.stderr);
  assert.match(
    answered.stderr,
    /is driven by another process; the answer was recorded in its child run/,
  );
  const [fanOut] = fanOutsOf(await store.readLog(runId));
  const child = fanOut.items.get(1)!.children[0].childRunId;
  assert.equal((await children.loadCheckpoint(child))?.status, "completed");
  const answers = (await children.readLog(child)).filter((e) => e.type === "input_answer");
  assert.equal(answers.length, 1);
  // The other child still waits on its request: untouched.
  const other = fanOut.items.get(0)!.children[0].childRunId;
  assert.equal((await children.loadCheckpoint(other))?.status, "waiting");
  await store.saveCheckpoint(waitingCheckpoint);
  await lock.release();
});
