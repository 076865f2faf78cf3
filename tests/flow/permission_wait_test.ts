/**
 * Permission asks that wait (`behavior.permissionAsks: "wait"`), through the real runner on a real
 * agent folder: a Bash call that asks (permissionMode `default`) with nobody to ask makes the run
 * wait like an input step; the answer `{ "decision": "allow" | "deny" }` resumes the run inside the
 * step — the turns before are replayed, not asked again — and the call runs or is refused, its
 * record naming who answered.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepflowError } from "../../src/errors.ts";
import { answerFormOf } from "../../src/flow/input_request.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend, type ScriptedScript } from "../../src/llm/scripted.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { seed001Files, seed001Script, writeAgent } from "./fixtures.ts";

function script(): ScriptedScript {
  return seed001Script({
    s_a8f3: ["Plan: append a line."],
    s_b2c1: [
      { toolCalls: [{ name: "Read", arguments: { file_path: "src/app.ts" } }] },
      { toolCalls: [{ name: "Bash", arguments: { command: "echo done >> out.txt" } }] },
      "Done what I could.",
    ],
  });
}

async function setup(permissionAsks?: "wait" | "refuse") {
  const root = await Deno.makeTempDir({ prefix: "stepflow_permission_wait_" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    // Bash is offered, but only `npm test` runs without asking.
    allowedTools: ["Read", "Bash(npm test)"],
    permissionMode: "default",
    ...(permissionAsks ? { permissionAsks } : {}),
  });
  await writeAgent(root, "code-improver", files);
  await Deno.mkdir(join(root, "src"));
  await Deno.writeTextFile(join(root, "src/app.ts"), "export const answer = 41;\n");
  return { root, def: await loadAgentDefinition("code-improver", { cwd: root }) };
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

for (const decision of ["allow", "deny"] as const) {
  Deno.test(`a Bash call that asks waits for permission; "${decision}" resumes inside the step`, async () => {
    const { root, def } = await setup("wait");
    try {
      const store = new MemoryRunStore();
      const first = new ScriptedBackend(script());
      const waiting = await new StepFlowRunner(def, { backend: first, store }).run({
        args: { topic: "t" },
        cwd: root,
      });
      assert.equal(waiting.completionReason, "waiting");
      const request = waiting.waiting!;
      assert.equal(request.stepId, "s_b2c1");
      assert.deepEqual(
        { tool: request.permission?.tool, target: request.permission?.target },
        { tool: "Bash", target: "echo done >> out.txt" },
      );
      assert.match(request.prompt, /asks to run Bash echo done >> out\.txt: .*Allow it\?/);
      assert.equal(await exists(join(root, "out.txt")), false, "nothing ran while it waits");
      assert.equal((await store.loadCheckpoint(waiting.runId))!.status, "waiting");
      // The dashboard's and the terminal's form: one choice.
      const form = await answerFormOf(def, request);
      assert.deepEqual(form.fields.map((f) => [f.name, f.choices]), [
        ["decision", ["allow", "deny"]],
        ["reason", undefined],
      ]);

      // A bad answer is refused; nothing is recorded.
      await assert.rejects(
        () =>
          new StepFlowRunner(def, { backend: new ScriptedBackend(script()), store })
            .answer(waiting.runId, { decision: "maybe" }),
        (e) => e instanceof StepflowError && e.code === "INPUT_ANSWER_INVALID",
      );
      const backend = new ScriptedBackend(script());
      const result = await new StepFlowRunner(def, { backend, store }).answer(
        waiting.runId,
        decision === "deny" ? { decision, reason: "not on a Friday" } : { decision },
        { answeredBy: "ops" },
      );
      assert.equal(result.success, true, JSON.stringify(result.error));
      assert.equal(await exists(join(root, "out.txt")), decision === "allow");
      // Resumed inside the step: the model was not asked its first two turns again.
      const turns = backend.toolTurns.filter((t) => t.stepId === "s_b2c1" && t.kind === "step");
      assert.equal(turns.length, 1);
      const last = turns[0].messages.at(-1)!;
      assert.equal(last.role, "tool");
      const bash = last.role === "tool" ? last.results[0] : undefined;
      assert.equal(bash?.isError, decision === "deny");
      // A denial's reason is told to the model with the refusal.
      if (decision === "deny") {
        assert.match(String(bash?.content), /denied when asked: not on a Friday/);
      }
      const log = await store.readLog(waiting.runId);
      const call = log.find((e) => e.type === "tool_call" && e.tool === "Bash")!;
      assert.equal(
        call.decidedBy,
        `${decision === "allow" ? "approved" : "denied"} when asked by ops`,
      );
      assert.equal(log.filter((e) => e.type === "input_answer").length, 1);
      // The history is one entry per step, as without the wait.
      assert.deepEqual(result.state.history.map((h) => h.stepId), [
        "s_a8f3",
        "s_b2c1",
        "s_c9d4",
      ]);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  });
}

Deno.test("without the opt-in, an ask with nobody to ask is refused (the run does not wait)", async () => {
  const { root, def } = await setup();
  try {
    const result = await new StepFlowRunner(def, {
      backend: new ScriptedBackend(script()),
      store: new MemoryRunStore(),
    }).run({ args: { topic: "t" }, cwd: root });
    assert.equal(result.success, true);
    assert.equal(await exists(join(root, "out.txt")), false);
    // The runner option overrides agent.json.
    const store = new MemoryRunStore();
    const waits = await new StepFlowRunner(def, {
      backend: new ScriptedBackend(script()),
      store,
      permissionAsks: "wait",
    }).run({ args: { topic: "t" }, cwd: root });
    assert.equal(waits.completionReason, "waiting");
    // A resume without the answer says how to answer.
    await assert.rejects(
      () =>
        new StepFlowRunner(def, { backend: new ScriptedBackend(script()), store }).run({
          resume: waits.runId,
        }),
      (e) =>
        e instanceof StepflowError && e.code === "INPUT_WAITING" &&
        /waits for permission to run Bash in step "s_b2c1"/.test(e.message) &&
        // The next step is data: the CLI prints it as a command, the dashboard as a button.
        JSON.stringify(e.details?.next) ===
          JSON.stringify({
            action: "answer",
            runId: waits.runId,
            args: ["--value", '{"decision":"allow"}'],
          }),
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a permission answer recorded for another process (as workers do) resumes inside the step there", async () => {
  const { root, def } = await setup("wait");
  try {
    const store = new MemoryRunStore();
    const waiting = await new StepFlowRunner(def, { backend: new ScriptedBackend(script()), store })
      .run({ args: { topic: "t" }, cwd: root });
    assert.equal(waiting.completionReason, "waiting");
    const recorded = await new StepFlowRunner(def, { store }).recordAnswer(
      waiting.runId,
      { decision: "allow" },
      { answeredBy: "dashboard" },
    );
    assert.deepEqual(recorded.permission?.tool, "Bash");
    // The checkpoint that left `waiting` still says where the step left off.
    const checkpoint = (await store.loadCheckpoint(waiting.runId))!;
    assert.equal(checkpoint.status, "running");
    assert.ok((checkpoint.state as { inStep?: unknown }).inStep);
    const backend = new ScriptedBackend(script());
    const result = await new StepFlowRunner(def, { backend, store }).run({ resume: waiting.runId });
    assert.equal(result.success, true, JSON.stringify(result.error));
    assert.equal(await Deno.readTextFile(join(root, "out.txt")), "done\n");
    const call = (await store.readLog(waiting.runId)).find((e) =>
      e.type === "tool_call" && e.tool === "Bash"
    )!;
    assert.equal(call.decidedBy, "approved when asked by dashboard");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
