/**
 * Plan generation (seed 002 "Plan Generation"): the seed's planning prompt, the LLM call, and
 * validation with one re-ask that lists the problems.
 *
 * @module
 */
import { sep } from "node:path";
import { z } from "zod";
import { StepflowError } from "../errors.ts";
import { extractJson } from "../llm/structured_output.ts";
import type { LlmBackend, LlmRequest } from "../llm/types.ts";
import { stepFromNew } from "./new_step.ts";
import { formatToolList, loadPlanPrompt, renderTemplate } from "./prompts.ts";
import { formatIssue, GeneratedPlanSchema } from "./schema.ts";
import type { Plan, PlanProblem, PlanToolRegistry, Step } from "./types.ts";
import { checkSteps } from "./validate.ts";

/** The scripted-backend step id of planning calls. */
export const GENERATE_STEP_ID = "plan.generate";

/** A task: its text, or the seed's `{ id, description }`. */
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
  const prompt = renderTemplate(await loadPlanPrompt("generate"), {
    task: description,
    workspace: snapshot || "(empty)",
    tools: formatToolList(options.tools.describe()),
  });
  outputSchema ??= z.toJSONSchema(GeneratedPlanSchema, { io: "input" }) as Record<string, unknown>;

  let problems: string[] = [];
  for (let round = 1; round <= 2; round++) {
    const req: LlmRequest = {
      kind: round === 1 ? "step" : "reask",
      agent: "plan",
      stepId: GENERATE_STEP_ID,
      iteration: round,
      prompt: round === 1 ? prompt : `${prompt}\n\n${reaskText(problems)}`,
      outputSchema,
      cwd: root,
    };
    if (options.model) req.model = options.model;
    const res = await options.backend.complete(req, { signal: options.signal });
    const parsed = parseAnswer(res.structuredOutput, res.text);
    if (!parsed.ok) {
      problems = parsed.problems;
      continue;
    }
    const now = new Date().toISOString();
    const steps: Step[] = parsed.data.steps.map((s, i) => stepFromNew(s, i + 1));
    const found: PlanProblem[] = checkSteps(steps, options.tools);
    if (found.length > 0) {
      problems = found.map((p) => p.message);
      continue;
    }
    const plan: Plan = {
      id: options.planId ?? crypto.randomUUID(),
      taskId: options.taskId ??
        (typeof task === "object" && task.id ? task.id : crypto.randomUUID()),
      task: description,
      version: 1,
      steps,
      createdAt: now,
    };
    if (parsed.data.estimatedDuration !== undefined) {
      plan.estimatedDuration = parsed.data.estimatedDuration;
    }
    return plan;
  }
  throw new PlanGenerationError(problems);
}

type Answer = z.output<typeof GeneratedPlanSchema>;

/**
 * The plan in an answer: the structured output, else the JSON in the text; a bare list of steps is
 * accepted too (the seed's prompt asks for "a JSON array of steps").
 */
function parseAnswer(
  structured: unknown,
  text: string,
): { ok: true; data: Answer } | { ok: false; problems: string[] } {
  const candidates: unknown[] = [];
  if (structured !== undefined) candidates.push(structured);
  const extracted = extractJson(text);
  if (extracted.ok) candidates.push(extracted.value);
  const list = extractList(text);
  if (list !== undefined) candidates.push(list);
  if (candidates.length === 0) {
    return {
      ok: false,
      problems: [`the answer holds no JSON plan (${extracted.ok ? "" : extracted.reason})`],
    };
  }
  let first: string[] | undefined;
  for (const candidate of candidates) {
    const parsed = GeneratedPlanSchema.safeParse(
      Array.isArray(candidate) ? { steps: candidate } : candidate,
    );
    if (parsed.success) return { ok: true, data: parsed.data };
    first ??= parsed.error.issues.map(formatIssue);
  }
  return { ok: false, problems: first! };
}

function reaskText(problems: readonly string[]): string {
  return `Your previous plan could not be used:\n- ${
    problems.join("\n- ")
  }\nReturn the whole corrected plan as one JSON object in the same format.`;
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
