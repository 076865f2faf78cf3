/**
 * Whether a process exists on this host, for telling a crashed holder's leftovers (lock files,
 * temp files) from a live one's.
 *
 * @module
 */
import process from "node:process";

/** True when a process with this id exists on this host (it may belong to another user). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as { code?: string }).code === "EPERM";
  }
}
