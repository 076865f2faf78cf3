import { StepflowError } from "../errors.ts";

/**
 * Takes an exclusive lock on a plan file for a run (`<file>.lock`, created exclusively, holding the
 * pid). A lock left by a process that no longer exists (a killed run) is taken over.
 *
 * @returns a function that releases the lock
 * @throws {StepflowError} `PLAN_LOCKED` when another live process holds it
 */
export async function lockPlanFile(file: string): Promise<() => Promise<void>> {
  const lockFile = `${file}.lock`;
  const me = JSON.stringify({ pid: Deno.pid, host: hostname(), at: new Date().toISOString() });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await Deno.writeTextFile(lockFile, me, { createNew: true });
      return async () => {
        await Deno.remove(lockFile).catch(() => {});
      };
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
    const holder = await readHolder(lockFile);
    if (holder && isAlive(holder)) {
      throw new StepflowError(
        "PLAN_LOCKED",
        `${file} is being run by process ${holder.pid} (lock file ${lockFile}). Wait for that run to end, or delete the lock file if that process is gone.`,
        { details: { file, lockFile, pid: holder.pid } },
      );
    }
    await Deno.remove(lockFile).catch(() => {});
  }
  throw new StepflowError(
    "PLAN_LOCKED",
    `Cannot lock ${file}: ${lockFile} keeps reappearing; another run is starting at the same time.`,
    { details: { file, lockFile } },
  );
}

interface Holder {
  pid: number;
  host: string;
}

async function readHolder(lockFile: string): Promise<Holder | undefined> {
  try {
    const data = JSON.parse(await Deno.readTextFile(lockFile));
    if (typeof data?.pid === "number") return { pid: data.pid, host: String(data.host ?? "") };
  } catch {
    // An unreadable or half-written lock is treated as stale.
  }
  return undefined;
}

function isAlive(holder: Holder): boolean {
  if (holder.host !== hostname()) return true; // cannot check another machine: assume alive
  if (holder.pid === Deno.pid) return true;
  try {
    Deno.kill(holder.pid, 0 as unknown as Deno.Signal);
    return true;
  } catch (error) {
    return !(error instanceof Deno.errors.NotFound);
  }
}

function hostname(): string {
  try {
    return Deno.hostname();
  } catch {
    return "";
  }
}
