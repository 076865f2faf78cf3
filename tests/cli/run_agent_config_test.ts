/**
 * `deno task run-agent` and the agent's configuration (issue 10): load-time schema compilation in
 * --validate, no --redrive hint for configuration failures, typos in flags and agent names.
 * Each test spawns the real task from a temp user folder and checks stdout, stderr and exit code.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { hasStackTrace, runTask, work, writeFiles, writeTinyAgent } from "./helpers.ts";

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
    const result = await runTask(["--agent", "tiny", "--validate"], { userDir: user });
    assert.equal(result.code, 2, result.stderr);
    assert.match(
      result.stdout,
      /1\. steps_registry\.json: step "complete\.task": outputSchemaRef: schema #\/definitions\/complete\.task in .*task\.schema\.json does not compile: schema is invalid: \/type must be equal to one of the allowed values/,
    );
    assert.ok(!hasStackTrace(result.stderr), result.stderr);
  });
});

Deno.test("run-agent: a run that fails on the agent's own files gets no --redrive hint", async () => {
  await withUserDir(async (user) => {
    await writeTinyAgent(user, "tiny", {
      prompt: "Work on {uv-topic}, verdict {handoff.verdict}.",
    });
    await writeFiles(user, { "s.json": { "work.task": [work("complete")] } });
    const result = await runTask(["--agent", "tiny", "--topic", "x", "--script", "s.json"], {
      userDir: user,
    });
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stdout, /PROMPT_VARIABLES_MISSING/);
    assert.doesNotMatch(result.stderr, /--redrive/);
    assert.match(
      result.stderr,
      /problem in the agent's files, not in the run: fix it, check with --validate/,
    );
  });
});
