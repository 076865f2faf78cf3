/**
 * `deno task ui`: the local web dashboard over the recorded runs (see docs/dashboard.md).
 *
 * ```
 * deno task ui [--store DIR|URL] [--port 8420] [--open] [--host H]
 *              [--allow-actions [--backend NAME] [--model M] [--script FILE]]
 * ```
 *
 * Binds 127.0.0.1 unless `--host` names another interface; then it prints a warning and a token
 * generated for this start, and every request must carry it. The dashboard is read-only unless
 * `--allow-actions`: then a run page can cancel, resume and redrive its run (resume and redrive
 * start `run-agent` with the backend flags given here, else on the backend the run recorded).
 *
 * Exit codes: 0 stopped (Ctrl-C); 2 usage error or the store cannot be read.
 *
 * @module
 */
import { localizeCommands } from "../invocation.ts";
import { resolve } from "node:path";
import { errorMessage, StepflowError, UsageError } from "../errors.ts";
import { PostgresRunStore } from "../store/postgres.ts";
import { discoverStores, isPagedStore } from "../ui/source.ts";
import { isLoopback, serveDashboard } from "../ui/server.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import { parseCommandFlags } from "./kit/flags.ts";
import { UI_FLAGS } from "./ui_flags.ts";
import { listenForInterrupt } from "./kit/interrupt.ts";

/** The dashboard's port when `--port` is not given. */

/** Where `uiMain` writes and what it reads. */
export interface UiCliIo {
  /** Standard output. */
  stdout?: { write(text: string): void };
  /** Standard error. */
  stderr?: { write(text: string): void };
  /** The user's directory (default: `INIT_CWD`, else the process cwd). */
  cwd?: string;
  /** Stops the server (default: Ctrl-C). */
  signal?: AbortSignal;
  /** Environment (`STEPFLOW_STORE`; default: the process's). */
  env?: Record<string, string | undefined>;
  /** Called once the server listens, with its URL (tests). */
  onListen?: (url: string) => void;
}

const USAGE = `Usage: stepflow ui [--store DIR|URL] [--plans DIR] [--port 8420] [--open] [--host H]
                   [--allow-actions [--backend NAME] [--model M] [--script FILE]]

  --store DIR|URL
                run directory (or a folder of them), or a PostgreSQL store (postgres://…), to
                show; default: every agent's runs (agent.json logging.directory,
                tmp/logs/agents/*, and the PostgreSQL store of STEPFLOW_STORE or logging.store)
  --plans DIR   folder of tool plans (*.json) shown under Plans (default: plans); PlanSpec
                plans are read from planspec/
  --port N      port (default 8420; 0 picks a free one)
  --host H      interface to bind (default 127.0.0.1); any other prints a warning and requires
                the token it prints
  --open        open the dashboard in the default browser
  --allow-actions
                let run pages cancel, resume and redrive runs (off by default; every action
                carries this server's secret; with --host the token is still required)
  --backend NAME, --model M, --script FILE
                with --allow-actions: the backend of resumed and redriven runs (default:
                the backend each run recorded)

Examples:
  stepflow ui --open
  stepflow ui --store postgres://localhost/runs --allow-actions
`;

/**
 * Runs `stepflow ui`; resolves with the exit code once the server stops.
 *
 * @example
 * ```ts ignore
 * import { uiMain } from "jsr:@stepflow/core/cli";
 * const stop = new AbortController();
 * const code = uiMain(["--port", "0"], { signal: stop.signal, onListen: (url) => console.log(url) });
 * stop.abort();
 * console.log(await code); // 0
 * ```
 */
export async function uiMain(args: string[], io: UiCliIo = {}): Promise<number> {
  const out = io.stdout ??
    { write: (t: string) => void Deno.stdout.writeSync(new TextEncoder().encode(t)) };
  const err = io.stderr ??
    { write: (t: string) => void Deno.stderr.writeSync(new TextEncoder().encode(t)) };
  const cwd = io.cwd ?? resolve(Deno.cwd(), Deno.env.get("INIT_CWD") || ".");
  try {
    const { flags: values } = parseCommandFlags(args, UI_FLAGS, {
      positionals: false,
      // A usage error shows the help as the command is typed from the user's folder.
      hint: `\n\n${localizeCommands(USAGE, cwd)}`,
    });
    if (values.help) {
      out.write(localizeCommands(USAGE, cwd));
      return EXIT_CODES.success;
    }
    const { port, host: hostname } = values;
    const runAgentArgs = [
      ...(values.backend !== undefined ? ["--backend", values.backend] : []),
      ...(values.model !== undefined ? ["--model", values.model] : []),
      ...(values.script !== undefined ? ["--script", resolve(cwd, values.script)] : []),
    ];
    if (runAgentArgs.length > 0 && !values.allowActions) {
      throw new UsageError(
        "--backend, --model and --script are the backend of runs resumed or redriven from the page: they need --allow-actions.",
      );
    }
    const stores = await discoverStores(cwd, values.store, { env: io.env ?? Deno.env.toObject() });
    // A database store is probed now: a wrong URL or a server that is down is exit 2 with the
    // reason, not an error on every page.
    for (const { store } of stores) if (isPagedStore(store)) await store.listPage({ limit: 0 });
    let token: string | undefined;
    if (!isLoopback(hostname)) {
      token = [...crypto.getRandomValues(new Uint8Array(24))]
        .map((b) => b.toString(16).padStart(2, "0")).join("");
      err.write(
        `warning: the dashboard listens on ${hostname}, not only on this machine: anyone who can reach it and has the token can read every prompt and answer of these runs. Keep the token secret.\n`,
      );
    }
    // Without a signal of the caller's, Ctrl-C stops the server (a second one quits at once).
    using interrupt = io.signal ? undefined : listenForInterrupt({ message: "" });
    const signal = io.signal ?? interrupt!.signal;
    try {
      const source = { cwd, stores, ...(values.plans ? { toolPlans: values.plans } : {}) };
      const actions = values.allowActions ? { runAgentArgs } : undefined;
      const ui = serveDashboard({ source, hostname, port, token, signal, actions });
      out.write(
        `stepflow dashboard: ${ui.url}\n${stores.length} run store${
          stores.length === 1 ? "" : "s"
        }: ${stores.map((s) => s.name).join(", ") || "(none yet)"}\n${
          actions ? "actions allowed (cancel, resume, redrive, tool-plan approvals)" : "read-only"
        } · Ctrl-C stops\n`,
      );
      io.onListen?.(ui.url);
      if (values.open) openBrowser(ui.url, err);
      await ui.server.finished;
    } finally {
      await closeStores(stores);
    }
    return EXIT_CODES.success;
  } catch (error) {
    if (error instanceof StepflowError) {
      err.write(`error [${error.code}]: ${error.message}\n`);
      return EXIT_CODES.usage;
    }
    err.write(`error: ${errorMessage(error)}\n`);
    return EXIT_CODES.internal;
  }
}

/** Closes the stores that hold connections (database pools). */
async function closeStores(stores: { store: unknown }[]): Promise<void> {
  for (const { store } of stores) {
    if (store instanceof PostgresRunStore) await store.close().catch(() => {});
  }
}

/** Opens the URL with the platform's opener; a failure is a warning, not an error. */
function openBrowser(url: string, err: { write(text: string): void }): void {
  const [cmd, ...args] = Deno.build.os === "darwin"
    ? ["open", url]
    : Deno.build.os === "windows"
    ? ["cmd", "/c", "start", "", url]
    : ["xdg-open", url];
  try {
    const child = new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).spawn();
    child.status.then((s) => {
      if (!s.success) err.write(`warning: ${cmd} could not open ${url}; open it yourself.\n`);
    });
  } catch {
    err.write(`warning: cannot run ${cmd} to open the browser; open ${url} yourself.\n`);
  }
}

/** Runs `ui` on the real process until it is stopped (Ctrl-C), and exits with its code. */
export async function uiCli(argv: readonly string[] = Deno.args): Promise<never> {
  Deno.exit(await uiMain([...argv]));
}

if (import.meta.main) await uiCli();
