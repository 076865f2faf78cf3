/**
 * Record and replay through the real CLI and the real openai/anthropic backends, against local
 * servers speaking their wire protocols: `--record` writes a replay file with the key redacted,
 * `--script` replays it with the same history, an edited prompt fails with a diff (exit 1), and
 * `--show RUN_ID --as-script` turns the recorded run into the same calls.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { copyDir, finish, REPO_ROOT, spawnCli } from "../cli/helpers.ts";
import {
  anthropicMessage,
  type FakeReply,
  openAiCompletion,
  startFakeServer,
} from "../llm/fake_server.ts";

const SECRET = "sk-live-5e3cr3t-k3y-0042";

async function runAgent(userDir: string, args: string[], env: Record<string, string> = {}) {
  return await finish(spawnCli("run-agent", args, { userDir, env }));
}

const BACKENDS: {
  name: string;
  keyVar: string;
  reply: (text: string) => FakeReply;
  baseUrl: (url: string) => string;
}[] = [
  {
    name: "openai",
    keyVar: "OPENAI_API_KEY",
    reply: (t) => openAiCompletion(t),
    baseUrl: (u) => `${u}/v1`,
  },
  {
    name: "anthropic",
    keyVar: "ANTHROPIC_API_KEY",
    reply: (t) => anthropicMessage(t),
    baseUrl: (u) => u,
  },
];

for (const backend of BACKENDS) {
  Deno.test(`replay cli (${backend.name}): --record then --script gives the same history; the key is redacted; an edited prompt fails with a diff`, async () => {
    const userDir = await Deno.makeTempDir({ prefix: "stepflow-replay-cli-" });
    // The model echoes the key: a recording must still never hold it.
    const server = startFakeServer([
      backend.reply(`Leaves fall on the path\nthe key is ${SECRET}\nautumn walks on home`),
      backend.reply('{"result":"ng","message":"line 2 is off"}'),
      backend.reply(
        "Red leaves on the path\nthe old gate creaks in the wind\nautumn walks us home",
      ),
      backend.reply('{"result":"ok","message":"5-7-5"}'),
    ]);
    try {
      await copyDir(join(REPO_ROOT, ".agent", "haiku"), join(userDir, ".agent", "haiku"));
      const base = ["--agent", "haiku", "--topic", "autumn", "--json"];
      const recorded = await runAgent(userDir, [
        ...base,
        "--backend",
        backend.name,
        "--base-url",
        backend.baseUrl(server.url),
        "--model",
        "m-1",
        "--record",
        "recordings/haiku.yaml",
      ], { [backend.keyVar]: SECRET });
      assert.equal(recorded.code, 0, recorded.stderr);
      assert.match(
        recorded.stderr,
        /Recorded 4 backend calls of run \S+ in recordings\/haiku\.yaml/,
      );
      const recordedResult = JSON.parse(recorded.stdout);
      const text = await Deno.readTextFile(join(userDir, "recordings/haiku.yaml"));
      assert.ok(!text.includes(SECRET), "the key leaked into the recording");
      assert.match(text, new RegExp(`\\[redacted:${backend.keyVar}\\]`));
      const doc = parseYaml(text) as Record<string, Record<string, unknown>[]>;
      assert.equal(doc["draft.haiku"][0].model, "m-1");
      assert.match(String(doc["draft.haiku"][0].fingerprint), /^sha256:[0-9a-f]{64}$/);

      // Replay: no server, no key, the same history.
      const replayed = await runAgent(userDir, [...base, "--script", "recordings/haiku.yaml"], {
        [backend.keyVar]: SECRET,
      });
      assert.equal(replayed.code, 0, replayed.stderr);
      const replayedResult = JSON.parse(replayed.stdout);
      const path = (r: { state: { history: Record<string, unknown>[] } }) =>
        r.state.history.map((h) => [h.stepId, h.intent, h.transition, h.nextStepId, h.checkResult]);
      assert.deepEqual(path(replayedResult), path(recordedResult));
      assert.equal(server.requests.length, 4);

      // The recorded run, turned into a replay file afterwards, holds the same calls.
      const shown = await runAgent(userDir, [
        "--agent",
        "haiku",
        "--show",
        recordedResult.runId,
        "--as-script",
      ], { [backend.keyVar]: SECRET });
      assert.equal(shown.code, 0, shown.stderr);
      assert.ok(!shown.stdout.includes(SECRET));
      const again = parseYaml(shown.stdout) as Record<string, Record<string, unknown>[]>;
      assert.deepEqual(
        again["draft.haiku"].map((e) => [e.text, e.fingerprint]),
        doc["draft.haiku"].map((e) => [e.text, e.fingerprint]),
      );

      // An edited prompt fails the replay with the step, the call and a diff.
      const prompt = join(userDir, ".agent/haiku/prompts/steps/draft/haiku/f_default.md");
      const before = await Deno.readTextFile(prompt);
      await Deno.writeTextFile(prompt, before.replace("three lines only", "three short lines"));
      const drifted = await runAgent(userDir, [
        "--agent",
        "haiku",
        "--topic",
        "autumn",
        "--script",
        "recordings/haiku.yaml",
      ]);
      assert.equal(drifted.code, 1, drifted.stderr);
      assert.match(drifted.stdout, /REPLAY_PROMPT_CHANGED/);
      assert.match(drifted.stdout, /step prompt of step "draft\.haiku" changed/);
      assert.match(drifted.stdout, /- .*three lines only/);
      assert.match(drifted.stdout, /\+ .*three short lines/);
      assert.match(drifted.stderr, /record it again with --record FILE/);
      const lenient = await runAgent(userDir, [
        "--agent",
        "haiku",
        "--topic",
        "autumn",
        "--script",
        "recordings/haiku.yaml",
        "--replay",
        "lenient",
      ]);
      assert.equal(lenient.code, 0, lenient.stderr);
      assert.match(lenient.stderr, /replay drift \(lenient\)/);
    } finally {
      await server.close();
      await Deno.remove(userDir, { recursive: true });
    }
  });
}

Deno.test("replay cli: misplaced replay flags are usage errors that say what to add", async () => {
  const userDir = await Deno.makeTempDir({ prefix: "stepflow-replay-cli-" });
  try {
    await copyDir(join(REPO_ROOT, ".agent", "haiku"), join(userDir, ".agent", "haiku"));
    const asScript = await runAgent(userDir, ["--agent", "haiku", "--as-script"]);
    assert.equal(asScript.code, 2);
    assert.match(asScript.stderr, /--as-script .*add --show RUN_ID/);
    const replay = await runAgent(userDir, [
      "--agent",
      "haiku",
      "--topic",
      "x",
      "--replay",
      "lenient",
    ]);
    assert.equal(replay.code, 2);
    assert.match(replay.stderr, /--replay .*add --script FILE/);
    const bad = await runAgent(userDir, [
      "--agent",
      "haiku",
      "--topic",
      "x",
      "--script",
      ".agent/haiku/demo.script.yaml",
      "--replay",
      "loose",
    ]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--replay expects strict or lenient, got "loose"/);
  } finally {
    await Deno.remove(userDir, { recursive: true });
  }
});
