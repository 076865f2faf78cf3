/**
 * Approvals through files beside the plan, so that someone other than the terminal that runs the
 * plan — the dashboard (`deno task ui --allow-actions`), a script, a person with an editor — can
 * approve or deny a waiting step.
 *
 * - `<plan file>.approvals/<step>.json` — the request: tool, arguments, reason, time, a fresh
 *   `requestId`, and its state (`waiting`, then `approved`, `denied` or `withdrawn`). Written with
 *   the one atomic writer; the run that asks owns it.
 * - `<plan file>.approvals/<step>.decision.json` — the answer for one `requestId`. Created
 *   exclusively (written atomically to a temp file, then hard-linked into place), so the first
 *   answer wins and a reader never sees half of one. The waiting run reads it (a bounded poll),
 *   records the outcome in the request file and removes it.
 *
 * `<step>` is the step id with every character outside `A–Z a–z 0–9 _ -` written as `%XX`, so no
 * step id (`../x`, `constructor`, …) names a file outside the folder or a special one. A decision
 * for another request (left by an earlier run, or written for a request that was since replaced)
 * is stale: it is ignored and removed.
 *
 * @module
 */
import { join } from "node:path";
import { writeFileAtomic } from "../atomic_write.ts";
import { sleep } from "../backoff.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { pidAlive } from "../pid_alive.ts";
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

/** An answer, as written to `<plan file>.approvals/<step>.decision.json`. */
export interface ApprovalAnswer {
  /** The request answered. */
  requestId: string;
  /** Approve (true) or deny (false). */
  approved: boolean;
  /** Why (shown with a denial). */
  reason?: string;
  /** Who answered. */
  by: string;
  /** When (ISO). */
  decidedAt: string;
}

/** Options of {@linkcode fileApprover}. */
export interface FileApproverOptions {
  /** How often a waiting step looks for its decision file (default 250 ms). */
  pollMs?: number;
  /** Receives warnings (a stale or unreadable decision file that was removed). */
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

/** The request file and decision file of a step. */
export function approvalFiles(planFile: string, stepId: string): {
  request: string;
  decision: string;
} {
  const base = join(approvalsDir(planFile), approvalStem(stepId));
  return { request: `${base}.json`, decision: `${base}.decision.json` };
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
    const files = approvalFiles(planFile, request.stepId);
    // An answer left from an earlier request can never be for this one.
    await removeIfPresent(files.decision);
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
    await writeRecord(files.request, record);
    options.onWaiting?.(record, files.request);
    try {
      for (;;) {
        const answer = await readAnswer(files.decision, record.requestId, warn);
        if (answer) {
          const decided: ApprovalRecord = {
            ...record,
            state: answer.approved ? "approved" : "denied",
            decidedAt: answer.decidedAt,
            decidedBy: answer.by,
            ...(!answer.approved && answer.reason ? { denyReason: answer.reason } : {}),
          };
          await writeRecord(files.request, decided);
          await removeIfPresent(files.decision);
          if (answer.approved) return true;
          return {
            approved: false,
            reason: `denied by ${answer.by}${answer.reason ? `: ${answer.reason}` : ""}`,
          };
        }
        await sleep(pollMs, signal);
      }
    } catch (error) {
      if (signal.aborted) {
        await writeRecord(files.request, { ...record, state: "withdrawn" }).catch(() => {});
      }
      throw error;
    }
  };
}

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
      !entry.isFile || !entry.name.endsWith(".json") || entry.name.endsWith(".decision.json") ||
      entry.name.startsWith(".")
    ) continue;
    const file = join(dir, entry.name);
    const record = parseRecord(await readApprovalFile(file).catch(() => undefined) ?? "");
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
  const files = approvalFiles(planFile, stepId);
  const record = parseRecord(
    await readApprovalFile(files.request).catch(() => undefined) ?? "",
  );
  const notWaiting = (why: string) =>
    new StepflowError(
      "APPROVAL_NOT_WAITING",
      `Step "${stepId}" of ${planFile}: ${why}. Reload the plan page to see its current state.`,
      { details: { planFile, stepId, requestId } },
    );
  if (!record || record.stepId !== stepId) throw notWaiting("no approval request is recorded");
  if (record.requestId !== requestId) {
    throw notWaiting("the request answered was replaced by a newer one (the plan ran again)");
  }
  if (record.state !== "waiting") throw notWaiting(`its request was already ${record.state}`);
  if (!waiterAlive(record)) {
    throw notWaiting(
      `the run-plan process that asked (pid ${record.pid}) is gone; run the plan again to ask anew`,
    );
  }
  const body: ApprovalAnswer = {
    requestId,
    approved: answer.approved,
    ...(answer.reason ? { reason: answer.reason.slice(0, 2000) } : {}),
    by: answer.by,
    decidedAt: new Date().toISOString(),
  };
  // Atomic and exclusive: a complete temp file, then a hard link that fails when an answer exists.
  const temp = `${files.decision}.${Deno.pid}-${crypto.randomUUID().slice(0, 8)}.pending`;
  await writeFileAtomic(temp, `${JSON.stringify(body)}\n`);
  try {
    await Deno.link(temp, files.decision);
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) {
      throw notWaiting("another answer was given first");
    }
    throw error;
  } finally {
    await removeIfPresent(temp);
  }
  return record;
}

/**
 * Whether the process that recorded a waiting request still runs (requests are written on this
 * machine, beside the plan); a request whose process died stays `waiting` in its file.
 */
export function waiterAlive(record: ApprovalRecord): boolean {
  return record.pid === Deno.pid || pidAlive(record.pid);
}

async function readAnswer(
  file: string,
  requestId: string,
  warn: (message: string) => void,
): Promise<ApprovalAnswer | undefined> {
  const text = await readApprovalFile(file);
  if (text === undefined) return undefined;
  const answer = parseAnswer(text);
  if (answer && answer.requestId === requestId) return answer;
  warn(
    `${file}: ${
      answer ? `an answer to another request (${answer.requestId})` : "not an approval answer"
    }; removed it. Answer the waiting request ${requestId} instead.`,
  );
  await removeIfPresent(file);
  return undefined;
}

function parseAnswer(text: string): ApprovalAnswer | undefined {
  const value = parseObject(text);
  if (
    !value || typeof value.requestId !== "string" || typeof value.approved !== "boolean" ||
    typeof value.by !== "string" || typeof value.decidedAt !== "string" ||
    (value.reason !== undefined && typeof value.reason !== "string")
  ) return undefined;
  return value as unknown as ApprovalAnswer;
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

/** Requests and answers are small; a larger file is not one of ours and is not read into memory. */
const MAX_APPROVAL_FILE_BYTES = 10_000_000;

/**
 * The text of a request or answer file, `undefined` when it does not exist, `""` when it is larger
 * than {@linkcode MAX_APPROVAL_FILE_BYTES} (so it parses as "not an approval file").
 */
async function readApprovalFile(file: string): Promise<string | undefined> {
  try {
    if ((await Deno.stat(file)).size > MAX_APPROVAL_FILE_BYTES) return "";
    return await Deno.readTextFile(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

function parseObject(text: string): Record<string, unknown> | undefined {
  if (text.length === 0 || text.length > MAX_APPROVAL_FILE_BYTES) return undefined;
  try {
    const value = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

async function writeRecord(file: string, record: ApprovalRecord): Promise<void> {
  try {
    await writeFileAtomic(file, `${JSON.stringify(record, null, 2)}\n`);
  } catch (error) {
    throw new StepflowError(
      "APPROVAL_IO",
      `Cannot record the approval request of step "${record.stepId}" in ${file}: ${
        errorMessage(error)
      }. Check that the plan's folder is writable.`,
      { details: { file, stepId: record.stepId }, cause: error },
    );
  }
}

async function removeIfPresent(file: string): Promise<void> {
  try {
    await Deno.remove(file);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
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
