/**
 * The `file` module: read and write text files inside the workspace root.
 *
 * @module
 */
import { z } from "zod";
import { openResolved } from "../../tools/opened_file.ts";
import type { Tool } from "../../tools/types.ts";
import { prepareWriteInWorkspace, resolveInWorkspace } from "../../tools/workspace.ts";
import { writeFileAtomic } from "../../atomic_write.ts";
import { ModuleArgumentError } from "./values.ts";

/** The arguments of `file`. */
export interface FileArgs {
  /** `read` or `write`. */
  op: "read" | "write";
  /** Path relative to the workspace root. */
  path: string;
  /** What `write` stores: text as is, other values as indented JSON. */
  data?: unknown;
}

/**
 * `file read path="./a.txt" -> text`, `file write path="out/b.json" data=obj`.
 * Paths are confined to the workspace root (`..`, absolute paths elsewhere and symlinks out are
 * refused); `write` follows `write_file`'s rule (`prepareWriteInWorkspace`: a dangling symbolic link
 * on the way or an existing folder is refused). Both act on the file the path was resolved to, and
 * no other (a link swapped in meanwhile is `PATH_CHANGED`). `write` creates missing folders, JSON-encodes non-text data and replaces the file
 * atomically; it returns `"ok"`.
 */
export const fileTool: Tool<FileArgs, string> = {
  name: "file",
  description:
    'Reads or writes a text file inside the workspace: file read path="notes.txt" -> text; file write path="out/result.json" data=report (objects are written as JSON, folders are created).',
  inputSchema: z.strictObject({
    op: z.enum(["read", "write"]).describe("read or write."),
    path: z.string().min(1).describe("Path relative to the workspace root."),
    data: z.unknown().optional().describe("write: the content (text, or any value as JSON)."),
  }),
  async execute({ op, path, data }, ctx) {
    if (op === "read") {
      const target = await resolveInWorkspace(ctx.workspaceRoot, path);
      const folder = () =>
        new ModuleArgumentError("file read", `"${path}" is a folder, not a file`);
      const opened = await openResolved(target, "file read", path).catch((error) => {
        const code = (error as { code?: string }).code;
        if (code === "ENOENT") {
          throw new ModuleArgumentError("file read", `no such file "${path}" in the workspace`);
        }
        throw code === "EISDIR" ? folder() : error;
      });
      try {
        if (opened.isDirectory) throw folder();
        ctx.signal?.throwIfAborted();
        return new TextDecoder().decode(opened.readAll());
      } finally {
        opened.close();
      }
    }
    if (data === undefined) {
      throw new ModuleArgumentError("file write", "data= is required (the content to write)");
    }
    const text = typeof data === "string" ? data : JSON.stringify(data, null, 2) ?? String(data);
    // The same rule and messages as write_file (dangling links, folders, escapes).
    const target = await prepareWriteInWorkspace(ctx.workspaceRoot, path, "file write");
    await writeFileAtomic(target, text, { signal: ctx.signal, resolvedFolder: true });
    return "ok";
  },
};
