/**
 * The supervisor of a contained process (see `process_containment.ts`): a small Deno process that
 * stands between the run and the command, started as `deno eval "(superviseMain)()" PARENT_PID
 * ENV_JSON COMMAND ARGS…`. It
 *
 * - makes itself a *child subreaper* (`prctl(PR_SET_CHILD_SUBREAPER)`): whatever the command
 *   starts and leaves — a background job, `nohup`, a double fork, `setsid -f` — is re-parented to
 *   the supervisor when its parent ends, never to init, so it stays findable;
 * - asks the kernel to signal it (SIGUSR2, `prctl(PR_SET_PDEATHSIG)`) when the run's process dies,
 *   however it dies (SIGKILL included);
 * - leads a process group of its own in the run's session (`setpgid`), so the run signals the
 *   command's group as a whole and a Ctrl-C at the terminal reaches the run only, and lets go of
 *   the controlling terminal (`TIOCNOTTY`), so a command that opens `/dev/tty` to ask something
 *   fails at once instead of stopping in the background. Not a session of its own: Linux
 *   schedules each session as a group apart (`sched_autogroup`), and a server answering the run
 *   many small requests (an MCP server) then waits on the scheduler at every turn — twice the
 *   round trip on a busy machine;
 * - runs the command with its own standard input, output and error, and waits for it.
 *
 * When the command ends, when the run asks (SIGUSR1), or when the run dies (SIGUSR2), it kills
 * every process below it and ends as the command ended (its exit code, or the same signal), or by
 * SIGKILL when it was told to kill. TERM, INT, HUP and QUIT do nothing to it: a signal
 * to the process group reaches the command itself, and the supervisor must outlive the command to
 * clean up after it.
 *
 * {@linkcode superviseMain} is run from its source text (`superviseMain.toString()`), so it
 * imports nothing and uses nothing outside its body.
 *
 * @module
 */

/**
 * The supervisor's whole program (self-contained: it runs from its source text in a process of
 * its own). `Deno.args` is the pid of the process that must be alive (the run), the environment
 * the command gets on top of the supervisor's (a JSON object), then the command and its arguments.
 */
export async function superviseMain(): Promise<void> {
  const [parentText, envJson, command, ...args] = Deno.args;
  const PR_SET_PDEATHSIG = 1;
  const PR_SET_CHILD_SUBREAPER = 36;
  const SIGUSR2 = 12n;
  const libc = Deno.dlopen("libc.so.6", {
    prctl: { parameters: ["i32", "usize", "usize", "usize", "usize"], result: "i32" },
    getppid: { parameters: [], result: "i32" },
    signal: { parameters: ["i32", "usize"], result: "usize" },
    raise: { parameters: ["i32"], result: "i32" },
    setpgid: { parameters: ["i32", "i32"], result: "i32" },
    open: { parameters: ["buffer", "i32"], result: "i32" },
    ioctl: { parameters: ["i32", "usize"], result: "i32" },
    close: { parameters: ["i32"], result: "i32" },
  });
  const say = (text: string) => {
    try {
      Deno.stderr.writeSync(new TextEncoder().encode(`stepflow supervisor: ${text}\n`));
    } catch {
      // stderr is closed: nothing to say it on.
    }
  };
  if (libc.symbols.prctl(PR_SET_CHILD_SUBREAPER, 1n, 0n, 0n, 0n) !== 0) {
    say("this system refused to make the supervisor a subreaper (prctl); nothing was run");
    Deno.exit(126);
  }
  libc.symbols.prctl(PR_SET_PDEATHSIG, SIGUSR2, 0n, 0n, 0n);
  // A process group of its own (the run signals it as a whole), in the run's session.
  if (libc.symbols.setpgid(0, 0) !== 0) {
    say("this system refused the supervisor a process group of its own (setpgid); nothing was run");
    Deno.exit(126);
  }
  // No controlling terminal: what the command opens as /dev/tty fails instead of stopping the
  // command (a background group reading the terminal is stopped by SIGTTIN).
  const O_RDWR = 2, O_NOCTTY = 0o400, O_CLOEXEC = 0o2000000, TIOCNOTTY = 0x5422n;
  const tty = libc.symbols.open(
    new TextEncoder().encode("/dev/tty\0"),
    O_RDWR | O_NOCTTY | O_CLOEXEC,
  );
  if (tty >= 0) {
    libc.symbols.ioctl(tty, TIOCNOTTY);
    libc.symbols.close(tty);
  }

  /** The live processes below this one (zombies are dead already and are skipped). */
  const below = (): number[] => {
    const children = new Map<number, number[]>();
    for (const entry of Deno.readDirSync("/proc")) {
      const pid = Number(entry.name);
      if (!Number.isInteger(pid) || pid <= 0) continue;
      let stat: string;
      try {
        stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
      } catch {
        continue; // gone meanwhile
      }
      // "pid (name) state ppid …": the name may hold spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z" || fields[0] === "X") continue;
      const ppid = Number(fields[1]);
      const list = children.get(ppid);
      if (list) list.push(pid);
      else children.set(ppid, [pid]);
    }
    const found: number[] = [];
    const queue = [Deno.pid];
    while (queue.length > 0) {
      for (const child of children.get(queue.pop()!) ?? []) {
        found.push(child);
        queue.push(child);
      }
    }
    return found;
  };
  /** Kills everything below, again until nothing is left (a process may fork meanwhile). */
  const killAll = () => {
    for (let round = 0; round < 1_000; round++) {
      const pids = below();
      if (pids.length === 0) return;
      for (const pid of pids) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch {
          // Gone meanwhile.
        }
      }
    }
  };
  let ending = false;
  /**
   * Kills everything below, then ends as the command ended: with its exit code, or by the same
   * signal (its default action restored first), so the run sees "killed by SIGKILL" as it would
   * without a supervisor.
   */
  const endNow = (code: number, signal?: number) => {
    if (ending) return;
    ending = true;
    killAll();
    if (signal !== undefined) {
      libc.symbols.signal(signal, 0n);
      libc.symbols.raise(signal);
    }
    Deno.exit(code);
  };
  // Told to kill (SIGUSR1), or the run died (SIGUSR2): everything goes, now.
  Deno.addSignalListener("SIGUSR1", () => endNow(137, 9));
  Deno.addSignalListener("SIGUSR2", () => endNow(137, 9));
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"] as const) {
    Deno.addSignalListener(signal, () => {});
  }
  // The run died before the signal was asked for: nothing is started.
  if (libc.symbols.getppid() !== Number(parentText)) endNow(137, 9);
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(command, {
      args,
      env: JSON.parse(envJson),
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
  } catch (error) {
    say(`${command}: ${error instanceof Error ? error.message : String(error)}`);
    endNow(127);
    return;
  }
  const status = await child.status;
  // What the command left running goes with it. (Deno reports a signal's end as 128 + its number.)
  endNow(status.code, status.signal ? status.code - 128 : undefined);
}
