/**
 * The DAG executor of tool plans (docs/tool-plans.md, "Executor"):
 *
 * - scheduling by in-degree counting (`scheduler.ts`) — each step is queued once, when its last
 *   dependency settles — so a run is O(V+E), not a repeated scan of every step;
 * - ready steps run in parallel up to `concurrency` (default 4);
 * - `$step` references resolved in the arguments of each step just before it runs;
 * - approval gates (`approvals.ts`): a step waiting for its approver gives its slot back
 *   (independent steps go on) and approvals are asked concurrently; denial → `skipped`, and the
 *   step's dependents are skipped;
 * - per-step `onError`: `fail`, `continue`, `retry=N` with exponential backoff, `recover` (LLM);
 * - cancellation; progress as an `AsyncIterable<ProgressEvent>` plus the shared step events.
 *
 * @module
 */
import { Execution } from "./execution.ts";
import type { ExecutePlanOptions, PlanRun } from "./execute_options.ts";
import type { ExecutionSummary, Plan } from "./types.ts";

export type { ExecutePlanOptions, PlanRun } from "./execute_options.ts";
export { interruptedError, interruptedSteps } from "./interrupted.ts";

/**
 * Runs a plan to the end.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { ToolRegistry } from "../tools/registry.ts";
 * import { executePlan } from "./executor.ts";
 * import { parsePlan } from "./schema.ts";
 *
 * const tools = new ToolRegistry().register({
 *   name: "add",
 *   description: "Adds two numbers",
 *   inputSchema: z.object({ a: z.number(), b: z.number() }),
 *   execute: ({ a, b }) => a + b,
 * });
 * const plan = parsePlan({
 *   id: "p1", taskId: "t1", version: 1, createdAt: new Date().toISOString(),
 *   steps: [
 *     { id: "one", description: "1 + 2", tool: "add", args: { a: 1, b: 2 } },
 *     { id: "two", description: "3 + 4", tool: "add", args: { a: "$one", b: 4 }, dependsOn: ["one"] },
 *   ],
 * });
 * const summary = await executePlan(plan, { tools });
 * console.log(summary.status, summary.plan.steps[1].result?.value); // "completed" 7
 * ```
 */
export function executePlan(plan: Plan, options: ExecutePlanOptions): Promise<ExecutionSummary> {
  try {
    return startPlan(plan, options).summary;
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Starts a plan and returns a handle with the live plan, the progress stream, the summary and
 * `cancel()`. The given plan is not modified: the run works on a copy (`run.plan`). Steps that are
 * `completed` or `skipped` already are kept (that is how a stopped run continues); every other step
 * runs.
 *
 * @throws PlanValidationError when the plan is invalid (before anything runs)
 * @throws StepflowError `PLAN_RECOVER_NO_BACKEND` when a step uses `recover` without a backend
 * @throws StepflowError `PLAN_STEP_INTERRUPTED` when a step was left `running` by an earlier run
 *   and its tool is not idempotent (see `rerunInterrupted`)
 *
 * @example
 * ```ts ignore
 * const run = startPlan(plan, { tools, concurrency: 8 });
 * for await (const event of run.progress) console.log(event.stepId, event.status);
 * const summary = await run.summary;
 * ```
 */
export function startPlan(plan: Plan, options: ExecutePlanOptions): PlanRun {
  return new Execution(plan, options).start();
}
