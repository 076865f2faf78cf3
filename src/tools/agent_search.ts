/**
 * The agent tools that find things — `Glob` (files by name) and `Grep` (lines by content) — named and
 * shaped as Claude Code's. Both search below a folder of the workspace, never follow a symbolic link
 * out of it, skip `.git`, and return bounded text. In a tool loop they hide every file a
 * `disallowedTools` rule covers — by its path or by the file a link leads to — and say how many.
 *
 * @module
 */
import path from "node:path";
import { z } from "zod";
import { StepflowError } from "../errors.ts";
import type { Exactly } from "../type_equality.ts";
import { AGENT_TOOL_LIMITS, clipLine, looksBinary, truncateOutput } from "./agent_limits.ts";
import { type WalkedFile, walkFiles } from "./agent_walk.ts";
import { globMatches } from "./glob_pattern.ts";
import { openResolved, pathChanged } from "./opened_file.ts";
import type { PathGuard, ReachedPath, Tool, ToolContext } from "./types.ts";
import { reachArgument } from "./workspace.ts";

const SearchPath = z.string().min(1).max(AGENT_TOOL_LIMITS.argChars).optional().describe(
  "Folder (or, for Grep, file) to search: relative to the working folder or absolute inside it (default: the working folder)",
);
const Pattern = z.string().min(1).max(AGENT_TOOL_LIMITS.argChars);
const Count = z.number().int().nonnegative().max(1_000_000).optional();

const GlobArgsSchema = z.object({
  pattern: Pattern.describe('Glob pattern relative to path, e.g. "**/*.ts" or "src/*.json"'),
  path: SearchPath,
}).strict();

const GrepArgsSchema = z.object({
  pattern: Pattern.describe("Regular expression (JavaScript syntax) searched in each line"),
  path: SearchPath,
  glob: Pattern.optional().describe(
    'Only files matching this glob ("*.ts" matches names; a pattern with "/" matches paths)',
  ),
  output_mode: z.enum(["content", "files_with_matches", "count"]).optional().describe(
    '"files_with_matches" (default): file paths; "content": matching lines; "count": matches per file',
  ),
  "-i": z.boolean().optional().describe("Ignore case"),
  "-n": z.boolean().optional().describe("Show line numbers (content mode; default true)"),
  "-A": Count.describe("Lines shown after each match (content mode)"),
  "-B": Count.describe("Lines shown before each match (content mode)"),
  "-C": Count.describe("Lines shown before and after each match (content mode)"),
  head_limit: z.number().int().positive().max(1_000_000).optional().describe(
    "Return only the first N lines or entries",
  ),
}).strict();

/** Arguments of `Glob`. */
export interface GlobArgs {
  /** Glob pattern relative to `path`, e.g. `**\/*.ts`. */
  pattern: string;
  /** Folder to search (default: the working folder). */
  path?: string;
}
/** Arguments of `Grep`. */
export interface GrepArgs {
  /** Regular expression (JavaScript syntax) searched in each line. */
  pattern: string;
  /** Folder or file to search (default: the working folder). */
  path?: string;
  /** Only files matching this glob (`*.ts` matches names; a pattern with `/` matches paths). */
  glob?: string;
  /** `files_with_matches` (default), `content` or `count`. */
  output_mode?: "content" | "files_with_matches" | "count";
  /** Ignore case. */
  "-i"?: boolean;
  /** Show line numbers in content mode (default true). */
  "-n"?: boolean;
  /** Lines shown after each match (content mode). */
  "-A"?: number;
  /** Lines shown before each match (content mode). */
  "-B"?: number;
  /** Lines shown before and after each match (content mode). */
  "-C"?: number;
  /** Return only the first N lines or entries. */
  head_limit?: number;
}

const _schemasMatchInterfaces: [
  Exactly<z.infer<typeof GlobArgsSchema>, GlobArgs>,
  Exactly<z.infer<typeof GrepArgsSchema>, GrepArgs>,
] = [true, true];

/**
 * `Glob`: the files below `path` whose path matches `pattern`, most recently modified first, at most
 * {@linkcode AGENT_TOOL_LIMITS}`.globFiles` of them.
 *
 * @example
 * ```ts
 * import { ToolRegistry } from "./registry.ts";
 * import { createGlobTool } from "./agent_search.ts";
 * const registry = new ToolRegistry().register(createGlobTool());
 * const list = await registry.invoke("Glob", { pattern: "src/tools/*.ts" }, { workspaceRoot: "." });
 * ```
 */
export function createGlobTool(): Tool<GlobArgs, string> {
  return {
    name: "Glob",
    description:
      `Find files by name pattern (e.g. "**/*.ts") below a folder of the working folder. Returns paths relative to the working folder, most recently modified first, at most ${AGENT_TOOL_LIMITS.globFiles}.`,
    inputSchema: GlobArgsSchema,
    idempotent: true,
    readOnly: true,
    async execute(args, ctx) {
      checkPattern(args.pattern, "Glob", "pattern");
      const { root, reached } = await searchRoot(ctx, args.path, "Glob");
      if (!reached.isDirectory) {
        throw new StepflowError(
          "NOT_A_DIRECTORY",
          `Glob: "${args.path}" is a file, not a folder. Give a folder as path.`,
          { details: { path: args.path } },
        );
      }
      const walk = await walkFiles(root, reached.abs, ctx.signal);
      // A folder swapped for a link while it was walked: the names came from elsewhere.
      const now = await Deno.realPath(reached.abs).catch(() => "(gone)");
      if (now !== reached.abs) throw pathChanged("Glob", args.path ?? ".", reached.abs, `"${now}"`);
      const found = walk.files.filter((f) => globMatches(f.rel, args.pattern));
      const matched = found.filter((f) => !ctx.paths?.hides(walked(root, reached, f)));
      const timed = await Promise.all(matched.map(async (f) => ({ f, mtime: await mtimeOf(f) })));
      timed.sort((a, b) => b.mtime - a.mtime || (a.f.fromRoot < b.f.fromRoot ? -1 : 1));
      const shown = timed.slice(0, AGENT_TOOL_LIMITS.globFiles).map((t) => t.f.fromRoot);
      const lines = shown.length ? shown : ["No files found"];
      if (timed.length > shown.length) {
        lines.push(
          `(${timed.length} files matched; showing the ${shown.length} most recently modified. Use a narrower pattern or path.)`,
        );
      }
      if (found.length > matched.length) lines.push(hiddenNote(found.length - matched.length));
      if (walk.stopped) lines.push(stoppedNote());
      return truncateOutput(lines.join("\n"), AGENT_TOOL_LIMITS.resultChars, narrowHint);
    },
  };
}

/**
 * `Grep`: lines matching a regular expression in the files below `path` (or in one file), as file
 * paths, matching lines with context, or counts. Binary files and files over
 * {@linkcode AGENT_TOOL_LIMITS}`.fileBytes` are skipped.
 *
 * @example
 * ```ts
 * import { ToolRegistry } from "./registry.ts";
 * import { createGrepTool } from "./agent_search.ts";
 * const registry = new ToolRegistry().register(createGrepTool());
 * const hits = await registry.invoke("Grep", {
 *   pattern: "export function",
 *   path: "src/tools",
 *   output_mode: "content",
 *   head_limit: 5,
 * }, { workspaceRoot: "." });
 * ```
 */
export function createGrepTool(): Tool<GrepArgs, string> {
  return {
    name: "Grep",
    description:
      'Search file contents with a regular expression below a folder (or in one file) of the working folder. output_mode: "files_with_matches" (default), "content" (matching lines, with -n, -A/-B/-C context) or "count". Filter files with glob; -i ignores case; head_limit bounds the result.',
    inputSchema: GrepArgsSchema,
    idempotent: true,
    readOnly: true,
    async execute(args, ctx) {
      const regex = compile(args.pattern, args["-i"] === true);
      if (args.glob !== undefined) checkPattern(args.glob, "Grep", "glob");
      const { root, reached } = await searchRoot(ctx, args.path, "Grep");
      const walk = reached.isDirectory
        ? await walkFiles(root, reached.abs, ctx.signal)
        : { files: [single(root, reached)], stopped: false };
      const files = args.glob === undefined
        ? walk.files
        : walk.files.filter((f) => fileMatchesGlob(f, args.glob!));
      const mode = args.output_mode ?? "files_with_matches";
      const limit = args.head_limit ?? Infinity;
      const out: string[] = [];
      let skipped = 0;
      let hidden = 0;
      for (const file of files) {
        if (out.length >= limit) break;
        ctx.signal?.throwIfAborted();
        const seen = walked(root, reached, file);
        if (ctx.paths?.hides(seen)) {
          hidden++;
          continue;
        }
        const text = await readSearchable(file, seen, ctx.paths);
        if (text === HIDDEN) {
          hidden++;
          continue;
        }
        if (text === undefined) {
          skipped++;
          continue;
        }
        const lines = text.split(/\r?\n/);
        if (lines.at(-1) === "") lines.pop();
        const hits = matchingLines(lines, regex);
        if (hits.length === 0) continue;
        if (mode === "files_with_matches") out.push(file.fromRoot);
        else if (mode === "count") out.push(`${file.fromRoot}:${hits.length}`);
        else out.push(...contentLines(file.fromRoot, lines, hits, args));
      }
      const shown = out.slice(0, limit);
      const lines = shown.length ? shown : ["No matches found"];
      if (out.length >= limit) lines.push(`(stopped at head_limit ${limit})`);
      if (skipped) lines.push(`(${skipped} binary or oversized files skipped)`);
      if (hidden) lines.push(hiddenNote(hidden));
      if (walk.stopped) lines.push(stoppedNote());
      return truncateOutput(
        lines.join("\n"),
        AGENT_TOOL_LIMITS.resultChars,
        "use head_limit, a narrower pattern, path or glob",
      );
    },
  };
}

const narrowHint = "use a narrower pattern or path";

function stoppedNote(): string {
  return `(search stopped after ${AGENT_TOOL_LIMITS.walkEntries} entries; use a narrower path)`;
}

function hiddenNote(count: number): string {
  const [files, them, links, have] = count === 1
    ? ["file", "it", "it links", "it has"]
    : ["files", "them", "they link", "they have"];
  return `(${count} ${files} hidden: a disallowedTools rule covers ${them} or the file ${links} to, or ${have} several names (hard links) while Read(…) rules refuse paths)`;
}

async function searchRoot(
  ctx: ToolContext,
  userPath: string | undefined,
  tool: string,
): Promise<{ root: string; reached: ReachedPath }> {
  const root = await Deno.realPath(ctx.workspaceRoot);
  const reached = await reachArgument(ctx, "path", userPath ?? ".");
  if (!reached.exists) {
    throw new StepflowError(
      "FILE_NOT_FOUND",
      `${tool}: "${userPath}" does not exist in the working folder. Check the path.`,
      { details: { path: userPath } },
    );
  }
  return { root, reached };
}

/** A file a search came across, as the rules judge it: below the path as written, and really. */
function walked(root: string, searched: ReachedPath, file: WalkedFile): ReachedPath {
  const written = searched.isDirectory
    ? path.posix.join(searched.written, file.rel)
    : searched.written;
  return {
    written,
    real: path.relative(root, file.real).split(path.sep).join("/"),
    abs: file.real,
    exists: true,
  };
}

/** Patterns are relative and stay below their folder: no absolute pattern, no `..` segment. */
function checkPattern(pattern: string, tool: string, field: string): void {
  if (path.isAbsolute(pattern) || pattern.split(/[\\/]/).includes("..")) {
    throw new StepflowError(
      "PATH_ESCAPES_WORKSPACE",
      `${tool}: the ${field} "${pattern}" leaves its folder (absolute, or with a ".." segment). Give a relative pattern and put the folder in path.`,
      { details: { pattern } },
    );
  }
}

function compile(pattern: string, ignoreCase: boolean): RegExp {
  try {
    return new RegExp(pattern, ignoreCase ? "i" : "");
  } catch (error) {
    throw new StepflowError(
      "GREP_PATTERN_INVALID",
      `Grep: "${pattern}" is not a valid regular expression (${
        (error as Error).message
      }). Escape special characters such as ( [ { with a backslash.`,
      { details: { pattern } },
    );
  }
}

function single(root: string, reached: ReachedPath): WalkedFile {
  const fromRoot = path.relative(root, reached.abs).split(path.sep).join("/");
  return { abs: reached.abs, rel: path.basename(reached.abs), fromRoot, real: reached.abs };
}

function fileMatchesGlob(file: WalkedFile, glob: string): boolean {
  return glob.includes("/")
    ? globMatches(file.rel, glob)
    : globMatches(path.posix.basename(file.rel), glob);
}

async function mtimeOf(file: WalkedFile): Promise<number> {
  try {
    return (await Deno.stat(file.abs)).mtime?.getTime() ?? 0;
  } catch {
    return 0;
  }
}

/** A file a search must not read (see {@linkcode PathGuard}). */
const HIDDEN = Symbol("hidden");

/**
 * The file's text — read from the file the walk found, and only that one (`openResolved`) — or
 * undefined when it is binary, too large, unreadable or no longer there, or {@linkcode HIDDEN}
 * when it turns out to have several names the rules cannot judge.
 */
async function readSearchable(
  file: WalkedFile,
  seen: ReachedPath,
  guard: PathGuard | undefined,
): Promise<string | typeof HIDDEN | undefined> {
  let opened;
  try {
    opened = await openResolved(file.real, "Grep", file.fromRoot);
  } catch {
    return undefined;
  }
  try {
    if (!opened.isFile || opened.size > AGENT_TOOL_LIMITS.fileBytes) return undefined;
    if (opened.hardLinks > 1 && guard?.hides({ ...seen, hardLinks: opened.hardLinks })) {
      return HIDDEN;
    }
    const bytes = opened.readAll(AGENT_TOOL_LIMITS.fileBytes);
    if (bytes.length > AGENT_TOOL_LIMITS.fileBytes) return undefined;
    if (looksBinary(bytes.subarray(0, 8192))) return undefined;
    return new TextDecoder().decode(bytes);
  } catch {
    return undefined;
  } finally {
    opened.close();
  }
}

function matchingLines(lines: string[], regex: RegExp): number[] {
  const hits: number[] = [];
  for (let i = 0; i < lines.length; i++) if (regex.test(lines[i])) hits.push(i);
  return hits;
}

/** `path:line:text` for matches and `path-line-text` for context, `--` between separate groups. */
function contentLines(file: string, lines: string[], hits: number[], args: GrepArgs): string[] {
  const before = args["-B"] ?? args["-C"] ?? 0;
  const after = args["-A"] ?? args["-C"] ?? 0;
  const numbered = args["-n"] ?? true;
  const isHit = new Set(hits);
  const out: string[] = [];
  let last = -1;
  for (const hit of hits) {
    const from = Math.max(hit - before, last + 1);
    const to = Math.min(hit + after, lines.length - 1);
    if (last !== -1 && from > last + 1 && (before || after)) out.push("--");
    for (let i = from; i <= to; i++) {
      const sepChar = isHit.has(i) ? ":" : "-";
      const number = numbered ? `${i + 1}${sepChar}` : "";
      out.push(`${file}${sepChar}${number}${clipLine(lines[i])}`);
    }
    last = Math.max(last, to);
  }
  return out;
}
