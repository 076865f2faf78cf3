/**
 * Reading a text file a user named (a plan, a script), with the one error a user should see when it
 * cannot be read: what the file was for, its path, and why (`no such file`, or the system's reason).
 *
 * @module
 */
import type { StepflowErrorCode } from "./error_codes.ts";
import { StepflowError } from "./errors.ts";

/**
 * The text of `file`, or a {@linkcode StepflowError} with `code` saying
 * `Cannot read <what> <file>: <why><fix>` (details: `{ file }`).
 *
 * @example
 * ```ts ignore
 * import { readTextFileOr } from "./read_text_file.ts";
 * const text = await readTextFileOr("plan.json", "PLAN_FILE_NOT_FOUND", "plan file", ".");
 * ```
 */
export async function readTextFileOr(
  file: string,
  code: StepflowErrorCode,
  what: string,
  fix = "",
): Promise<string> {
  try {
    return await Deno.readTextFile(file);
  } catch (error) {
    throw new StepflowError(
      code,
      `Cannot read ${what} ${file}: ${
        error instanceof Deno.errors.NotFound ? "no such file" : (error as Error).message
      }${fix}`,
      { details: { file } },
    );
  }
}
