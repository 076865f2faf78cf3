/**
 * The folder walk under `Glob` and `Grep`: files below a folder of the workspace, never following a
 * symbolic link out of it, skipping `.git`, and stopping after a bounded number of entries.
 *
 * @module
 */
import { join, relative, sep } from "node:path";
import { AGENT_TOOL_LIMITS } from "./agent_limits.ts";
import { isInside } from "./workspace.ts";

/** One file found by {@linkcode walkFiles}. */
export interface WalkedFile {
  /** Absolute path. */
  abs: string;
  /** Path relative to the folder walked, `/`-separated. */
  rel: string;
  /** Path relative to the workspace root, `/`-separated. */
  fromRoot: string;
  /** Its real path: `abs`, or for a symbolic link the file it leads to. */
  real: string;
}

/** What a walk found, and whether it stopped early. */
export interface WalkResult {
  /** The files, in walk order (folders breadth-first, names sorted). */
  files: WalkedFile[];
  /** True when `walkEntries` entries were visited before the walk was done. */
  stopped: boolean;
}

/** Folders never walked into: version-control internals are noise for a model. */
const SKIPPED_DIRS = new Set([".git"]);

/**
 * Every file below `dir` (a real path inside the real `root`). Symbolic links to folders are not
 * entered; a link to a file is listed only when its target is inside the workspace.
 */
export async function walkFiles(
  root: string,
  dir: string,
  signal?: AbortSignal,
): Promise<WalkResult> {
  const files: WalkedFile[] = [];
  const queue = [dir];
  let visited = 0;
  for (let head = 0; head < queue.length; head++) {
    signal?.throwIfAborted();
    const current = queue[head];
    const children: Deno.DirEntry[] = [];
    try {
      for await (const child of Deno.readDir(current)) children.push(child);
    } catch (error) {
      if (error instanceof Deno.errors.PermissionDenied) continue;
      throw error;
    }
    children.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const child of children) {
      if (++visited > AGENT_TOOL_LIMITS.walkEntries) return { files, stopped: true };
      const abs = join(current, child.name);
      if (child.isDirectory) {
        if (!SKIPPED_DIRS.has(child.name)) queue.push(abs);
      } else if (child.isFile || child.isSymlink) {
        const real = child.isFile ? abs : await linkedFileInside(root, abs);
        if (real === undefined) continue;
        files.push({
          abs,
          rel: slashes(relative(dir, abs)),
          fromRoot: slashes(relative(root, abs)),
          real,
        });
      }
    }
  }
  return { files, stopped: false };
}

/** The real path of the file `link` leads to, when it is a file inside the workspace. */
async function linkedFileInside(root: string, link: string): Promise<string | undefined> {
  try {
    const real = await Deno.realPath(link);
    return isInside(root, real) && (await Deno.stat(real)).isFile ? real : undefined;
  } catch {
    return undefined;
  }
}

function slashes(path: string): string {
  return path.split(sep).join("/");
}
