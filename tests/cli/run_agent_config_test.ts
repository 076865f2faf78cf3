/**
 * `deno task run-agent` and the agent's configuration: load-time schema compilation in
 * --validate, no --redrive hint for configuration failures, typos in flags and agent names.
 * Each test spawns the real task from a temp user folder and checks stdout, stderr and exit code.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { hasStackTrace, runCli, work, writeFiles, writeTinyAgent } from "./helpers.ts";

async function withUserDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-cli-cfg-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("run-agent --validate: an output schema that does not compile is a load error naming file, pointer and step", async () => {
  await withUserDir(async (user) => {
    const dir = await writeTinyAgent(user, "tiny");
    const file = join(dir, "schemas", "task.schema.json");
    const schema = JSON.parse(await Deno.readTextFile(file));
    schema.definitions["complete.task"].type = "objcet";
    await Deno.writeTextFile(file, JSON.stringify(schema));
    const result = await runCli(["--agent", "tiny", "--validate"], { userDir: user });
    assert.equal(result.code, 2, result.stderr);
    assert.match(
      result.stdout,
      /1\. steps_registry\.json: step "complete\.task": outputSchemaRef: schema #\/definitions\/complete\.task in .*task\.schema\.json does not compile: schema is invalid: \/type must be equal to one of the allowed values; "objcet" is not a JSON Schema type \(did you mean "object"\?\)/,
    );
    assert.ok(!hasStackTrace(result.stderr), result.stderr);
  });
});

/** Adds `key` to the handoffFields of the tiny agent's work step. */
async function handOff(dir: string, key: string) {
  const file = join(dir, "steps_registry.json");
  const registry = JSON.parse(await Deno.readTextFile(file));
  registry.steps["work.task"].structuredGate.handoffFields = [key];
  await Deno.writeTextFile(file, JSON.stringify(registry));
}

Deno.test("run-agent --validate: a prompt variable no path provides exits 2; one some path provides is a warning naming the path", async () => {
  await withUserDir(async (user) => {
    await writeTinyAgent(user, "never", { prompt: "Work on {uv-topic} for {handoff.reporter}." });
    // The work step hands "reporter" off itself: set on a repeat, not on the first visit.
    const some = await writeTinyAgent(user, "some", { prompt: "Again for {handoff.reporter}." });
    await handOff(some, "reporter");
    const [never, sometimes] = await Promise.all([
      runCli(["--agent", "never", "--validate"], { userDir: user }),
      runCli(["--agent", "some", "--validate"], { userDir: user }),
    ]);
    assert.equal(never.code, 2, never.stderr);
    assert.match(
      never.stdout,
      /step "work\.task": its prompt uses \{handoff\.reporter\}, but no step hands "reporter" off/,
    );
    assert.ok(!hasStackTrace(never.stderr), never.stderr);
    assert.equal(sometimes.code, 0, sometimes.stderr + sometimes.stdout);
    assert.match(
      sometimes.stdout + sometimes.stderr,
      /step "work\.task": its prompt uses \{handoff\.reporter\}, but some path from the entry step "work\.task" reaches it without passing a step that hands "reporter" off \("work\.task"\): work\.task, so a run/,
    );
  });
});

Deno.test("run-agent: a run that fails on the agent's own files gets no --redrive hint", async () => {
  await withUserDir(async (user) => {
    // "verdict" is handed off by the step itself (on a repeat), so its first visit has none:
    // a load warning, and the run fails on the agent's files.
    const dir = await writeTinyAgent(user, "tiny", {
      prompt: "Work on {uv-topic}, verdict {handoff.verdict}.",
    });
    await handOff(dir, "verdict");
    await writeFiles(user, { "s.json": { "work.task": [work("complete")] } });
    const result = await runCli(["--agent", "tiny", "--topic", "x", "--script", "s.json"], {
      userDir: user,
    });
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stdout, /PROMPT_VARIABLES_MISSING/);
    assert.doesNotMatch(result.stderr, /--redrive/);
    assert.match(
      result.stderr,
      /problem in the agent's files, not in the run: fix it, check it with `\S.* validate tiny`, then start a new run/,
    );
  });
});

Deno.test("run-agent: unknown flags are named with a did-you-mean in every mode; agent typos too", async () => {
  await withUserDir(async (user) => {
    await writeTinyAgent(user, "my-agent");
    await writeTinyAgent(user, "other");
    const [noAgent, runs, listing, typo, objectKey] = await Promise.all([
      runCli(["--lst"], { userDir: user }),
      runCli(["--runs", "--verbse"], { userDir: user }),
      runCli(["--list", "--jsn"], { userDir: user }),
      runCli(["--agent", "my-agnet", "--topic", "x"], { userDir: user }),
      runCli(["--agent", "my-agent", "--topic", "x", "--constructor", "y"], { userDir: user }),
    ]);
    const usage = (r: typeof noAgent, pattern: RegExp) => {
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stdout, "");
      assert.match(r.stderr, pattern);
      assert.ok(!hasStackTrace(r.stderr), r.stderr);
    };
    usage(noAgent, /^error: Unknown option --lst\. Did you mean --list\?/);
    assert.doesNotMatch(noAgent.stderr, /Missing --agent/);
    usage(runs, /^error: Unknown option --verbse\. Did you mean --verbose\?/);
    usage(listing, /^error: Unknown option --jsn\. Did you mean --json\?/);
    usage(
      typo,
      /^error: Agent "my-agnet" not found: .*my-agnet\. Did you mean my-agent\? Agents in .*: my-agent, other\./,
    );
    usage(objectKey, /^error: Unknown option --constructor\.\n/);
  });
});
