/**
 * The `Bash` agent tool, named and shaped as Claude Code's: a shell command run by `bash -c` in the
 * working folder, contained (`process_containment.ts`), so that a timeout, a cancelled run, the
 * command's own end or the death of the run leaves no process behind — background jobs, `nohup`,
 * double forks and `setsid` included.
 *
 * @module
 */
import { z } from "zod";
import { StepflowError } from "../errors.ts";
import type { Exactly } from "../type_equality.ts";
import { AGENT_TOOL_LIMITS, truncationNotice } from "./agent_limits.ts";
import { captureBounded } from "./builtin_command.ts";
import { type ContainedProcess, spawnContained } from "../process_containment.ts";
import type { Tool } from "./types.ts";

const BashArgsSchema = z.object({
  command: z.string().min(1).max(100_000).describe("The shell command to run (bash -c)"),
  timeout: z.number().int().positive().max(AGENT_TOOL_LIMITS.bashMaxTimeoutMs).optional()
    .describe(
      `Milliseconds before the command is killed (default ${AGENT_TOOL_LIMITS.bashTimeoutMs}, at most ${AGENT_TOOL_LIMITS.bashMaxTimeoutMs})`,
    ),
  description: z.string().max(1_000).optional().describe(
    "What the command does, in a few words (shown to the user)",
  ),
}).strict();

/** Arguments of `Bash`. */
export interface BashArgs {
  /** The shell command to run (`bash -c`). */
  command: string;
  /** Milliseconds before the command is killed (default 120 000, at most 600 000). */
  timeout?: number;
  /** What the command does, in a few words (shown to the user). */
  description?: string;
}

const _schemaMatchesInterface: Exactly<z.infer<typeof BashArgsSchema>, BashArgs> = true;

const OUTPUT_HINT =
  "redirect the output to a file and Read it with offset/limit, or pipe it through head or tail";

/**
 * Creates `Bash`. Its result is the command's standard output, then its standard error (marked),
 * then `[exit code N]` when it failed — a failing command is a result the model reads, not an
 * error. A command still running at its timeout is killed with its whole process group
 * (`COMMAND_TIMEOUT`); so is one whose run is cancelled.
 *
 * @example
 * ```ts
 * import { ToolRegistry } from "./registry.ts";
 * import { createBashTool } from "./agent_bash.ts";
 * const registry = new ToolRegistry().register(createBashTool());
 * console.log(await registry.invoke("Bash", { command: "echo hi" }, { workspaceRoot: "." })); // "hi\n"
 * ```
 */
export function createBashTool(): Tool<BashArgs, string> {
  return {
    name: "Bash",
    description:
      `Run a shell command (bash -c) in the working folder and return its output and exit code. Killed with everything it started after timeout ms (default ${AGENT_TOOL_LIMITS.bashTimeoutMs}); output beyond ${AGENT_TOOL_LIMITS.resultChars} characters is cut.`,
    inputSchema: BashArgsSchema,
    async execute(args, ctx) {
      ctx.signal?.throwIfAborted();
      const timeoutMs = args.timeout ?? AGENT_TOOL_LIMITS.bashTimeoutMs;
      const cwd = await Deno.realPath(ctx.workspaceRoot);
      let contained: ContainedProcess;
      try {
        // Contained: the command and everything it starts die with the call and with the run.
        contained = await spawnContained("bash", {
          args: ["-c", args.command],
          cwd,
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
          ...(typeof ctx.runId === "string" ? { runId: ctx.runId } : {}),
          // Killed when the run cancels the call (also while it starts).
          ...(ctx.signal ? { signal: ctx.signal } : {}),
        });
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) {
          throw new StepflowError(
            "COMMAND_NOT_FOUND",
            "Bash: bash was not found on this machine. Install bash to use the Bash tool.",
          );
        }
        throw error;
      }
      const child = contained.child;
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        contained.kill();
      }, timeoutMs);
      const max = AGENT_TOOL_LIMITS.resultChars;
      const stdout = captureBounded(child.stdout, max);
      const stderr = captureBounded(child.stderr, max);
      try {
        // Resolves once background processes the command left are gone too (they would hold the
        // pipes open).
        const status = await contained.status;
        const [out, err] = await Promise.all([stdout, stderr]);
        ctx.signal?.throwIfAborted();
        const text = render(out.text, err.text, timedOut ? undefined : status.code);
        const cut = out.truncated || err.truncated || text.length > max;
        const bounded = cut ? `${text.slice(0, max)}\n${truncationNotice(max, OUTPUT_HINT)}` : text;
        if (timedOut) {
          throw new StepflowError(
            "COMMAND_TIMEOUT",
            `Bash: the command did not finish within ${timeoutMs} ms; it was killed with every process it started. Pass a larger timeout (at most ${AGENT_TOOL_LIMITS.bashMaxTimeoutMs}) or run less at once.${
              bounded ? `\nOutput so far:\n${bounded}` : ""
            }`,
            { details: { command: args.command, timeoutMs } },
          );
        }
        return bounded;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

function render(stdout: string, stderr: string, code: number | undefined): string {
  const parts = [stdout];
  if (stderr) parts.push(`${stdout && !stdout.endsWith("\n") ? "\n" : ""}[stderr]\n${stderr}`);
  if (code !== undefined && code !== 0) {
    const text = parts.join("");
    parts.push(`${text && !text.endsWith("\n") ? "\n" : ""}[exit code ${code}]`);
  }
  return parts.join("");
}
