/**
 * What an input step's wait is made of, as plain data kept in the run state (and so in its
 * checkpoint, in every store): the request the run waits on ({@linkcode PendingInput}), the answer
 * once recorded ({@linkcode RecordedAnswer}), and who may give one ({@linkcode AnswerOptions}).
 * The one-answer rule is the run's own lock: an answer takes the run's lock, finds the run still
 * `waiting` on this request, records the answer in the same checkpoint that moves the run to
 * `running`, and continues it holding the lock — so of two answers exactly one finds the run
 * waiting (docs/runner.md, "Input steps").
 *
 * @module
 */
import { type AnswerForm, answerForm } from "../definition/answer_form.ts";
import { resolveOutputSchema } from "../definition/output_schema.ts";
import type { OutputSchemaRef } from "../definition/schema.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { errorMessage, StepflowError } from "../errors.ts";

/** The answer schema of every permission request. */
export const PERMISSION_ANSWER_SCHEMA: Readonly<Record<string, unknown>> = Object.freeze({
  type: "object",
  properties: {
    decision: {
      enum: ["allow", "deny"],
      description: "allow: the call runs; deny: it is refused and the model is told",
    },
    reason: {
      type: "string",
      maxLength: 500,
      description: "optional; with deny, told to the model with the refusal",
    },
  },
  required: ["decision"],
  additionalProperties: false,
});

/** The `schemaRef` a permission request carries: the built-in answer schema, not a file. */
export const PERMISSION_SCHEMA_REF: OutputSchemaRef = Object.freeze({
  file: "(built in)",
  schema: "#/permission-answer",
});

/** What a permission request asks about (in {@linkcode PendingInput.permission}). */
export interface PermissionRequest {
  /** The tool. */
  tool: string;
  /** The call's id within its model turn (the answer applies to this call only). */
  callId: string;
  /** Why it asks. */
  reason: string;
  /** The `allowedTools` rule that would allow it without asking. */
  suggestion?: string;
  /** The path or command it acts on, bounded. */
  target?: string;
}

/** The request a waiting run waits on (in the run state while the run waits). */
export interface PendingInput {
  /** Identifies this wait: an answer may name it, so an answer meant for an earlier wait is refused. */
  requestId: string;
  /** The input step. */
  stepId: string;
  /** What the person is shown (the step's prompt, resolved with the run's variables and handoff). */
  prompt: string;
  /** The answer's schema (the step's `outputSchemaRef`). */
  schemaRef: OutputSchemaRef;
  /** When the run started waiting (ISO). */
  requestedAt: string;
  /** When the wait passes (ISO), for a step with `waitTimeout`. */
  expiresAt?: string;
  /** The intent taken when the wait passes. */
  timeoutIntent?: string;
  /**
   * Set when an agent step's child run waits (the parent waits on the child's question): the
   * child run, its input step, and the agent folder its `schemaRef` is read in. `stepId` is then
   * the parent's agent step; an answer to the parent is recorded in the child and continues both.
   */
  child?: {
    runId: string;
    stepId: string;
    agentDir: string;
    /**
     * A fan-out step's child: the item's index. An answer is then recorded in the child (under the
     * child's lock), not in this run, so each waiting child can be answered on its own.
     */
    item?: number;
    /** `agent`: the child is recorded in its own agent's store (as `ChildRunLink.store`). */
    store?: "agent";
  };
  /**
   * Set when a tool call waits for permission (`behavior.permissionAsks: "wait"`): the call. The
   * answer's schema is then the built-in {@linkcode PERMISSION_ANSWER_SCHEMA}
   * (`{ "decision": "allow" | "deny" }`), and `schemaRef` is {@linkcode PERMISSION_SCHEMA_REF}.
   */
  permission?: PermissionRequest;
}

/** An answer recorded for the current input step, routed by the step's next iteration. */
export interface RecordedAnswer {
  /** The request answered. */
  requestId: string;
  /** The input step. */
  stepId: string;
  /** The answer (valid against the step's schema when it was recorded). */
  value: unknown;
  /** Who answered (`terminal`, `dashboard`, `cli`, `api`, or the caller's own words). */
  answeredBy: string;
  /** When the answer was recorded (ISO). */
  answeredAt: string;
  /** For a permission request: the call it allows or refuses. */
  permission?: { tool: string; callId: string };
  /**
   * For a fan-out child's request: the answer was recorded in that child run (item `item`), which
   * the fan-out step continues; this run keeps no answer of its own.
   */
  child?: { runId: string; item: number };
}

/** How an answer is given to {@linkcode StepFlowRunner.answer}. */
export interface AnswerOptions {
  /** Who answers, recorded in the history and the log (default `api`). */
  answeredBy?: string;
  /** Refuse the answer unless the run waits on this request (from `StepFlowResult.waiting`). */
  requestId?: string;
}

/** The longest `answeredBy` kept; longer names are cut. */
export const MAX_ANSWERED_BY = 200;

/** Whether a wait has passed its `waitTimeout` at `now` (ms since the epoch). */
export function waitExpired(pending: PendingInput, now: number): boolean {
  return pending.expiresAt !== undefined && Date.parse(pending.expiresAt) <= now;
}

/**
 * The JSON Schema a waiting run's answer must match (its step's schema, read now; a permission's
 * built-in one). The schema file's `definitions`/`$defs`, attached so that local `$ref`s resolve,
 * are left out when the schema refers to none of them.
 */
export async function answerSchemaOf(
  definition: AgentDefinition,
  waiting: PendingInput,
): Promise<Record<string, unknown>> {
  if (waiting.permission) {
    return structuredClone(PERMISSION_ANSWER_SCHEMA) as Record<string, unknown>;
  }
  const resolved = await resolveOutputSchema(
    waiting.child?.agentDir ?? definition.dir,
    waiting.schemaRef,
    waiting.child?.stepId ?? waiting.stepId,
  );
  const own = { ...resolved.schema };
  delete own.definitions;
  delete own.$defs;
  return JSON.stringify(own).includes('"$ref"') ? resolved.schema : own;
}

/** The answer form of a waiting run's request (its step's schema, read now). */
export async function answerFormOf(
  definition: AgentDefinition,
  waiting: PendingInput,
): Promise<AnswerForm> {
  if (waiting.permission) return answerForm(PERMISSION_ANSWER_SCHEMA);
  const dir = waiting.child?.agentDir ?? definition.dir;
  const resolved = await resolveOutputSchema(
    dir,
    waiting.schemaRef,
    waiting.child?.stepId ?? waiting.stepId,
  );
  try {
    return answerForm(resolved.schema);
  } catch (error) {
    throw new StepflowError(
      "SCHEMA_RESOLUTION_FAILED",
      `Input step "${waiting.stepId}": its schema ${waiting.schemaRef.schema} in ${resolved.file} cannot be an answer form (${
        errorMessage(error)
      }); it changed since the agent was loaded. Fix it, or answer with --value '<json>'.`,
    );
  }
}
