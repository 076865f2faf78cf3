import assert from "node:assert/strict";
import { assertValidPlan, PlanValidationError, validatePlan } from "../../src/plan/validate.ts";
import { parsePlan, planJsonSchema, PlanParseError } from "../../src/plan/schema.ts";
import { createToolRegistry } from "../../src/tools/builtin.ts";
import { makePlan, testTools } from "./helpers.ts";

const { tools } = testTools();
const codes = (plan: unknown) => validatePlan(plan, tools).problems.map((p) => p.code);

Deno.test("a valid plan has no problems", () => {
  const plan = makePlan([
    { id: "a", description: "A", tool: "work", args: { name: "a" } },
    {
      id: "b",
      description: "B",
      tool: "echo",
      args: { x: "$a", y: "text ${a}" },
      dependsOn: ["a"],
    },
  ]);
  assert.deepEqual(validatePlan(plan, tools), { ok: true, problems: [] });
});

Deno.test("a cycle is reported with its path", () => {
  const plan = makePlan([
    { id: "a", description: "A", tool: "work", args: { name: "a" }, dependsOn: ["c"] },
    { id: "b", description: "B", tool: "work", args: { name: "b" }, dependsOn: ["a"] },
    { id: "c", description: "C", tool: "work", args: { name: "c" }, dependsOn: ["b"] },
    { id: "d", description: "D", tool: "work", args: { name: "d" }, dependsOn: ["d"] },
  ]);
  const problems = validatePlan(plan, tools).problems;
  assert.deepEqual(problems.map((p) => p.code), ["CYCLE", "CYCLE"]);
  assert.deepEqual(problems[0].cycle, ["a", "c", "b", "a"]);
  assert.match(problems[0].message, /^Plan contains circular dependencies: a → c → b → a/);
  assert.deepEqual(problems[1].cycle, ["d", "d"]);
});

Deno.test("unknown tool, invalid args with the issue path, unknown and duplicate ids are all reported", () => {
  const plan = {
    id: "p",
    taskId: "t",
    version: 1,
    createdAt: "2025-01-01T00:00:00Z",
    steps: [
      { id: "a", description: "A", tool: "nope", args: {} },
      { id: "b", description: "B", tool: "work", args: { name: 3, ms: "slow" } },
      { id: "c", description: "C", tool: "work", args: { name: "c" }, dependsOn: ["zz", "a"] },
      { id: "a", description: "A again", tool: "work", args: { name: "a2" } },
    ],
  };
  const problems = validatePlan(plan, tools).problems;
  assert.deepEqual(problems.map((p) => p.code).sort(), [
    "DUPLICATE_STEP_ID",
    "INVALID_ARGS",
    "INVALID_ARGS",
    "UNKNOWN_DEPENDENCY",
    "UNKNOWN_TOOL",
  ]);
  const byCode = (code: string) => problems.filter((p) => p.code === code);
  assert.match(
    byCode("UNKNOWN_TOOL")[0].message,
    /Step "a": Unknown tool: nope\. Available tools: work, fail/,
  );
  assert.deepEqual(byCode("INVALID_ARGS").map((p) => p.path), [
    ["steps", 1, "args", "name"],
    ["steps", 1, "args", "ms"],
  ]);
  assert.match(
    byCode("INVALID_ARGS")[0].message,
    /Step "b": Invalid args for work at args\.name: /,
  );
  assert.match(
    byCode("UNKNOWN_DEPENDENCY")[0].message,
    /Step "c": Unknown dependency: zz \(dependsOn\[0\]\)/,
  );
  assert.match(
    byCode("DUPLICATE_STEP_ID")[0].message,
    /Duplicate step id "a": steps\[0\] and steps\[3\]/,
  );
});

Deno.test("$refs must name a known step that is an ancestor", () => {
  const plan = makePlan([
    { id: "a", description: "A", tool: "work", args: { name: "a" } },
    { id: "b", description: "B", tool: "work", args: { name: "b" }, dependsOn: ["a"] },
    { id: "c", description: "C", tool: "work", args: { name: "c" } },
    {
      id: "d",
      description: "D",
      tool: "echo",
      args: {
        ok: "$a.x[0]",
        deep: { list: ["$b"] },
        sibling: "$c",
        ghost: "see ${ghost.y}",
        lit: "$$c",
      },
      dependsOn: ["b"],
    },
    { id: "e", description: "E", tool: "echo", args: { me: "$e" } },
  ]);
  const problems = validatePlan(plan, tools).problems;
  assert.deepEqual(problems.map((p) => [p.code, p.stepId, p.path?.slice(2)]), [
    ["REF_NOT_ANCESTOR", "d", ["args", "sibling"]],
    ["UNKNOWN_REF", "d", ["args", "ghost"]],
    ["REF_NOT_ANCESTOR", "e", ["args", "me"]],
  ]);
  assert.match(
    problems[0].message,
    /references step "c" \(\$c\), which is not among its dependencies\. Add "c" to dependsOn/,
  );
  assert.match(problems[1].message, /write "\$\$"/);
});

Deno.test("a whole-string $ref stands in for any type: its arg is checked when the step runs", () => {
  const plan = makePlan([
    { id: "a", description: "A", tool: "work", args: { name: "a", value: 10 } },
    { id: "b", description: "B", tool: "work", args: { name: "b", ms: "$a" }, dependsOn: ["a"] },
  ]);
  assert.deepEqual(codes(plan), []);
});

Deno.test("every problem in one pass: unknown keys, tools and references, each with the closest valid name", () => {
  const registry = createToolRegistry({ workspaceRoot: "." });
  const { problems } = validatePlan({
    id: "p",
    taskId: "t",
    version: 1,
    createdAt: "x",
    steps: [
      { id: "read", description: "Read", tool: "read_flie", args: { path: "a" }, depends_on: [] },
      {
        id: "use",
        description: "Use",
        tool: "write_file",
        args: { path: "$raed.text", content: "x" },
      },
    ],
  }, registry);
  assert.deepEqual(problems.map((p) => [p.code, p.message]), [
    ["PLAN_SCHEMA", 'steps[0]: unknown key "depends_on" (did you mean "dependsOn"?).'],
    [
      "UNKNOWN_TOOL",
      `Step "read": Unknown tool: read_flie. Did you mean "read_file"? Available tools: ${
        registry.describe().map((t) => t.name).join(", ")
      }.`,
    ],
    [
      "UNKNOWN_REF",
      'Step "use": args.path references unknown step "raed" ($raed.text). Did you mean "read"? For a literal text starting with "$", write "$$".',
    ],
  ]);
  assert.throws(
    () =>
      assertValidPlan({ id: "p", taskId: "t", version: 1, createdAt: "x", steps: [], extra: 1 }),
    /\(plan\): unknown key "extra"/,
  );
});

Deno.test("shape problems come with their paths; parsePlan fills order, args, dependsOn and status", () => {
  const problems =
    validatePlan({ id: "p", steps: [{ id: "1bad", tool: "work", depends_on: [] }] }, tools)
      .problems;
  const messages = problems.map((p) => p.message);
  // The step is checked as far as it can be read: its tool's missing argument is reported too.
  assert.deepEqual([...new Set(problems.map((p) => p.code))], ["PLAN_SCHEMA", "INVALID_ARGS"]);
  assert.ok(messages.some((m) => m.startsWith("taskId:")), messages.join("\n"));
  assert.ok(
    messages.some((m) => m.startsWith("steps[0].id: step ids start with a letter")),
    messages.join("\n"),
  );
  assert.ok(
    messages.some((m) => m.startsWith("steps[0]") && m.includes("depends_on")),
    messages.join("\n"),
  );
  assert.throws(() => parsePlan({ id: "p" }, "plan.json"), (e: PlanParseError) => {
    assert.ok(e instanceof PlanParseError);
    assert.match(e.message, /^plan\.json: not a valid plan/);
    return e.code === "PLAN_INVALID";
  });
  const plan = parsePlan({
    id: "p",
    taskId: "t",
    version: 1,
    createdAt: "x",
    steps: [{ id: "a", description: "A", tool: "work" }, {
      id: "b",
      description: "B",
      tool: "work",
      onError: "retry=2",
    }],
  });
  assert.deepEqual(plan.steps.map((s) => [s.order, s.status, s.args, s.dependsOn]), [
    [1, "pending", {}, []],
    [2, "pending", {}, []],
  ]);
  assert.match(
    validatePlan({ ...plan, steps: [{ ...plan.steps[0], onError: "sometimes" }] }).problems[0]
      .message,
    /onError must be "fail", "continue", "retry=N", "recover"/,
  );
});

Deno.test("assertValidPlan throws one error listing every problem", () => {
  const plan = makePlan([
    { id: "a", description: "A", tool: "nope" },
    { id: "b", description: "B", tool: "work", args: { name: "b" }, dependsOn: ["x"] },
  ]);
  assert.throws(() => assertValidPlan(plan, tools, "plan.json"), (e: PlanValidationError) => {
    assert.ok(e instanceof PlanValidationError);
    assert.equal(e.problems.length, 2);
    assert.match(e.message, /^plan\.json: the plan has 2 problems:\n {2}Step "a": Unknown tool/);
    return e.code === "PLAN_INVALID";
  });
});

Deno.test("the plan JSON Schema is generated from the zod schema", () => {
  const schema = planJsonSchema() as { properties: { steps: { items: { required: string[] } } } };
  assert.deepEqual(schema.properties.steps.items.required.sort(), [
    "description",
    "id",
    "order",
    "tool",
  ]);
  // Builtin tools validate too.
  const plan = makePlan([{ id: "a", description: "A", tool: "read_file", args: {} }]);
  assert.deepEqual(validatePlan(plan, createToolRegistry()).problems.map((p) => p.path), [[
    "steps",
    0,
    "args",
    "path",
  ]]);
});
