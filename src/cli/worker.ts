/**
 * `deno task worker`: takes runs from the PostgreSQL queue and drives them (see `src/worker/`).
 *
 *     deno task worker --store postgres://… [--concurrency N] [--agents DIR]
 *
 * SIGTERM or Ctrl-C: graceful stop (each run commits its iteration in flight and goes back to the
 * queue); a second signal quits at once (the runs' leases then expire and another worker resumes
 * them). Exit codes: 0 stopped, 2 usage or setup error, 130 quit on a second signal.
 *
 * @module
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { errorMessage, StepflowError, UsageError } from "../errors.ts";
import { DEFAULT_BACKEND } from "../llm/agent_backend.ts";
import { createBackend } from "../llm/factory.ts";
import { isPostgresUrl, redactUrl } from "../store/pg_connection.ts";
import { STORE_ENV } from "../store/select.ts";
import { startWorker, type WorkerOptions } from "../worker/worker.ts";

const USAGE = `Usage: deno task worker --store postgres://… [options]

Takes runs submitted with \`run-agent … --submit\` from the queue and drives them.

Options:
  --store URL          PostgreSQL store and queue (default: the STEPFLOW_STORE environment variable)
  --concurrency N      Runs driven at once (default 1)
  --agents DIR         Folder of the agent folders (default .agent in the current directory)
  --backend NAME       Backend of every run (default: each agent's behavior.backend)
  --script FILE        Scripted answers (YAML/JSON); implies --backend scripted
  --model MODEL        Model of every run (overrides the agent and the submission)
  --base-url URL       Server URL of the backend (OpenAI-compatible servers)
  --lease-ms N         Lease of a run without heartbeat, in ms (default 30000)
  --poll-ms N          Queue polling interval when idle, in ms (default 2000)
  -h, --help           Show this help

SIGTERM / Ctrl-C: commit the iterations in flight, hand the runs back to the queue, exit 0.`;

/**
 * Runs the worker CLI until it is stopped; returns the exit code.
 *
 * @param argv arguments without the program name
 * @param env environment (`STEPFLOW_STORE`, `INIT_CWD`, backend credentials)
 * @param signal stops the worker gracefully when aborted
 */
export async function workerMain(
  argv: readonly string[],
  env: Record<string, string | undefined>,
  signal: AbortSignal,
): Promise<number> {
  const write = (line: string) => console.error(line);
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: [...argv],
      options: {
        store: { type: "string" },
        concurrency: { type: "string" },
        agents: { type: "string" },
        backend: { type: "string" },
        script: { type: "string" },
        model: { type: "string" },
        "base-url": { type: "string" },
        "lease-ms": { type: "string" },
        "poll-ms": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    write(`error: ${errorMessage(error)}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  try {
    const userDir = resolve(Deno.cwd(), env.INIT_CWD || ".");
    const store = (values.store as string | undefined) ?? env[STORE_ENV];
    if (!store || !isPostgresUrl(store)) {
      throw new UsageError(
        store
          ? `--store is ${
            JSON.stringify(redactUrl(store))
          }: workers need a PostgreSQL URL like postgres://user@host:5432/database.`
          : `Missing --store URL: workers take runs from a PostgreSQL database (or set ${STORE_ENV}).`,
      );
    }
    const script = values.script as string | undefined;
    const backendName = (values.backend as string | undefined) ??
      (script !== undefined ? "scripted" : undefined);
    const model = values.model as string | undefined;
    const baseUrl = values["base-url"] as string | undefined;
    const options: WorkerOptions = {
      store,
      agentRoot: resolve(userDir, (values.agents as string | undefined) ?? ".agent"),
      cwd: userDir,
      concurrency: positive("--concurrency", values.concurrency, 1),
      leaseMs: positive("--lease-ms", values["lease-ms"], 30_000),
      pollMs: positive("--poll-ms", values["poll-ms"], 2_000),
      log: write,
    };
    if (backendName !== undefined || model !== undefined || baseUrl !== undefined) {
      options.backendFor = (definition, request) =>
        createBackend({
          name: backendName ?? definition.agent.behavior.backend ?? DEFAULT_BACKEND,
          ...(model ?? request.model ?? definition.agent.behavior.model
            ? { model: model ?? request.model ?? definition.agent.behavior.model }
            : {}),
          ...(baseUrl !== undefined ? { baseUrl } : {}),
          ...(script !== undefined ? { script: resolve(userDir, script) } : {}),
          env,
        });
    }
    const worker = await startWorker(options);
    await new Promise<void>((done) => {
      if (signal.aborted) done();
      else signal.addEventListener("abort", () => done(), { once: true });
    });
    await worker.stop();
    return 0;
  } catch (error) {
    write(`error: ${errorMessage(error)}`);
    return error instanceof StepflowError ? 2 : 70;
  }
}

function positive(flag: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) {
    throw new UsageError(`${flag} expects a positive integer, got ${JSON.stringify(value)}.`);
  }
  return n;
}

if (import.meta.main) {
  const controller = new AbortController();
  let signals = 0;
  const onSignal = () => {
    if (++signals > 1) Deno.exit(130);
    console.error("stopping: committing the iterations in flight (signal again to quit at once)");
    controller.abort();
  };
  for (const name of ["SIGTERM", "SIGINT"] as const) {
    try {
      Deno.addSignalListener(name, onSignal);
    } catch {
      // Not every platform delivers every signal.
    }
  }
  Deno.exit(await workerMain(Deno.args, Deno.env.toObject(), controller.signal));
}
