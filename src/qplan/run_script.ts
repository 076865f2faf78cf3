/**
 * `runScript`: parse, validate and run a QPlan script, reporting (never throwing) script errors.
 *
 * @module
 */
import { resolve } from "node:path";
import type { ExecutorEvents } from "../events/types.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import type { QPlanToolRegistry } from "./core/tool_types.ts";
import type { Script } from "./core/ast.ts";
import { QPlanRuntimeError, QPlanSyntaxError } from "./core/errors.ts";
import { ExecutionContext, type ToolContextBase } from "./core/execution_context.ts";
import { type ApproveTool, Executor } from "./core/executor.ts";
import { parseScript } from "./core/parser.ts";
import { bindControl, type RunControl, RunSupervisor } from "./core/run_control.ts";
import { parseParamsMeta, validateAst, type ValidationIssue } from "./core/validator.ts";
import { createQPlanRegistry } from "./modules/registry.ts";
import { StepController, type StepFailure } from "./step/step_controller.ts";
import {
  createPlanInfo,
  type QPlanRunContext,
  type QPlanRunStatus,
  StepEvents,
} from "./step/step_events.ts";
import { AbortedSignal, STOP } from "./step/step_signals.ts";
import { syntaxIssue } from "./validate_script.ts";
import { newRunId } from "../store/run_id.ts";

/** Options of {@linkcode runScript}. */
export interface RunScriptOptions {
  /** Where modules are looked up (default: `createQPlanRegistry()`). */
  registry?: QPlanToolRegistry;
  /** Event handlers (one set or several), on the shared event vocabulary. */
  events?: ExecutorEvents | ReadonlyArray<ExecutorEvents | undefined>;
  /** Initial variables; names declared in `@params` must be present. */
  params?: Record<string, unknown>;
  /** The run id (default: generated); results are stored at `ctx[runId]`. */
  runId?: string;
  /** Aborts the run when it fires. */
  signal?: AbortSignal;
  /** Ends the run with status `aborted` (state `timeout`) after this many milliseconds. */
  timeoutMs?: number;
  /** Pause / resume / abort handle. */
  control?: RunControl;
  /** Root of the files `file` may touch (default: the current directory). */
  workspaceRoot?: string;
  /** Approves tools that require approval (without it they fail). */
  approve?: ApproveTool;
  /** Let call sites skip zod for argument types they have validated before (default true). */
  fastPath?: boolean;
}

/** Where and why a run failed. */
export interface RunError {
  /** What went wrong (with line and step when known). */
  message: string;
  /** Line of the failing statement. */
  line?: number;
  /** Column of the failing statement. */
  column?: number;
  /** The step it belongs to. */
  stepId?: string;
  /** Stable code (`QPLAN_SYNTAX`, `QPLAN_INVALID`, `QPLAN_PARAMS`, `QPLAN_RUNTIME`, `QPLAN_ABORTED`, `QPLAN_TIMEOUT`). */
  code: string;
}

/** What {@linkcode runScript} resolves to. */
export interface RunScriptResult {
  /** How the run ended. */
  status: QPlanRunStatus;
  /** Set unless `completed` / `stopped`. */
  error?: RunError;
  /** `ctx[runId]`: step results by namespace. */
  results: Record<string, unknown>;
  /** Every variable at the end (params, action outputs, loop variables; futures are promises). */
  vars: Record<string, unknown>;
  /** The run id. */
  runId: string;
  /** Validation warnings (and, when validation failed, the errors too). */
  issues: ValidationIssue[];
  /** Step failures that policies absorbed or retried, and statements `ignoreErrors` dropped. */
  failures: StepFailure[];
  /** Wall time of the run. */
  durationMs: number;
}

/**
 * Parses, validates and runs a script. Resolves to the status, the error (with its line), the
 * results at `ctx[runId]` and the variables; a faulty script is reported, not thrown.
 *
 * @example
 * ```ts
 * import { runScript } from "./run_script.ts";
 * const result = await runScript(`
 * step id="calc" desc="Compute" {
 *   math add a=1 b=2 -> x
 *   return sum=x
 * }`);
 * console.log(result.status, result.results.calc); // completed { sum: 3 }
 * ```
 */
export async function runScript(
  script: string | Script,
  options: RunScriptOptions = {},
): Promise<RunScriptResult> {
  const started = performance.now();
  const runId = options.runId ?? newRunId();
  const params = options.params ?? {};
  const fail = (error: RunError, issues: ValidationIssue[] = []): RunScriptResult => ({
    status: "error",
    error,
    results: {},
    vars: { ...params },
    runId,
    issues,
    failures: [],
    durationMs: performance.now() - started,
  });

  let ast: Script;
  try {
    ast = typeof script === "string" ? parseScript(script) : script;
  } catch (error) {
    if (error instanceof QPlanSyntaxError) {
      return fail(
        { message: error.message, line: error.line, column: error.column, code: error.code },
        [syntaxIssue(error)],
      );
    }
    return fail({ message: errorMessage(error), code: codeOf(error, "QPLAN_INTERNAL") });
  }

  const registry = options.registry ?? createQPlanRegistry();
  const { issues, resolution } = validateAst(ast, { params: Object.keys(params), registry });
  const firstError = issues.find((i) => i.severity === "error");
  if (firstError) {
    const count = issues.filter((i) => i.severity === "error").length;
    const more = count > 1 ? ` (and ${count - 1} more problem${count > 2 ? "s" : ""})` : "";
    return fail(
      {
        message: `line ${firstError.line}: ${firstError.message}${more}`,
        line: firstError.line,
        column: firstError.column,
        code: "QPLAN_INVALID",
      },
      issues,
    );
  }
  const paramsLine = ast.meta.find((m) => m.key.toLowerCase() === "params");
  if (paramsLine) {
    const missing = parseParamsMeta(paramsLine.value).names.filter((n) => !(n in params));
    if (missing.length > 0) {
      return fail({
        message: `missing required param${missing.length > 1 ? "s" : ""} ${
          missing.map((n) => `'${n}'`).join(", ")
        } (declared by @params at line ${paramsLine.line}); pass ${
          missing.length > 1 ? "them" : "it"
        } in params (CLI: --param ${missing[0]}=…)`,
        line: paramsLine.line,
        code: "QPLAN_PARAMS",
      }, issues);
    }
  }

  const ctx = new ExecutionContext(runId, params);
  const runCtx: QPlanRunContext = { runId };
  const events = new StepEvents(options.events, runId);
  const supervisor = new RunSupervisor(events, runCtx, {
    signal: options.signal,
    timeoutMs: options.timeoutMs,
  });
  const base: ToolContextBase = {
    workspaceRoot: resolve(options.workspaceRoot ?? Deno.cwd()),
    signal: supervisor.toolSignal,
    runId,
    qplan: ctx,
  };
  const steps = new StepController(resolution, events, ctx, base, () => supervisor.aborted);
  const executor = new Executor({
    registry,
    ctx,
    steps,
    supervisor,
    base,
    approve: options.approve,
    fastPath: options.fastPath,
  });
  const plan = createPlanInfo(resolution.steps, ast.meta, runId);

  await supervisor.start();
  if (options.control) bindControl(options.control, supervisor);
  await events.planStart(plan, runCtx);
  let status: QPlanRunStatus = "completed";
  let error: RunError | undefined;
  try {
    await executor.run(ast);
  } catch (thrown) {
    const aborted = thrown instanceof AbortedSignal ? thrown : supervisor.aborted;
    if (thrown === STOP) status = "stopped";
    else if (aborted) {
      status = "aborted";
      error = {
        message: aborted.reason,
        code: aborted.timedOut ? "QPLAN_TIMEOUT" : "QPLAN_ABORTED",
      };
    } else {
      status = "error";
      error = runErrorOf(thrown);
    }
  }
  await supervisor.finish(status === "error" ? "failed" : "completed");
  runCtx.status = status;
  if (error) runCtx.error = { message: error.message, line: error.line };
  await events.planEnd(plan, runCtx);

  const result: RunScriptResult = {
    status,
    results: ctx.results,
    vars: ctx.variables(),
    runId,
    issues,
    failures: steps.failures,
    durationMs: performance.now() - started,
  };
  if (error) result.error = error;
  return result;
}

function runErrorOf(thrown: unknown): RunError {
  if (thrown instanceof QPlanRuntimeError) {
    const e: RunError = { message: thrown.message, code: thrown.code };
    if (thrown.line !== undefined) e.line = thrown.line;
    if (thrown.column !== undefined) e.column = thrown.column;
    if (thrown.stepId !== undefined) e.stepId = thrown.stepId;
    return e;
  }
  if (thrown && typeof thrown === "object" && "signal" in thrown) {
    return {
      message: `'${(thrown as { signal: string }).signal}' was used where it has no meaning`,
      code: "QPLAN_RUNTIME",
    };
  }
  return { message: errorMessage(thrown), code: codeOf(thrown, "QPLAN_RUNTIME") };
}

function codeOf(e: unknown, fallback: string): string {
  return e instanceof StepflowError ? e.code : fallback;
}
