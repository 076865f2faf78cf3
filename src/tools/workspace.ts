import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
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
  const { real, rest } = await locate(workspaceRoot, userPath);
  return rest ? resolve(real, rest) : real;
}

/**
 * Resolves `userPath` for writing a file and makes its folder: the one rule every writing tool
 * follows (`write_file`, QPlan's `file write`).
 *
 * - everything {@linkcode resolveInWorkspace} refuses is refused;
 * - a path through a symbolic link whose target does not exist — the file itself, or a folder on
 *   the way — is refused (`PATH_ESCAPES_WORKSPACE`): writing would follow the link to wherever it
 *   points, possibly outside the workspace, and a dangling folder link cannot take a new folder;
 * - the workspace root and existing folders are refused (`FILE_IS_DIRECTORY`);
 * - missing folders are created, and the path is checked again afterwards (a link swapped in
 *   meanwhile is caught).
 *
 * @param tool names the tool in messages (`write_file`, `file write`)
 * @returns the absolute, real path to write to (its folder exists)
 * @throws StepflowError `PATH_ESCAPES_WORKSPACE` or `FILE_IS_DIRECTORY`
 *
 * @example
 * ```ts
 * import { prepareWriteInWorkspace } from "./workspace.ts";
 * const root = await Deno.makeTempDir();
 * const file = await prepareWriteInWorkspace(root, "out/report.txt", "write_file");
 * await Deno.writeTextFile(file, "done");
 * ```
 */
export async function prepareWriteInWorkspace(
  workspaceRoot: string,
  userPath: string,
  tool: string,
): Promise<string> {
  const first = await checkWritable(workspaceRoot, userPath, tool);
  await Deno.mkdir(dirname(first.path), { recursive: true });
  const checked = await checkWritable(workspaceRoot, userPath, tool);
  return checked.path;
}

async function checkWritable(
  workspaceRoot: string,
  userPath: string,
  tool: string,
): Promise<{ path: string }> {
  const { root, real, rest } = await locate(workspaceRoot, userPath);
  if (rest === "") {
    if ((await Deno.stat(real)).isDirectory) {
      throw new StepflowError(
        "FILE_IS_DIRECTORY",
        real === root
          ? `${tool}: "${userPath}" is the workspace root itself. Name a file inside it.`
          : `${tool}: "${userPath}" is a folder. Name a file path instead.`,
        { details: { path: userPath } },
      );
    }
    return { path: real };
  }
  // The first missing entry is the only one that can be there at all: as a dangling link.
  const firstMissing = resolve(real, rest.split(sep)[0]);
  if (await isSymlink(firstMissing)) {
    const link = relative(root, firstMissing).split(sep).join("/");
    throw new StepflowError(
      "PATH_ESCAPES_WORKSPACE",
      `Refused path "${userPath}": "${link}" is a symbolic link whose target does not exist, so writing through it could land anywhere (workspace root: ${workspaceRoot}). Remove the link, or write elsewhere.`,
      { details: { path: userPath, workspaceRoot, link } },
    );
  }
  return { path: resolve(real, rest) };
}

/** The real path of the nearest existing ancestor of `userPath`, and the part below it. */
async function locate(
  workspaceRoot: string,
  userPath: string,
): Promise<{ root: string; real: string; rest: string }> {
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
      return { root, real, rest };
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

async function isSymlink(file: string): Promise<boolean> {
  try {
    return (await Deno.lstat(file)).isSymlink;
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
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
