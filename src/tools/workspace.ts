/**
 * The one resolver of tool paths: every path a tool is given is resolved here, inside the
 * workspace, to the file it really reaches ({@linkcode reachPath}); tools then act on that file
 * only (`openResolved`, `writeFileAtomic`'s `resolvedFolder`).
 *
 * The resolution's system calls (`realpath`, `stat`, `readlink`) are made at once, not through
 * the runtime's thread pool: each is one call on metadata that never waits for a file's content,
 * and the round trip of an asynchronous call cost more than the call itself — a `Read` of a small
 * file spent most of its time in them.
 *
 * @module
 */
import { dirname, isAbsolute, join, parse, relative, resolve, sep } from "node:path";
import { StepflowError } from "../errors.ts";
import type { ReachedPath, ToolContext } from "./types.ts";

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
// deno-lint-ignore require-await
export async function resolveInWorkspace(workspaceRoot: string, userPath: string): Promise<string> {
  const { real, rest } = locate(workspaceRoot, userPath);
  return rest ? resolve(real, rest) : real;
}

/**
 * Resolves `userPath` inside `workspaceRoot` — the one resolver every path of a tool call goes
 * through — and says where it really leads: the path as written, its real path (through every
 * symbolic link, and `..` after a link as the system reads it), the first link on the way, a
 * dangling link a write would go through, and for an existing file how many names (hard links)
 * it has. Permission rules judge both paths; the tool then acts on `abs`.
 *
 * Costs a real-path lookup and a `stat` (and a few `lstat`s when the path goes through a link).
 *
 * @throws StepflowError `PATH_ESCAPES_WORKSPACE` (what {@linkcode resolveInWorkspace} refuses)
 *
 * @example
 * ```ts
 * import { reachPath } from "./workspace.ts";
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/.git`);
 * await Deno.writeTextFile(`${root}/.git/config`, "[core]\n");
 * await Deno.symlink("../.git/config", `${root}/link`);
 * const reached = await reachPath(root, "link");
 * // { written: "link", real: ".git/config", link: { path: "link", to: "../.git/config" }, … }
 * ```
 */
// deno-lint-ignore require-await
export async function reachPath(workspaceRoot: string, userPath: string): Promise<ReachedPath> {
  const { root, lexical, real, rest } = locate(workspaceRoot, userPath);
  const abs = rest ? resolve(real, rest) : real;
  const reached: ReachedPath = {
    written: fromRoot(root, lexical),
    real: fromRoot(root, abs),
    abs,
    exists: rest === "",
  };
  if (rest === "") {
    const info = statIfThere(abs); // removed meanwhile: a path to create
    if (!info) reached.exists = false;
    else if (info.isDirectory) reached.isDirectory = true;
    else if (info.isFile) reached.hardLinks = info.nlink ?? 1;
  } else {
    // The first missing entry is the only one that can be there at all: as a dangling link.
    const firstMissing = resolve(real, rest.split(sep)[0]);
    const to = readLinkIfLink(firstMissing);
    if (to !== undefined) {
      reached.dangling = {
        path: fromRoot(root, firstMissing),
        to,
        target: danglingTarget(root, resolve(dirname(firstMissing), to), rest),
      };
    }
  }
  if (reached.real !== reached.written) {
    const link = firstLink(root, userPath);
    if (link) reached.link = link;
  }
  return reached;
}

/**
 * The resolution of a tool's path argument `arg`: the one permission rules judged when the call
 * went through them (`ctx.paths`), else resolved now.
 *
 * @example
 * ```ts
 * import { reachArgument } from "./workspace.ts";
 * const reached = await reachArgument({ workspaceRoot: "." }, "file_path", "deno.json");
 * console.log(reached.abs);
 * ```
 */
export async function reachArgument(
  ctx: ToolContext,
  arg: string,
  userPath: string,
): Promise<ReachedPath> {
  return ctx.paths ? ctx.paths.reached(arg) : await reachPath(ctx.workspaceRoot, userPath);
}

/**
 * Resolves `userPath` for writing a file and makes its folder: the one rule every writing tool
 * follows (`Write`, `Edit`, `write_file`, QPlan's `file write`).
 *
 * - everything {@linkcode resolveInWorkspace} refuses is refused;
 * - a path through a symbolic link whose target does not exist — the file itself, or a folder on
 *   the way — is refused (`PATH_ESCAPES_WORKSPACE`): writing would follow the link to wherever it
 *   points, possibly outside the workspace, and a dangling folder link cannot take a new folder;
 * - the workspace root and existing folders are refused (`FILE_IS_DIRECTORY`);
 * - missing folders are created.
 *
 * Write to the returned path with `writeFileAtomic(path, data, { resolvedFolder: true })`: it
 * writes into the folder that was checked and no other, so a link swapped in after this check is
 * caught.
 *
 * @param tool names the tool in messages (`write_file`, `file write`)
 * @param reached the path's resolution when it was already judged (the tool loop's): it is used
 *   as is, not resolved again
 * @returns the absolute, real path to write to (its folder exists)
 * @throws StepflowError `PATH_ESCAPES_WORKSPACE` or `FILE_IS_DIRECTORY`
 *
 * @example
 * ```ts
 * import { writeFileAtomic } from "../atomic_write.ts";
 * import { prepareWriteInWorkspace } from "./workspace.ts";
 * const root = await Deno.makeTempDir();
 * const file = await prepareWriteInWorkspace(root, "out/report.txt", "write_file");
 * await writeFileAtomic(file, "done", { resolvedFolder: true });
 * ```
 */
export async function prepareWriteInWorkspace(
  workspaceRoot: string,
  userPath: string,
  tool: string,
  reached?: ReachedPath,
): Promise<string> {
  const target = reached ?? await reachPath(workspaceRoot, userPath);
  if (target.dangling) {
    const link = target.dangling.path;
    throw new StepflowError(
      "PATH_ESCAPES_WORKSPACE",
      `Refused path "${userPath}": "${link}" is a symbolic link whose target does not exist, so writing through it could land anywhere (workspace root: ${workspaceRoot}). Remove the link, or write elsewhere.`,
      { details: { path: userPath, workspaceRoot, link } },
    );
  }
  if (target.isDirectory) {
    throw new StepflowError(
      "FILE_IS_DIRECTORY",
      target.real === "."
        ? `${tool}: "${userPath}" is the workspace root itself. Name a file inside it.`
        : `${tool}: "${userPath}" is a folder. Name a file path instead.`,
      { details: { path: userPath } },
    );
  }
  await makeFolders(dirname(target.abs), tool, userPath);
  return target.abs;
}

/**
 * Creates the missing folders of `dir` (a real path) one by one, never through a link: a folder
 * that turns up as a link meanwhile is `PATH_CHANGED`, and nothing is created where it leads.
 */
async function makeFolders(dir: string, tool: string, userPath: string): Promise<void> {
  const missing: string[] = [];
  for (let at = dir;; at = dirname(at)) {
    const info = await Deno.lstat(at).catch((error) => {
      if (isMissing(error)) return undefined;
      throw error;
    });
    if (info?.isDirectory) break;
    if (info || dirname(at) === at) {
      throw folderChanged(tool, userPath, at);
    }
    missing.unshift(at);
  }
  for (const folder of missing) {
    try {
      await Deno.mkdir(folder);
    } catch (error) {
      // A folder above it removed meanwhile (another process swapping the path): changed.
      if (isMissing(error)) throw folderChanged(tool, userPath, folder);
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      const now = await Deno.lstat(folder).catch((error) => {
        if (isMissing(error)) return undefined; // made, then removed again before the look
        throw error;
      });
      if (!now?.isDirectory) {
        throw folderChanged(tool, userPath, folder);
      }
    }
  }
}

/** The path a write through a dangling link would create, relative to the root (as far as known). */
function danglingTarget(root: string, target: string, rest: string): string {
  const below = rest.split(sep).slice(1).join(sep);
  const whole = below ? resolve(target, below) : target;
  try {
    const found = nearestExisting(whole);
    return fromRoot(root, found.rest ? resolve(found.real, found.rest) : found.real);
  } catch {
    return fromRoot(root, whole);
  }
}

/** The first symbolic link on `userPath` below the root, read segment by segment as written. */
function firstLink(root: string, userPath: string): { path: string; to: string } | undefined {
  let prefix = isAbsolute(userPath) ? "" : root;
  for (const segment of userPath.split(SEPARATORS)) {
    prefix = prefix === "" && segment === "" ? sep : join(prefix, segment);
    if (segment === "" || segment === "." || segment === ".." || !isInside(root, prefix)) {
      continue;
    }
    // (Only to explain a refusal: a link swapped away meanwhile just goes unnamed.)
    const to = readLinkIfLink(prefix);
    if (to !== undefined) return { path: fromRoot(root, prefix), to };
    if (!exists(prefix)) return undefined;
  }
  return undefined;
}

/**
 * The real path of the nearest existing ancestor of `userPath`, and the part below it. A path with
 * a `..` segment is read as the system reads it — `src/link/../x`, where `src/link` leads to
 * `.git/hooks`, is `.git/x` — so what is judged is what a program given the path would open.
 */
function locate(
  workspaceRoot: string,
  userPath: string,
): { root: string; lexical: string; real: string; rest: string } {
  if (typeof userPath !== "string" || userPath === "" || userPath.includes("\0")) {
    throw escape(workspaceRoot, String(userPath), "the path is empty or contains a NUL byte");
  }
  const root = Deno.realPathSync(resolve(workspaceRoot));
  const lexical = resolve(root, userPath);
  if (!isInside(root, lexical)) throw escape(workspaceRoot, userPath, "it leaves the workspace");
  let found: { real: string; rest: string };
  try {
    found = userPath.split(SEPARATORS).includes("..")
      ? systemResolve(isAbsolute(userPath) ? parse(userPath).root : root, userPath)
      : nearestExisting(lexical);
  } catch (error) {
    if (error instanceof Deno.errors.FilesystemLoop) {
      throw escape(workspaceRoot, userPath, "its symbolic links lead round in a loop");
    }
    throw error;
  }
  const { real, rest } = found;
  if (!isInside(root, real)) {
    throw escape(workspaceRoot, userPath, "a symbolic link leads outside the workspace");
  }
  return { root, lexical, real, rest };
}

/** Walks up from `target` (absolute, normalised) to the nearest entry that exists. */
function nearestExisting(target: string): { real: string; rest: string } {
  let existing = target;
  let rest = "";
  for (;;) {
    try {
      return { real: Deno.realPathSync(existing), rest };
    } catch (error) {
      if (!isMissing(error)) throw error;
      const parent = resolve(existing, "..");
      if (parent === existing) throw error;
      rest = rest ? `${relative(parent, existing)}${sep}${rest}` : relative(parent, existing);
      existing = parent;
    }
  }
}

/**
 * Resolves `userPath` segment by segment from `start`, as the system does: each existing entry
 * through its links, so a `..` climbs from where a link led. Below the first missing entry the
 * path is read as text (nothing there can be a link).
 */
function systemResolve(start: string, userPath: string): { real: string; rest: string } {
  let current = Deno.realPathSync(start);
  const missing: string[] = [];
  for (const segment of userPath.split(SEPARATORS)) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") {
      if (missing.length) missing.pop();
      else current = dirname(current);
    } else if (missing.length) {
      missing.push(segment);
    } else {
      try {
        current = Deno.realPathSync(join(current, segment));
      } catch (error) {
        if (!isMissing(error)) throw error;
        missing.push(segment);
      }
    }
  }
  return { real: current, rest: missing.join(sep) };
}

/** `stat` of `path`, or undefined when nothing is there. */
function statIfThere(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.statSync(path);
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/** Where the symbolic link `path` leads, or undefined when it is not one (or is gone). */
function readLinkIfLink(path: string): string | undefined {
  try {
    return Deno.readLinkSync(path);
  } catch {
    return undefined;
  }
}

/** Whether anything (a link too) is at `path`. */
function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** `abs` relative to `root`, `/`-separated (`.` for the root itself). */
function fromRoot(root: string, abs: string): string {
  const rel = relative(root, abs);
  return rel === "" ? "." : rel.split(sep).join("/");
}

/** Path separators as the system reads them. */
const SEPARATORS = sep === "\\" ? /[\\/]/ : /\//;

function folderChanged(tool: string, userPath: string, folder: string): StepflowError {
  return new StepflowError(
    "PATH_CHANGED",
    `${tool}: "${userPath}" changed after it was checked: its folder "${folder}" is now a symbolic link or a file, or is gone. Nothing was written. Call again to have the path checked anew.`,
    { details: { path: userPath, folder } },
  );
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
