/**
 * OTLP export of the runs' spans and metrics from the command lines (`run-agent`, `worker`, `mcp`,
 * `eval`), configured by the standard OpenTelemetry environment variables alone: setting
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is enough. The official OpenTelemetry SDK packages do the work
 * (a batch span processor, a periodic metric reader, the OTLP/HTTP exporters, which read the
 * endpoint, headers, timeout and compression variables themselves); they are loaded only when the
 * environment asks for an export, so a command without it never downloads or loads them.
 *
 * What is read here (the OpenTelemetry environment variable specification):
 * - `OTEL_SDK_DISABLED=true` — no export at all;
 * - `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER` — `otlp` exports (to the default endpoint
 *   `http://localhost:4318` when none is set), `none` does not; unset, a signal is exported when
 *   an endpoint for it is set (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
 *   `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`);
 * - `OTEL_EXPORTER_OTLP_PROTOCOL` (and the per-signal `…_TRACES_PROTOCOL`, `…_METRICS_PROTOCOL`) —
 *   `http/protobuf` (the default) or `http/json`; `grpc` is not offered (a note says so);
 * - `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` — the resource (`service.name` defaults to
 *   `stepflow`);
 * - `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_METRIC_EXPORT_TIMEOUT` — the metric reader's period;
 * - `OTEL_LOG_LEVEL` — how much of the SDK's own diagnostics reaches stderr (default `error`: a
 *   failed export is one line there).
 *
 * A tracer or meter provider registered before (by Deno under `OTEL_DENO=true`) is left alone.
 *
 * @module
 */
import { diag, type DiagLogger, DiagLogLevel, metrics, trace } from "@opentelemetry/api";
import { errorMessage } from "../../errors.ts";
import { endOpenRuns, metricsEnabled, tracingEnabled } from "../../flow/telemetry.ts";

/**
 * The npm specifier of each OpenTelemetry SDK package the export loads, equal to its alias in
 * deno.json `imports` (a test checks it). Full `npm:` specifiers, so they resolve for JSR users.
 */
export const OTEL_SDK_SPECIFIERS: Readonly<Record<OtelSdkPackage, string>> = Object.freeze({
  "@opentelemetry/sdk-trace-base": "npm:@opentelemetry/sdk-trace-base@^2.0.0",
  "@opentelemetry/sdk-metrics": "npm:@opentelemetry/sdk-metrics@^2.12.0",
  "@opentelemetry/resources": "npm:@opentelemetry/resources@^2.12.0",
  "@opentelemetry/exporter-trace-otlp-proto":
    "npm:@opentelemetry/exporter-trace-otlp-proto@^0.223.1",
  "@opentelemetry/exporter-trace-otlp-http": "npm:@opentelemetry/exporter-trace-otlp-http@^0.223.1",
  "@opentelemetry/exporter-metrics-otlp-proto":
    "npm:@opentelemetry/exporter-metrics-otlp-proto@^0.223.0",
  "@opentelemetry/exporter-metrics-otlp-http":
    "npm:@opentelemetry/exporter-metrics-otlp-http@^0.223.0",
});

/** The OpenTelemetry SDK packages the export may load. */
export type OtelSdkPackage =
  | "@opentelemetry/sdk-trace-base"
  | "@opentelemetry/sdk-metrics"
  | "@opentelemetry/resources"
  | "@opentelemetry/exporter-trace-otlp-proto"
  | "@opentelemetry/exporter-trace-otlp-http"
  | "@opentelemetry/exporter-metrics-otlp-proto"
  | "@opentelemetry/exporter-metrics-otlp-http";

/** An OTLP/HTTP encoding. */
export type OtlpProtocol = "http/protobuf" | "http/json";

/** What the environment asks to export, and what it asked for that cannot be done. */
export interface ExportPlan {
  /** The encoding of exported spans; absent: no span is exported. */
  traces?: OtlpProtocol;
  /** The encoding of exported metrics; absent: no metric is exported. */
  metrics?: OtlpProtocol;
  /** One line per setting that was not followed, and why (printed on stderr). */
  notes: string[];
}

/** How long a command waits at exit for its telemetry to be delivered. */
export const EXIT_FLUSH_MS = 5_000;

/** How long a command that quits at once (a second Ctrl-C) still waits for it. */
export const QUIT_FLUSH_MS = 1_000;

/**
 * What to export, read from `env` by the OpenTelemetry environment variable specification (see the
 * module documentation). Pure: the caller says which providers are registered already.
 *
 * @example
 * ```ts
 * import { exportPlan } from "./telemetry_export.ts";
 * exportPlan({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" });
 * // { traces: "http/protobuf", metrics: "http/protobuf", notes: [] }
 * ```
 */
export function exportPlan(
  env: Record<string, string | undefined>,
  registered: { tracer?: boolean; meter?: boolean } = {},
): ExportPlan {
  const plan: ExportPlan = { notes: [] };
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return plan;
  const traces = signalProtocol(env, "TRACES", "traces", plan.notes);
  if (traces && !registered.tracer) plan.traces = traces;
  const metricsProtocol = signalProtocol(env, "METRICS", "metrics", plan.notes);
  if (metricsProtocol && !registered.meter) plan.metrics = metricsProtocol;
  return plan;
}

function signalProtocol(
  env: Record<string, string | undefined>,
  signal: "TRACES" | "METRICS",
  what: string,
  notes: string[],
): OtlpProtocol | undefined {
  const exporterVar = `OTEL_${signal}_EXPORTER`;
  const exporters = (env[exporterVar] ?? "").split(",").map((e) => e.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.includes("none")) return undefined;
  const endpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT) ??
    nonEmpty(env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`]);
  if (exporters.length > 0 && !exporters.includes("otlp")) {
    notes.push(
      `${exporterVar}=${
        env[exporterVar]
      }: stepflow exports ${what} over OTLP only (set ${exporterVar}=otlp); no ${what} are exported.`,
    );
    return undefined;
  }
  if (exporters.length === 0 && endpoint === undefined) return undefined;
  const protocolVar = nonEmpty(env[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`]) !== undefined
    ? `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`
    : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = nonEmpty(env[protocolVar])?.toLowerCase();
  if (protocol === undefined || protocol === "http/protobuf") return "http/protobuf";
  if (protocol === "http/json") return "http/json";
  if (protocol === "grpc") {
    notes.push(
      `${protocolVar}=grpc: stepflow exports over OTLP/HTTP only; set ${protocolVar}=http/protobuf and the collector's HTTP endpoint (port 4318). No ${what} are exported.`,
    );
    return undefined;
  }
  notes.push(
    `${protocolVar}=${
      env[protocolVar]
    } is not an OTLP protocol (http/protobuf, http/json); ${what} are exported with http/protobuf.`,
  );
  return "http/protobuf";
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/** The running export: what a command flushes before it exits. */
export interface TelemetryExport {
  /** What is exported. */
  readonly plan: ExportPlan;
  /** Delivers what is buffered and stops the providers. */
  shutdown(): Promise<void>;
}

/** Options of {@linkcode startTelemetryExport}. */
export interface TelemetryExportOptions {
  /** The environment (default: the process's). */
  env?: Record<string, string | undefined>;
  /** Where notes and the SDK's diagnostics go (default: stderr). */
  warn?: (line: string) => void;
  /**
   * True for a command that stops gracefully on SIGTERM itself (worker, mcp, run-agent): its normal exit
   * flushes. Otherwise SIGTERM ends the open spans, flushes and exits with 143.
   */
  handlesSigterm?: boolean;
}

let active: TelemetryExport | undefined;
let exitBoundMs = EXIT_FLUSH_MS;
let exitEndpoint = "";

/**
 * Starts the OTLP export the environment asks for and registers its providers with
 * `@opentelemetry/api`; returns undefined (and loads nothing) when it asks for none. A package
 * that cannot be loaded is a warning, never a failed command: the command runs without export.
 */
export async function startTelemetryExport(
  options: TelemetryExportOptions = {},
): Promise<TelemetryExport | undefined> {
  const env = options.env ?? Deno.env.toObject();
  const warn = options.warn ?? ((line: string) => console.error(line));
  const plan = exportPlan(env, { tracer: tracingEnabled(), meter: metricsEnabled() });
  for (const note of plan.notes) warn(`stepflow telemetry: ${note}`);
  if (!plan.traces && !plan.metrics) return undefined;
  let providers: { shutdown(): Promise<void> }[];
  try {
    providers = await registerProviders(plan, env);
  } catch (error) {
    warn(
      `stepflow telemetry: the OpenTelemetry SDK could not be loaded (${
        errorMessage(error)
      }); nothing is exported. Deno downloads it from the npm registry on first use: check access to registry.npmjs.org.`,
    );
    return undefined;
  }
  const say = onceEach(warn);
  diag.setLogger(diagnostics(say), diagLevel(env.OTEL_LOG_LEVEL));
  const endpoint = collectorEndpoint(env);
  const running: TelemetryExport = {
    plan,
    shutdown: async () => {
      const results = await Promise.allSettled(providers.map((p) => p.shutdown()));
      for (const result of results) {
        if (result.status === "rejected") {
          say(
            `stepflow telemetry: could not deliver to the collector at ${endpoint}: ${
              plainMessage(errorMessage(result.reason))
            }`,
          );
        }
      }
    },
  };
  exitBoundMs = flushBound(env);
  exitEndpoint = endpoint;
  active = running;
  if (!options.handlesSigterm) listenForTermination();
  return running;
}

/**
 * Exits the process with `code` once the telemetry in flight is delivered: the spans of runs still
 * open are ended first (recorded as cut short), and the wait is bounded by `boundMs`. Without an
 * export it exits at once.
 */
export async function exitProcess(code: number, boundMs?: number): Promise<never> {
  const running = active;
  if (running) {
    boundMs ??= exitBoundMs;
    active = undefined;
    endOpenRuns(`the process exited (code ${code}) before the run ended`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const elapsed = await Promise.race([
      running.shutdown().then(() => false),
      new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(true), boundMs)),
    ]);
    clearTimeout(timer);
    if (elapsed) {
      console.error(
        `stepflow telemetry: the collector at ${exitEndpoint} did not take the last spans and metrics within ${
          boundMs / 1000
        } s (is it running?); exiting without them.`,
      );
    }
  }
  Deno.exit(code);
}

/** SIGTERM on a command that does not stop gracefully on it: flush, then exit 143 (128 + 15). */
function listenForTermination(): void {
  try {
    Deno.addSignalListener("SIGTERM", () => void exitProcess(143, QUIT_FLUSH_MS));
  } catch {
    // Not every platform delivers SIGTERM.
  }
}

type SdkModules = Record<string, Record<string, unknown>>;

async function load(names: OtelSdkPackage[]): Promise<SdkModules> {
  const modules = await Promise.all(names.map((name) => import(OTEL_SDK_SPECIFIERS[name])));
  return Object.fromEntries(names.map((name, i) => [name, modules[i]]));
}

type Constructor = new (...args: unknown[]) => Record<string, unknown>;

/** Loads the SDK packages the plan needs and registers a tracer and a meter provider. */
async function registerProviders(
  plan: ExportPlan,
  env: Record<string, string | undefined>,
): Promise<{ shutdown(): Promise<void> }[]> {
  const names: OtelSdkPackage[] = ["@opentelemetry/resources"];
  if (plan.traces) {
    names.push(
      "@opentelemetry/sdk-trace-base",
      plan.traces === "http/json"
        ? "@opentelemetry/exporter-trace-otlp-http"
        : "@opentelemetry/exporter-trace-otlp-proto",
    );
  }
  if (plan.metrics) {
    names.push(
      "@opentelemetry/sdk-metrics",
      plan.metrics === "http/json"
        ? "@opentelemetry/exporter-metrics-otlp-http"
        : "@opentelemetry/exporter-metrics-otlp-proto",
    );
  }
  const sdk = await load(names);
  const resources = sdk["@opentelemetry/resources"] as {
    defaultResource(): { merge(other: unknown): unknown };
    resourceFromAttributes(attributes: Record<string, string>): unknown;
    detectResources(config: { detectors: unknown[] }): unknown;
    envDetector: unknown;
  };
  // stepflow names the service unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES does.
  const resource = (resources.defaultResource()
    .merge(resources.resourceFromAttributes({ "service.name": "stepflow" })) as {
      merge(other: unknown): unknown;
    })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const providers: { shutdown(): Promise<void> }[] = [];
  if (plan.traces) {
    const base = sdk["@opentelemetry/sdk-trace-base"];
    const exporterModule = sdk[
      plan.traces === "http/json"
        ? "@opentelemetry/exporter-trace-otlp-http"
        : "@opentelemetry/exporter-trace-otlp-proto"
    ];
    const exporter = new (exporterModule.OTLPTraceExporter as Constructor)();
    const processor = new (base.BatchSpanProcessor as Constructor)(exporter);
    const provider = new (base.BasicTracerProvider as Constructor)({
      resource,
      spanProcessors: [processor],
    });
    trace.setGlobalTracerProvider(provider as never);
    providers.push(provider as unknown as { shutdown(): Promise<void> });
  }
  if (plan.metrics) {
    const sdkMetrics = sdk["@opentelemetry/sdk-metrics"];
    const exporterModule = sdk[
      plan.metrics === "http/json"
        ? "@opentelemetry/exporter-metrics-otlp-http"
        : "@opentelemetry/exporter-metrics-otlp-proto"
    ];
    const exporter = new (exporterModule.OTLPMetricExporter as Constructor)();
    const reader = new (sdkMetrics.PeriodicExportingMetricReader as Constructor)({
      exporter,
      exportIntervalMillis: positiveNumber(env.OTEL_METRIC_EXPORT_INTERVAL) ?? 60_000,
      exportTimeoutMillis: positiveNumber(env.OTEL_METRIC_EXPORT_TIMEOUT) ?? 30_000,
    });
    const provider = new (sdkMetrics.MeterProvider as Constructor)({ resource, readers: [reader] });
    metrics.setGlobalMeterProvider(provider as never);
    providers.push(provider as unknown as { shutdown(): Promise<void> });
  }
  return providers;
}

/** Where the spans go: the traces endpoint, else the base endpoint, else the default. */
function collectorEndpoint(env: Record<string, string | undefined>): string {
  return nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) ??
    nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT) ?? "http://localhost:4318";
}

/**
 * How long the exit waits: the export timeout the user set (`OTEL_EXPORTER_OTLP_TIMEOUT`, the
 * exporter gives up after it) with a little slack, else {@linkcode EXIT_FLUSH_MS}.
 */
function flushBound(env: Record<string, string | undefined>): number {
  const timeout = positiveNumber(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT) ??
    positiveNumber(env.OTEL_EXPORTER_OTLP_TIMEOUT);
  return timeout === undefined ? EXIT_FLUSH_MS : timeout + 500;
}

/** The message of an SDK error the SDK hands over as JSON text (its stack left out). */
function plainMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed?.message === "string") return parsed.message;
  } catch {
    // not JSON: the text is the message
  }
  return text.split("\n", 1)[0];
}

/** `warn` that says each distinct line once (a collector that is down fails every export). */
function onceEach(warn: (line: string) => void): (line: string) => void {
  const said = new Set<string>();
  return (line) => {
    if (said.has(line)) return;
    said.add(line);
    warn(line);
  };
}

function positiveNumber(value: string | undefined): number | undefined {
  const n = Number(value);
  return value !== undefined && value.trim() !== "" && Number.isFinite(n) && n > 0 ? n : undefined;
}

const DIAG_LEVELS: ReadonlyMap<string, DiagLogLevel> = new Map([
  ["none", DiagLogLevel.NONE],
  ["error", DiagLogLevel.ERROR],
  ["warn", DiagLogLevel.WARN],
  ["info", DiagLogLevel.INFO],
  ["debug", DiagLogLevel.DEBUG],
  ["verbose", DiagLogLevel.VERBOSE],
  ["all", DiagLogLevel.ALL],
]);

function diagLevel(value: string | undefined): DiagLogLevel {
  return DIAG_LEVELS.get(value?.trim().toLowerCase() ?? "") ?? DiagLogLevel.ERROR;
}

/** The SDK's diagnostics (a failed export, most of all) as `stepflow telemetry:` lines. */
function diagnostics(warn: (line: string) => void): DiagLogger {
  const line = (message: string, ...args: unknown[]) =>
    warn(
      `stepflow telemetry: ${
        [message, ...args.map((a) => a instanceof Error ? a.message : String(a))].map(plainMessage)
          .join(" ")
      }`,
    );
  return { error: line, warn: line, info: line, debug: line, verbose: line };
}
