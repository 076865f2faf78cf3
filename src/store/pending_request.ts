/**
 * A pending request answered exactly once: the one path by which something outside a run (the
 * dashboard, a script) answers what the run waits for — a tool-plan step's approval today.
 *
 * The request is a JSON file whose `state` is `waiting` until it is answered. Every change of it
 * is one step under the one lock of stepflow (`<request file>.lock`, see `file_lock.ts`): read the
 * file, let the caller judge the current record and return the next one (or throw to refuse), write
 * it with the one atomic writer, release. So of two answers, whatever their timing, the first
 * changes the state and the second reads the changed state and is refused; and the answer lives in
 * the request file itself, so no separate answer file can outlive its request. The waiting process
 * reads the file (a bounded poll), and its own changes (withdrawing on cancel) take the same step.
 *
 * @module
 */
import { dirname } from "node:path";
import { writeFileAtomic } from "../atomic_write.ts";
import { sleep } from "../backoff.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { acquireFileLock, type HeldFileLock, type LockSubject } from "./file_lock.ts";

/** Request files are small; a larger file is not one of ours and is not read into memory. */
export const MAX_REQUEST_FILE_BYTES = 10_000_000;

/** Options of {@linkcode changeRequest}. */
export interface ChangeRequestOptions {
  /** How long to wait for another change of the same request to finish (default 10 s). */
  timeoutMs?: number;
  /** Receives warnings (a lock left by a process that died, taken over). */
  onWarning?: (message: string) => void;
}

/**
 * Changes a request file in one step: under its lock, `transition` gets the current record
 * (`undefined` when the file is missing or is not a record `parse` accepts) and returns the record
 * to write, or throws to refuse (nothing is written then). Returns what was written.
 *
 * @example
 * ```ts
 * import { changeRequest } from "./pending_request.ts";
 * type Ask = { requestId: string; state: string };
 * const file = `${await Deno.makeTempDir()}/ask.json`;
 * const parse = (text: string) => JSON.parse(text) as Ask;
 * await changeRequest<Ask>(file, parse, () => ({ requestId: "r1", state: "waiting" }));
 * const answered = await changeRequest<Ask>(file, parse, (current) => {
 *   if (current?.state !== "waiting") throw new Error("already answered");
 *   return { ...current, state: "approved" };
 * });
 * console.log(answered.state); // "approved"
 * ```
 *
 * @throws {StepflowError} `REQUEST_BUSY` when another process holds the request's lock for longer
 * than `timeoutMs`; `REQUEST_IO` when the file cannot be read or written; whatever `transition`
 * throws
 */
export async function changeRequest<T>(
  file: string,
  parse: (text: string) => T | undefined,
  transition: (current: T | undefined) => T,
  options: ChangeRequestOptions = {},
): Promise<T> {
  using _lock = await lockRequest(file, () => transition(undefined), options);
  const text = await readRequestFile(file);
  const next = transition(text === undefined ? undefined : parseSafely(parse, text));
  try {
    await writeFileAtomic(file, `${JSON.stringify(next, null, 2)}\n`);
  } catch (error) {
    throw ioError(file, "write", error);
  }
  return next;
}

/**
 * The current record of a request file (no lock: the file is only ever replaced whole), or
 * `undefined` when it is missing or not a record `parse` accepts.
 */
export async function readRequest<T>(
  file: string,
  parse: (text: string) => T | undefined,
): Promise<T | undefined> {
  const text = await readRequestFile(file);
  return text === undefined ? undefined : parseSafely(parse, text);
}

function parseSafely<T>(parse: (text: string) => T | undefined, text: string): T | undefined {
  try {
    return parse(text);
  } catch {
    return undefined;
  }
}

/** The text of a request file; `undefined` when missing, `""` when larger than the bound. */
async function readRequestFile(file: string): Promise<string | undefined> {
  try {
    if ((await Deno.stat(file)).size > MAX_REQUEST_FILE_BYTES) return "";
    return await Deno.readTextFile(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw ioError(file, "read", error);
  }
}

/**
 * Takes the request's lock, waiting (briefly, a few ms at a time) while another change holds it.
 * A missing folder is created, but only after `firstRecord` (the transition of a missing request)
 * accepted that there is none: an answer to a request never made leaves no folder behind.
 */
async function lockRequest(
  file: string,
  firstRecord: () => unknown,
  options: ChangeRequestOptions,
): Promise<HeldFileLock> {
  const subject = requestLockSubject(file);
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (let created = false;;) {
    try {
      return acquireFileLock(`${file}.lock`, "request", {
        staleAfterMs: 60_000,
        onWarning: options.onWarning ?? (() => {}),
        subject,
      });
    } catch (error) {
      if (missingFolder(error) && !created) {
        firstRecord();
        await Deno.mkdir(dirname(file), { recursive: true }).catch(() => {});
        created = true;
        continue;
      }
      if (!(error instanceof StepflowError) || error.code !== subject.code) {
        throw error instanceof StepflowError ? error : ioError(`${file}.lock`, "lock", error);
      }
      if (Date.now() >= deadline) throw error;
      // A change takes milliseconds; a random pause keeps two waiters from retrying in step.
      await sleep(2 + Math.random() * 10);
    }
  }
}

/** Whether taking a lock failed because its folder does not exist (yet). */
function missingFolder(error: unknown): boolean {
  return error instanceof StepflowError && error.code === "FILE_ACCESS" &&
    (error.cause as { code?: unknown } | undefined)?.code === "ENOENT";
}

function requestLockSubject(file: string): LockSubject {
  return {
    code: "REQUEST_BUSY",
    lostCode: "REQUEST_BUSY",
    title: `Request ${file}`,
    noun: `request ${file}`,
    activity: "answered",
    rule: "A request changes one answer at a time",
  };
}

function ioError(file: string, verb: string, error: unknown): StepflowError {
  return new StepflowError(
    "REQUEST_IO",
    `Cannot ${verb} the request file ${file}: ${
      errorMessage(error)
    }. Check that its folder exists and is readable and writable by this user.`,
    { details: { file }, cause: error },
  );
}
