/**
 * The `qplan` command line: run, validate and prompt for QPlan scripts.
 *
 * ```text
 * deno task qplan run FILE [--param k=v …] [--json]     run a script (progress on stderr)
 * deno task qplan validate FILE [--json]                check a script without running it
 * deno task qplan prompt "<task>"                       print the prompt that asks an LLM for a script
 * ```
 *
 * FILE, `--workspace`, `--params-file` and `--script` resolve against `INIT_CWD` (set by
 * `deno task` to the folder it was started from), else the current directory.
 * Exit codes: 0 done (completed or stopped), 1 the script ran and failed (or was aborted / timed
 * out), 2 usage errors and scripts that cannot run (syntax, validation, missing params, backend
 * configuration).
 *
 * @module
 */
import { resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { errorMessage, UsageError } from "../errors.ts";
import type { LlmBackend } from "../llm/types.ts";
import {
  buildScriptPrompt,
  createProgressPrinter,
  createQPlanRegistry,
  renderCaret,
  renderIssues,
  runScript,
  validateScript,
} from "../qplan/mod.ts";
import { BACKEND_FLAGS, backendFromFlags } from "./kit/backend.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import { localizeCommands, stepflowCommand } from "../invocation.ts";
import { declaredHelpLines, defineFlags, type FlagsOf, parseCommandFlags } from "./kit/flags.ts";
import { displayPath } from "./kit/display_path.ts";
import { listenForInterrupt } from "./kit/interrupt.ts";
import { type CliIo, fullIo, processIo, userDirOf } from "./kit/io.ts";
import { reportError } from "./kit/report_error.ts";
import { assertFolderFlag } from "./kit/folder_flag.ts";
import { MCP_CONFIG_FLAG, McpTools } from "./mcp_tools.ts";
import { scriptModules } from "../qplan/script_modules.ts";
import type { ApproveTool } from "../qplan/core/executor.ts";
import { ToolRegistry } from "../tools/registry.ts";

/** Where the CLI reads and writes: the CLI kit's {@linkcode CliIo} (`signal` aborts a run). */
export type QPlanCliIo = CliIo;

/** Every flag of `qplan`, in `--help` order: its type, parser and help rows follow from it. */
export const QPLAN_FLAGS = defineFlags({
  params: {
    name: "param",
    type: "string",
    value: "k=v",
    multiple: true,
    description: "a param for the script (repeatable; v is parsed as JSON when it can be)",
  },
  paramsFile: { type: "string", value: "FILE", description: "params from a JSON or YAML object" },
  json: {
    type: "boolean",
    description: "run: print {status, error, results, vars} as JSON on stdout\n" +
      "validate: print {ok, issues, steps} as JSON",
  },
  workspace: {
    type: "string",
    value: "DIR",
    description: "root of the files the file module may touch (default: current folder)",
  },
  timeout: { type: "string", value: "MS", description: "abort the run after MS milliseconds" },
  enable: {
    type: "string",
    value: "LIST",
    multiple: true,
    description: "extra modules: http, html, ai (comma-separated)",
  },
  mcpConfig: MCP_CONFIG_FLAG,
  approve: {
    type: "string",
    value: "TOOLS",
    multiple: true,
    description: "run these modules without asking, when they need approval (comma-separated,\n" +
      "e.g. mcp__files__write_file); other approvals are denied",
  },
  backend: {
    ...BACKEND_FLAGS.backend,
    description: "LLM backend for the ai module: scripted, claude-code, anthropic, openai",
  },
  script: {
    ...BACKEND_FLAGS.script,
    description:
      "answers of the scripted backend (YAML/JSON keyed by step id; format: docs/backends.md#script-files)",
  },
  model: { ...BACKEND_FLAGS.model, value: "NAME", description: "model of the backend" },
  baseUrl: {
    ...BACKEND_FLAGS.baseUrl,
    description: "server of the backend (e.g. a local OpenAI-compatible server)",
  },
  maxAttempts: {
    ...BACKEND_FLAGS.maxAttempts,
    description: "attempts per ai call on 429/5xx/network errors (default 3)",
  },
  runId: { type: "string", value: "ID", description: "run id (results are stored at ctx[runId])" },
  quiet: { type: "boolean", description: "no progress lines" },
  help: { type: "boolean", short: "h", description: "this help" },
});

const HELP = `qplan — run, validate and write QPlan scripts

Usage:
  stepflow qplan run FILE [options]        run a script; live step progress on stderr
  stepflow qplan validate FILE [options]   check a script without running it
  stepflow qplan prompt "<task>" [options] print the prompt that asks an LLM to write a script

Options:
${declaredHelpLines(QPLAN_FLAGS, { width: 21 }).join("\n")}

Exit codes: 0 completed or stopped, 1 the script failed / was aborted / timed out,
            2 usage error or a script that cannot run (syntax, validation, params, backend),
            130 interrupted with Ctrl-C, 143 with SIGTERM.

Examples:
  stepflow qplan validate stats.qplan
  stepflow qplan run stats.qplan --param repo=stepflow`;

/**
 * Runs the `qplan` command line and returns the exit code. Never throws, never exits.
 *
 * @example
 * ```ts ignore
 * import { qplanMain } from "./qplan.ts";
 * const code = await qplanMain(["validate", "plan.qplan"], {
 *   stdout: { write: (t) => console.log(t.trimEnd()) },
 *   stderr: { write: (t) => console.error(t.trimEnd()) },
 *   cwd: Deno.cwd(),
 * });
 * ```
 */
export async function qplanMain(
  argv: string[],
  partialIo: Partial<QPlanCliIo> = {},
): Promise<number> {
  const full = fullIo(partialIo);
  // Every path of the qplan commands is the user's: `cwd` is the user directory from here on.
  const io: QPlanCliIo = { ...full, cwd: userDirOf(full) };
  try {
    const [command, ...rest] = argv;
    if (command === undefined || command === "-h" || command === "--help" || command === "help") {
      io.stdout.write(`${localizeCommands(HELP, io.cwd)}\n`);
      return command === undefined ? EXIT_CODES.usage : EXIT_CODES.success;
    }
    const options = parseOptions(rest);
    if (options.help) {
      io.stdout.write(`${localizeCommands(HELP, io.cwd)}\n`);
      return EXIT_CODES.success;
    }
    switch (command) {
      case "run":
        return await cmdRun(options, io);
      case "validate":
        return await cmdValidate(options, io);
      case "prompt":
        return await cmdPrompt(options, io);
      default:
        throw new UsageError(
          `Unknown command "${command}": use run, validate or prompt (see --help).`,
        );
    }
  } catch (error) {
    return reportError(error, full.stderr, {
      prefix: "qplan:",
      ...(full.signal ? { signal: full.signal } : {}),
    });
  }
}

/** The parsed command line after the command name: its flags and the file or task. */
type Options = FlagsOf<typeof QPLAN_FLAGS> & { positionals: string[] };

function parseOptions(args: string[]): Options {
  const { flags, positionals } = parseCommandFlags(args, QPLAN_FLAGS, { hint: " (see --help)" });
  const enable = flags.enable.flatMap((e) => e.split(",")).map((e) => e.trim().toLowerCase())
    .filter(Boolean);
  const approve = flags.approve.flatMap((a) => a.split(",")).map((a) => a.trim()).filter(Boolean);
  return { ...flags, enable, approve, positionals };
}

function oneFile(options: Options, command: string, cwd: string): string {
  if (options.positionals.length !== 1) {
    throw new UsageError(
      options.positionals.length === 0
        ? `qplan ${command} needs a script file: ${stepflowCommand("qplan", cwd)} ${command} FILE`
        : `qplan ${command} takes one script file, got ${options.positionals.length}: ${
          options.positionals.join(" ")
        }`,
    );
  }
  return options.positionals[0];
}

async function readScript(file: string, io: QPlanCliIo): Promise<{ path: string; source: string }> {
  const path = resolve(io.cwd, file);
  try {
    return { path, source: await Deno.readTextFile(path) };
  } catch (error) {
    const why = error instanceof Deno.errors.NotFound
      ? "no such file"
      : error instanceof Deno.errors.IsADirectory
      ? "it is a folder"
      : errorMessage(error);
    throw new UsageError(`cannot read script ${file}: ${why}`);
  }
}

async function readParams(options: Options, io: QPlanCliIo): Promise<Record<string, unknown>> {
  const params: Record<string, unknown> = {};
  if (options.paramsFile) {
    const path = resolve(io.cwd, options.paramsFile);
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (error) {
      throw new UsageError(
        `cannot read --params-file ${options.paramsFile}: ${errorMessage(error)}`,
      );
    }
    let data: unknown;
    try {
      data = path.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
    } catch (error) {
      throw new UsageError(
        `--params-file ${options.paramsFile} does not parse: ${errorMessage(error)}`,
      );
    }
    if (data === null || typeof data !== "object" || Array.isArray(data)) {
      throw new UsageError(
        `--params-file ${options.paramsFile} must hold an object of name: value`,
      );
    }
    Object.assign(params, data);
  }
  for (const entry of options.params) {
    const eq = entry.indexOf("=");
    if (eq <= 0) throw new UsageError(`--param needs name=value, got "${entry}"`);
    const name = entry.slice(0, eq).trim();
    const raw = entry.slice(eq + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // Not JSON: the text itself.
    }
    params[name] = value;
  }
  return params;
}

function knownModules(options: Options): { http: boolean; html: boolean; ai: boolean } {
  const allowed = new Set(["http", "html", "ai"]);
  for (const name of options.enable) {
    if (!allowed.has(name)) {
      throw new UsageError(`--enable knows http, html and ai, not "${name}"`);
    }
  }
  return {
    http: options.enable.includes("http"),
    html: options.enable.includes("html"),
    ai: options.enable.includes("ai") || options.backend !== undefined ||
      options.script !== undefined,
  };
}

async function backendOf(options: Options, io: QPlanCliIo): Promise<LlmBackend | undefined> {
  return await backendFromFlags(options, {
    cwd: io.cwd,
    env: io.env,
    onRetry: (r) =>
      io.stderr.write(
        `  · backend retry ${r.attempt}/${r.maxAttempts} in ${r.delayMs} ms: ${r.reason}\n`,
      ),
    onWarning: (m) => io.stderr.write(`  · ${m}\n`),
  });
}

/** A hint for modules that exist but are off unless enabled. */
function enableHint(issues: readonly { code: string; message: string }[]): string {
  const off = new Set<string>();
  for (const i of issues) {
    const m = /^unknown module '(http|html)'$/.exec(i.message);
    if (i.code === "unknown-module" && m) off.add(m[1]);
  }
  return off.size
    ? `\nnote: ${[...off].join(" and ")} ${
      off.size > 1 ? "are" : "is"
    } off by default; pass --enable ${[...off].join(",")}\n`
    : "";
}

async function cmdRun(options: Options, io: QPlanCliIo): Promise<number> {
  const file = oneFile(options, "run", io.cwd);
  const { path, source } = await readScript(file, io);
  const params = await readParams(options, io);
  let timeoutMs: number | undefined;
  if (options.timeout !== undefined) {
    timeoutMs = Number(options.timeout);
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      throw new UsageError(
        `--timeout needs a positive number of milliseconds, got "${options.timeout}"`,
      );
    }
  }
  const workspaceRoot = resolve(io.cwd, options.workspace ?? ".");
  await assertFolderFlag(workspaceRoot, "--workspace");
  const modules = knownModules(options);
  const backend = await backendOf(options, io);
  const tools = new ToolRegistry();
  const registry = createQPlanRegistry({
    registry: tools,
    ...modules,
    ai: true,
    backend,
    print: (line) => (options.json ? io.stderr : io.stdout).write(`${line}\n`),
  });
  await using mcp = mcpTools(options, io, tools, workspaceRoot);
  await mcp.start(scriptModules(source));
  const events = options.quiet
    ? []
    : [createProgressPrinter((line) => io.stderr.write(`${line}\n`))];
  const result = await runScript(source, {
    registry,
    params,
    events,
    timeoutMs,
    signal: io.signal,
    workspaceRoot,
    runId: options.runId,
    approve: approveListed(options.approve),
  });

  const code = result.error?.code;
  const cannotRun = code === "QPLAN_SYNTAX" || code === "QPLAN_INVALID" || code === "QPLAN_PARAMS";
  if (cannotRun) {
    const errors = result.issues.length > 0
      ? renderIssues(source, result.issues)
      : `error: ${result.error!.message}`;
    io.stderr.write(
      `qplan: ${displayPath(path, io.cwd)} cannot run:\n${errors}\n${enableHint(result.issues)}`,
    );
  } else if (result.error) {
    const where = result.error.line !== undefined
      ? `\n${renderCaret(source, result.error.line, result.error.column ?? 1)}`
      : "";
    io.stderr.write(`qplan: ${result.status}: ${result.error.message}${where}\n`);
  }
  if (options.json) {
    io.stdout.write(`${JSON.stringify(jsonResult(result), jsonReplacer, 2)}\n`);
  }
  if (cannotRun) return EXIT_CODES.usage;
  if (result.status === "aborted" && io.signal?.aborted) return EXIT_CODES.interrupted;
  return result.status === "completed" || result.status === "stopped"
    ? EXIT_CODES.success
    : EXIT_CODES.failed;
}

function jsonResult(result: Awaited<ReturnType<typeof runScript>>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    status: result.status,
    runId: result.runId,
    results: result.results,
    vars: result.vars,
  };
  if (result.error) out.error = result.error;
  if (result.failures.length) out.failures = result.failures;
  if (result.issues.length) out.issues = result.issues;
  return out;
}

function jsonReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Promise) return "<future>";
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  return value;
}

async function cmdValidate(options: Options, io: QPlanCliIo): Promise<number> {
  const file = oneFile(options, "validate", io.cwd);
  const { path, source } = await readScript(file, io);
  const params = await readParams(options, io);
  // The backend is built (not called) so that a script whose `ai` lines have none, or whose
  // backend flags are wrong, fails validation exactly as `run` would.
  const backend = await backendOf(options, io);
  const tools = new ToolRegistry();
  const registry = createQPlanRegistry({
    registry: tools,
    ...knownModules(options),
    ai: true,
    backend,
  });
  // The servers the script names are started to learn their tools and argument schemas.
  const workspaceRoot = resolve(io.cwd, options.workspace ?? ".");
  await using mcp = mcpTools(options, io, tools, workspaceRoot);
  await mcp.start(scriptModules(source));
  const validation = validateScript(source, { params, registry });
  const errors = validation.issues.filter((i) => i.severity === "error").length;
  const warnings = validation.issues.length - errors;
  if (options.json) {
    io.stdout.write(`${
      JSON.stringify(
        {
          ok: validation.ok,
          issues: validation.issues,
          steps: validation.resolution?.steps.map((s) => ({
            id: s.node.id,
            desc: s.node.desc,
            order: s.node.order,
            path: s.node.path,
            errorPolicy: s.policy,
          })) ?? [],
        },
        null,
        2,
      )
    }\n`);
  } else if (validation.issues.length > 0) {
    io.stderr.write(
      `${renderIssues(source, validation.issues)}\n${enableHint(validation.issues)}\n`,
    );
  }
  if (!validation.ok) {
    if (!options.json) {
      io.stderr.write(
        `✗ ${displayPath(path, io.cwd)}: ${errors} error${errors === 1 ? "" : "s"}${
          warnings ? `, ${warnings} warning${warnings === 1 ? "" : "s"}` : ""
        }\n`,
      );
    }
    return EXIT_CODES.usage;
  }
  if (!options.json) {
    const steps = validation.resolution?.steps.length ?? 0;
    io.stdout.write(
      `✓ ${displayPath(path, io.cwd)} is valid: ${steps} step${steps === 1 ? "" : "s"}${
        warnings ? `, ${warnings} warning${warnings === 1 ? "" : "s"}` : ""
      }\n`,
    );
    for (const s of validation.resolution?.steps ?? []) {
      io.stdout.write(`${"  ".repeat(s.depth + 1)}${s.node.desc ?? s.node.id} [${s.node.id}]\n`);
    }
  }
  return EXIT_CODES.success;
}

async function cmdPrompt(options: Options, io: QPlanCliIo): Promise<number> {
  if (options.positionals.length === 0 || options.positionals.join(" ").trim() === "") {
    throw new UsageError(
      `qplan prompt needs a task: ${stepflowCommand("qplan", io.cwd)} prompt "Summarize notes.txt"`,
    );
  }
  const modules = knownModules(options);
  const tools = new ToolRegistry();
  const registry = createQPlanRegistry({ registry: tools, ...modules });
  // Every configured server's tools are offered to the model writing the script.
  await using mcp = mcpTools(options, io, tools, resolve(io.cwd, options.workspace ?? "."));
  await mcp.start("all");
  const params = Object.keys(await readParams(options, io));
  io.stdout.write(`${buildScriptPrompt(options.positionals.join(" "), registry, { params })}\n`);
  return EXIT_CODES.success;
}

/** The MCP servers of `--mcp-config` for a script's registry (none without the flag). */
function mcpTools(
  options: Options,
  io: QPlanCliIo,
  registry: ToolRegistry,
  cwd: string,
): McpTools {
  return new McpTools({
    configFile: options.mcpConfig,
    userDir: io.cwd,
    env: io.env,
    cwd,
    registry,
    note: (line) => {
      if (!options.quiet) io.stderr.write(`${line}\n`);
    },
  });
}

/** Approves the modules `--approve` names; denies the others, saying how to allow them. */
function approveListed(approved: readonly string[]): ApproveTool {
  return ({ tool, reason }) =>
    approved.includes(tool) ? true : {
      approved: false,
      reason: `${reason ? `${reason}; ` : ""}pass --approve ${tool} to let it run`,
    };
}

/** Runs `qplan` on the real process: Ctrl-C aborts a run (twice quits at once). */
export async function qplanCli(argv: readonly string[] = Deno.args): Promise<never> {
  using interrupt = listenForInterrupt({
    message: "\nAborting the script… (press Ctrl-C again to quit at once)\n",
    reason: new Error("interrupted (Ctrl-C)"),
  });
  const code = await qplanMain([...argv], { ...processIo(), signal: interrupt.signal });
  Deno.exit(interrupt.exitCode(code));
}

if (import.meta.main) await qplanCli();
