import { isAbsolute, relative, resolve, sep } from "node:path";
import { StepflowError } from "../errors.ts";

/**
 * Resolves `userPath` inside `workspaceRoot` and refuses anything that escapes it: `..` segments,
 * absolute paths elsewhere, and symlinks (on any existing ancestor) that lead outside the root.
 * Paths that do not exist yet are allowed when their nearest existing ancestor is inside.
 *
 * @returns the absolute, real path to use
 * @throws StepflowError `PATH_ESCAPES_WORKSPACE`
 *
 * @example
 * ```ts
 * import { resolveInWorkspace } from "./workspace.ts";
 * const p = await resolveInWorkspace(Deno.cwd(), "notes/today.md"); // ok
 * await resolveInWorkspace(Deno.cwd(), "../etc/passwd").catch((e) => console.log(e.code));
 * ```
 */
export async function resolveInWorkspace(workspaceRoot: string, userPath: string): Promise<string> {
  if (typeof userPath !== "string" || userPath === "" || userPath.includes("\0")) {
    throw escape(workspaceRoot, String(userPath), "the path is empty or contains a NUL byte");
  }
  const root = await Deno.realPath(resolve(workspaceRoot));
  const target = resolve(root, userPath);
  if (!isInside(root, target)) throw escape(workspaceRoot, userPath, "it leaves the workspace");

  // Walk up to the nearest existing ancestor and check where it really points.
  let existing = target;
  let rest = "";
  for (;;) {
    try {
      const real = await Deno.realPath(existing);
      if (!isInside(root, real)) {
        throw escape(workspaceRoot, userPath, "a symbolic link leads outside the workspace");
      }
      return rest ? resolve(real, rest) : real;
    } catch (error) {
      if (error instanceof StepflowError) throw error;
      if (!isMissing(error)) throw error;
      const parent = resolve(existing, "..");
      if (parent === existing) throw escape(workspaceRoot, userPath, "no ancestor exists");
      rest = rest ? `${relative(parent, existing)}${sep}${rest}` : relative(parent, existing);
      existing = parent;
    }
  }
}

/** True when `target` is `root` or lies below it (both absolute, normalised). */
export function isInside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** Missing entries (and paths through a file) are resolved against their nearest existing ancestor. */
function isMissing(error: unknown): boolean {
  return error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory ||
    (error as { code?: string })?.code === "ENOENT";
}

function escape(root: string, path: string, why: string): StepflowError {
  return new StepflowError(
    "PATH_ESCAPES_WORKSPACE",
    `Refused path "${path}": ${why} (workspace root: ${root}). Use a path inside the workspace.`,
    { details: { path, workspaceRoot: root } },
  );
}
