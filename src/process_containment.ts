/**
 * Every process stepflow starts for a run — a `Bash` command, an MCP server, a `run_command` —
 * runs **contained**: it and everything it starts die with its call and with the run, whatever
 * ends them — its own end, a timeout, a cancel, Ctrl-C or SIGTERM, and a `kill -9` of the run.
 *
 * Two modes ({@linkcode containmentMode}):
 *
 * - `supervisor` (Linux, the default there): the command runs under a small supervisor process
 *   (`process_supervisor.ts`, a `deno eval` of this Deno) that is a child subreaper and gets a
 *   parent-death signal. Whatever the command leaves — background jobs, `nohup`, double forks,
 *   `setsid -f` — stays below the supervisor, which kills all of it when the command ends, when
 *   the run kills the call (timeout, cancel), and when the run's process dies, even by SIGKILL.
 *   Process ids are the machine's own (no namespace): `$!`, `ps` and `kill` mean what they mean
 *   outside.
 * - `session` (other systems, where Deno cannot run the supervisor, or when chosen): the command
 *   leads a session of its own and is killed as a process group; on Linux, the processes that left
 *   it are found by their tag (`STEPFLOW_PROCESS_TAG`) and killed when it ends. A `kill -9` of the
 *   run kills none of it.
 *
 * `STEPFLOW_PROCESS_CONTAINMENT=supervisor|session` chooses the mode.
 *
 * Each process carries `STEPFLOW_RUN_ID` (the run it works for, when known) and
 * `STEPFLOW_PROCESS_TAG` (its own) in its environment, and its descendants inherit them: a resume
 * finds what still runs for a run by them ({@linkcode liveRunProcesses}).
 *
 * @module
 */
import { StepflowError } from "./errors.ts";
import { superviseMain } from "./process_supervisor.ts";

/** How the processes of a run are contained (see the module documentation). */
export type ContainmentMode = "supervisor" | "session";

/** The environment variable that chooses {@linkcode ContainmentMode}. */
export const CONTAINMENT_ENV = "STEPFLOW_PROCESS_CONTAINMENT";
/** The environment variable naming the run a contained process works for. */
export const RUN_ID_ENV = "STEPFLOW_RUN_ID";
/** The environment variable naming one contained process (and everything it started). */
export const PROCESS_TAG_ENV = "STEPFLOW_PROCESS_TAG";

let probe: Promise<ContainmentMode> | undefined;

/**
 * The containment this process gives the processes it starts: the mode
 * `STEPFLOW_PROCESS_CONTAINMENT` names, else `supervisor` when this machine can run it (Linux,
 * and permission to start this Deno: probed once, by supervising `true`), else `session`.
 *
 * @throws StepflowError `PROCESS_CONTAINMENT_UNAVAILABLE` when the variable names an unknown mode,
 *   or `supervisor` on a machine that cannot run it
 *
 * @example
 * ```ts
 * import { containmentMode } from "./process_containment.ts";
 * console.log(["supervisor", "session"].includes(await containmentMode())); // true
 * ```
 */
export async function containmentMode(): Promise<ContainmentMode> {
  const chosen = readEnv(CONTAINMENT_ENV);
  if (chosen !== undefined && chosen !== "supervisor" && chosen !== "session") {
    throw new StepflowError(
      "PROCESS_CONTAINMENT_UNAVAILABLE",
      `${CONTAINMENT_ENV}="${chosen}" is not a containment mode. Use supervisor or session (or unset it to take the strongest this machine allows).`,
      { details: { value: chosen } },
    );
  }
  if (chosen === "session") return chosen;
  const best = await (probe ??= probeSupervisor());
  if (chosen === "supervisor" && best !== "supervisor") {
    throw new StepflowError(
      "PROCESS_CONTAINMENT_UNAVAILABLE",
      `${CONTAINMENT_ENV}=supervisor, but this process cannot start the supervisor (it needs Linux, libc, and permission to run ${execPath()} — deno run --allow-run). Fix that, or choose session: then a process that leaves its process group (setsid) survives a kill -9 of the run.`,
      { details: { value: chosen, available: best } },
    );
  }
  return best;
}

async function probeSupervisor(): Promise<ContainmentMode> {
  if (Deno.build.os !== "linux") return "session";
  try {
    const [command, ...args] = supervisorArgv(["/bin/sh", "-c", "exit 0"]);
    const { success } = await new Deno.Command(command, {
      args,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
    return success ? "supervisor" : "session";
  } catch {
    return "session"; // no permission to run it, or no such program
  }
}

function execPath(): string {
  try {
    return Deno.execPath();
  } catch {
    return "deno";
  }
}

/**
 * The supervisor's command line for `argv`, whose environment gets `env` on top of the
 * supervisor's, watching this process.
 */
function supervisorArgv(argv: readonly string[], env: Record<string, string> = {}): string[] {
  return [
    execPath(),
    "eval",
    "--quiet",
    "--no-config",
    "--no-lock",
    `(${superviseMain.toString()})()`,
    "--",
    String(Deno.pid),
    JSON.stringify(env),
    ...argv,
  ];
}

/** How to start a contained process (the options of `Deno.Command` it takes). */
export interface ContainedSpawnOptions {
  /** Its arguments. */
  args?: readonly string[];
  /** Where it starts: a relative program path is found from here. */
  cwd?: string;
  /** The environment it gets on top of this process's (its `PATH` is searched when set). */
  env?: Record<string, string>;
  /** Its standard input. */
  stdin: "null" | "piped";
  /** Its standard output. */
  stdout: "null" | "piped";
  /** Its standard error. */
  stderr: "null" | "piped";
  /** The run it works for (`STEPFLOW_RUN_ID`). */
  runId?: string;
  /**
   * The call's abort (a cancel, a timeout): when it fires the process is killed as
   * {@linkcode ContainedProcess.kill} kills it — also when it fired while the process was being
   * started, so no abort falls between the start and a listener added after it. Already aborted
   * before the start: nothing is started, and the start throws its reason.
   */
  signal?: AbortSignal;
}

/** A started contained process (see {@linkcode spawnContained}). */
export interface ContainedProcess {
  /** The process started: the supervisor (its pipes are the command's), or the command itself. */
  readonly child: Deno.ChildProcess;
  /** Its id, which is its process group's too (once a supervisor made its group, at its start). */
  readonly pid: number;
  /** The containment it runs under. */
  readonly mode: ContainmentMode;
  /** Its own tag (`STEPFLOW_PROCESS_TAG`). */
  readonly tag: string;
  /**
   * Resolves with the command's status once it ended and everything it started is gone (exit code
   * 128 + N when signal N ended it).
   */
  readonly status: Promise<Deno.CommandStatus>;
  /** Sends `signal` to the command's process group (a TERM that asks it to stop). */
  signal(signal: Deno.Signal): void;
  /** Kills the command and everything it started, now. Safe to call when it ended. */
  kill(): void;
}

/**
 * Starts `command` contained. The program is looked up first (a relative path from `cwd`, a bare
 * name on `PATH`), so a missing one fails here with `Deno.errors.NotFound`, as a plain spawn would.
 *
 * @throws Deno.errors.NotFound when the program is not found
 * @throws StepflowError `PROCESS_CONTAINMENT_UNAVAILABLE` (see {@linkcode containmentMode})
 *
 * @example
 * ```ts
 * import { spawnContained } from "./process_containment.ts";
 * const sleeper = await spawnContained("sleep", {
 *   args: ["30"],
 *   stdin: "null",
 *   stdout: "null",
 *   stderr: "null",
 * });
 * sleeper.kill();
 * console.log((await sleeper.status).success); // false
 * ```
 */
export async function spawnContained(
  command: string,
  options: ContainedSpawnOptions,
): Promise<ContainedProcess> {
  const mode = await containmentMode();
  const tag = crypto.randomUUID();
  const tags: Record<string, string> = { [PROCESS_TAG_ENV]: tag };
  if (options.runId !== undefined) tags[RUN_ID_ENV] = options.runId;
  const args = options.args ?? [];
  const supervised = mode === "supervisor";
  const argv = supervised
    ? supervisorArgv(
      [findProgram(command, options.cwd, options.env?.PATH ?? readEnv("PATH")), ...args],
      tags,
    )
    : [command, ...args];
  // The last moment before the start: from here to the listener below nothing awaits.
  options.signal?.throwIfAborted();
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    // The supervisor carries no tag (the command gets the tags from it, by its command line: they
    // are no secret, unlike the caller's variables), so no search finds it.
    env: supervised ? { ...options.env } : { ...options.env, ...tags },
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    stdin: options.stdin,
    stdout: options.stdout,
    stderr: options.stderr,
    // Its process group is signalled as a whole. The supervisor makes its own group in this
    // session (see process_supervisor.ts for why not a session); without one, a session of its own.
    detached: !supervised,
  }).spawn();
  let ended = false;
  const group = (signal: Deno.Signal) => {
    try {
      Deno.kill(-child.pid, signal);
    } catch {
      // The group is gone already.
    }
  };
  const status = child.status.then(async (status): Promise<Deno.CommandStatus> => {
    ended = true;
    // The supervisor killed what was left below it; the group is killed again all the same (and,
    // without a supervisor, what left it is found by its tag).
    group("SIGKILL");
    // Without a supervisor — or when one was killed by a signal (a command can kill its parent,
    // `kill -9 $PPID`, and what it started is then re-parented past it) — what left the group is
    // found by its tag.
    if (mode === "session" || status.signal !== null) await reapTagged(tag);
    // Asked to kill before it could listen, the supervisor died of the request itself (before it
    // started the command): killed, as asked.
    return status.signal === "SIGUSR1" && supervised
      ? { success: false, code: 128 + 9, signal: "SIGKILL" }
      : status;
  });
  const kill = () => {
    if (ended) return;
    if (mode === "session") return group("SIGKILL");
    // A KILL to the group would take the supervisor before it cleaned up: it is asked instead.
    try {
      Deno.kill(child.pid, "SIGUSR1");
    } catch {
      group("SIGKILL");
    }
  };
  const abort = options.signal;
  if (abort !== undefined) {
    abort.addEventListener("abort", kill, { once: true });
    void status.finally(() => abort.removeEventListener("abort", kill));
  }
  return {
    child,
    pid: child.pid,
    mode,
    tag,
    status,
    signal: (signal) => {
      if (!ended) group(signal);
    },
    kill,
  };
}

/** `command` as a path: found on `path` when it names no folder, checked to exist otherwise. */
function findProgram(command: string, cwd: string | undefined, path: string | undefined): string {
  if (command.includes("/")) {
    const full = command.startsWith("/") || !cwd ? command : `${cwd}/${command}`;
    if (isExecutableFile(full)) return full;
    throw new Deno.errors.NotFound(`${command}: no such executable file`);
  }
  for (const folder of (path ?? "/usr/local/bin:/usr/bin:/bin").split(":")) {
    const full = `${folder || "."}/${command}`;
    if (isExecutableFile(full)) return full;
  }
  throw new Deno.errors.NotFound(`${command}: not found on PATH`);
}

function isExecutableFile(path: string): boolean {
  try {
    const info = Deno.statSync(path);
    return info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0;
  } catch {
    return false;
  }
}

/** Kills the processes carrying `tag` (they left the group of a process that ended). */
async function reapTagged(tag: string): Promise<void> {
  // A process may fork while it is being killed: look again until none is left (bounded).
  for (let round = 0; round < 10; round++) {
    const found = await processesTagged(PROCESS_TAG_ENV, tag);
    if (found.length === 0) return;
    for (const { pid } of found) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }
  }
}

/** A live process found by its tag. */
export interface TaggedProcess {
  /** Its process id. */
  pid: number;
  /** Its command line, bounded (arguments joined by spaces). */
  command: string;
}

/**
 * The live processes on this machine that work for `runId` (they carry `STEPFLOW_RUN_ID` with
 * that value: a contained process of the run and everything it started), this process excluded.
 * Empty where there is no `/proc`.
 *
 * @example
 * ```ts
 * import { liveRunProcesses } from "./process_containment.ts";
 * console.log(await liveRunProcesses("20261130T101010Z-abcdef")); // []
 * ```
 */
export function liveRunProcesses(runId: string): Promise<TaggedProcess[]> {
  return processesTagged(RUN_ID_ENV, runId);
}

/** The processes whose environment holds `name=value` (zombies and this process excluded). */
async function processesTagged(name: string, value: string): Promise<TaggedProcess[]> {
  const wanted = `${name}=${value}`;
  const found: TaggedProcess[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir("/proc"));
  } catch {
    return found;
  }
  for (const entry of entries) {
    const pid = Number(entry.name);
    if (!Number.isInteger(pid) || pid <= 0 || pid === Deno.pid) continue;
    let environ: Uint8Array;
    try {
      environ = await Deno.readFile(`/proc/${pid}/environ`);
    } catch {
      continue; // gone, or another user's
    }
    if (!new TextDecoder().decode(environ).split("\0").includes(wanted)) continue;
    const command = await commandLine(pid);
    if (command !== undefined) found.push({ pid, command });
  }
  return found;
}

/** The command line of a live, non-zombie process, or undefined. */
async function commandLine(pid: number): Promise<string | undefined> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    // The state follows the last ")" (the name may hold one): Z is a zombie, X dead.
    const state = stat.charAt(stat.lastIndexOf(")") + 2);
    if (state === "Z" || state === "X") return undefined;
    const raw = await Deno.readTextFile(`/proc/${pid}/cmdline`);
    const text = raw.split("\0").filter(Boolean).join(" ");
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return undefined;
  }
}

function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // no --allow-env: the defaults
  }
}
