/**
 * What the stages of a PlanSpec run share: the run's state and bookkeeping
 * ({@linkcode PlanRunContext}, implemented by the runner), and its backend calls — every
 * structured answer goes through the engine kit's one re-ask path.
 *
 * @module
 */
import { z } from "zod";
import type { EventEmitter } from "../events/emitter.ts";
import { askStructured, readSchemaAnswer } from "../engine/ask_structured.ts";
import type { LlmRequest, LlmResponse } from "../llm/types.ts";
import type { PlanHistoryEntry } from "./history.ts";
import type { PlanPrompts } from "./prompts.ts";
import type { PlanRunnerOptions } from "./run_types.ts";
import type { StepOutput } from "./runner_schemas.ts";
import type { PlanOp, PlanSpec, PlanStep } from "./types.ts";

/** How often a step ran in this run: attempts since its last success, iterations of a subtask. */
export interface StepCounters {
  /** Executions since the step last succeeded (reset by an OK or a revision). */
  attempts: number;
  /** Iterations of an iterative subtask. */
  iterations: number;
}

/** The state and bookkeeping of one plan run, as the runner hands them to its stages. */
export interface PlanRunContext {
  /** The plan being run (changed in place). */
  readonly plan: PlanSpec;
  /** The runner's options. */
  readonly options: PlanRunnerOptions;
  /** The prompt templates, overrides applied. */
  readonly prompts: PlanPrompts;
  /** The run's event emitter. */
  readonly events: EventEmitter;
  /** Output values produced so far, by variable name. */
  readonly variables: Map<string, unknown>;
  /** The run history (this run and the earlier ones of the same file). */
  readonly history: readonly PlanHistoryEntry[];
  /** The current round. */
  readonly round: number;
  /** The counters of a step (created on first use). */
  countersOf(step: PlanStep): StepCounters;
  /** Forgets the counters of one step (a revision), or of every step (a new plan). */
  forgetCounters(step?: PlanStep): void;
  /** The engine's bookkeeping for an OK (or accepted) step. */
  complete(step: PlanStep, output: StepOutput): void;
  /** An engine-layer status change, through the command protocol. */
  mark(step: PlanStep, op: Extract<PlanOp, "DONE" | "BLOCKED" | "SKIP">, result: string): void;
  /** Appends a history entry (round and time added). */
  record(entry: Omit<PlanHistoryEntry, "round" | "at"> & Partial<PlanHistoryEntry>): Promise<void>;
  /** Writes the plan file, when there is one. */
  save(): Promise<void>;
  /** A progress message. */
  log(message: string): void;
}

/**
 * A structured call on the shared re-ask path: the JSON answer parsed by `schema`, then checked
 * by `extraCheck`, re-asked once when either finds a problem.
 */
export async function askStep<T>(
  ctx: PlanRunContext,
  stepId: string,
  prompt: string,
  schema: z.ZodType<T>,
  extraCheck: (value: T) => string[] = () => [],
): Promise<{ ok: true; value: T } | { ok: false; errors: string[] }> {
  const request = planRequest(ctx, stepId, prompt);
  request.outputSchema = z.toJSONSchema(schema) as Record<string, unknown>;
  const asked = await askStructured({
    request,
    call: (req) => callBackend(ctx, req),
    read: (response) =>
      readSchemaAnswer(response, schema, { formatIssue: dottedIssue, check: extraCheck }),
  });
  if (asked.ok) return { ok: true, value: asked.value };
  return { ok: false, errors: asked.errors.length > 0 ? asked.errors : [asked.reason] };
}

/** A text call (no re-ask: the caller reads what it can). */
export async function askText(
  ctx: PlanRunContext,
  stepId: string,
  prompt: string,
): Promise<string> {
  return (await callBackend(ctx, planRequest(ctx, stepId, prompt))).text;
}

/** One backend call of this run, cancelled with the run. */
export function callBackend(ctx: PlanRunContext, request: LlmRequest): Promise<LlmResponse> {
  return ctx.options.backend.complete(request, { signal: ctx.options.signal });
}

/** A backend request of this run: agent `planspec`, the round as the iteration. */
export function planRequest(ctx: PlanRunContext, stepId: string, prompt: string): LlmRequest {
  const request: LlmRequest = {
    kind: "step",
    agent: "planspec",
    stepId,
    iteration: ctx.round,
    prompt,
    cwd: ctx.options.cwd ?? Deno.cwd(),
  };
  if (ctx.options.model) request.model = ctx.options.model;
  return request;
}

/** A schema issue as PlanSpec answers word it: `outputs.x: Invalid input`. */
function dottedIssue(issue: { path: PropertyKey[]; message: string }): string {
  return `${issue.path.map(String).join(".") || "(root)"}: ${issue.message}`;
}

/** Plan results are one line (the full text stays in the history). */
export function oneLine(text: string, limit = 300): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length <= limit ? line : line.slice(0, limit - 1) + "…";
}
