/**
 * Plan generation (docs/tool-plans.md, "Planning"): the planning prompt, the LLM call, and
 * validation with one re-ask that lists the problems.
 *
 * @module
 */
import { sep } from "node:path";
import { z } from "zod";
import {
  type AnswerReading,
  askStructured,
  readJsonAnswer,
  rejectAnswer,
  SCHEMA_MISMATCH,
} from "../engine/ask_structured.ts";
import { renderPromptTemplate } from "../engine/prompt_template.ts";
import { StepflowError } from "../errors.ts";
import type { LlmBackend, LlmRequest, LlmResponse } from "../llm/types.ts";
import { stepFromNew } from "./new_step.ts";
import { formatToolList, loadPlanPrompt } from "./prompts.ts";
import { formatIssue, GeneratedPlanSchema } from "./schema.ts";
import type { Plan, PlanProblem, PlanToolRegistry, Step } from "./types.ts";
import { checkSteps } from "./validate.ts";

/** The scripted-backend step id of planning calls. */
export const GENERATE_STEP_ID = "plan.generate";

/** The scripted-backend step id of revision calls ({@linkcode revisePlan}). */
export const REVISE_STEP_ID = "plan.revise";

/** A task: its text, or `{ id, description }`. */
export type PlanTask = string | { id?: string; description: string };

/** Options of {@linkcode generatePlan}. */
export interface GeneratePlanOptions {
  /** The LLM backend. */
  backend: LlmBackend;
  /** The tools the plan may use (listed in the prompt with their JSON Schemas). */
  tools: PlanToolRegistry;
  /** The workspace listing for the prompt; made with {@linkcode snapshotWorkspace} when omitted. */
  workspaceSnapshot?: string;
  /** Workspace root (default: the current directory): the backend's cwd and the snapshot's root. */
  workspaceRoot?: string;
  /** Task id (default: the task's `id`, else a random UUID). */
  taskId?: string;
  /** Plan id (default: a random UUID). */
  planId?: string;
  /** Model override. */
  model?: string;
  /** Cancels the call. */
  signal?: AbortSignal;
}

/** Thrown when the LLM's plan is still invalid after the re-ask; lists every problem. */
export class PlanGenerationError extends StepflowError {
  /** The problems of the last answer. */
  readonly problems: string[];
  /**
   * Creates the error from the problems of the last answer.
   *
   * @param problems the problems of the last answer
   */
  constructor(problems: string[]) {
    super(
      "PLAN_GENERATION_FAILED",
      `The generated plan is invalid after one re-ask (${problems.length} problem${
        problems.length === 1 ? "" : "s"
      }):\n  ${problems.join("\n  ")}\nRephrase the task, or write the plan by hand.`,
      { details: { problems } },
    );
    this.problems = problems;
  }
}

let outputSchema: Record<string, unknown> | undefined;

/**
 * Asks the backend for a plan, validates it against the tools, and re-asks once with the problems
 * when it is invalid. Calls use step id {@linkcode GENERATE_STEP_ID} (`kind: "step"`, then
 * `"reask"`). The answer may be `{ steps, estimatedDuration }` or a bare list of steps.
 *
 * @throws PlanGenerationError when the second answer is still invalid
 *
 * @example
 * ```ts
 * import { ScriptedBackend } from "../llm/scripted.ts";
 * import { createToolRegistry } from "../tools/builtin.ts";
 * import { generatePlan } from "./generate.ts";
 * const backend = new ScriptedBackend({
 *   "plan.generate": [{
 *     output: {
 *       steps: [{ id: "step_1", description: "Read config", tool: "read_file", args: { path: "config.json" } }],
 *     },
 *   }],
 * });
 * const plan = await generatePlan("Show the config", {
 *   backend, tools: createToolRegistry(), workspaceSnapshot: "config.json",
 * });
 * console.log(plan.steps[0].status); // "pending"
 * ```
 */
export async function generatePlan(task: PlanTask, options: GeneratePlanOptions): Promise<Plan> {
  const description = typeof task === "string" ? task : task.description;
  if (description.trim() === "") {
    throw new StepflowError("USAGE", "generatePlan: the task is empty. Describe what to do.");
  }
  const root = options.workspaceRoot ?? Deno.cwd();
  const snapshot = options.workspaceSnapshot ?? await snapshotWorkspace(root);
  const prompt = renderPromptTemplate(await loadPlanPrompt("generate"), {
    task: description,
    workspace: snapshot || "(empty)",
    tools: formatToolList(options.tools.describe()),
  });
  const answer = await askForSteps(prompt, GENERATE_STEP_ID, root, options);
  const plan: Plan = {
    id: options.planId ?? crypto.randomUUID(),
    taskId: options.taskId ??
      (typeof task === "object" && task.id ? task.id : crypto.randomUUID()),
    task: description,
    version: 1,
    steps: answer.steps,
    createdAt: new Date().toISOString(),
  };
  if (answer.estimatedDuration !== undefined) plan.estimatedDuration = answer.estimatedDuration;
  return plan;
}

/** Options of {@linkcode revisePlan}. */
export type RevisePlanOptions = Omit<GeneratePlanOptions, "taskId" | "planId">;

/**
 * Plan review's "Regenerate plan (ask LLM to revise)": sends the current plan (statuses and
 * results included) and the user's feedback, validates the answer against the tools like
 * {@linkcode generatePlan} (same code: one re-ask listing the problems) and returns the next
 * version. The given plan is not modified.
 *
 * The new version keeps the plan's `id`, `taskId`, `task` and `createdAt`, gets `version + 1` and
 * `updatedAt`. A step the answer keeps unchanged (same id, tool, args, dependencies) keeps its
 * status and result when it was `completed`, `skipped` or `running` — so finished work does not run
 * again, and a step a killed run left `running` stays `running` (the interrupted-step rule still
 * applies to it). Every other step is `pending`. Calls use step id {@linkcode REVISE_STEP_ID}.
 *
 * @throws StepflowError `USAGE` when the feedback is empty
 * @throws PlanGenerationError when the second answer is still invalid
 *
 * @example
 * ```ts ignore
 * const next = await revisePlan(plan, "Also back up config.json before writing it", {
 *   backend, tools,
 * });
 * console.log(next.version === plan.version + 1); // true
 * ```
 */
export async function revisePlan(
  plan: Plan,
  feedback: string,
  options: RevisePlanOptions,
): Promise<Plan> {
  if (feedback.trim() === "") {
    throw new StepflowError(
      "USAGE",
      "revisePlan: the feedback is empty. Say what should change in the plan.",
    );
  }
  const root = options.workspaceRoot ?? Deno.cwd();
  const snapshot = options.workspaceSnapshot ?? await snapshotWorkspace(root);
  const prompt = renderPromptTemplate(await loadPlanPrompt("revise"), {
    task: plan.task ?? "(not recorded: infer it from the plan)",
    workspace: snapshot || "(empty)",
    tools: formatToolList(options.tools.describe()),
    version: String(plan.version),
    plan: JSON.stringify(planForPrompt(plan), null, 2),
    feedback: feedback.trim(),
  });
  const answer = await askForSteps(prompt, REVISE_STEP_ID, root, options);
  const before = new Map(plan.steps.map((s) => [s.id, s]));
  for (const step of answer.steps) {
    const old = before.get(step.id);
    if (!old || !sameAction(old, step)) continue;
    if (old.status === "completed" || old.status === "skipped" || old.status === "running") {
      step.status = old.status;
      if (old.result) step.result = structuredClone(old.result);
    }
  }
  const next: Plan = {
    ...structuredClone(plan),
    version: plan.version + 1,
    updatedAt: new Date().toISOString(),
    steps: answer.steps,
  };
  if (answer.estimatedDuration !== undefined) next.estimatedDuration = answer.estimatedDuration;
  else delete next.estimatedDuration;
  return next;
}

/** What the revision prompt shows of a plan: the steps as planned, with status and outcome. */
function planForPrompt(plan: Plan): unknown {
  return {
    steps: plan.steps.map((s) => {
      const shown: Record<string, unknown> = {
        id: s.id,
        description: s.description,
        tool: s.tool,
        args: s.args,
        dependsOn: s.dependsOn,
        status: s.status,
      };
      if (s.requiresApproval !== undefined) shown.requiresApproval = s.requiresApproval;
      if (s.onError !== undefined) shown.onError = s.onError;
      if (s.result?.error !== undefined) shown.error = s.result.error;
      else if (s.result?.value !== undefined) shown.result = clip(JSON.stringify(s.result.value));
      return shown;
    }),
  };
}

function clip(text: string | undefined, max = 500): string | undefined {
  return text === undefined || text.length <= max ? text : `${text.slice(0, max)}… (truncated)`;
}

function sameAction(a: Step, b: Step): boolean {
  return a.tool === b.tool && stableJson(a.args) === stableJson(b.args) &&
    stableJson([...a.dependsOn].sort()) === stableJson([...b.dependsOn].sort());
}

/** JSON with object keys sorted, so equal values compare equal whatever their key order. */
function stableJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v) =>
      v !== null && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)))
        : v,
  );
}

/** Why a plan whose steps fail the checks was rejected, as the re-ask says it. */
const PLAN_REJECTED = "your plan could not be used";

/** What the re-ask of a planning call asks for. */
const EXPECTED_PLAN = "the whole corrected plan as one JSON object in the same format";

/**
 * The one planning exchange, shared by {@linkcode generatePlan} and {@linkcode revisePlan}, on
 * the shared re-ask path: asks, parses (structured output, JSON in the text, or a bare list),
 * checks the steps against the tools, and re-asks once listing the problems.
 */
async function askForSteps(
  prompt: string,
  stepId: string,
  root: string,
  options: { backend: LlmBackend; tools: PlanToolRegistry; model?: string; signal?: AbortSignal },
): Promise<{ steps: Step[]; estimatedDuration?: number }> {
  outputSchema ??= z.toJSONSchema(GeneratedPlanSchema, { io: "input" }) as Record<string, unknown>;
  const request: LlmRequest = {
    kind: "step",
    agent: "plan",
    stepId,
    iteration: 1,
    prompt,
    outputSchema,
    cwd: root,
  };
  if (options.model) request.model = options.model;
  // The last answer's every problem, for the error (the re-ask quotes the first few).
  let problems: string[] = [];
  const asked = await askStructured({
    request,
    call: (req) => options.backend.complete(req, { signal: options.signal }),
    read: (response): AnswerReading<{ steps: Step[]; estimatedDuration?: number }> => {
      const parsed = readPlanAnswer(response);
      if (!parsed.ok) {
        problems = parsed.problems.length > 0 ? parsed.problems : [parsed.reason];
        return { ok: false, rejection: rejectAnswer(parsed.reason, parsed.problems) };
      }
      const steps: Step[] = parsed.value.steps.map((s, i) => stepFromNew(s, i + 1));
      const found: PlanProblem[] = checkSteps(steps, options.tools);
      if (found.length > 0) {
        problems = found.map((p) => p.message);
        return { ok: false, rejection: rejectAnswer(PLAN_REJECTED, problems) };
      }
      const estimatedDuration = parsed.value.estimatedDuration;
      return {
        ok: true,
        value: estimatedDuration === undefined ? { steps } : { steps, estimatedDuration },
      };
    },
    expected: EXPECTED_PLAN,
  });
  if (asked.ok) return asked.value;
  throw new PlanGenerationError(problems);
}

type Answer = z.output<typeof GeneratedPlanSchema>;

/**
 * The plan in an answer: the structured output, else the JSON in the text; a bare list of steps is
 * accepted too (the planning prompt asks for "a JSON array of steps").
 */
function readPlanAnswer(
  response: LlmResponse,
): { ok: true; value: Answer } | { ok: false; reason: string; problems: string[] } {
  const candidates: unknown[] = [];
  if (response.structuredOutput !== undefined) candidates.push(response.structuredOutput);
  const json = readJsonAnswer({ text: response.text });
  if (json.ok) candidates.push(json.value);
  const list = extractList(response.text);
  if (list !== undefined) candidates.push(list);
  if (candidates.length === 0 && !json.ok) {
    return { ok: false, reason: json.rejection.reason, problems: json.rejection.errors };
  }
  let first: string[] | undefined;
  for (const candidate of candidates) {
    const parsed = GeneratedPlanSchema.safeParse(
      Array.isArray(candidate) ? { steps: candidate } : candidate,
    );
    if (parsed.success) return { ok: true, value: parsed.data };
    first ??= parsed.error.issues.map(formatIssue);
  }
  return { ok: false, reason: SCHEMA_MISMATCH, problems: first! };
}

/** A bare JSON list in the text (the prompt says "a JSON array of steps"). */
function extractList(text: string): unknown[] | undefined {
  const start = text.indexOf("[");
  const end = text.lastIndexOf("]");
  if (start < 0 || end <= start) return undefined;
  try {
    const value = JSON.parse(text.slice(start, end + 1));
    return Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Options of {@linkcode snapshotWorkspace}. */
export interface SnapshotOptions {
  /** Entries listed at most (default 200). */
  maxEntries?: number;
  /** Folder depth listed (default 3). */
  maxDepth?: number;
  /** Folder names listed but not entered (default `.git`, `node_modules`). */
  skip?: readonly string[];
}

/**
 * A short, indented listing of the workspace for planning prompts: folders end with `/`, files
 * show their size; symbolic links are shown, never followed.
 *
 * @example
 * ```ts
 * import { snapshotWorkspace } from "./generate.ts";
 * console.log(await snapshotWorkspace(Deno.cwd(), { maxEntries: 20, maxDepth: 1 }));
 * ```
 */
export async function snapshotWorkspace(
  root: string,
  options: SnapshotOptions = {},
): Promise<string> {
  const maxEntries = options.maxEntries ?? 200;
  const maxDepth = options.maxDepth ?? 3;
  const skip = new Set(options.skip ?? [".git", "node_modules"]);
  const lines: string[] = [];
  let more = 0;
  const visit = async (dir: string, depth: number): Promise<void> => {
    const entries: Deno.DirEntry[] = [];
    for await (const entry of Deno.readDir(dir)) entries.push(entry);
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (lines.length >= maxEntries) {
        more++;
        continue;
      }
      const abs = `${dir}${sep}${entry.name}`;
      const indent = "  ".repeat(depth);
      if (entry.isSymlink) lines.push(`${indent}${entry.name} -> (link)`);
      else if (entry.isDirectory) {
        lines.push(`${indent}${entry.name}/`);
        if (depth + 1 < maxDepth && !skip.has(entry.name)) await visit(abs, depth + 1);
      } else {
        const size = (await Deno.lstat(abs)).size;
        lines.push(`${indent}${entry.name} (${formatSize(size)})`);
      }
    }
  };
  await visit(root, 0);
  if (more > 0) lines.push(`… at least ${more} more entries not shown`);
  return lines.join("\n");
}

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
