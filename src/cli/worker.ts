/**
 * `deno task worker`: takes runs from the PostgreSQL queue and drives them (see `src/worker/`).
 *
 *     deno task worker --store postgres://… [--concurrency N] [--agents DIR]
 *
 * SIGTERM or Ctrl-C: graceful stop (each run commits its iteration in flight and goes back to the
 * queue); a second signal quits at once (the runs' leases then expire and another worker resumes
 * them), and so does a signal while the database does not answer. Exit codes: 0 stopped, 2 usage or
 * setup error (a database that does not answer in time: RUN_STORE_TIMEOUT), 130 quit (143 after
 * SIGTERM).
 *
 * @module
 */
import { localizeCommands } from "../invocation.ts";
import { resolve } from "node:path";
import { errorMessage, UsageError } from "../errors.ts";
import type { BackendChoice } from "../llm/backend_choice.ts";
import { isPostgresUrl, redactUrl } from "../store/pg_connection.ts";
import { STORE_ENV } from "../store/select.ts";
import { agentRootProblem, startWorker, type WorkerOptions } from "../worker/worker.ts";
import { BACKEND_FLAGS, backendName } from "./kit/backend.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import {
  declaredHelpLines,
  declaredTable,
  defineFlags,
  type FlagValue,
  parseFlags,
  parsePositiveInt,
  readDeclaredFlags,
} from "./kit/flags.ts";
import { listenForInterrupt } from "./kit/interrupt.ts";
import { exitProcess, startTelemetryExport } from "./kit/telemetry_export.ts";
import { reportError } from "./kit/report_error.ts";

/** Every flag of `worker`, in `--help` order: its type, parser and help rows follow from it. */
export const WORKER_FLAGS = defineFlags({
  store: {
    type: "string",
    value: "URL",
    description: "PostgreSQL store and queue (default: the STEPFLOW_STORE environment variable)",
  },
  concurrency: {
    type: "string",
    value: "N",
    description: "Runs driven at once (default 1)",
    parse: positive("--concurrency"),
    default: 1,
  },
  agents: {
    type: "string",
    value: "DIR",
    description: "Folder of the agent folders (default .agent in the current directory)",
  },
  backend: {
    ...BACKEND_FLAGS.backend,
    description: "Backend of every run (default: each agent's behavior.backend)",
  },
  script: {
    ...BACKEND_FLAGS.script,
    description: "Scripted answers (YAML/JSON); implies --backend scripted",
  },
  model: {
    ...BACKEND_FLAGS.model,
    description: "Model of every run (overrides the agent and the submission)",
  },
  baseUrl: BACKEND_FLAGS.baseUrl,
  fallbackModel: {
    ...BACKEND_FLAGS.fallbackModel,
    description: "A model tried after each call's own when it is rate-limited, overloaded or down",
  },
  rateLimitYieldMs: {
    type: "string",
    value: "N",
    description:
      "A rate-limit wait at least N ms long gives the run's slot back until the reset (default 5000)",
    parse: positive("--rate-limit-yield-ms"),
    default: 5_000,
  },
  leaseMs: {
    type: "string",
    value: "N",
    description: "Lease of a run without heartbeat, in ms (default 30000)",
    parse: positive("--lease-ms"),
    default: 30_000,
  },
  pollMs: {
    type: "string",
    value: "N",
    description:
      "How often an idle worker looks for runs, in ms, besides being woken when one is queued (default 2000)",
    parse: positive("--poll-ms"),
    default: 2_000,
  },
  help: { type: "boolean", short: "h", description: "Show this help" },
});

/** The worker's whole-number flags: a positive integer, the value quoted in the error as JSON. */
function positive(flag: string): (raw: string) => number {
  return parsePositiveInt(
    flag,
    (raw) => `${flag} expects a positive integer, got ${JSON.stringify(raw)}.`,
  );
}

const USAGE = `Usage: stepflow worker --store postgres://… [options]

Takes runs queued with \`stepflow submit\` from the queue and drives them.

Options:
${declaredHelpLines(WORKER_FLAGS, { width: 21 }).join("\n")}

SIGTERM / Ctrl-C: commit the iterations in flight, hand the runs back to the queue, exit 0.

Examples:
  stepflow worker --store postgres://localhost/runs --concurrency 4
  STEPFLOW_STORE=postgres://localhost/runs stepflow worker --backend anthropic`;

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
  const usage = localizeCommands(USAGE, resolve(Deno.cwd(), env.INIT_CWD || "."));
  let values: Record<string, FlagValue>;
  try {
    values = parseFlags(argv, declaredTable(WORKER_FLAGS), { positionals: false }).values;
  } catch (error) {
    write(`error: ${errorMessage(error)}\n\n${usage}`);
    return EXIT_CODES.usage;
  }
  if (values.help) {
    console.log(usage);
    return EXIT_CODES.success;
  }
  try {
    const userDir = resolve(Deno.cwd(), env.INIT_CWD || ".");
    // Read after the usage check: a bad value is reported as a run error, without the usage text.
    const flags = readDeclaredFlags(WORKER_FLAGS, values);
    const store = flags.store ?? env[STORE_ENV];
    if (!store || !isPostgresUrl(store)) {
      throw new UsageError(
        store
          ? `--store is ${
            JSON.stringify(redactUrl(store))
          }: workers need a PostgreSQL URL like postgres://user@host:5432/database.`
          : `Missing --store URL: workers take runs from a PostgreSQL database (or set ${STORE_ENV}).`,
      );
    }
    const agentsFlag = flags.agents;
    const agentRoot = resolve(userDir, agentsFlag ?? ".agent");
    const agentsProblem = await agentRootProblem(agentRoot);
    if (agentsProblem) {
      throw new UsageError(
        `${
          agentsFlag === undefined
            ? "No --agents given, and the default .agent folder: "
            : "--agents "
        }${agentsProblem}. Give --agents the folder of the agent folders (each <name>/agent.json), the same one the runs were submitted from.`,
      );
    }
    const options: WorkerOptions = {
      store,
      agentRoot,
      cwd: userDir,
      concurrency: flags.concurrency,
      leaseMs: flags.leaseMs,
      pollMs: flags.pollMs,
      rateLimitYieldMs: flags.rateLimitYieldMs,
      log: write,
    };
    // Flags override, field by field, the backend each run recorded (or the agent's, for a new run).
    const backend: Partial<BackendChoice> = {};
    if (flags.backend !== undefined) backend.backend = flags.backend;
    if (flags.script !== undefined) backend.script = resolve(userDir, flags.script);
    if (flags.model !== undefined) backend.model = flags.model;
    if (flags.baseUrl !== undefined) backend.baseUrl = flags.baseUrl;
    if (flags.fallbackModel.length > 0) backend.fallbackModels = flags.fallbackModel;
    backendName(flags); // --script with another --backend is a usage error, at once
    options.backend = backend;
    options.env = env;
    const worker = await startWorker(options);
    await new Promise<void>((done) => {
      if (signal.aborted) done();
      else signal.addEventListener("abort", () => done(), { once: true });
    });
    await worker.stop();
    return EXIT_CODES.success;
  } catch (error) {
    return reportError(error, { write: (text) => write(text.replace(/\n$/, "")) }, {
      prefix: "error:",
    });
  }
}

/** Runs `worker` on the real process: SIGINT or SIGTERM stop it gracefully (twice: at once). */
export async function workerCli(argv: readonly string[] = Deno.args): Promise<never> {
  // OTLP export when the environment asks for it; the graceful stop flushes it.
  await startTelemetryExport();
  using interrupt = listenForInterrupt({
    message: "stopping: committing the iterations in flight (signal again to quit at once)\n",
  });
  return await exitProcess(await workerMain([...argv], Deno.env.toObject(), interrupt.signal));
}

if (import.meta.main) await workerCli();
