/**
 * Whether something is at a path, in the two meanings stepflow needs (both look at the path
 * itself: a dangling symbolic link counts as present, as it would block a rename or a create):
 *
 * - {@linkcode pathExists}: "is something there?", before creating or overwriting a file. Only
 *   "not found" answers `false`; any other failure (a folder without permission) is thrown, so a
 *   file that cannot be checked is never taken for absent and overwritten.
 * - {@linkcode pathVisible} / {@linkcode pathVisibleSync}: "can I see something there?", before
 *   reading what a store may hold. Any failure answers `false`: what cannot be looked at is treated
 *   as absent, and the read that follows (if any) reports the real problem.
 *
 * @module
 */

/**
 * True when something (file, folder, link) is at `path`; false when nothing is.
 *
 * @throws the file system's error for anything but "not found" (permission denied, …)
 *
 * @example
 * ```ts
 * import { pathExists } from "./path_exists.ts";
 * if (await pathExists("plan.json")) console.log("plan.json is taken");
 * ```
 */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * True when `path` can be looked at (`lstat` succeeds); false for any failure.
 *
 * @example
 * ```ts
 * import { pathVisible } from "./path_exists.ts";
 * console.log(await pathVisible("/no/such/file")); // false
 * ```
 */
export async function pathVisible(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** The synchronous {@linkcode pathVisible}. */
export function pathVisibleSync(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
