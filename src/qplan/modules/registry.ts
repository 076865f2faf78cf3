/**
 * The QPlan modules as tools on the project's one {@linkcode ToolRegistry}.
 *
 * @module
 */
import { ToolRegistry } from "../../tools/registry.ts";
import type { QPlanTool, QPlanToolRegistry } from "../core/tool_types.ts";
import type { LlmBackend } from "../../llm/types.ts";
import { createAiTool } from "./ai.ts";
import { echoTool } from "./echo.ts";
import { fileTool } from "./file.ts";
import { futureTool, joinTool } from "./future.ts";
import { htmlTool } from "./html.ts";
import { httpTool } from "./http.ts";
import { jsonTool } from "./json.ts";
import { mathTool } from "./math.ts";
import { createPrintTool } from "./print.ts";
import { sleepTool } from "./sleep.ts";
import { stringTool } from "./string.ts";
import { dateTool, timeTool } from "./time.ts";
import { varTool } from "./var.ts";

/** Options of {@linkcode createQPlanRegistry}. */
export interface QPlanRegistryOptions {
  /** Add the modules to this registry instead of a new one (a name already taken is an error). */
  registry?: QPlanToolRegistry;
  /** Registers `ai` on this backend. */
  backend?: LlmBackend;
  /** Registers `ai` even without a backend (its calls then fail with a clear message; useful for prompts). */
  ai?: boolean;
  /** Registers `http`. */
  http?: boolean;
  /** Registers `html`. */
  html?: boolean;
  /** Where `print` writes (default `console.log`). */
  print?: (line: string) => void;
}

/** The modules every QPlan registry has. */
export const CORE_MODULES: readonly string[] = [
  "var",
  "print",
  "echo",
  "sleep",
  "file",
  "math",
  "future",
  "join",
  "json",
  "time",
  "date",
  "string",
];

/**
 * Creates (or extends) a tool registry with the QPlan modules: var, print, echo, sleep, file,
 * math, future, join, json, time, date, string; plus ai, http and html on request.
 *
 * @example
 * ```ts
 * import { createQPlanRegistry } from "./registry.ts";
 * const registry = createQPlanRegistry({ http: true });
 * console.log(registry.has("math"), registry.has("http"), registry.has("ai")); // true true false
 * ```
 */
export function createQPlanRegistry(options: QPlanRegistryOptions = {}): QPlanToolRegistry {
  const registry: QPlanToolRegistry = options.registry ?? new ToolRegistry();
  const tools: QPlanTool[] = [
    varTool,
    createPrintTool(options.print),
    echoTool,
    sleepTool,
    fileTool,
    mathTool,
    futureTool,
    joinTool,
    jsonTool,
    timeTool,
    dateTool,
    stringTool,
  ];
  if (options.backend || options.ai) tools.push(createAiTool(options.backend));
  if (options.http) tools.push(httpTool);
  if (options.html) tools.push(htmlTool);
  for (const tool of tools) registry.register(tool);
  return registry;
}
