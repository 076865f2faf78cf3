/**
 * Helpers of the CLI tests: run a CLI in-process through its `main(argv, io)` (fast) or spawn the
 * real `deno task <cli>` (the smoke tests), from a temp user folder; write small agents there.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { CliIo } from "../../src/cli/kit/io.ts";
import { runMigrateCli } from "../../src/cli/migrate.ts";
import { stepflowMain } from "../../src/cli/stepflow.ts";
import { stepflowPrefix } from "../../src/invocation.ts";

/** The repository root (where deno.json and its tasks live). */
export const REPO_ROOT: string = fileURLToPath(new URL("../../", import.meta.url));

/** What a spawned command left behind. */
export interface Spawned {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of {@linkcode runTask}. */
export interface RunTaskOptions {
  /** The user's folder (`INIT_CWD`). */
  userDir: string;
  /** Text piped on stdin; when absent stdin is closed (`null`). */
  stdin?: string;
  /** Extra environment. */
  env?: Record<string, string>;
  /** Task name (default `run-agent`). */
  task?: string;
}

/** Runs `deno task --quiet <task> …args` in the repo with `INIT_CWD` set to the user folder. */
export async function runTask(args: string[], options: RunTaskOptions): Promise<Spawned> {
  const command = new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", options.task ?? "run-agent", ...args],
    cwd: REPO_ROOT,
    env: { INIT_CWD: options.userDir, NO_COLOR: "1", ...options.env },
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  });
  const child = command.spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const out = await child.output();
  const decoder = new TextDecoder();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

/** A CLI by its `deno task` name (`stepflow`: the one command, `src/cli/mod.ts`). */
export type CliName =
  | "stepflow"
  | "run-agent"
  | "run-plan"
  | "plan"
  | "qplan"
  | "worker"
  | "migrate"
  | "ui";

/** Options of {@linkcode spawnCli}. */
export interface SpawnCliOptions {
  /** The user's folder (`INIT_CWD`). */
  userDir: string;
  /** Extra environment. */
  env?: Record<string, string>;
  /** `null` when the test does not read stdout (default `piped`). */
  stdout?: "piped" | "null";
  /** `null` when the test does not read stderr (default `piped`). */
  stderr?: "piped" | "null";
  /**
   * A command the CLI runs under (`["setpriv", "--bounding-set", "-dac_override", …]`): the tests
   * of file modes run the CLI without the root privilege of ignoring them.
   */
  wrapper?: readonly string[];
}

/**
 * Starts a CLI as a process of its own — `deno run -A src/cli/<name>.ts …`, what `deno task <name>`
 * runs, without deno task's process in between (so a kill or a signal reaches the CLI) — with stdin
 * closed: for tests about the process itself (killed, raced, signalled). The others call its
 * `main(argv, io)` in-process.
 */
export function spawnCli(
  cli: CliName,
  args: string[],
  options: SpawnCliOptions,
): Deno.ChildProcess {
  const [command, ...before] = [...(options.wrapper ?? []), Deno.execPath()];
  return new Deno.Command(command, {
    args: [
      ...before,
      "run",
      "-A",
      join(REPO_ROOT, "src", "cli", cli === "stepflow" ? "mod.ts" : `${cli.replace("-", "_")}.ts`),
      ...args,
    ],
    cwd: REPO_ROOT,
    env: { INIT_CWD: options.userDir, NO_COLOR: "1", ...options.env },
    stdin: "null",
    stdout: options.stdout ?? "piped",
    stderr: options.stderr ?? "piped",
  }).spawn();
}

/** Output of a finished command. */
export interface CommandResult extends Spawned {
  /** The signal that ended it, if one did. */
  signal: Deno.Signal | null;
}

/** Waits for a spawned command and decodes what it printed (nothing for a stream not piped). */
export async function finish(child: Deno.ChildProcess): Promise<CommandResult> {
  const out = await child.output();
  // A stream that was not piped throws when read: it printed nothing the test kept.
  const text = (read: () => Uint8Array) => {
    try {
      return new TextDecoder().decode(read());
    } catch {
      return "";
    }
  };
  return {
    code: out.code,
    signal: out.signal,
    stdout: text(() => out.stdout),
    stderr: text(() => out.stderr),
  };
}

/** A CLI's in-process entry: `main(argv, io)` resolving to the exit code. */
export type CliMain = (argv: string[], io: Partial<CliIo>) => Promise<number>;

/**
 * Runs `cli` in-process the way {@linkcode runTask} runs it in a subprocess: `INIT_CWD` is the user
 * folder, `NO_COLOR` is set, no stream is a terminal, stdin is `options.stdin` (else none), and the
 * output is captured.
 */
export async function runMain(
  cli: CliMain,
  args: string[],
  options: RunTaskOptions & { io?: Partial<CliIo> },
): Promise<Spawned> {
  let stdout = "";
  let stderr = "";
  const stdin = options.stdin === undefined ? null : new Blob([options.stdin]).stream();
  const code = await cli(args, {
    stdout: { write: (t) => void (stdout += t) },
    stderr: { write: (t) => void (stderr += t) },
    stdin,
    env: { INIT_CWD: options.userDir, NO_COLOR: "1", ...options.env },
    cwd: REPO_ROOT,
    isTerminal: { stdin: false, stdout: false, stderr: false },
    ...options.io,
  });
  return { code, stdout, stderr };
}

/**
 * Runs `options.task` (default `run-agent`) like {@linkcode runTask} does, but in-process through
 * its `main(argv, io)` — the fast path of the CLI tests. Each CLI keeps one {@linkcode runTask}
 * smoke test of the real process.
 */
export async function runCli(args: string[], options: RunTaskOptions): Promise<Spawned> {
  const task = options.task ?? "run-agent";
  // `stepflow`: a subcommand (`show RUN_ID`), or the old run-agent form (`--agent NAME …`).
  if (task === "run-agent") return await runMain(stepflowMain, args, options);
  if (task === "migrate") return await runMigrateCli(args, options.userDir);
  throw new Error(`runCli: no in-process entry for the task "${task}"; use runTask`);
}

/** Copies a folder recursively. */
export async function copyDir(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory) await copyDir(source, target);
    else if (entry.isFile) await Deno.copyFile(source, target);
  }
}

/** Writes files (path → text, or JSON for objects) under `root`. */
export async function writeFiles(root: string, files: Record<string, unknown>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const path = join(root, rel);
    await Deno.mkdir(dirname(path), { recursive: true });
    await Deno.writeTextFile(
      path,
      typeof content === "string" ? content : JSON.stringify(content, null, 2),
    );
  }
}

/** A JSON Schema of a gate-routed step's output. */
function gateSchema(stepId: string) {
  return {
    type: "object",
    required: ["stepId", "next_action"],
    properties: {
      stepId: { const: stepId },
      next_action: {
        type: "object",
        required: ["action"],
        properties: { action: { type: "string" }, reason: { type: "string" } },
      },
    },
  };
}

/** Options of {@linkcode writeTinyAgent}. */
export interface TinyAgentOptions {
  /** The work step's prompt (default uses `{uv-topic}`). */
  prompt?: string;
  /** Declared parameters (default: `topic` required, `count` number, `loud` boolean). */
  parameters?: Record<string, unknown>;
}

/**
 * Writes `.agent/<name>`: a gate-routed `work.task` step (next/repeat/complete/abort) and a closing
 * `complete.task` step whose output is the run's output.
 */
export async function writeTinyAgent(
  userDir: string,
  name: string,
  options: TinyAgentOptions = {},
): Promise<string> {
  const dir = join(userDir, ".agent", name);
  await writeFiles(dir, {
    "agent.json": {
      name,
      description: `Tiny test agent ${name}`,
      behavior: { completionType: "task" },
      parameters: options.parameters ?? {
        topic: { type: "string", description: "What to do", required: true },
        count: { type: "number", description: "How many", default: 1 },
        loud: { type: "boolean", description: "Shout" },
      },
    },
    "steps_registry.json": {
      version: "1.0.0",
      entryStep: "work.task",
      steps: {
        "work.task": {
          name: "Work",
          c2: "work",
          c3: "task",
          outputSchemaRef: { file: "task.schema.json", schema: "#/definitions/work.task" },
          structuredGate: {
            allowedIntents: ["next", "repeat", "complete", "abort"],
            intentField: "next_action.action",
          },
          transitions: {
            next: { target: "work.task" },
            repeat: { target: "work.task" },
            complete: { target: "complete.task" },
          },
        },
        "complete.task": {
          name: "Report",
          c2: "complete",
          c3: "task",
          outputSchemaRef: { file: "task.schema.json", schema: "#/definitions/complete.task" },
        },
      },
    },
    "prompts/steps/work/task/f_default.md": options.prompt ?? "Work on {uv-topic}.",
    "prompts/steps/complete/task/f_default.md": "Report on the work.",
    "schemas/task.schema.json": {
      $schema: "http://json-schema.org/draft-07/schema#",
      definitions: {
        "work.task": gateSchema("work.task"),
        "complete.task": {
          type: "object",
          required: ["stepId", "summary"],
          properties: { stepId: { const: "complete.task" }, summary: { type: "string" } },
        },
      },
    },
  });
  return dir;
}

/** A scripted answer of the tiny agent's work step. */
export function work(action: string) {
  return { output: { stepId: "work.task", next_action: { action, reason: `chose ${action}` } } };
}

/** The scripted answer of the tiny agent's closing step. */
export function report(summary: string) {
  return { output: { stepId: "complete.task", summary } };
}

/** True when `text` holds a JavaScript stack frame (`    at fn (file:1:2)`). */
export function hasStackTrace(text: string): boolean {
  return /^\s+at .+:\d+:\d+\)?$/m.test(text);
}

/** Reads `stream` into `sink.text` until `marker` appears (or the stream ends). */
export async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  sink: { text: string },
  marker?: string,
): Promise<void> {
  const decoder = new TextDecoder();
  while (marker === undefined || !sink.text.includes(marker)) {
    const chunk = await reader.read();
    if (chunk.done) return;
    sink.text += decoder.decode(chunk.value, { stream: true });
  }
}

/** True when util-linux `script` is here: the tests at a real terminal run under it. */
export const HAS_SCRIPT: Promise<boolean> = new Deno.Command("script", {
  args: ["--version"],
  stdout: "null",
  stderr: "null",
}).output().then((o) => o.success, () => false);

/**
 * Starts `deno task --quiet run-agent ARGS` on a pseudo-terminal (util-linux `script`), as a person
 * at a terminal would: its stdin, stdout and stderr are the terminal (read them all from the child's
 * stdout; a `\r` written to its stdin ends a line, a `\x03` is a real Ctrl-C).
 */
export function spawnAtTerminal(
  args: readonly string[],
  options: { userDir: string; env?: Record<string, string> },
): Deno.ChildProcess {
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const env = { INIT_CWD: options.userDir, NO_COLOR: "1", ...options.env };
  const command = [
    `cd ${quote(REPO_ROOT)} &&`,
    ...Object.entries(env).map(([key, value]) => `${key}=${quote(value)}`),
    `${quote(Deno.execPath())} task --quiet run-agent ${args.map(quote).join(" ")}`,
  ].join(" ");
  return new Deno.Command("script", {
    args: ["-qec", command, "/dev/null"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** What a command typed in a shell left behind. */
export interface ShellResult extends Spawned {
  /** stdout and stderr together, stdout first. */
  out: string;
}

/** A temporary install of the one `stepflow` command, for tests from folders outside the checkout. */
export interface InstalledStepflow {
  /** The folder holding the `stepflow` script. */
  bin: string;
  /** The environment a shell gets: `PATH` with `bin` and this Deno first, `NO_COLOR`. */
  env: Record<string, string>;
  /** Runs `command` with `sh -c` in `cwd`, as typed in a shell there (no `INIT_CWD`). */
  sh(command: string, cwd: string, options?: { stdin?: string }): Promise<ShellResult>;
  /** Removes the install. */
  remove(): Promise<void>;
}

/**
 * `deno task install` into a temporary `DENO_INSTALL_ROOT`, so the machine is untouched: the
 * `stepflow` a user gets, on a `PATH` of its own.
 */
export async function installStepflow(): Promise<InstalledStepflow> {
  const root = await Deno.makeTempDir({ prefix: "stepflow-install-" });
  const install = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "install"],
    cwd: REPO_ROOT,
    env: { DENO_INSTALL_ROOT: root },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!install.success) {
    throw new Error(`deno task install failed: ${new TextDecoder().decode(install.stderr)}`);
  }
  const bin = join(root, "bin");
  // deno's install script calls `deno`: the one running this test.
  const path = [bin, dirname(Deno.execPath()), Deno.env.get("PATH") ?? ""].join(":");
  const env = { PATH: path, NO_COLOR: "1", HOME: Deno.env.get("HOME") ?? root };
  const sh = async (command: string, cwd: string, options: { stdin?: string } = {}) => {
    // As typed in a shell: no INIT_CWD from an enclosing `deno task` (the test runner's own).
    const child = new Deno.Command("env", {
      args: ["-u", "INIT_CWD", "sh", "-c", command],
      cwd,
      env,
      stdin: options.stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    if (options.stdin !== undefined) {
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(options.stdin));
      await writer.close();
    }
    const result = await child.output();
    const decoder = new TextDecoder();
    const stdout = decoder.decode(result.stdout);
    const stderr = decoder.decode(result.stderr);
    return { code: result.code, stdout, stderr, out: stdout + stderr };
  };
  return { bin, env, sh, remove: () => Deno.remove(root, { recursive: true }) };
}

/**
 * The arguments of a command stepflow printed for `userDir` (`<stepflow> resume RUN_ID …`): the
 * words after the command's start, split as a shell splits them (single quotes kept together), for
 * {@linkcode runCli}.
 */
export function printedArgs(command: string, userDir: string): string[] {
  const starts = [stepflowPrefix(userDir), "deno task stepflow", "stepflow"];
  const start = starts.find((s) => command.startsWith(`${s} `));
  if (start === undefined) throw new Error(`not a stepflow command: ${command}`);
  const words: string[] = [];
  for (const m of command.slice(start.length + 1).matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)) {
    words.push(m[1] !== undefined ? m[1].replaceAll("'\\''", "'") : m[2]);
  }
  return words;
}
