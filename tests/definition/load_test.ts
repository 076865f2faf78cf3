import assert from "node:assert/strict";
import { stepflowPrefix } from "../../src/invocation.ts";
import { cp, symlink } from "node:fs/promises";
import { join } from "node:path";
import { AgentNotFoundError } from "../../src/definition/errors.ts";
import { listAgents, loadAgentDefinition, locateAgent } from "../../src/definition/load.ts";
import {
  assertProblems,
  copyExample,
  load,
  loadFails,
  REPO_ROOT,
  writeJson,
  writeText,
} from "./fixtures.ts";

const R = "steps_registry.json";

Deno.test("both example agents load with no errors and no warnings", async () => {
  const code = await loadAgentDefinition("code-improver", { cwd: REPO_ROOT });
  assert.equal(code.name, "code-improver");
  assert.equal(code.entryStepId, "s_a8f3");
  assert.deepEqual(Object.keys(code.steps), ["s_a8f3", "s_b2c1", "s_c9d4"]);
  assert.deepEqual(code.warnings, []);
  assert.equal(code.steps.s_b2c1.kind, "check");
  assert.deepEqual(code.steps.s_b2c1.iterations, { min: 1, max: 5 });
  assert.equal(code.limits.maxTotalIterations, 100, "the default");
  assert.deepEqual(code.agent.parameters?.topic, {
    type: "string",
    description: 'What to improve, e.g. "Refactoring authentication module"',
    required: true,
  });

  const issue = await loadAgentDefinition("issue-solver", { cwd: REPO_ROOT });
  assert.equal(issue.entryStepId, "initial.issue");
  assert.deepEqual(issue.warnings, []);
  assert.equal(issue.steps["complete.issue"].kind, "closing");
  assert.equal(issue.steps["initial.issue"].kind, "gate");
  assert.deepEqual(issue.steps["initial.issue"].prompt, {
    c1: "steps",
    c2: "initial",
    c3: "issue",
    edition: "default",
  });
  assert.equal(issue.limits.maxTotalIterations, 30);
  assert.equal(issue.basePath, "prompts");
  assert.equal(issue.registryFile, join(REPO_ROOT, ".agent", "issue-solver", R));
});

Deno.test("the definition is deeply frozen", async () => {
  const def = await loadAgentDefinition("issue-solver", { cwd: REPO_ROOT });
  assert.ok(Object.isFrozen(def));
  assert.ok(Object.isFrozen(def.steps));
  assert.ok(Object.isFrozen(def.steps["initial.issue"].gate?.allowedIntents));
  assert.ok(Object.isFrozen(def.registry.steps["initial.issue"].transitions));
  assert.ok(Object.isFrozen(def.agent.behavior.allowedTools));
  assert.ok(Object.isFrozen(def.warnings));
  assert.throws(() => {
    (def.steps["initial.issue"].iterations as { max: number }).max = 9;
  }, TypeError);
});

Deno.test("a name is looked up under <cwd>/.agent (or agentRoot); a path is a folder", async () => {
  const agent = await copyExample("issue-solver");
  assert.equal(locateAgent("issue-solver", { cwd: agent.root }).dir, agent.dir);
  assert.equal(locateAgent("./x", { cwd: "/p" }).dir, "/p/x");
  assert.equal(locateAgent("a/b", { cwd: "/p" }).dir, "/p/a/b");
  assert.equal(locateAgent("/abs/agent", { cwd: "/p" }).dir, "/abs/agent");
  assert.equal(locateAgent("x", { cwd: "/p", agentRoot: "agents" }).dir, "/p/agents/x");

  assert.equal((await loadAgentDefinition(agent.dir)).name, "issue-solver");
  const relative = await loadAgentDefinition("./.agent/issue-solver", { cwd: agent.root });
  assert.equal(relative.dir, agent.dir);

  const other = join(agent.root, "my-agents");
  await cp(agent.dir, join(other, "solver"), { recursive: true });
  const viaRoot = await loadAgentDefinition("solver", { cwd: agent.root, agentRoot: "my-agents" });
  assert.equal(viaRoot.dir, join(other, "solver"));
  assert.deepEqual(viaRoot.warnings, [
    'agent.json: name "issue-solver" differs from its folder name "solver"; rename one so runs and logs are named consistently.',
  ]);
});

Deno.test("a missing agent names the path and lists the agents that exist", async () => {
  const agent = await copyExample("issue-solver");
  await cp(agent.dir, join(agent.root, ".agent", "code-helper"), { recursive: true });
  await Deno.mkdir(join(agent.root, ".agent", "not-an-agent"));
  await assert.rejects(
    loadAgentDefinition("issue-solve", { cwd: agent.root }),
    (error: unknown) => {
      assert.ok(error instanceof AgentNotFoundError);
      assert.equal(error.code, "AGENT_NOT_FOUND");
      assert.deepEqual(error.available, ["code-helper", "issue-solver"]);
      assert.equal(
        error.message,
        `Agent "issue-solve" not found: ${
          join(agent.root, ".agent", "issue-solve")
        }. Did you mean issue-solver? Agents in ${
          join(agent.root, ".agent")
        }: code-helper, issue-solver. Create one with \`${
          stepflowPrefix(agent.root)
        } init issue-solve\`, or name an existing agent or folder.`,
      );
      return true;
    },
  );
  await assert.rejects(
    loadAgentDefinition("not-an-agent", { cwd: agent.root }),
    (error: unknown) =>
      error instanceof AgentNotFoundError &&
      error.message.startsWith(
        `No agent.json in the agent folder: ${
          join(agent.root, ".agent", "not-an-agent", "agent.json")
        }. Agents in`,
      ),
  );
  const empty = await Deno.makeTempDir();
  await assert.rejects(
    loadAgentDefinition("x", { cwd: empty }),
    /There are no agents in .*\.agent \(each agent is a folder holding an agent\.json\)/,
  );
  assert.deepEqual(
    (await listAgents({ cwd: agent.root })).map((a) => [a.name, a.displayName]),
    [["code-helper", "Issue Solver"], ["issue-solver", "Issue Solver"]],
  );
});

Deno.test("a JSONC registry: the .jsonc twin is used when the named file is missing", async () => {
  const agent = await copyExample("code-improver");
  const json = await Deno.readTextFile(join(agent.dir, R));
  await Deno.remove(join(agent.dir, R));
  const jsonc = json.replace(
    '"version": "2.0.0",',
    '// the registry, with comments\n  "version": "2.0.0", /* block */',
  ).replace('"onPass": { "complete": true },', '"onPass": { "complete": true, },');
  await writeText(join(agent.dir, "steps_registry.jsonc"), jsonc);
  const def = await load(agent);
  assert.equal(def.registryFile, join(agent.dir, "steps_registry.jsonc"));
  assert.deepEqual(def.warnings, []);
});

Deno.test("prompts.registry names the registry; missing or escaping registries are errors", async () => {
  const named = await copyExample("issue-solver", (_r, a) => {
    a.prompts.registry = "flow.jsonc";
  });
  await Deno.rename(join(named.dir, R), join(named.dir, "flow.jsonc"));
  assert.equal((await load(named)).registryFile, join(named.dir, "flow.jsonc"));

  const missing = await copyExample("issue-solver");
  await Deno.remove(join(missing.dir, R));
  assertProblems(await loadFails(missing), [
    `Registry file not found: ${
      join(missing.dir, R)
    }. Create it (see docs/agents.md "steps_registry.json"), or set prompts.registry in agent.json.`,
  ]);

  const escaping = await copyExample("issue-solver", (_r, a) => {
    a.prompts.registry = "../steps_registry.json";
  });
  assertProblems(await loadFails(escaping), [
    `agent.json: prompts.registry "../steps_registry.json" must name a file inside the agent folder ${escaping.dir}.`,
  ]);
});

Deno.test("JSON syntax errors name file:line:column; both files are reported", async () => {
  const agent = await copyExample("issue-solver");
  await writeText(
    join(agent.dir, "agent.json"),
    '{\n  "name": "issue-solver",\n  "behavior": {\n}',
  );
  await writeText(join(agent.dir, R), '{\n  "version": "1",\n  "steps": { "a": 1 x }\n}');
  assertProblems(await loadFails(agent), [
    "agent.json:4:2: invalid JSON: CloseBraceExpected.",
    "steps_registry.json:3:21: invalid JSON: InvalidSymbol.",
  ]);
});

Deno.test("shape errors name the file and JSON path; unknown keys are errors with a suggestion", async () => {
  const agent = await copyExample("code-improver", (r, a) => {
    a.behavior.completionTyp = "stepFlow";
    delete a.behavior.completionType;
    a.logging.format = "text";
    r.steps.s_a8f3.check.onPass = { nxt: "s_b2c1" };
    r.steps.s_b2c1.check.onPass = { next: "s_c9d4", complete: true };
    r.steps.s_c9d4.iterations = { min: 0 };
    r.steps.s_c9d4.promptt = r.steps.s_c9d4.prompt;
  });
  assertProblems(await loadFails(agent), [
    // the misspelt key is reported once (not also as "completionType is missing")
    'agent.json: behavior: unknown key "completionTyp" (did you mean "completionType"?).',
    'agent.json: logging.format: "text" is not allowed; expected one of "jsonl".',
    `${R}: steps.s_a8f3.check.onPass: unknown key "nxt" (did you mean "next"?).`,
    `${R}: steps.s_b2c1.check.onPass: mixes the forms { next } and { complete }; use exactly one of them.`,
    `${R}: steps.s_c9d4.iterations.min: Too small: expected number to be >=1.`,
    `${R}: steps.s_c9d4: unknown key "promptt" (did you mean "prompt"?).`,
  ]);
});

Deno.test("dotted step ids are quoted in JSON paths; gate intents are checked", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    r.steps["initial.issue"].structuredGate.allowedIntents = ["next", "finish"];
    r.stepz = {};
  });
  assertProblems(await loadFails(agent), [
    `${R}: steps["initial.issue"].structuredGate.allowedIntents[1]: "finish" is not allowed; expected one of "next", "repeat", "jump", "complete", "abort".`,
    `${R}: unknown key "stepz" (did you mean "steps"?).`,
  ]);
});

Deno.test("a malformed step does not hide flow problems elsewhere in the same registry", async () => {
  const agent = await copyExample("code-improver", (r) => {
    r.steps.s_a8f3.check.onFail = { retry: "yes" };
    r.steps.s_c9d4.check.onFail.fallback = "s_b2c2";
  });
  assertProblems(await loadFails(agent), [
    `${R}: steps.s_a8f3.check.onFail.retry: "yes" is not allowed; expected one of true.`,
    `${R}: step "s_c9d4": check.onFail.fallback "s_b2c2" is not a step in ${R}. Did you mean "s_b2c1"?`,
  ]);
});

Deno.test("limits: maxTotalIterations defaults to 100; timeouts are carried over", async () => {
  const agent = await copyExample("issue-solver", (_r, a) => {
    a.limits = { stepTimeoutMs: 1000, runTimeoutMs: 60000 };
  });
  assert.deepEqual((await load(agent)).limits, {
    maxTotalIterations: 100,
    stepTimeoutMs: 1000,
    runTimeoutMs: 60000,
  });
});

Deno.test("the gate-routed template loads once its placeholder name is filled in", async () => {
  const root = await Deno.makeTempDir();
  const dir = join(root, ".agent", "release-notes");
  await cp(join(REPO_ROOT, "agents", "templates", "gate-routed"), dir, { recursive: true });
  for await (const file of walkFiles(dir)) {
    const text = await Deno.readTextFile(file);
    await Deno.writeTextFile(file, text.replaceAll("__AGENT_NAME__", "release-notes"));
  }
  const def = await loadAgentDefinition("release-notes", { cwd: root });
  assert.equal(def.entryStepId, "initial.task");
  assert.deepEqual(def.warnings, []);
});

Deno.test("a symlinked agent folder loads", async () => {
  const agent = await copyExample("issue-solver");
  await symlink(agent.dir, join(agent.root, ".agent", "linked"));
  const def = await loadAgentDefinition("linked", { cwd: agent.root });
  assert.equal(def.entryStepId, "initial.issue");
  assert.deepEqual(
    (await listAgents({ cwd: agent.root })).map((a) => a.name),
    ["issue-solver", "linked"],
  );
});

Deno.test("a missing required object is named by its path", async () => {
  const agent = await copyExample("issue-solver");
  await writeJson(join(agent.dir, "agent.json"), { name: "issue-solver" });
  assertProblems(await loadFails(agent), ["agent.json: behavior: required object is missing."]);
});

async function* walkFiles(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* walkFiles(path);
    else yield path;
  }
}
