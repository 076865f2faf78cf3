/**
 * A killed run continues on the backend it started with: the run records how its backend was
 * chosen (never a key), `--runs` and `--show` agree that it is interrupted and print a command that
 * works as printed, `--resume` without backend flags reuses the recorded backend, and a resume whose
 * backend cannot be used leaves the run as it was. The killed run is a real process (SIGKILL at a
 * crash point); the backend that refuses its key is the official OpenAI client against a local
 * server.
 */
import assert from "node:assert/strict";
import { FileRunStore } from "../../src/store/file.ts";
import { finish, printedArgs, runCli, spawnCli } from "../cli/helpers.ts";
import { openAiError, startFakeServer } from "../llm/fake_server.ts";
import { onlyRunId, pipelineWorkspace } from "./helpers.ts";

const TOPIC = ["--topic", "backend memory"];

Deno.test("a killed --script run: --runs and --show say interrupted, and the printed --resume works", async () => {
  const ws = await pipelineWorkspace();
  const killed = await finish(
    spawnCli("run-agent", ["--agent", "pipeline", "--script", ws.script, ...TOPIC], {
      userDir: ws.root,
      env: { STEPFLOW_TEST_CRASH_AT: "checkpoint-logged:3" },
    }),
  );
  assert.equal(killed.signal, "SIGKILL", killed.stderr);
  const runId = await onlyRunId(ws.runDir);
  const store = new FileRunStore(ws.runDir);
  const before = (await store.loadCheckpoint(runId))!;
  assert.deepEqual(before.state.backendChoice, { backend: "scripted", script: ws.script });

  // One status everywhere: --runs, --show and --show --json all say interrupted.
  const listed = await runCli(["--agent", "pipeline", "--runs"], { userDir: ws.root });
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, new RegExp(`${runId} .* interrupted `));
  const hint = /Continue an interrupted run with: (.*)\n/.exec(listed.stdout)?.[1];
  assert.ok(hint, listed.stdout);
  const shown = await runCli(["--agent", "pipeline", "--show", runId], { userDir: ws.root });
  assert.match(shown.stdout, new RegExp(`^Run ${runId} · agent pipeline · interrupted\n`));
  assert.ok(shown.stdout.includes(`Interrupted: continue it with ${hint}\n`), shown.stdout);
  const json = await runCli(["--agent", "pipeline", "--show", runId, "--json"], {
    userDir: ws.root,
  });
  assert.equal(JSON.parse(json.stdout).shownStatus, "interrupted");
  const listedJson = JSON.parse(
    (await runCli(["--agent", "pipeline", "--runs", "--json"], { userDir: ws.root })).stdout,
  );
  assert.equal(listedJson[0].shownStatus, "interrupted");

  // A resume whose backend refuses its key leaves the run as it was (not failed), and no key
  // reaches the run's files.
  const server = startFakeServer([openAiError(401, "invalid_request_error", "Incorrect API key")]);
  try {
    const refused = await runCli(
      [
        "--agent",
        "pipeline",
        "--resume",
        runId,
        "--backend",
        "openai",
        "--model",
        "m1",
        "--base-url",
        `http://user:url-secret@${new URL(server.url).host}/v1`,
      ],
      { userDir: ws.root, env: { OPENAI_API_KEY: "sk-test-never-recorded" } },
    );
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /BACKEND_AUTH|401/);
    assert.match(refused.stderr, /was left as it was \(interrupted\)/);
  } finally {
    await server.close();
  }
  const after = (await store.loadCheckpoint(runId))!;
  assert.equal(after.status, "running");
  assert.deepEqual(after.state, before.state);
  const files = await Array.fromAsync(Deno.readDir(ws.runDir));
  for (const file of files) {
    if (!file.isFile) continue;
    const text = await Deno.readTextFile(`${ws.runDir}/${file.name}`);
    assert.doesNotMatch(text, /sk-test-never-recorded|url-secret/, file.name);
  }

  // The hint, as printed (no --script), resumes on the recorded scripted backend.
  const args = printedArgs(hint, ws.root);
  const resumed = await runCli(args, { userDir: ws.root });
  assert.equal(resumed.code, 0, resumed.stderr);
  const done = (await store.loadCheckpoint(runId))!;
  assert.equal(done.status, "completed");
  assert.deepEqual(done.state.backendChoice, { backend: "scripted", script: ws.script });
});
