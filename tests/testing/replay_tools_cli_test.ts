/**
 * Record and replay of a step with tools through the real CLI and the real openai/anthropic
 * backends, against local servers speaking their wire protocols: the recording holds one entry per
 * model turn (the tool calls with their ids and arguments, then the answer); replayed in a fresh
 * folder, the same tools run again, the files on disk and the history come out the same, and an
 * edited prompt of the tool step fails the replay with a diff.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { copyDir, finish, REPO_ROOT, spawnCli } from "../cli/helpers.ts";
import {
  anthropicMessage,
  anthropicToolUse,
  type FakeReply,
  openAiCompletion,
  openAiToolCalls,
  startFakeServer,
} from "../llm/fake_server.ts";

const KEY = "sk-live-t00l-k3y-0042";
const SAMPLE = 'export function greet(name: string): string {\n  return "Hello," + name;\n}\n';
const FIXED = 'export function greet(name: string): string {\n  return "Hello, " + name;\n}\n';

type Call = { id: string; name: string; args: Record<string, unknown> };

const BACKENDS: {
  name: string;
  keyVar: string;
  text: (text: string) => FakeReply;
  tools: (calls: Call[]) => FakeReply;
  baseUrl: (url: string) => string;
}[] = [
  {
    name: "openai",
    keyVar: "OPENAI_API_KEY",
    text: (t) => openAiCompletion(t),
    // OpenAI sends the arguments as JSON text.
    tools: (calls) =>
      openAiToolCalls(
        calls.map((c) => ({ id: c.id, name: c.name, arguments: JSON.stringify(c.args) })),
      ),
    baseUrl: (u) => `${u}/v1`,
  },
  {
    name: "anthropic",
    keyVar: "ANTHROPIC_API_KEY",
    text: (t) => anthropicMessage(t),
    tools: (calls) =>
      anthropicToolUse(calls.map((c) => ({ id: c.id, name: c.name, input: c.args }))),
    baseUrl: (u) => u,
  },
];

async function runAgent(userDir: string, args: string[], env: Record<string, string> = {}) {
  return await finish(spawnCli("run-agent", args, { userDir, env }));
}

/** The `tool_call` lines of a run's log, wherever the run store keeps it under `userDir`. */
async function toolCallLines(userDir: string, runId: string): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  for (const file of await filesUnder(userDir)) {
    if (!file.includes(runId) || !file.endsWith(".jsonl")) continue;
    for (const line of (await Deno.readTextFile(file)).split("\n")) {
      if (!line.trim()) continue;
      const entry = JSON.parse(line);
      if (entry.type === "tool_call") lines.push(entry);
    }
  }
  return lines;
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) out.push(...await filesUnder(path));
    else if (entry.isFile) out.push(path);
  }
  return out;
}

for (const backend of BACKENDS) {
  Deno.test(`replay cli (${backend.name}): a step with tools replays its tool calls; the tools run again with the same files and history`, async () => {
    const first = await Deno.makeTempDir({ prefix: "stepflow-replay-tools-" });
    const second = await Deno.makeTempDir({ prefix: "stepflow-replay-tools-" });
    const file = "tmp/tool-fixer-demo/greet.ts";
    const server = startFakeServer([
      // s_f1d0: writes the sample, reads it back, answers.
      backend.tools([{ id: "c_write", name: "Write", args: { file_path: file, content: SAMPLE } }]),
      backend.tools([{ id: "c_read", name: "Read", args: { file_path: file } }]),
      backend.text(`${file} line 2 joins "Hello," and the name without a space.`),
      backend.text('{"result":"ok","message":"file and line named"}'),
      // s_f1e0: fixes it, tries a refused rm, answers.
      backend.tools([
        {
          id: "c_edit",
          name: "Edit",
          args: { file_path: file, old_string: '"Hello," + name', new_string: '"Hello, " + name' },
        },
        { id: "c_rm", name: "Bash", args: { command: "rm -rf tmp/tool-fixer-demo" } },
      ]),
      backend.text('Fixed: line 2 now reads "Hello, " + name.'),
      backend.text('{"result":"ok","message":"a space after the comma"}'),
    ]);
    try {
      for (const dir of [first, second]) {
        await copyDir(join(REPO_ROOT, ".agent", "tool-fixer"), join(dir, ".agent", "tool-fixer"));
      }
      const base = ["--agent", "tool-fixer", "--topic", "the greeting misses a space", "--json"];
      const recorded = await runAgent(first, [
        ...base,
        "--backend",
        backend.name,
        "--base-url",
        backend.baseUrl(server.url),
        "--model",
        "m-1",
        "--record",
        "fixer.yaml",
      ], { [backend.keyVar]: KEY });
      assert.equal(recorded.code, 0, recorded.stderr);
      assert.equal(server.requests.length, 7);
      assert.equal(await Deno.readTextFile(join(first, file)), FIXED);
      const recordedResult = JSON.parse(recorded.stdout);

      // One entry per model turn: the calls with their ids and arguments, then the answer.
      const text = await Deno.readTextFile(join(first, "fixer.yaml"));
      const doc = parseYaml(text) as Record<string, Record<string, unknown>[]>;
      const find = doc["s_f1d0"];
      assert.equal(find.length, 3);
      assert.deepEqual(find[0].toolCalls, [
        { id: "c_write", name: "Write", arguments: { file_path: file, content: SAMPLE } },
      ]);
      assert.match(String(find[0].fingerprint), /^sha256:/);
      assert.equal(find[1].fingerprint, undefined, "only a call's first turn sends the prompt");
      assert.deepEqual(
        (find[1].toolCalls as { name: string }[]).map((c) => c.name),
        ["Read"],
      );
      assert.equal(find[2].toolCalls, undefined);
      assert.match(String(find[2].text), /line 2 joins/);
      assert.deepEqual(
        (doc["s_f1e0"][0].toolCalls as { id: string }[]).map((c) => c.id),
        ["c_edit", "c_rm"],
      );

      // Replay in a fresh folder, without server or key: the tools run again.
      await Deno.copyFile(join(first, "fixer.yaml"), join(second, "fixer.yaml"));
      const replayed = await runAgent(second, [...base, "--script", "fixer.yaml"]);
      assert.equal(replayed.code, 0, replayed.stderr);
      assert.equal(server.requests.length, 7, "a replay sends nothing");
      assert.equal(await Deno.readTextFile(join(second, file)), FIXED);
      const replayedResult = JSON.parse(replayed.stdout);
      const path = (r: { state: { history: Record<string, unknown>[] } }) =>
        r.state.history.map((h) => [h.stepId, h.transition, h.nextStepId, h.checkResult]);
      assert.deepEqual(path(replayedResult), path(recordedResult));
      // Each turn's usage is recorded once: the replayed totals are the recorded ones.
      assert.deepEqual(replayedResult.usage, recordedResult.usage);
      const calls = async (dir: string, runId: string) =>
        (await toolCallLines(dir, runId)).map((l) => [
          l.stepId,
          l.callId,
          l.tool,
          l.decision,
          l.isError,
          l.result,
        ]);
      const before = await calls(first, recordedResult.runId);
      assert.deepEqual(before.map((c) => [c[2], c[3]]), [
        ["Write", "allow"],
        ["Read", "allow"],
        ["Edit", "allow"],
        ["Bash", "deny"],
      ]);
      assert.deepEqual(await calls(second, replayedResult.runId), before);

      // Recorded again from the replayed run, the file holds the same turns.
      const shown = await runAgent(second, [
        "--agent",
        "tool-fixer",
        "--show",
        replayedResult.runId,
        "--as-script",
      ]);
      assert.equal(shown.code, 0, shown.stderr);
      const again = parseYaml(shown.stdout) as Record<string, Record<string, unknown>[]>;
      const turns = (d: typeof doc) =>
        Object.entries(d).filter(([k]) => k !== "_replay").map(([k, entries]) => [
          k,
          entries.map((e) => [e.toolCalls, e.text, e.output, e.fingerprint]),
        ]);
      assert.deepEqual(turns(again), turns(doc));

      // An edited prompt of the tool step fails the replay with a diff.
      const prompt = join(second, ".agent/tool-fixer/prompts/steps/phase/fix/f_default.md");
      const original = await Deno.readTextFile(prompt);
      await Deno.writeTextFile(prompt, `${original}\nAlso keep the file's style.\n`);
      await Deno.remove(join(second, "tmp"), { recursive: true });
      const drifted = await runAgent(second, [...base, "--script", "fixer.yaml"]);
      assert.equal(drifted.code, 1, drifted.stderr);
      assert.match(drifted.stdout, /REPLAY_PROMPT_CHANGED/);
      assert.match(drifted.stdout, /step prompt of step \\"s_f1e0\\" changed/);
      assert.match(drifted.stdout, /\+ .*Also keep the file's style\./);
    } finally {
      await server.close();
      await Deno.remove(first, { recursive: true });
      await Deno.remove(second, { recursive: true });
    }
  });
}
