import assert from "node:assert/strict";
import { join } from "node:path";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { generatePlan, PlanGenerationError, snapshotWorkspace } from "../../src/plan/generate.ts";
import { createToolRegistry } from "../../src/tools/builtin.ts";

const tools = createToolRegistry();
const goodSteps = [
  {
    id: "step_1",
    description: "Read config.json",
    tool: "read_file",
    args: { path: "config.json" },
  },
  {
    id: "step_2",
    description: "Write the backup",
    tool: "write_file",
    args: { path: "config.backup.json", content: "$step_1" },
    dependsOn: ["step_1"],
  },
];

Deno.test("generatePlan sends the seed's prompt with the workspace and tools, and builds a pending plan", async () => {
  const backend = new ScriptedBackend({
    "plan.generate": [{ output: { steps: goodSteps, estimatedDuration: 30 } }],
  });
  const plan = await generatePlan({ id: "task_7", description: "Back up the config" }, {
    backend,
    tools,
    workspaceSnapshot: "config.json (20 B)",
    planId: "plan_7",
  });
  assert.equal(plan.id, "plan_7");
  assert.equal(plan.taskId, "task_7");
  assert.equal(plan.task, "Back up the config");
  assert.equal(plan.version, 1);
  assert.equal(plan.estimatedDuration, 30);
  assert.deepEqual(plan.steps.map((s) => [s.id, s.order, s.status]), [["step_1", 1, "pending"], [
    "step_2",
    2,
    "pending",
  ]]);
  const call = backend.calls[0];
  assert.equal(call.stepId, "plan.generate");
  assert.equal(call.agent, "plan");
  assert.match(
    call.prompt,
    /^You are an AI assistant helping a user accomplish a task in their workspace\.\n\nUser's request: "Back up the config"\n\nWorkspace contents:\nconfig\.json \(20 B\)\n\nAvailable tools:\n- read_file: Read a UTF-8/,
  );
  assert.match(call.prompt, /args: \{"type":"object","properties":\{"path":/);
  assert.match(call.prompt, /Generate a detailed plan as a JSON array of steps\. Each step must:/);
  assert.ok(call.outputSchema);
});

Deno.test("an invalid plan is re-asked once with every problem; the corrected plan is used", async () => {
  const backend = new ScriptedBackend({
    "plan.generate": [
      {
        output: {
          steps: [
            { id: "step_1", description: "Delete", tool: "delete_file", args: {} },
            {
              id: "step_2",
              description: "Read",
              tool: "read_file",
              args: { path: 3 },
              dependsOn: ["step_9"],
            },
          ],
        },
      },
      // The second answer is a bare list in prose (the prompt says "a JSON array of steps").
      `Here you go:\n${JSON.stringify(goodSteps)}`,
    ],
  });
  const plan = await generatePlan("Back up", { backend, tools, workspaceSnapshot: "" });
  assert.equal(plan.steps.length, 2);
  const reask = backend.calls[1];
  assert.equal(reask.kind, "reask");
  assert.match(
    reask.prompt,
    /\n---\nYour previous answer was rejected: your plan could not be used\.\n- Step "step_1": Unknown tool: delete_file/,
  );
  assert.match(reask.prompt, /- Step "step_2": Invalid args for read_file at args\.path/);
  assert.match(reask.prompt, /- Step "step_2": Unknown dependency: step_9/);
  assert.match(
    reask.prompt,
    /\nAnswer again with only the whole corrected plan as one JSON object in the same format\.$/,
  );
});

Deno.test("still invalid after the re-ask: PlanGenerationError lists the problems", async () => {
  const backend = new ScriptedBackend({
    "plan.generate": [
      "I cannot do that",
      {
        output: {
          steps: [{
            id: "a",
            description: "A",
            tool: "read_file",
            args: { path: "x" },
            dependsOn: ["a"],
          }],
        },
      },
    ],
  });
  await assert.rejects(
    generatePlan("Anything", { backend, tools, workspaceSnapshot: "" }),
    (e: PlanGenerationError) => {
      assert.ok(e instanceof PlanGenerationError);
      assert.equal(e.code, "PLAN_GENERATION_FAILED");
      assert.match(e.message, /circular dependencies: a → a/);
      return true;
    },
  );
  assert.equal(backend.calls.length, 2);
  assert.match(
    backend.calls[1].prompt,
    /Your previous answer was rejected: your answer contained no JSON object\.\n/,
  );
});

Deno.test("snapshotWorkspace lists folders and files with sizes, bounded", async () => {
  const root = await Deno.makeTempDir();
  await Deno.mkdir(join(root, "src"));
  await Deno.mkdir(join(root, "node_modules", "pkg"), { recursive: true });
  await Deno.writeTextFile(join(root, "src", "main.ts"), "x".repeat(2048));
  await Deno.writeTextFile(join(root, "config.json"), "{}");
  await Deno.writeTextFile(join(root, "node_modules", "pkg", "index.js"), "");
  assert.equal(
    await snapshotWorkspace(root),
    ["config.json (2 B)", "node_modules/", "src/", "  main.ts (2.0 KB)"].join("\n"),
  );
  assert.equal(
    await snapshotWorkspace(root, { maxEntries: 1 }),
    "config.json (2 B)\n… at least 2 more entries not shown",
  );
  // Without a snapshot, generatePlan makes one from workspaceRoot.
  const backend = new ScriptedBackend({ "plan.generate": [{ output: { steps: goodSteps } }] });
  await generatePlan("x", { backend, tools, workspaceRoot: root });
  assert.match(
    backend.calls[0].prompt,
    /Workspace contents:\nconfig\.json \(2 B\)\nnode_modules\//,
  );
  assert.equal(backend.calls[0].cwd, root);
});
