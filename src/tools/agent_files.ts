/**
 * The agent tools that read and change files — `Read`, `Write`, `Edit` — named and shaped as
 * Claude Code's, so one agent.json means the same on every backend. Every path goes through the
 * workspace rules of the tool plans' file tools (`reachPath`,
 * {@linkcode prepareWriteInWorkspace}) — in a tool loop, the resolution the permission rules judged
 * — and the tool opens or writes exactly the file that was judged ({@linkcode openResolved}, the
 * atomic writer's `resolvedFolder`).
 *
 * @module
 */
import { relative, sep } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../atomic_write.ts";
import { StepflowError } from "../errors.ts";
import type { Exactly } from "../type_equality.ts";
import { AGENT_TOOL_LIMITS, clipLine, looksBinary, truncationNotice } from "./agent_limits.ts";
import { type OpenedFile, openResolved, pathChanged } from "./opened_file.ts";
import type { ReachedPath, Tool, ToolContext } from "./types.ts";
import { prepareWriteInWorkspace, reachArgument } from "./workspace.ts";

const FilePath = z.string().min(1).max(AGENT_TOOL_LIMITS.argChars).describe(
  "Path of the file: relative to the working folder, or absolute inside it",
);

const ReadArgsSchema = z.object({
  file_path: FilePath,
  offset: z.number().int().positive().optional().describe(
    "Line number to start reading from (1 = the first line)",
  ),
  limit: z.number().int().positive().optional().describe(
    `Number of lines to read (default ${AGENT_TOOL_LIMITS.readLines})`,
  ),
}).strict();

const WriteArgsSchema = z.object({
  file_path: FilePath,
  content: z.string().describe("The whole new content of the file"),
}).strict();

const EditArgsSchema = z.object({
  file_path: FilePath,
  old_string: z.string().min(1).describe("The exact text to replace (must occur exactly once)"),
  new_string: z.string().describe("The text to put in its place"),
  replace_all: z.boolean().optional().describe(
    "Replace every occurrence of old_string (default false)",
  ),
}).strict();

/** Arguments of `Read`. */
export interface ReadArgs {
  /** Path of the file: relative to the working folder, or absolute inside it. */
  file_path: string;
  /** Line number to start reading from (1 = the first line). */
  offset?: number;
  /** Number of lines to read (default 2,000). */
  limit?: number;
}
/** Arguments of `Write`. */
export interface WriteArgs {
  /** Path of the file: relative to the working folder, or absolute inside it. */
  file_path: string;
  /** The whole new content of the file. */
  content: string;
}
/** Arguments of `Edit`. */
export interface EditArgs {
  /** Path of the file: relative to the working folder, or absolute inside it. */
  file_path: string;
  /** The exact text to replace (must occur exactly once unless `replace_all`). */
  old_string: string;
  /** The text to put in its place. */
  new_string: string;
  /** Replace every occurrence of `old_string` (default false). */
  replace_all?: boolean;
}

const _schemasMatchInterfaces: [
  Exactly<z.infer<typeof ReadArgsSchema>, ReadArgs>,
  Exactly<z.infer<typeof WriteArgsSchema>, WriteArgs>,
  Exactly<z.infer<typeof EditArgsSchema>, EditArgs>,
] = [true, true, true];

/**
 * `Read`: a text file's lines, numbered like `cat -n`, from `offset` for `limit` lines. Binary files
 * are reported, not dumped; the file is streamed, so a huge file costs only the lines returned.
 *
 * @example
 * ```ts
 * import { ToolRegistry } from "./registry.ts";
 * import { createReadTool } from "./agent_files.ts";
 * const registry = new ToolRegistry().register(createReadTool());
 * const text = await registry.invoke("Read", { file_path: "deno.json", limit: 5 }, {
 *   workspaceRoot: ".",
 * });
 * ```
 */
export function createReadTool(): Tool<ReadArgs, string> {
  return {
    name: "Read",
    description:
      `Read a file in the working folder. Returns numbered lines (cat -n format), at most ${AGENT_TOOL_LIMITS.readLines} lines from offset unless limit says otherwise; long lines are cut. Binary files are reported, not shown.`,
    inputSchema: ReadArgsSchema,
    idempotent: true,
    readOnly: true,
    async execute(args, ctx) {
      const { file } = await existingFile(ctx, args.file_path, "Read");
      const offset = args.offset ?? 1;
      const limit = args.limit ?? AGENT_TOOL_LIMITS.readLines;
      return await readLines(file, args.file_path, offset, limit, ctx.signal);
    },
  };
}

/**
 * `Write`: replaces (or creates) a file with `content`, atomically; missing folders are created.
 *
 * @example
 * ```ts
 * import { ToolRegistry } from "./registry.ts";
 * import { createWriteTool } from "./agent_files.ts";
 * const root = await Deno.makeTempDir();
 * const registry = new ToolRegistry().register(createWriteTool());
 * await registry.invoke("Write", { file_path: "src/a.ts", content: "export {};\n" }, {
 *   workspaceRoot: root,
 * });
 * ```
 */
export function createWriteTool(): Tool<WriteArgs, string> {
  return {
    name: "Write",
    description:
      "Write a file in the working folder: creates it (and its folders) or replaces its whole content. Prefer Edit to change part of an existing file.",
    inputSchema: WriteArgsSchema,
    async execute(args, ctx) {
      const bytes = new TextEncoder().encode(args.content);
      if (bytes.length > AGENT_TOOL_LIMITS.fileBytes) {
        throw new StepflowError(
          "FILE_TOO_LARGE",
          `Write: the content is ${bytes.length} bytes, more than the limit of ${AGENT_TOOL_LIMITS.fileBytes}. Write a smaller file.`,
          { details: { path: args.file_path, size: bytes.length } },
        );
      }
      ctx.signal?.throwIfAborted();
      const root = await Deno.realPath(ctx.workspaceRoot);
      const reached = await reachArgument(ctx, "file_path", args.file_path);
      const file = await prepareWriteInWorkspace(root, args.file_path, "Write", reached);
      const existed = await Deno.lstat(file).then(() => true, () => false);
      await writeFileAtomic(file, bytes, { signal: ctx.signal, resolvedFolder: true });
      return `${existed ? "Replaced" : "Created"} ${
        toRelative(root, file)
      } (${bytes.length} bytes).`;
    },
  };
}

/**
 * `Edit`: replaces `old_string` by `new_string` in a file. A missing `old_string`, or one found more
 * than once without `replace_all`, is an error that says which — and the file is left unchanged.
 *
 * @example
 * ```ts
 * import { ToolRegistry } from "./registry.ts";
 * import { createEditTool } from "./agent_files.ts";
 * const root = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${root}/a.txt`, "hello world\n");
 * const registry = new ToolRegistry().register(createEditTool());
 * await registry.invoke("Edit", { file_path: "a.txt", old_string: "world", new_string: "there" }, {
 *   workspaceRoot: root,
 * });
 * ```
 */
export function createEditTool(): Tool<EditArgs, string> {
  return {
    name: "Edit",
    description:
      "Replace an exact string in a file of the working folder. old_string must occur exactly once (give more surrounding text to make it unique) unless replace_all is true.",
    inputSchema: EditArgsSchema,
    async execute(args, ctx) {
      if (args.old_string === args.new_string) {
        throw new StepflowError(
          "EDIT_NO_CHANGE",
          `Edit: old_string and new_string are the same in "${args.file_path}", so there is nothing to change. Give the new text in new_string.`,
          { details: { path: args.file_path } },
        );
      }
      const { file, reached } = await existingFile(ctx, args.file_path, "Edit");
      const text = readWholeText(file, args.file_path, "Edit", ctx.signal);
      const count = countOccurrences(text, args.old_string);
      if (count === 0) {
        throw new StepflowError(
          "EDIT_NOT_FOUND",
          `Edit: old_string was not found in "${args.file_path}"; the file is unchanged. Read the file and copy the exact text, whitespace included.`,
          { details: { path: args.file_path } },
        );
      }
      if (count > 1 && !args.replace_all) {
        throw new StepflowError(
          "EDIT_NOT_UNIQUE",
          `Edit: old_string occurs ${count} times in "${args.file_path}"; the file is unchanged. Include more surrounding text so it occurs once, or pass replace_all: true.`,
          { details: { path: args.file_path, occurrences: count } },
        );
      }
      const edited = args.replace_all
        ? text.split(args.old_string).join(args.new_string)
        : text.replace(args.old_string, () => args.new_string);
      ctx.signal?.throwIfAborted();
      const target = await prepareWriteInWorkspace(
        ctx.workspaceRoot,
        args.file_path,
        "Edit",
        reached,
      );
      await writeFileAtomic(target, edited, { signal: ctx.signal, resolvedFolder: true });
      return `Edited ${args.file_path}: ${count} replacement${count === 1 ? "" : "s"}.`;
    },
  };
}

/** An existing file of the workspace, opened: the one the path was resolved (and judged) to. */
interface ExistingFile {
  /** The file, open. */
  file: OpenedFile;
  /** Where the path leads. */
  reached: ReachedPath;
}

/** Opens the existing regular file `userPath` reaches (see `reachPath`), or a tool error. */
async function existingFile(
  ctx: ToolContext,
  userPath: string,
  tool: string,
): Promise<ExistingFile> {
  const reached = await reachArgument(ctx, "file_path", userPath);
  let opened: OpenedFile;
  try {
    opened = await openResolved(reached.abs, tool, userPath);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new StepflowError(
        "FILE_NOT_FOUND",
        `${tool}: "${userPath}" does not exist in the working folder. Check the path (Glob finds files).`,
        { details: { path: userPath } },
      );
    }
    if (code === "EISDIR") throw isFolder(tool, userPath);
    throw error;
  }
  try {
    if (opened.isDirectory) throw isFolder(tool, userPath);
    // A name added after the rules judged the file (a hard link) is judged again.
    if (opened.hardLinks > (reached.hardLinks ?? 1)) {
      const why = ctx.paths?.hides({ ...reached, hardLinks: opened.hardLinks });
      if (why) throw pathChanged(tool, userPath, reached.abs, `a file with more names: ${why}`);
    }
  } catch (error) {
    opened.close();
    throw error;
  }
  return { file: opened, reached };
}

function isFolder(tool: string, userPath: string): StepflowError {
  return new StepflowError(
    "FILE_IS_DIRECTORY",
    `${tool}: "${userPath}" is a folder, not a file. Use Glob to list its files.`,
    { details: { path: userPath } },
  );
}

/** A whole text file (bounded by `fileBytes`), refusing binary files; closes the file. */
function readWholeText(
  file: OpenedFile,
  userPath: string,
  tool: string,
  signal?: AbortSignal,
): string {
  try {
    if (file.size > AGENT_TOOL_LIMITS.fileBytes) {
      throw new StepflowError(
        "FILE_TOO_LARGE",
        `${tool}: "${userPath}" is ${file.size} bytes, more than the limit of ${AGENT_TOOL_LIMITS.fileBytes}. Change it with Bash instead.`,
        { details: { path: userPath, size: file.size } },
      );
    }
    signal?.throwIfAborted();
    const bytes = file.readAll(AGENT_TOOL_LIMITS.fileBytes);
    if (bytes.length > AGENT_TOOL_LIMITS.fileBytes) {
      throw new StepflowError(
        "FILE_TOO_LARGE",
        `${tool}: "${userPath}" grew past the limit of ${AGENT_TOOL_LIMITS.fileBytes} bytes while it was read. Change it with Bash instead.`,
        { details: { path: userPath, size: bytes.length } },
      );
    }
    if (looksBinary(bytes.subarray(0, 8192))) throw binaryFile(tool, userPath, bytes.length);
    return new TextDecoder().decode(bytes);
  } finally {
    file.close();
  }
}

function binaryFile(tool: string, userPath: string, size: number): StepflowError {
  return new StepflowError(
    "FILE_IS_BINARY",
    `${tool}: "${userPath}" is a binary file (${size} bytes); its content is not shown or edited as text. Use Bash (e.g. file, xxd | head) to inspect it.`,
    { details: { path: userPath, size } },
  );
}

/**
 * Streams `file` and returns lines `offset … offset+limit-1`, numbered, bounded by `readChars`. Only
 * one line (cut at `lineChars`) is held beyond the result, so a huge file or line costs little.
 */
async function readLines(
  file: OpenedFile,
  userPath: string,
  offset: number,
  limit: number,
  signal?: AbortSignal,
): Promise<string> {
  const out: string[] = [];
  let chars = 0;
  let lineNo = 0;
  let current = "";
  let full = false;
  let cutShort = false;
  const take = (line: string) => {
    lineNo++;
    if (lineNo < offset || full) return;
    const shown = `${String(lineNo).padStart(6)}\t${clipLine(line)}`;
    if (chars + shown.length > AGENT_TOOL_LIMITS.readChars) {
      full = cutShort = true;
      return;
    }
    out.push(shown);
    chars += shown.length + 1;
    if (out.length >= limit) full = true;
  };
  try {
    const decoder = new TextDecoder();
    const buffer = new Uint8Array(64 * 1024);
    let first = true;
    let size = 0;
    while (!full) {
      signal?.throwIfAborted();
      const n = await file.read(buffer);
      if (n === 0) break;
      size += n;
      const chunk = buffer.subarray(0, n);
      if (first && looksBinary(chunk.subarray(0, 8192))) {
        throw binaryFile("Read", userPath, file.size);
      }
      first = false;
      const text = decoder.decode(chunk, { stream: true });
      let start = 0;
      for (let nl = text.indexOf("\n", start); nl !== -1; nl = text.indexOf("\n", start)) {
        appendPart(text.slice(start, nl));
        take(current.endsWith("\r") ? current.slice(0, -1) : current);
        current = "";
        start = nl + 1;
        if (full) break;
      }
      if (!full) appendPart(text.slice(start));
    }
    if (!full && current !== "") take(current);
    if (size === 0 && lineNo === 0) return `(${userPath} is empty)`;
  } finally {
    file.close();
  }
  if (out.length === 0) {
    return `(${userPath} has ${lineNo} line${
      lineNo === 1 ? "" : "s"
    }; offset ${offset} is past its end)`;
  }
  const text = out.join("\n");
  if (!cutShort) return text;
  const next = offset + out.length;
  return `${text}\n${
    truncationNotice(AGENT_TOOL_LIMITS.readChars, `use offset/limit (next line: ${next})`)
  }`;

  function appendPart(part: string): void {
    // Keep at most one character past the line limit: enough for clipLine to mark the cut.
    const room = AGENT_TOOL_LIMITS.lineChars + 1 - current.length;
    if (room > 0) current += part.length > room ? part.slice(0, room) : part;
  }
}

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) {
    count++;
  }
  return count;
}

function toRelative(root: string, abs: string): string {
  const rel = relative(root, abs);
  return rel === "" ? "." : rel.split(sep).join("/");
}
