/**
 * The one check of a folder a command works in (`--workspace` of `run-plan` and `qplan run`): it
 * must exist, be a folder, and be listable by this user — a link loop, a name too long or a
 * mode-000 folder is a usage error naming it and the fix, before anything runs.
 *
 * @module
 */
import { UsageError } from "../../errors.ts";
import { fileAccessError } from "../../fs_error.ts";

/**
 * Throws a {@linkcode UsageError} unless `dir` is a folder this user can list.
 *
 * @example
 * ```ts
 * import { assertFolderFlag } from "./folder_flag.ts";
 * await assertFolderFlag(await Deno.makeTempDir(), "--workspace"); // fine
 * ```
 *
 * @param dir the folder (absolute)
 * @param flag the flag that named it, for the message (`--workspace`)
 */
export async function assertFolderFlag(dir: string, flag: string): Promise<void> {
  try {
    if ((await Deno.stat(dir)).isDirectory) {
      // Listing the first entry proves read access (a mode-000 folder stats fine).
      for await (const _ of Deno.readDir(dir)) break;
      return;
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      const access = fileAccessError(error, { action: `use ${flag}`, path: dir });
      if (!access) throw error;
      throw new UsageError(access.message);
    }
    throw new UsageError(`${flag} ${dir} does not exist. Name an existing folder.`);
  }
  throw new UsageError(`${flag} ${dir} is not a folder. Name an existing folder.`);
}
