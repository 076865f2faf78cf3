/**
 * The structured outputs the plan runner asks for: a step's status, result and outputs, and a
 * reflection's decision. The zod schemas are the source (the JSON Schemas sent to the backend are
 * generated from them); the exported types are plain interfaces proven equal to `z.infer` below, so
 * zod stays out of the public API: `deno doc` would render `z.infer<typeof StepOutputSchema>` as that
 * expression (no fields, no field docs) and `deno doc --lint` refuses it (private type references).
 * A list of words is one constant instead (`STEP_STATUS_CODES`), from which type and schema follow.
 *
 * @module
 */
import { z } from "zod";
import type { Exactly } from "../type_equality.ts";
import type { PlanStep } from "./types.ts";

/** `OK`, `FAIL`, `UNCERTAIN` or `LACK_OF_INFO` (HopStatus). Anything but `OK` triggers reflection. */
export type StepStatusCode = typeof STEP_STATUS_CODES[number];

/** Every {@linkcode StepStatusCode} (the one list: the type and the schema follow). */
export const STEP_STATUS_CODES = ["OK", "FAIL", "UNCERTAIN", "LACK_OF_INFO"] as const;

const StepStatusCodeSchema = z.enum(STEP_STATUS_CODES);

/** What one step execution returns. */
export interface StepOutput {
  /** How the step went. */
  status: StepStatusCode;
  /** One line: what was done, what went wrong, or what is missing. */
  result: string;
  /** Values of the step's outputs, by variable name. */
  outputs?: Record<string, unknown>;
  /** For a `decide` step: the id of the chosen branch. */
  branch?: string;
  /** For an iterative (childless) `subtask`: iterations done and total (null when unknown). */
  progress?: { done: number; total?: number | null };
}

const ProgressSchema = z.object({
  done: z.number().int().min(0).describe("iterations completed so far"),
  total: z.number().int().min(0).nullable().optional().describe(
    "total iterations, null when unknown",
  ),
});

/** The most general step output; {@linkcode stepOutputSchema} narrows it per step. */
const StepOutputSchema = z.object({
  status: StepStatusCodeSchema,
  result: z.string(),
  outputs: z.record(z.string(), z.unknown()).optional(),
  branch: z.string().optional(),
  progress: ProgressSchema.optional(),
});

/**
 * The output schema of one step: `status` and `result` always, `outputs` with the step's declared
 * output names, `branch` (an enum of the branch ids) for a `decide` step with branches, `progress`
 * for a childless `subtask`.
 */
export function stepOutputSchema(step: PlanStep): z.ZodType<StepOutput> {
  const outputs = step.outputs.length > 0
    // zod reads a declared key through the prototype chain: an output named `constructor` would
    // be "returned" (as Object) by an answer without it, unless the answer is read as own keys.
    ? z.preprocess(
      ownKeysOnly,
      z.looseObject(
        Object.fromEntries(
          step.outputs.map((name) => [name, z.unknown().describe(`value of ${name}`)]),
        ),
      ).partial(),
    )
    : z.record(z.string(), z.unknown());
  const shape: Record<string, z.ZodType> = {
    status: StepStatusCodeSchema.describe(
      "OK when the step is done; FAIL when it could not be done; UNCERTAIN when unsure of the result; LACK_OF_INFO when needed information is missing",
    ),
    result: z.string().describe("one line: what was done, what went wrong or what is missing"),
    outputs: outputs.optional().describe("values of the step's outputs, by name"),
  };
  if (step.stepType === "decide" && step.children.length > 0) {
    const ids = step.children.map((c) => c.stepId) as [string, ...string[]];
    shape.branch = z.enum(ids).optional().describe(
      "id of the chosen branch (required when status is OK)",
    );
  }
  if (step.stepType === "subtask" && step.children.length === 0) {
    shape.progress = ProgressSchema.optional().describe("iteration progress of this subtask");
  }
  return z.object(shape) as unknown as z.ZodType<StepOutput>;
}

/** A plain object's own keys on a null prototype, so that no inherited name reads as a value. */
function ownKeysOnly(value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  return Object.assign(Object.create(null), value);
}

/** The decisions of a step reflection. */
export type ReflectionDecision = typeof REFLECTION_DECISIONS[number];

/** Every {@linkcode ReflectionDecision} (the one list: the type and the schema follow). */
export const REFLECTION_DECISIONS = ["RETRY", "ACCEPT", "INTERACT", "PLAN_CMD"] as const;

/** A step reflection's structured answer. */
export interface Reflection {
  /** RETRY the step, ACCEPT its result, INTERACT (ask the user) or PLAN_CMD (change the plan). */
  decision: ReflectionDecision;
  /** Why. */
  reason: string;
  /** For INTERACT: the question to ask. */
  question?: string;
  /** For PLAN_CMD: the `PLAN_CMD:` lines. */
  commands?: string | string[];
}

const ReflectionZod = z.object({
  decision: z.enum(REFLECTION_DECISIONS).describe(
    "RETRY the step, ACCEPT its result, INTERACT (ask the user), or PLAN_CMD (change the plan)",
  ),
  reason: z.string().describe("why"),
  question: z.string().optional().describe("for INTERACT: the question to ask the user"),
  commands: z.union([z.string(), z.array(z.string())]).optional().describe(
    "for PLAN_CMD: the PLAN_CMD lines (SKIP / REVISE / ADD), one per line, with '>' body lines",
  ),
});

/** The zod schema of {@linkcode Reflection}. */
export const ReflectionSchema: z.ZodType<Reflection> = ReflectionZod;

// Compile-time proof that the interfaces are exactly what the schemas parse to.
// Hand-written because public: readable in `deno doc` (why: src/type_equality.ts).
const _schemasMatchInterfaces: [
  Exactly<z.infer<typeof StepOutputSchema>, StepOutput>,
  Exactly<z.infer<typeof ReflectionZod>, Reflection>,
] = [true, true];
