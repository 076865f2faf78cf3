/**
 * The file-system tools: `read_file`, `write_file`, `list_dir`. Every path goes through
 * {@linkcode resolveInWorkspace}, so nothing outside the workspace root is read, written or listed —
 * not through `..`, not through absolute paths, not through symbolic links — and a file is read or
 * written only where its path was resolved to (`openResolved`, the atomic writer's
 * `resolvedFolder`), so a link swapped in after the check cannot redirect it.
 *
 * @module
 */
import { relative, sep } from "node:path";

import { z } from "zod";
import { writeFileAtomic } from "../atomic_write.ts";
import { StepflowError } from "../errors.ts";
import type { Exactly } from "../type_equality.ts";
import { openResolved } from "./opened_file.ts";
import type { Tool, ToolContext } from "./types.ts";
import { prepareWriteInWorkspace, resolveInWorkspace } from "./workspace.ts";
import { pathExists } from "../path_exists.ts";

/** Options shared by the file-system tools. */
export interface FsToolOptions {
  /**
   * A fixed workspace root. When unset, each call uses `ctx.workspaceRoot` from the executor, which
   * is the usual case.
   */
  workspaceRoot?: string;
}

const DEFAULT_MAX_READ_BYTES = 10 * 1024 * 1024;
const DEFAULT_MAX_ENTRIES = 1000;

const ReadFileArgsSchema = z.object({
  path: z.string().min(1).describe("File path, relative to the workspace root"),
  maxBytes: z.number().int().positive().optional().describe(
    `Refuse files larger than this (default ${DEFAULT_MAX_READ_BYTES} bytes)`,
  ),
}).strict();

const WriteFileArgsSchema = z.object({
  path: z.string().min(1).describe("File path, relative to the workspace root"),
  content: z.unknown().refine((v) => v !== undefined, "content is required").describe(
    "Text to write; any other JSON value is written as pretty-printed JSON",
  ),
  append: z.boolean().optional().describe("Append instead of replacing the file (default false)"),
}).strict();

const ListDirArgsSchema = z.object({
  path: z.string().min(1).optional().describe("Folder, relative to the workspace root (default .)"),
  recursive: z.boolean().optional().describe("Descend into sub-folders (default false)"),
  maxEntries: z.number().int().positive().optional().describe(
    `Stop after this many entries (default ${DEFAULT_MAX_ENTRIES}); the result says truncated`,
  ),
}).strict();

/** Arguments of `read_file`. */
export interface ReadFileArgs {
  /** File path, relative to the workspace root. */
  path: string;
  /** Refuse files larger than this many bytes (default 10 MiB). */
  maxBytes?: number;
}
/** Arguments of `write_file`. */
export interface WriteFileArgs {
  /** File path, relative to the workspace root. */
  path: string;
  /** Text to write; any other JSON value is written as pretty-printed JSON (required). */
  content: NonNullable<unknown> | null;
  /** Append instead of replacing the file (default false). */
  append?: boolean;
}
/** Arguments of `list_dir`. */
export interface ListDirArgs {
  /** Folder, relative to the workspace root (default `.`). */
  path?: string;
  /** Descend into sub-folders (default false). */
  recursive?: boolean;
  /** Stop after this many entries (default 1000); the result says truncated. */
  maxEntries?: number;
}

// Compile-time: each interface equals its schema's parsed type.
// Hand-written because public: readable in `deno doc` (why: src/type_equality.ts).
const _schemasMatchInterfaces: [
  Exactly<z.infer<typeof ReadFileArgsSchema>, ReadFileArgs>,
  Exactly<z.infer<typeof WriteFileArgsSchema>, WriteFileArgs>,
  Exactly<z.infer<typeof ListDirArgsSchema>, ListDirArgs>,
] = [true, true, true];

/** What `write_file` returns. */
export interface WriteFileResult {
  /** The path written, relative to the workspace root (`/`-separated). */
  path: string;
  /** Bytes written by this call. */
  bytes: number;
  /** True when the file did not exist before. */
  created: boolean;
}

/** One entry of a `list_dir` result. */
export interface DirEntry {
  /** Path relative to the workspace root, `/`-separated. */
  path: string;
  /** Base name. */
  name: string;
  /** Entry type. Symbolic links are reported, never followed. */
  type: "file" | "dir" | "symlink" | "other";
  /** Size in bytes, for files. */
  size?: number;
}

/** What `list_dir` returns. */
export interface ListDirResult {
  /** The folder listed, relative to the workspace root (`.` for the root). */
  path: string;
  /** Entries sorted by path. */
  entries: DirEntry[];
  /** True when `maxEntries` cut the listing short. */
  truncated: boolean;
}

/**
 * `read_file`: returns a text file's content.
 *
 * @example
 * ```ts
 * import { ToolRegistry } from "./registry.ts";
 * import { createReadFileTool } from "./builtin_fs.ts";
 * const registry = new ToolRegistry().register(createReadFileTool());
 * const text = await registry.invoke("read_file", { path: "deno.json" }, { workspaceRoot: "." });
 * ```
 */
export function createReadFileTool(options: FsToolOptions = {}): Tool<ReadFileArgs, string> {
  return {
    name: "read_file",
    description: "Read a UTF-8 text file inside the workspace and return its content",
    inputSchema: ReadFileArgsSchema,
    idempotent: true,
    async execute(args, ctx) {
      const root = rootOf(options, ctx);
      const file = await resolveInWorkspace(root, args.path);
      const limit = args.maxBytes ?? DEFAULT_MAX_READ_BYTES;
      const opened = await openResolved(file, "read_file", args.path).catch((error) => {
        throw (error as { code?: string }).code === "ENOENT"
          ? notFound(args.path, "read_file")
          : error;
      });
      try {
        if (opened.isDirectory) {
          throw new StepflowError(
            "FILE_IS_DIRECTORY",
            `read_file: "${args.path}" is a folder, not a file. Use list_dir to see its entries.`,
            { details: { path: args.path } },
          );
        }
        const tooLarge = (size: number) =>
          new StepflowError(
            "FILE_TOO_LARGE",
            `read_file: "${args.path}" is ${size} bytes, more than the limit of ${limit}. Pass a larger maxBytes to read it.`,
            { details: { path: args.path, size, maxBytes: limit } },
          );
        if (opened.size > limit) throw tooLarge(opened.size);
        ctx.signal?.throwIfAborted();
        const bytes = opened.readAll(limit);
        if (bytes.length > limit) throw tooLarge(bytes.length);
        return new TextDecoder().decode(bytes);
      } finally {
        opened.close();
      }
    },
  };
}

/**
 * `write_file`: writes a file atomically (temporary file, then rename), creating missing folders.
 * Replacing an existing file needs an approval (`needsApproval`); creating a new one does not.
 *
 * @example
 * ```ts
 * import { ToolRegistry } from "./registry.ts";
 * import { createWriteFileTool } from "./builtin_fs.ts";
 * const root = await Deno.makeTempDir();
 * const registry = new ToolRegistry().register(createWriteFileTool());
 * await registry.invoke("write_file", { path: "out/a.json", content: { a: 1 } }, { workspaceRoot: root });
 * ```
 */
export function createWriteFileTool(
  options: FsToolOptions = {},
): Tool<WriteFileArgs, WriteFileResult> {
  return {
    name: "write_file",
    description:
      "Write a text file inside the workspace (creates folders; non-string content is written as JSON). Overwriting an existing file needs approval",
    inputSchema: WriteFileArgsSchema,
    async needsApproval(args, ctx) {
      const file = await resolveInWorkspace(rootOf(options, ctx), args.path);
      return (await pathExists(file)) && !args.append
        ? `write_file would overwrite the existing file "${args.path}"`
        : false;
    },
    async execute(args, ctx) {
      const root = await Deno.realPath(rootOf(options, ctx));
      const text = typeof args.content === "string"
        ? args.content
        : `${JSON.stringify(args.content, null, 2)}\n`;
      ctx.signal?.throwIfAborted();
      const checked = await prepareWriteInWorkspace(root, args.path, "write_file");
      const existed = await pathExists(checked);
      const bytes = new TextEncoder().encode(text);
      if (args.append) {
        const opened = await openResolved(checked, "write_file", args.path, "append");
        try {
          await opened.append(bytes);
        } finally {
          opened.close();
        }
      } else {
        await writeFileAtomic(checked, bytes, { resolvedFolder: true });
      }
      return { path: toRelative(root, checked), bytes: bytes.length, created: !existed };
    },
  };
}

/**
 * `list_dir`: lists a folder (optionally recursively). Symbolic links are listed as `symlink` and
 * never followed, so a recursive listing cannot leave the workspace.
 *
 * @example
 * ```ts
 * import { ToolRegistry } from "./registry.ts";
 * import { createListDirTool } from "./builtin_fs.ts";
 * const registry = new ToolRegistry().register(createListDirTool());
 * const listing = await registry.invoke("list_dir", { path: "." }, { workspaceRoot: "." });
 * ```
 */
export function createListDirTool(options: FsToolOptions = {}): Tool<ListDirArgs, ListDirResult> {
  return {
    name: "list_dir",
    idempotent: true,
    description:
      "List the entries of a folder inside the workspace (path, name, type, size); recursive on request",
    inputSchema: ListDirArgsSchema,
    async execute(args, ctx) {
      const root = await Deno.realPath(rootOf(options, ctx));
      const userPath = args.path ?? ".";
      const dir = await resolveInWorkspace(root, userPath);
      const info = await statOrThrow(dir, userPath, "list_dir");
      if (!info.isDirectory) {
        throw new StepflowError(
          "NOT_A_DIRECTORY",
          `list_dir: "${userPath}" is a file, not a folder. Use read_file to read it.`,
          { details: { path: userPath } },
        );
      }
      const limit = args.maxEntries ?? DEFAULT_MAX_ENTRIES;
      const entries: DirEntry[] = [];
      const queue = [dir];
      let truncated = false;
      outer: for (let head = 0; head < queue.length; head++) {
        ctx.signal?.throwIfAborted();
        const current = queue[head];
        const children: Deno.DirEntry[] = [];
        for await (const child of Deno.readDir(current)) children.push(child);
        children.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        for (const child of children) {
          if (entries.length >= limit) {
            truncated = true;
            break outer;
          }
          const abs = `${current}${sep}${child.name}`;
          const type = child.isSymlink
            ? "symlink"
            : child.isDirectory
            ? "dir"
            : child.isFile
            ? "file"
            : "other";
          const entry: DirEntry = { path: toRelative(root, abs), name: child.name, type };
          if (type === "file") entry.size = (await Deno.lstat(abs)).size;
          entries.push(entry);
          if (args.recursive && type === "dir") queue.push(abs);
        }
      }
      entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      return { path: toRelative(root, dir), entries, truncated };
    },
  };
}

/** The three file-system tools. */
export function createFsTools(
  options: FsToolOptions = {},
): [
  Tool<ReadFileArgs, string>,
  Tool<WriteFileArgs, WriteFileResult>,
  Tool<ListDirArgs, ListDirResult>,
] {
  return [createReadFileTool(options), createWriteFileTool(options), createListDirTool(options)];
}

function rootOf(options: FsToolOptions, ctx: ToolContext): string {
  const root = options.workspaceRoot ?? ctx.workspaceRoot;
  if (typeof root !== "string" || root === "") {
    throw new StepflowError(
      "WORKSPACE_ROOT_MISSING",
      "File tools need a workspace root: pass workspaceRoot in the tool context or the tool options.",
    );
  }
  return root;
}

async function statOrThrow(file: string, userPath: string, tool: string): Promise<Deno.FileInfo> {
  try {
    return await Deno.stat(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) throw notFound(userPath, tool);
    throw error;
  }
}

function notFound(userPath: string, tool: string): StepflowError {
  return new StepflowError(
    "FILE_NOT_FOUND",
    `${tool}: "${userPath}" does not exist in the workspace. Check the path (it is relative to the workspace root).`,
    { details: { path: userPath } },
  );
}

function toRelative(root: string, abs: string): string {
  const rel = relative(root, abs);
  return rel === "" ? "." : rel.split(sep).join("/");
}
