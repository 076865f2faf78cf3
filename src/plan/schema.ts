/**
 * zod schemas of plans — the validators behind {@linkcode parsePlan} and the source of the JSON
 * Schemas handed to LLMs. The interfaces in `types.ts` must stay identical to what these schemas
 * produce; the `Exactly<…>` checks at the end of this file break the build when they drift.
 *
 * Why hand-written interfaces rather than `z.infer`: they are public (src/plan/mod.ts), and
 * `deno doc` renders `z.infer<typeof StepSchema>` as that expression — no fields, no field docs —
 * while `deno doc --lint` refuses it (a public type referencing zod's and the schema's private
 * types). A list of words (`StepStatus`) is declared once as a constant instead, from which both the
 * type and the schema follow.
 *
 * @module
 */
import { z } from "zod";
import type { Exactly } from "../type_equality.ts";
import { StepflowError } from "../errors.ts";
import type { NewStep, OnErrorSetting, Plan, RecoveryDecision, Step, StepResult } from "./types.ts";
import { STEP_STATUSES } from "./types.ts";
import { onErrorTextPattern, PLAN_ON_ERROR } from "../on_error.ts";
import { formatZodIssues } from "../definition/zod_issues.ts";

/**
 * Step ids of a tool plan: a letter or `_`, then letters, digits, `_` or `-`; `$step` references
 * use the same grammar. (An agent's step ids follow another rule, `STEP_ID` in
 * src/definition/step_id.ts: dotted names such as `initial.issue`.)
 */
export const PLAN_STEP_ID: RegExp = /^[A-Za-z_][A-Za-z0-9_-]*$/;

export const StepStatusSchema = z.enum(STEP_STATUSES).describe("Step status");

export const StepResultSchema = z.strictObject({
  ok: z.boolean(),
  value: z.unknown().optional(),
  error: z.string().optional(),
  duration: z.number().min(0).describe("Milliseconds, without the wait for an approval"),
  approvalWaitMs: z.number().min(0).optional().describe(
    "Milliseconds the step waited for its approval",
  ),
  timestamp: z.string().min(1).describe("ISO time the step settled"),
  attempts: z.int().min(0).optional(),
}).describe("Step result");

const ON_ERROR_HELP =
  'onError must be "fail", "continue", "retry=N", "recover", { "retry": N, "backoffMs"?: ms } or { "recover": N }';

export const OnErrorSchema = z.union([
  z.string().regex(onErrorTextPattern(PLAN_ON_ERROR), { error: ON_ERROR_HELP }),
  z.strictObject({
    retry: z.int().min(0).max(100),
    backoffMs: z.int().min(0).optional(),
  }, { error: ON_ERROR_HELP }),
  z.strictObject({ recover: z.int().min(1).max(20) }, { error: ON_ERROR_HELP }),
], { error: ON_ERROR_HELP }).describe(
  'Failure strategy: "fail" (default), "continue", "retry=N", or "recover" (ask the LLM)',
);

const StepId = z.string().regex(PLAN_STEP_ID, {
  error: "step ids start with a letter or _ and contain only letters, digits, _ and -",
});

export const StepSchema = z.strictObject({
  id: StepId.describe("Unique step id, e.g. step_1"),
  order: z.int().min(1).describe("1-based display position"),
  description: z.string().min(1).describe("What the step does"),
  tool: z.string().min(1).describe("Name of a registered tool"),
  args: z.record(z.string(), z.unknown()).default({}).describe(
    'Tool arguments; "$step_1.path" values and "${step_1.path}" inside text reference earlier results',
  ),
  dependsOn: z.array(z.string()).default([]).describe("Ids of steps that must complete first"),
  status: StepStatusSchema.default("pending"),
  result: StepResultSchema.optional(),
  onError: OnErrorSchema.optional(),
  requiresApproval: z.boolean().optional().describe("Ask for approval before running"),
}).describe("Plan step");

export const PlanSchema = z.strictObject({
  id: z.string().min(1),
  taskId: z.string().min(1),
  task: z.string().optional(),
  version: z.int().min(1),
  steps: z.array(StepSchema),
  estimatedDuration: z.number().min(0).optional().describe("Seconds"),
  createdAt: z.string().min(1),
  updatedAt: z.string().optional(),
}).describe("Executable tool plan");

/** A planner's step: the fields an LLM writes (unknown extra keys are dropped). */
export const NewStepSchema = z.object({
  id: StepId.optional(),
  description: z.string().min(1),
  tool: z.string().min(1),
  args: z.record(z.string(), z.unknown()).optional(),
  dependsOn: z.array(z.string()).optional(),
  onError: OnErrorSchema.optional(),
  requiresApproval: z.boolean().optional(),
});

/** What the planning prompt asks for: `{ steps, estimatedDuration? }`. */
export const GeneratedPlanSchema = z.object({
  steps: z.array(NewStepSchema.extend({ id: StepId })).min(1),
  estimatedDuration: z.number().min(0).optional(),
});

/** What the recovery prompt asks for. */
export const RecoveryDecisionSchema = z.object({
  action: z.enum(["retry", "skip", "insert", "abort"]),
  args: z.record(z.string(), z.unknown()).optional(),
  steps: z.array(NewStepSchema.extend({ id: StepId })).optional(),
  reason: z.string().default(""),
});

/**
 * Thrown by {@linkcode parsePlan} when a value is not a plan; the message lists every problem with
 * its path (`steps[1].dependsOn: …`).
 */
export class PlanParseError extends StepflowError {
  /** Each problem as `path: message`. */
  readonly problems: string[];
  /**
   * Creates the error from its problems.
   *
   * @param problems each problem as `path: message`
   * @param source where the plan came from (file name), for the message
   */
  constructor(problems: string[], source?: string) {
    super(
      "PLAN_INVALID",
      `${source ? `${source}: ` : ""}not a valid plan (${problems.length} problem${
        problems.length === 1 ? "" : "s"
      }):\n  ${problems.join("\n  ")}`,
      { details: { problems, source } },
    );
    this.problems = problems;
  }
}

/**
 * Parses a plan: fills `order` (position), `args` ({}), `dependsOn` ([]) and `status` (pending)
 * when missing, and throws {@linkcode PlanParseError} listing every problem otherwise.
 *
 * @example
 * ```ts
 * import { parsePlan } from "./schema.ts";
 * const plan = parsePlan({
 *   id: "p1", taskId: "t1", version: 1, createdAt: new Date().toISOString(),
 *   steps: [{ id: "step_1", description: "Read", tool: "read_file", args: { path: "a.txt" } }],
 * });
 * console.log(plan.steps[0].status, plan.steps[0].order); // "pending" 1
 * ```
 */
export function parsePlan(value: unknown, source?: string): Plan {
  const data = fillStepOrders(value);
  const parsed = PlanSchema.safeParse(data);
  if (!parsed.success) {
    throw new PlanParseError(
      planIssueMessages(parsed.error.issues, data).map((m) => m.message),
      source,
    );
  }
  return parsed.data;
}

let planSchemaDocument: Record<string, unknown> | undefined;

/** The JSON Schema of a plan file (generated from the zod schema). */
export function planJsonSchema(): Record<string, unknown> {
  return structuredClone(
    planSchemaDocument ??= z.toJSONSchema(PlanSchema, {
      io: "input",
      unrepresentable: "any",
    }) as Record<string, unknown>,
  );
}

/**
 * One message per problem of a plan's shape, as the agent loader words them: the path, the value
 * that was wrong, and for an unknown key the closest known one (`steps[0]: unknown key
 * "depends_on" (did you mean "dependsOn"?).`), each with the path and code of its zod issue.
 */
export function planIssueMessages(
  issues: readonly z.core.$ZodIssue[],
  data: unknown,
): { message: string; path: (string | number)[]; code: string }[] {
  planSchemaDocument ??= z.toJSONSchema(PlanSchema, {
    io: "input",
    unrepresentable: "any",
  }) as Record<string, unknown>;
  const out: { message: string; path: (string | number)[]; code: string }[] = [];
  for (const issue of issues) {
    const path = issue.path.map((k) => (typeof k === "number" ? k : String(k)));
    for (const message of formatZodIssues([issue], "", data, planSchemaDocument)) {
      out.push({
        message: path.length === 0 ? `(plan): ${message}` : message,
        path,
        code: issue.code,
      });
    }
  }
  return out;
}

/** Formats a zod issue as `steps[1].args.path: message`. */
export function formatIssue(issue: { path: PropertyKey[]; message: string }): string {
  return `${formatPath(issue.path) || "(plan)"}: ${issue.message}`;
}

/** Formats a path as `steps[1].args.path`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** Gives steps without an `order` their 1-based position (before schema parsing). */
export function fillStepOrders(value: unknown): unknown {
  if (!isRecord(value) || !Array.isArray(value.steps)) return value;
  if (value.steps.every((s) => !isRecord(s) || s.order !== undefined)) return value;
  return {
    ...value,
    steps: value.steps.map((
      s,
      i,
    ) => (isRecord(s) && s.order === undefined ? { ...s, order: i + 1 } : s)),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

// Compile-time: the hand-written interfaces equal the schemas' output types.
// Hand-written because public: readable in `deno doc` (why: src/type_equality.ts).
const typesMatch: [
  Exactly<z.output<typeof StepResultSchema>, StepResult>,
  Exactly<z.output<typeof OnErrorSchema>, OnErrorSetting>,
  Exactly<z.output<typeof StepSchema>, Step>,
  Exactly<z.output<typeof PlanSchema>, Plan>,
  Exactly<z.output<typeof NewStepSchema>, NewStep>,
  Exactly<z.output<typeof RecoveryDecisionSchema>, RecoveryDecision>,
] = [true, true, true, true, true, true];
void typesMatch;
