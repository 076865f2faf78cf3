/**
 * Approvals through files beside the plan, so that someone other than the terminal that runs the
 * plan — the dashboard (`deno task ui --allow-actions`), a script calling {@linkcode decideApproval}
 * — can approve or deny a waiting step.
 *
 * `<plan file>.approvals/<step>.json` is the request: tool, arguments, reason, time, a fresh
 * `requestId`, and its state (`waiting`, then `approved`, `denied` or `withdrawn`), with the answer
 * (who, when, why) once there is one. It is a pending request of `src/store/pending_request.ts`:
 * every change — recording it, answering it, withdrawing it — is one step under the request's lock,
 * so the first answer changes the state and every later one finds it changed and is refused
 * (`APPROVAL_NOT_WAITING`), whatever the timing. The answer is written into the request itself:
 * there is no separate answer file to outlive it. The waiting run reads the request (a bounded
 * poll) and runs or skips the step.
 *
 * `<step>` is the step id with every character outside `A–Z a–z 0–9 _ -` written as `%XX`, so no
 * step id (`../x`, `constructor`, …) names a file outside the folder or a special one.
 *
 * @module
 */
import { join } from "node:path";
import { sleep } from "../backoff.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { pidAlive } from "../pid_alive.ts";
import { changeRequest, MAX_REQUEST_FILE_BYTES, readRequest } from "../store/pending_request.ts";
import type { ApprovalDecision, ApprovalRequest, Approver } from "./types.ts";

/** The state of an approval request. */
export type ApprovalState = "waiting" | "approved" | "denied" | "withdrawn";

/**
 * An approval request as recorded in `<plan file>.approvals/<step>.json`: the executor's request
 * and what the file adds to it.
 */
export interface ApprovalRecord extends ApprovalRequest {
  /** Identifies this request: a decision must name it. */
  requestId: string;
  /** When the step started waiting (ISO). */
  requestedAt: string;
  /** The process that waits (`run-plan`). */
  pid: number;
  /** `waiting` until answered; `withdrawn` when the run stopped waiting (cancelled). */
  state: ApprovalState;
  /** When the answer was taken (ISO). */
  decidedAt?: string;
  /** Who answered (e.g. `dashboard`), as the decision says. */
  decidedBy?: string;
  /** The reason given with a denial. */
  denyReason?: string;
}

/** Options of {@linkcode fileApprover}. */
export interface FileApproverOptions {
  /** How often a waiting step looks for its decision file (default 250 ms). */
  pollMs?: number;
  /** Receives warnings (a request file removed or replaced while the step waits). */
  onWarning?: (message: string) => void;
  /** Called when a request has been recorded (the CLI says where it waits). */
  onWaiting?: (record: ApprovalRecord, file: string) => void;
}

/** Longest file-name stem for a step; longer ids end in a hash of the whole id. */
const MAX_STEM = 160;

/** The folder of a plan's approval requests: `<plan file>.approvals`. */
export function approvalsDir(planFile: string): string {
  return `${planFile}.approvals`;
}

/**
 * The file-name stem of a step's request: the id with every character outside
 * `A–Z a–z 0–9 _ -` written as `%XX` (UTF-8 bytes), so `../x` becomes `%2E%2E%2Fx`.
 *
 * @example
 * ```ts
 * import { approvalStem } from "./file_approver.ts";
 * console.log(approvalStem("../x")); // "%2E%2E%2Fx"
 * ```
 */
export function approvalStem(stepId: string): string {
  let stem = "";
  for (const byte of new TextEncoder().encode(stepId)) {
    const c = String.fromCharCode(byte);
    stem += /[A-Za-z0-9_-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  if (stem.length <= MAX_STEM) return stem;
  return `${stem.slice(0, MAX_STEM - 17)}~${fnv64(stepId)}`;
}

/** The request file of a step: `<plan file>.approvals/<step>.json`. */
export function approvalFiles(planFile: string, stepId: string): { request: string } {
  return { request: `${join(approvalsDir(planFile), approvalStem(stepId))}.json` };
}

/**
 * An {@linkcode Approver} that records each request beside the plan and waits for a decision file
 * (see the module doc). Cancelling the run (the executor's signal) withdraws the request. Combine
 * it with a terminal prompt through {@linkcode firstApproval}.
 *
 * @example
 * ```ts ignore
 * import { executePlan, fileApprover, readPlanFile } from "jsr:@stepflow/core/plan";
 * const plan = await readPlanFile("plans/release.json");
 * await executePlan(plan, { approver: fileApprover("plans/release.json") });
 * ```
 */
export function fileApprover(planFile: string, options: FileApproverOptions = {}): Approver {
  const pollMs = Math.max(10, options.pollMs ?? 250);
  const warn = options.onWarning ?? ((m: string) => console.warn(`[stepflow] ${m}`));
  return async (request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> => {
    signal.throwIfAborted();
    const file = approvalFiles(planFile, request.stepId).request;
    const record: ApprovalRecord = {
      requestId: crypto.randomUUID(),
      planId: request.planId,
      stepId: request.stepId,
      description: request.description,
      tool: request.tool,
      args: request.args,
      reason: request.reason,
      requestedAt: new Date().toISOString(),
      pid: Deno.pid,
      state: "waiting",
    };
    const pending: PendingAsk = { requestId: record.requestId };
    pendingRequests.set(request, pending);
    // A request left by an earlier run is replaced: its answers can never be for this one. An
    // answer given (by a recordedApprover) before this write is written with it, under the lock.
    const first = await changeRecord(
      file,
      record.stepId,
      () => pending.answer ? answered(record, pending.answer) : record,
    );
    if (first.state !== "waiting") return pending.answer?.given ?? outcomeOf(first);
    options.onWaiting?.(record, file);
    try {
      for (;;) {
        const current = await readRequest(file, parseRecord);
        if (current?.requestId !== record.requestId) {
          // Removed or overwritten by hand while the step waits: record it again, unless an
          // answer to it landed in between (then the loop reads that answer next).
          warn(
            `${file}: the waiting request ${record.requestId} was removed or replaced; recorded it again.`,
          );
          await changeRecord(
            file,
            record.stepId,
            (now) => now?.requestId === record.requestId ? now : record,
          );
        } else if (current.state !== "waiting") {
          // This process's own approver answered (recordedApprover): the same value it gave.
          const own = pending.answer;
          return own && current.decidedBy === own.by ? own.given : outcomeOf(current);
        }
        await sleep(pollMs, signal);
      }
    } catch (error) {
      if (signal.aborted) {
        // Withdrawn only while still waiting: an answer that came first stays recorded.
        await changeRecord(
          file,
          record.stepId,
          (now) =>
            now?.requestId === record.requestId && now.state === "waiting"
              ? { ...now, state: "withdrawn" }
              : now ?? { ...record, state: "withdrawn" },
        ).catch(() => {});
      }
      throw error;
    }
  };
}

/** What the executor gets from an answered request. */
function outcomeOf(record: ApprovalRecord): ApprovalDecision {
  if (record.state === "approved") return true;
  if (record.state === "withdrawn") {
    return { approved: false, reason: "the request was withdrawn" };
  }
  const by = record.decidedBy ?? "someone";
  return {
    approved: false,
    reason: `denied by ${by}${record.denyReason ? `: ${record.denyReason}` : ""}`,
  };
}

/**
 * An approver of this process (a terminal prompt) whose answers go through the same one-answer
 * step as the dashboard's: its answer is recorded in the step's waiting request (`decidedBy: by`),
 * so a dashboard answer after it gets `APPROVAL_NOT_WAITING`; and when the dashboard answered
 * first, that answer is returned instead of this one. Combine it with {@linkcode fileApprover} of
 * the same plan through {@linkcode firstApproval}, so two channels still give exactly one answer.
 *
 * @example
 * ```ts ignore
 * const approver = firstApproval([recordedApprover("plan.json", terminalPrompt, "terminal"), fileApprover("plan.json")]);
 * ```
 */
export function recordedApprover(planFile: string, approver: Approver, by: string): Approver {
  return async (request, signal) => {
    const answer = await approver(request, signal);
    // The request a fileApprover records for this very ask (not one of an earlier ask).
    const pending = pendingRequests.get(request);
    if (!pending) return answer; // no dashboard asked: nothing to record
    const decision = typeof answer === "boolean" ? { approved: answer } : answer;
    // Before the request is written, this answer goes into it as it is written (see fileApprover).
    pending.answer = { ...decision, by, given: answer };
    try {
      await decideApproval(planFile, request.stepId, pending.requestId, {
        approved: decision.approved,
        ...(decision.reason ? { reason: decision.reason } : {}),
        by,
      });
      return answer;
    } catch (error) {
      if (!(error instanceof StepflowError) || error.code !== "APPROVAL_NOT_WAITING") throw error;
      const file = approvalFiles(planFile, request.stepId).request;
      const now = await readRequest(file, parseRecord).catch(() => undefined);
      if (now?.requestId !== pending.requestId) return answer; // written with this answer next
      // Answered by someone else first: that answer is the one that counts.
      return now.decidedBy !== by && (now.state === "approved" || now.state === "denied")
        ? outcomeOf(now)
        : answer;
    }
  };
}

/** A request a {@linkcode fileApprover} records, and an answer given before it was written. */
interface PendingAsk {
  requestId: string;
  /** The answer of this process's own approver, and the value it gave (returned as it is). */
  answer?: { approved: boolean; reason?: string; by: string; given: ApprovalDecision };
}

/** The request each {@linkcode fileApprover} records, by the request object it was asked. */
const pendingRequests = new WeakMap<ApprovalRequest, PendingAsk>();

/**
 * Asks every approver at once; the first answer wins and the others are cancelled (their signal
 * aborts). A failing approver is ignored while another may still answer.
 *
 * @example
 * ```ts ignore
 * const approver = firstApproval([terminalPrompt, fileApprover("plan.json")]);
 * ```
 */
export function firstApproval(approvers: readonly Approver[]): Approver {
  if (approvers.length === 1) return approvers[0];
  return (request, signal) => {
    const race = new AbortController();
    const both = AbortSignal.any([signal, race.signal]);
    const asked = approvers.map((approve) => {
      try {
        return Promise.resolve(approve(request, both));
      } catch (error) {
        return Promise.reject(error);
      }
    });
    return Promise.any(asked).finally(() => race.abort(answeredElsewhere())).catch((error) => {
      throw error instanceof AggregateError ? error.errors[0] : error;
    });
  };
}

/**
 * Whether an approver's signal aborted because another approver of a {@linkcode firstApproval}
 * answered first (not because the run stopped): a terminal prompt then says so.
 */
export function isAnsweredElsewhere(signal: AbortSignal): boolean {
  return signal.aborted && (signal.reason as Error | undefined)?.name === ANSWERED_ELSEWHERE;
}

const ANSWERED_ELSEWHERE = "ApprovalAnsweredElsewhere";

function answeredElsewhere(): Error {
  const error = new Error("another approver answered first");
  error.name = ANSWERED_ELSEWHERE;
  return error;
}

/** The requests recorded for a plan, by step id (any state); unreadable files are reported. */
export async function listApprovals(planFile: string): Promise<{
  records: Map<string, ApprovalRecord>;
  problems: string[];
}> {
  const dir = approvalsDir(planFile);
  const records = new Map<string, ApprovalRecord>();
  const problems: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { records, problems };
    throw error;
  }
  for (const entry of entries) {
    if (
      !entry.isFile || !entry.name.endsWith(".json") ||
      entry.name.startsWith(".")
    ) continue;
    const file = join(dir, entry.name);
    const record = await readRequest(file, parseRecord).catch(() => undefined);
    if (!record) problems.push(`${file} is not an approval request; remove it.`);
    else if (approvalStem(record.stepId) === entry.name.slice(0, -5)) {
      records.set(record.stepId, record);
    }
  }
  return { records, problems };
}

/**
 * Records an answer to a waiting request: `approved` or not, for `requestId` (the request the
 * person saw). The first answer wins.
 *
 * @throws {StepflowError} `APPROVAL_NOT_WAITING` when the step has no waiting request with that
 * id (already answered, withdrawn, replaced by a newer request, or never asked)
 */
export async function decideApproval(
  planFile: string,
  stepId: string,
  requestId: string,
  answer: { approved: boolean; reason?: string; by: string },
): Promise<ApprovalRecord> {
  const file = approvalFiles(planFile, stepId).request;
  const notWaiting = (why: string) =>
    new StepflowError(
      "APPROVAL_NOT_WAITING",
      `Step "${stepId}" of ${planFile}: ${why}. Reload the plan page to see its current state.`,
      { details: { planFile, stepId, requestId } },
    );
  return await changeRecord(file, stepId, (record) => {
    if (!record || record.stepId !== stepId) throw notWaiting("no approval request is recorded");
    if (record.requestId !== requestId) {
      throw notWaiting("the request answered was replaced by a newer one (the plan ran again)");
    }
    if (record.state !== "waiting") {
      throw notWaiting(
        record.state === "withdrawn"
          ? "its request was already withdrawn (the run stopped waiting)"
          : `another answer was given first: its request was already ${record.state}${
            record.decidedBy ? ` by ${record.decidedBy}` : ""
          }${record.decidedAt ? ` at ${record.decidedAt}` : ""}`,
      );
    }
    if (!waiterAlive(record)) {
      throw notWaiting(
        `the run-plan process that asked (pid ${record.pid}) is gone; run the plan again to ask anew`,
      );
    }
    return answered(record, answer);
  });
}

/** A waiting request with its answer recorded. */
function answered(
  record: ApprovalRecord,
  answer: { approved: boolean; reason?: string; by: string },
): ApprovalRecord {
  return {
    ...record,
    state: answer.approved ? "approved" : "denied",
    decidedAt: new Date().toISOString(),
    decidedBy: answer.by,
    ...(!answer.approved && answer.reason ? { denyReason: answer.reason.slice(0, 2000) } : {}),
  };
}

/**
 * Whether the process that recorded a waiting request still runs (requests are written on this
 * machine, beside the plan); a request whose process died stays `waiting` in its file.
 */
export function waiterAlive(record: ApprovalRecord): boolean {
  return record.pid === Deno.pid || pidAlive(record.pid);
}

function parseRecord(text: string): ApprovalRecord | undefined {
  const value = parseObject(text);
  if (
    !value || typeof value.requestId !== "string" || typeof value.stepId !== "string" ||
    typeof value.tool !== "string" || typeof value.state !== "string" ||
    !["waiting", "approved", "denied", "withdrawn"].includes(value.state)
  ) return undefined;
  return value as unknown as ApprovalRecord;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  if (text.length === 0 || text.length > MAX_REQUEST_FILE_BYTES) return undefined;
  try {
    const value = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Changes a step's request in one step under its lock (see the module doc); a file that cannot be
 * written is `APPROVAL_IO`.
 */
async function changeRecord(
  file: string,
  stepId: string,
  transition: (current: ApprovalRecord | undefined) => ApprovalRecord,
): Promise<ApprovalRecord> {
  try {
    return await changeRequest(file, parseRecord, transition);
  } catch (error) {
    if (error instanceof StepflowError && error.code === "APPROVAL_NOT_WAITING") throw error;
    throw new StepflowError(
      "APPROVAL_IO",
      `Cannot record the approval request of step "${stepId}" in ${file}: ${
        errorMessage(error)
      }. Check that the plan's folder is writable.`,
      { details: { file, stepId }, cause: error },
    );
  }
}

/** 64-bit FNV-1a of a string, as 16 hex digits (distinct names for long step ids). */
function fnv64(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= BigInt(byte);
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, "0");
}
