/**
 * What a run sends when structured output goes through the prompt: the real runner over the
 * `issue-solver` agent folder, the `openai` backend through the official SDK, and a local server
 * that rejects `response_format: json_schema` with a 400 (as many local servers do). Each request
 * must carry only the step's own schema with the definitions it references, compactly, and the
 * kept conversation must stay within its budget.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { resolveOutputSchema } from "../../src/definition/output_schema.ts";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/mod.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import { openAiCompletion, openAiError, startFakeServer, stepRequest } from "./fake_server.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const AGENT_DIR = `${ROOT}.agent/issue-solver`;
const STEPS = ["initial.issue", "continuation.issue", "continuation.issue", "complete.issue"];
const INSTRUCTION = "Answer with a single JSON object that matches this JSON Schema";

type Message = { role: string; content: string };

async function demoOutputs(): Promise<Record<string, unknown>[]> {
  const script = parseYaml(await Deno.readTextFile(`${AGENT_DIR}/demo.script.yaml`)) as Record<
    string,
    { output: Record<string, unknown> }[]
  >;
  const used: Record<string, number> = {};
  return STEPS.map((id) => script[id][used[id] = (used[id] ?? -1) + 1].output);
}

async function stepSchema(stepId: string) {
  return (await resolveOutputSchema(AGENT_DIR, {
    file: "issue.schema.json",
    schema: `#/definitions/${stepId}`,
  })).schema;
}

Deno.test("the resolver attaches only the definitions a step's schema references", async () => {
  const initial = await stepSchema("initial.issue");
  assert.deepEqual(Object.keys(initial.definitions as object), ["next_action"]);
  assert.equal(initial.$schema, "http://json-schema.org/draft-07/schema#");
  const complete = await stepSchema("complete.issue");
  assert.equal(complete.definitions, undefined, "complete.issue references no definition");

  // Transitive references, both keywords, cycles, anchors.
  const dir = await Deno.makeTempDir({ prefix: "stepflow-schema-" });
  try {
    await Deno.mkdir(`${dir}/schemas`);
    await Deno.writeTextFile(
      `${dir}/schemas/s.schema.json`,
      JSON.stringify({
        definitions: {
          a: { type: "object", properties: { b: { $ref: "#/definitions/b" } } },
          b: { type: "array", items: { $ref: "#/$defs/c" } },
          unused: { type: "string" },
          loop: { properties: { self: { $ref: "#/definitions/loop" } } },
          anchored: { properties: { x: { $ref: "#thing" } } },
        },
        $defs: { c: { type: "string" }, d: { type: "number" } },
      }),
    );
    const resolve = (pointer: string) =>
      resolveOutputSchema(dir, { file: "s.schema.json", schema: pointer }).then((r) => r.schema);
    const a = await resolve("#/definitions/a");
    assert.deepEqual(Object.keys(a.definitions as object), ["b"], "b, through a; not unused");
    assert.deepEqual(Object.keys(a.$defs as object), ["c"]);
    const loop = await resolve("#/definitions/loop");
    assert.deepEqual(Object.keys(loop.definitions as object), ["loop"]);
    const anchored = await resolve("#/definitions/anchored");
    assert.equal(Object.keys(anchored.definitions as object).length, 5, "an anchor keeps all");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("json_schema rejected with a 400: each call carries only its step's schema, compactly", async () => {
  const outputs = await demoOutputs();
  const server = startFakeServer([
    openAiError(400, "invalid_request_error", "response_format type json_schema is unavailable"),
    ...outputs.map((o) => openAiCompletion(`Here it is:\n${JSON.stringify(o)}`)),
  ]);
  const warnings: string[] = [];
  try {
    const backend = new OpenAiBackend({
      baseUrl: `${server.url}/v1`,
      model: "qwen3",
      retry: { initialDelayMs: 1, maxDelayMs: 5 },
      onWarning: (w) => warnings.push(w),
    });
    const definition = await loadAgentDefinition("issue-solver", { cwd: ROOT });
    const result = await new StepFlowRunner(definition, { backend }).run({
      args: { topic: "Fix the flaky login test" },
      cwd: ROOT,
    });
    assert.equal(result.success, true, JSON.stringify(result.error));
    assert.deepEqual(result.state.history.map((h) => h.stepId), STEPS);
    assert.equal(warnings.length, 1);
    assert.equal(server.requests.length, 5, "one rejected native call, then four prompted ones");

    // The native attempt: the step's schema with only the definitions it references.
    const native = server.requests[0].body.response_format as {
      json_schema: { schema: Record<string, unknown> };
    };
    assert.deepEqual(native.json_schema.schema, await stepSchema("initial.issue"));

    // The prompted calls: the same schema, compact, in the newest user turn only.
    for (const [n, stepId] of STEPS.entries()) {
      const request = server.requests[n + 1];
      assert.equal(request.body.response_format, undefined);
      const messages = request.body.messages as Message[];
      const last = messages.at(-1)!;
      assert.equal(last.role, "user");
      const compact = JSON.stringify(await stepSchema(stepId));
      assert.ok(
        last.content.endsWith(
          `${INSTRUCTION}, and nothing else\n(no prose before or after it):\n\`\`\`json\n${compact}\n\`\`\``,
        ),
        `call ${n + 1}: ${last.content.slice(-300)}`,
      );
      for (const other of STEPS.filter((s) => s !== stepId)) {
        assert.ok(!last.content.includes(`"const":"${other}"`), `call ${n + 1} carries ${other}`);
      }
      const earlier = messages.slice(0, -1).filter((m) => m.content.includes(INSTRUCTION));
      assert.equal(earlier.length, 0, `call ${n + 1}: the history repeats the schema`);
    }
    const sent = (server.requests[4].body.messages as Message[])
      .reduce((sum, m) => sum + m.content.length, 0);
    // Four steps of prompts and answers: 7.2k characters (29.8k before the schema was narrowed,
    // compacted and left out of the kept turns).
    assert.ok(sent < 9_000, `the fourth call sent ${sent} characters`);
  } finally {
    await server.close();
  }
});

Deno.test("the kept conversation is bounded in characters, oldest turns first, system prompt kept", async () => {
  const server = startFakeServer();
  try {
    const backend = new OpenAiBackend({
      baseUrl: `${server.url}/v1`,
      model: "m",
      conversation: { maxChars: 2_500 },
    });
    let sessionId: string | undefined;
    for (let n = 1; n <= 6; n++) {
      server.push(openAiCompletion(`answer ${n} ${"a".repeat(500)}`));
      const res = await backend.complete(
        stepRequest({
          prompt: `question ${n} ${"q".repeat(500)}`,
          systemPrompt: "SYSTEM",
          sessionId,
        }),
      );
      sessionId = res.sessionId;
    }
    const messages = server.requests[5].body.messages as Message[];
    assert.deepEqual(messages[0], { role: "system", content: "SYSTEM" });
    // Each pair is ~1,020 characters: two pairs fit in 2,500, the oldest three were dropped.
    assert.deepEqual(
      messages.slice(1).map((m) => m.content.split(" ").slice(0, 2).join(" ")),
      ["question 4", "answer 4", "question 5", "answer 5", "question 6"],
    );
  } finally {
    await server.close();
  }
});
