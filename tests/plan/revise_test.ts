/**
 * `revisePlan` (seed 002 Plan Review, "Regenerate plan (ask LLM to revise)") and `run-plan`'s
 * `--revise "…"` / "r" at the start question.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { main } from "../../src/cli/run_plan.ts";
import { PlanGenerationError, revisePlan } from "../../src/plan/generate.ts";
import { parsePlan } from "../../src/plan/schema.ts";
import type { Plan } from "../../src/plan/types.ts";
import { createToolRegistry } from "../../src/tools/builtin.ts";

const tools = createToolRegistry();

function current(): Plan {
  const plan = parsePlan({
    id: "plan_r",
    taskId: "task_r",
    task: "Back up the config",
    version: 3,
    createdAt: "2025-01-01T00:00:00.000Z",
    steps: [
      { id: "read", description: "Read config", tool: "read_file", args: { path: "config.json" } },
      {
        id: "backup",
        description: "Write the backup",
        tool: "write_file",
        args: { path: "backup.json", content: "$read" },
        dependsOn: ["read"],
      },
      { id: "list", description: "List files", tool: "list_dir", args: { path: "." } },
    ],
  });
  plan.steps[0].status = "completed";
  plan.steps[0].result = { ok: true, value: "{}", duration: 1, timestamp: "2025-01-01T00:00:01Z" };
  // Left running by a killed run: it must stay running (not become ready or pending).
  plan.steps[1].status = "running";
  return plan;
}

const revisedSteps = [
  { id: "read", description: "Read config", tool: "read_file", args: { path: "config.json" } },
  {
    id: "backup",
    description: "Write the backup",
    tool: "write_file",
    args: { content: "$read", path: "backup.json" }, // same args, other key order
    dependsOn: ["read"],
  },
  { id: "list", description: "List the backups", tool: "list_dir", args: { path: "backups" } },
  {
    id: "verify",
    description: "Read the backup back",
    tool: "read_file",
    args: { path: "backup.json" },
    dependsOn: ["backup"],
  },
];

Deno.test("revisePlan: plan + feedback → the next validated version; unchanged finished steps keep their state", async () => {
  const backend = new ScriptedBackend({
    "plan.revise": [
      // Invalid first: an unknown tool. The re-ask lists the problem.
      { output: { steps: [{ id: "x", description: "X", tool: "rm_rf", args: {} }] } },
      { output: { steps: revisedSteps } },
    ],
  });
  const before = current();
  const next = await revisePlan(before, "Also read the backup back, and list the backups folder", {
    backend,
    tools,
    workspaceSnapshot: "config.json (2 B)",
  });
  assert.equal(next.id, "plan_r");
  assert.equal(next.taskId, "task_r");
  assert.equal(next.version, 4);
  assert.ok(next.updatedAt);
  assert.deepEqual(next.steps.map((s) => [s.id, s.status]), [
    ["read", "completed"],
    ["backup", "running"],
    ["list", "pending"],
    ["verify", "pending"],
  ]);
  assert.equal(next.steps[0].result?.value, "{}");
  assert.equal(before.version, 3, "the given plan is not modified");
  assert.equal(before.steps.length, 3);

  const [first, second] = backend.calls;
  assert.equal(first.stepId, "plan.revise");
  assert.equal(first.kind, "step");
  assert.match(first.prompt, /User's request: "Back up the config"/);
  assert.match(first.prompt, /The current plan \(version 3\)/);
  assert.match(first.prompt, /"status": "completed"/);
  assert.match(first.prompt, /"Also read the backup back, and list the backups folder"/);
  assert.equal(second.kind, "reask");
  assert.match(
    second.prompt,
    /Your previous answer was rejected: your plan could not be used\.\n- .*rm_rf/,
  );
});

Deno.test("revisePlan: still invalid after the re-ask → PlanGenerationError; empty feedback → USAGE", async () => {
  const bad = { output: { steps: [{ id: "x", description: "X", tool: "rm_rf", args: {} }] } };
  const backend = new ScriptedBackend({ "plan.revise": [bad, bad] });
  await assert.rejects(
    revisePlan(current(), "anything", { backend, tools, workspaceSnapshot: "" }),
    PlanGenerationError,
  );
  await assert.rejects(
    revisePlan(current(), "  ", { backend, tools, workspaceSnapshot: "" }),
    (e: Error & { code?: string }) => e.code === "USAGE",
  );
});

async function workspaceWithPlan(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "run_plan_revise_" });
  await Deno.writeTextFile(join(dir, "config.json"), "{}");
  const plan = current();
  plan.steps[1].status = "pending"; // a fresh plan for the CLI runs
  await Deno.writeTextFile(join(dir, "plan.json"), JSON.stringify(plan));
  await Deno.writeTextFile(
    join(dir, "answers.json"),
    JSON.stringify({ "plan.revise": [{ output: { steps: revisedSteps } }] }),
  );
  await Deno.mkdir(join(dir, "backups"));
  return dir;
}

Deno.test('run-plan --revise "…": writes the revised version, reviews it, then runs it', async () => {
  const dir = await workspaceWithPlan();
  let stdout = "";
  let stderr = "";
  const code = await main(
    ["plan.json", "--revise", "Also read the backup back", "--script", "answers.json", "--yes"],
    {
      cwd: dir,
      env: {},
      isTerminal: { stdin: false, stdout: false, stderr: false },
      stdin: null,
      stdout: { write: (t) => void (stdout += t) },
      stderr: { write: (t) => void (stderr += t) },
    },
  );
  assert.equal(code, 0, stderr);
  assert.match(stderr, /Revising the plan: Also read the backup back/);
  assert.match(stderr, /Plan revised: version 4, 4 steps, written to .*plan\.json/);
  assert.match(stdout, /Read the backup back/);
  const saved = JSON.parse(await Deno.readTextFile(join(dir, "plan.json"))) as Plan;
  assert.equal(saved.version, 4);
  assert.deepEqual(saved.steps.map((s) => s.status), [
    "completed",
    "completed",
    "completed",
    "completed",
  ]);
  assert.equal(await Deno.readTextFile(join(dir, "backup.json")), "{}");
});

Deno.test('run-plan on a terminal: "r" + feedback revises, shows the new review, then asks again', async () => {
  const dir = await workspaceWithPlan();
  let stdout = "";
  let stderr = "";
  const answers = "r\nAlso read the backup back\nn\n";
  const code = await main(["plan.json", "--script", "answers.json"], {
    cwd: dir,
    env: {},
    isTerminal: { stdin: true, stdout: false, stderr: false },
    stdin: ReadableStream.from([new TextEncoder().encode(answers)]),
    stdout: { write: (t) => void (stdout += t) },
    stderr: { write: (t) => void (stderr += t) },
  });
  assert.equal(code, 0, stderr);
  assert.match(stderr, /\[r\]evise the plan with feedback: What should change\? Revising the plan/);
  assert.match(stderr, /Not started; nothing ran\./);
  assert.equal(stdout.match(/Plan Review/g)?.length, 2, "the revised plan is reviewed again");
  const saved = JSON.parse(await Deno.readTextFile(join(dir, "plan.json"))) as Plan;
  assert.equal(saved.version, 4);
  assert.equal(saved.steps.length, 4);
});
