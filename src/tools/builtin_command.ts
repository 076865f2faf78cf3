/**
 * The `run_command` tool. It is registered only when enabled (see {@linkcode createBuiltinTools}) and
 * always requires an approval. Commands run without a shell, in a folder inside the workspace, with a
 * timeout and bounded captured output.
 *
 * @module
 */
import { z } from "zod";
import { StepflowError } from "../errors.ts";
import { type ContainedProcess, spawnContained } from "../process_containment.ts";
import type { Exactly } from "../type_equality.ts";
import type { Tool } from "./types.ts";
import { resolveInWorkspace } from "./workspace.ts";

/** Options of the `run_command` tool. */
export interface CommandToolOptions {
  /** When set, only these executables (as written in `command`) may run. */
  allowedCommands?: string[];
  /** Default timeout in milliseconds (default 60 000). */
  timeoutMs?: number;
  /** Captured bytes kept per stream (default 1 MiB); the rest is dropped and marked truncated. */
  maxOutputBytes?: number;
  /** A fixed workspace root; defaults to `ctx.workspaceRoot`. */
  workspaceRoot?: string;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_OUTPUT = 1024 * 1024;

const RunCommandArgsSchema = z.object({
  command: z.string().min(1).describe("Executable to run (no shell: pass arguments in args)"),
  args: z.array(z.string()).optional().describe("Arguments"),
  cwd: z.string().min(1).optional().describe("Working folder, relative to the workspace root"),
  env: z.record(z.string(), z.string()).optional().describe("Extra environment variables"),
  stdin: z.string().optional().describe("Text written to the command's standard input"),
  timeoutMs: z.number().int().positive().optional().describe("Kill the command after this many ms"),
  allowFailure: z.boolean().optional().describe(
    "Return a non-zero exit instead of failing the step (default false)",
  ),
}).strict();

/** Arguments of `run_command`. */
export interface RunCommandArgs {
  /** Executable to run (no shell: pass arguments in `args`). */
  command: string;
  /** Arguments. */
  args?: string[];
  /** Working folder, relative to the workspace root. */
  cwd?: string;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Text written to the command's standard input. */
  stdin?: string;
  /** Kill the command after this many milliseconds. */
  timeoutMs?: number;
  /** Return a non-zero exit instead of failing the step (default false). */
  allowFailure?: boolean;
}

// Compile-time: the interface equals its schema's parsed type.
// Hand-written because public: readable in `deno doc` (why: src/type_equality.ts).
const _schemaMatchesInterface: Exactly<z.infer<typeof RunCommandArgsSchema>, RunCommandArgs> = true;

/** What `run_command` returns. */
export interface RunCommandResult {
  /** The executable. */
  command: string;
  /** Its arguments. */
  args: string[];
  /** Exit code. */
  code: number;
  /** True for exit code 0. */
  success: boolean;
  /** Captured standard output (UTF-8). */
  stdout: string;
  /** Captured standard error (UTF-8). */
  stderr: string;
  /** True when output beyond `maxOutputBytes` was dropped. */
  truncated: boolean;
}

/**
 * Creates the `run_command` tool (approval always required).
 *
 * @example
 * ```ts ignore
 * import { ToolRegistry } from "./registry.ts";
 * import { createRunCommandTool } from "./builtin_command.ts";
 * const registry = new ToolRegistry().register(createRunCommandTool({ allowedCommands: ["git"] }));
 * const res = await registry.invoke("run_command", { command: "git", args: ["status"] }, {
 *   workspaceRoot: ".",
 * });
 * ```
 */
export function createRunCommandTool(
  options: CommandToolOptions = {},
): Tool<RunCommandArgs, RunCommandResult> {
  return {
    name: "run_command",
    description:
      "Run an executable (no shell) in the workspace and return {code, success, stdout, stderr}. Always needs approval",
    inputSchema: RunCommandArgsSchema,
    requiresApproval: true,
    async execute(args, ctx) {
      if (options.allowedCommands && !options.allowedCommands.includes(args.command)) {
        throw new StepflowError(
          "COMMAND_REFUSED",
          `run_command: "${args.command}" is not an allowed command. Allowed: ${
            options.allowedCommands.join(", ") || "(none)"
          }.`,
          { details: { command: args.command } },
        );
      }
      const root = options.workspaceRoot ?? ctx.workspaceRoot;
      const cwd = await resolveInWorkspace(root, args.cwd ?? ".");
      const timeoutMs = args.timeoutMs ?? options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      const maxBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = ctx.signal ? AbortSignal.any([ctx.signal, timeout]) : timeout;
      const timedOut = () =>
        new StepflowError(
          "COMMAND_TIMEOUT",
          `run_command: "${args.command}" did not finish within ${timeoutMs} ms and was stopped. Pass a larger timeoutMs.`,
          { details: { command: args.command, timeoutMs } },
        );
      let contained: ContainedProcess;
      try {
        // Contained: the command and whatever it starts die with the call and with the run.
        contained = await spawnContained(args.command, {
          args: args.args ?? [],
          cwd,
          ...(args.env ? { env: args.env } : {}),
          stdin: args.stdin === undefined ? "null" : "piped",
          stdout: "piped",
          stderr: "piped",
          ...(typeof ctx.runId === "string" ? { runId: ctx.runId } : {}),
          // Killed when the run cancels the call or its time is up (also while it starts).
          signal,
        });
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) {
          throw new StepflowError(
            "COMMAND_NOT_FOUND",
            `run_command: "${args.command}" was not found. Check the name or give a full path.`,
            { details: { command: args.command } },
          );
        }
        // Its time was up before it started (a cancel throws the cancel's reason).
        if (timeout.aborted && !ctx.signal?.aborted) throw timedOut();
        throw error;
      }
      const child = contained.child;
      if (args.stdin !== undefined) {
        const writer = child.stdin.getWriter();
        await writer.write(new TextEncoder().encode(args.stdin)).catch(() => {});
        await writer.close().catch(() => {});
      }
      const [stdout, stderr, status] = await Promise.all([
        captureBounded(child.stdout, maxBytes),
        captureBounded(child.stderr, maxBytes),
        // Resolves once what it left in the background is gone too.
        contained.status,
      ]);
      ctx.signal?.throwIfAborted();
      if (timeout.aborted) throw timedOut();
      const result: RunCommandResult = {
        command: args.command,
        args: args.args ?? [],
        code: status.code,
        success: status.success,
        stdout: stdout.text,
        stderr: stderr.text,
        truncated: stdout.truncated || stderr.truncated,
      };
      if (!status.success && !args.allowFailure) {
        const tail = stderr.text.trim().split("\n").slice(-5).join("\n");
        throw new StepflowError(
          "COMMAND_FAILED",
          `run_command: "${
            [args.command, ...(args.args ?? [])].join(" ")
          }" exited with code ${status.code}${tail ? `:\n${tail}` : ""}`,
          { details: { ...result } },
        );
      }
      return result;
    },
  };
}

/**
 * Reads `stream` to its end, keeping its first `maxBytes` bytes as UTF-8 text; the rest is drained
 * (so a child never blocks on a full pipe) and reported as `truncated`.
 */
export async function captureBounded(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
): Promise<{ text: string; truncated: boolean }> {
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let truncated = false;
  // Keep draining after the limit so the child never blocks on a full pipe.
  for await (const chunk of stream) {
    if (kept >= maxBytes) {
      truncated = true;
      continue;
    }
    const room = maxBytes - kept;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (part.length < chunk.length) truncated = true;
    chunks.push(part);
    kept += part.length;
  }
  const all = new Uint8Array(kept);
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.length;
  }
  return { text: new TextDecoder().decode(all), truncated };
}
