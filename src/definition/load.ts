/**
 * `loadAgentDefinition`: finds an agent folder, parses agent.json and its steps registry, validates
 * the flow and returns a deeply frozen {@linkcode AgentDefinition}.
 *
 * @module
 */
import { basename, dirname, extname, join, relative, resolve } from "node:path";
import { errorMessage } from "../errors.ts";
import { isWithin } from "../prompt/c3l_path.ts";
import { outsideLinkMessage, realLocation, realpathOr } from "../prompt/confine.ts";
import { loadAgentPricing } from "./agent_pricing.ts";
import { deepFreeze } from "./deep_freeze.ts";
import { AgentDefinitionError, AgentNotFoundError } from "./errors.ts";
import { agentJsonSchema, registryJsonSchema } from "./json_schemas.ts";
import { parseJsonc } from "./jsonc.ts";
import {
  type AgentConfig,
  AgentConfigSchema,
  type StepsRegistry,
  StepsRegistrySchema,
} from "./schema.ts";
import { salvageParse } from "./salvage.ts";
import type { AgentDefinition, FlowStep } from "./types.ts";
import { type AgentChainLink, linkChildAgents } from "./agent_step.ts";
import { normalizeSteps, validateFlow } from "./validate.ts";
import { formatZodIssues } from "./zod_issues.ts";

/** The folder agents are looked up in, relative to `cwd`. */
export const DEFAULT_AGENT_ROOT = ".agent";
/** The agent file in every agent folder. */
export const AGENT_FILE = "agent.json";
/** The registry file when agent.json does not name one. */
export const DEFAULT_REGISTRY_FILE = "steps_registry.json";
/** `limits.maxTotalIterations` when agent.json does not set it. */
export const DEFAULT_MAX_TOTAL_ITERATIONS = 100;

/** Options of {@linkcode loadAgentDefinition} and {@linkcode listAgents}. */
export interface LoadAgentOptions {
  /** Base folder for agent names and relative paths (default `Deno.cwd()`). */
  cwd?: string;
  /** Folder holding agents, relative to `cwd` (default `.agent`). */
  agentRoot?: string;
  /**
   * Development only: a missing prompt that `fallbackKey` / `prompts.fallbackDir` can stand in for
   * is a warning instead of an error (pair it with the runner's `allowFallback`).
   */
  allowFallback?: boolean;
  /**
   * Compile every output schema with ajv in full, exactly as the runner does (`--validate` sets
   * it). Off by default: each schema is then checked against its meta-schema and for references
   * that do not resolve — the same verdict in practice, about 50x faster for large agents.
   */
  compileSchemas?: boolean;
}

/** Where an agent lives. */
export interface AgentLocation {
  /** Absolute agent folder. */
  dir: string;
  /** Absolute folder agents are looked up in. */
  agentRoot: string;
  /** True when `nameOrDir` was a name (not a path). */
  byName: boolean;
}

/**
 * Where `nameOrDir` points: a name (`code-improver`) is `<cwd>/<agentRoot>/<name>`; anything holding
 * a slash or starting with `.` is a folder path, relative to `cwd`.
 *
 * @example
 * ```ts
 * import { locateAgent } from "./load.ts";
 * locateAgent("code-improver", { cwd: "/repo" }).dir; // "/repo/.agent/code-improver"
 * locateAgent("./agents/x", { cwd: "/repo" }).dir; // "/repo/agents/x"
 * ```
 */
export function locateAgent(nameOrDir: string, options: LoadAgentOptions = {}): AgentLocation {
  const cwd = resolve(options.cwd ?? Deno.cwd());
  const agentRoot = resolve(cwd, options.agentRoot ?? DEFAULT_AGENT_ROOT);
  const byName = !/[\\/]/.test(nameOrDir) && !nameOrDir.startsWith(".");
  return { dir: byName ? join(agentRoot, nameOrDir) : resolve(cwd, nameOrDir), agentRoot, byName };
}

/** One agent found by {@linkcode listAgents}. */
export interface AgentSummary {
  /** Folder name (what `--agent` takes). */
  name: string;
  /** Absolute folder. */
  dir: string;
  /** agent.json `displayName`, when readable. */
  displayName?: string;
  /** agent.json `description`, when readable. */
  description?: string;
}

/**
 * The agents under the agent root (folders holding an agent.json), sorted by name. agent.json is
 * read leniently here — a broken one still lists; `loadAgentDefinition` reports its problems.
 */
export async function listAgents(options: LoadAgentOptions = {}): Promise<AgentSummary[]> {
  const { agentRoot } = locateAgent("x", options);
  const out: AgentSummary[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(agentRoot));
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (!entry.isDirectory && !entry.isSymlink) continue;
    const dir = join(agentRoot, entry.name);
    let text: string;
    try {
      text = await Deno.readTextFile(join(dir, AGENT_FILE));
    } catch {
      continue;
    }
    const summary: AgentSummary = { name: entry.name, dir };
    try {
      const raw = parseJsonc(text, AGENT_FILE) as Record<string, unknown>;
      if (typeof raw?.displayName === "string") summary.displayName = raw.displayName;
      if (typeof raw?.description === "string") summary.description = raw.description;
    } catch {
      // Listed without details; loading it reports the syntax error.
    }
    out.push(summary);
  }
  return out.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/**
 * Loads an agent: `<cwd>/.agent/<name>` (or a folder path) → agent.json + its steps registry
 * (JSON or JSONC) → zod-parsed → flow validated → deeply frozen.
 *
 * Every problem (syntax errors with file:line:col, unknown or invalid keys with their JSON path,
 * flow rules, missing prompt and schema files) is collected into one
 * {@linkcode AgentDefinitionError}. A missing folder or agent.json is an
 * {@linkcode AgentNotFoundError} listing the agents that exist.
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition } from "./load.ts";
 * const definition = await loadAgentDefinition("code-improver");
 * console.log(definition.entryStepId, Object.keys(definition.steps), definition.warnings);
 * ```
 */
export function loadAgentDefinition(
  nameOrDir: string,
  options: LoadAgentOptions = {},
): Promise<AgentDefinition> {
  return loadWithin(nameOrDir, options, []);
}

/** Loads an agent reached through the agent steps of `chain` (empty for the agent asked for). */
async function loadWithin(
  nameOrDir: string,
  options: LoadAgentOptions,
  chain: readonly AgentChainLink[],
): Promise<AgentDefinition> {
  const location = locateAgent(nameOrDir, options);
  const { dir } = location;
  const notFound = async (what: string, path: string) =>
    new AgentNotFoundError(
      what,
      path,
      location.agentRoot,
      (await listAgents(options)).map((a) => a.name),
      location.byName ? nameOrDir : undefined,
    );

  const info = await Deno.stat(dir).catch(() => undefined);
  if (!info?.isDirectory) {
    throw await notFound(
      location.byName ? `Agent "${nameOrDir}" not found` : "Agent folder not found",
      dir,
    );
  }
  const agentFile = join(dir, AGENT_FILE);
  const realDir = await realpathOr(dir);
  const agentText = await readIfExists(agentFile);
  if (agentText === undefined) throw await notFound("No agent.json in the agent folder", agentFile);

  const problems: string[] = [];
  const warnings: string[] = [];
  // The agent folder may be a link; its files may not link out of it.
  const agentWhere = await realLocation(agentFile, realDir);
  if (!agentWhere.inside) {
    throw new AgentDefinitionError(dir, [
      outsideLinkMessage(AGENT_FILE, agentFile, agentWhere.real, realDir),
    ]);
  }

  // agent.json
  let agent: AgentConfig | undefined;
  let agentRaw: unknown;
  try {
    agentRaw = parseJsonc(agentText, AGENT_FILE);
    const parsed = AgentConfigSchema.safeParse(agentRaw);
    if (parsed.success) agent = parsed.data;
    else {
      problems.push(
        ...formatZodIssues(parsed.error.issues, AGENT_FILE, agentRaw, agentJsonSchema()),
      );
      // The rest of agent.json still drives the flow rules (entry step, parameters, files).
      agent = salvageParse(AgentConfigSchema, agentRaw).data;
    }
  } catch (error) {
    problems.push(errorMessage(error));
  }
  if (agent && location.byName && agent.name !== nameOrDir) {
    warnings.push(
      `${AGENT_FILE}: name "${agent.name}" differs from its folder name "${nameOrDir}"; rename one so runs and logs are named consistently.`,
    );
  }

  // The registry.
  const registryName = agent?.prompts?.registry ?? rawRegistryName(agentRaw) ??
    DEFAULT_REGISTRY_FILE;
  let registryFile = resolve(dir, registryName);
  let registry: StepsRegistry | undefined;
  let unparsedStepIds: string[] = [];
  let registryLabel = registryName;
  if (!isWithin(dir, registryFile) || registryFile === dir) {
    problems.push(
      `${AGENT_FILE}: prompts.registry ${
        JSON.stringify(registryName)
      } must name a file inside the agent folder ${dir}.`,
    );
  } else {
    const found = await readRegistry(registryFile);
    const registryWhere = found ? await realLocation(found.file, realDir) : undefined;
    if (registryWhere && !registryWhere.inside) {
      problems.push(
        outsideLinkMessage(relative(dir, found!.file), found!.file, registryWhere.real, realDir),
      );
    } else if (!found) {
      problems.push(
        `Registry file not found: ${registryFile}. Create it (see docs/agents.md "steps_registry.json"), or set prompts.registry in ${AGENT_FILE}.`,
      );
    } else {
      registryFile = found.file;
      registryLabel = relative(dir, found.file);
      const parsed = parseRegistry(found.text, registryLabel);
      problems.push(...parsed.problems);
      registry = parsed.registry;
      unparsedStepIds = parsed.unparsedStepIds;
    }
  }

  let entryStepId: string | undefined;
  let steps = registry ? normalizeSteps(registry) : {};
  if (registry) {
    const result = await validateFlow(
      {
        dir,
        registry,
        agent,
        steps,
        files: { agent: AGENT_FILE, registry: registryLabel },
        unparsedStepIds,
      },
      { allowFallback: options.allowFallback, compileSchemas: options.compileSchemas },
    );
    problems.push(...result.errors);
    warnings.push(...result.warnings);
    entryStepId = result.entryStepId;
    steps = result.steps as typeof steps;
  }
  if (problems.length === 0 && agent && registry) {
    // Agent steps: their children load with the parent (and theirs with them), cycles refused.
    const self = [...chain, { realDir, name: agent.name }];
    problems.push(
      ...await linkChildAgents(
        steps as Record<string, FlowStep>,
        { dir, agentRoot: location.agentRoot, registry: registryLabel },
        self,
        (childDir, childChain) => loadWithin(childDir, options, childChain),
      ),
    );
  }

  // agent.json `pricing`: the list, or the JSON file it names inside the folder.
  const priced = await loadAgentPricing(agent?.pricing, dir, realDir, AGENT_FILE);
  problems.push(...priced.problems);
  if (problems.length > 0 || !agent || !registry || entryStepId === undefined) {
    throw new AgentDefinitionError(dir, problems, warnings);
  }
  const limits = resolvedLimits(agent);
  const definition: AgentDefinition = {
    name: agent.name,
    dir,
    agentFile,
    agent,
    registryFile,
    registry,
    basePath: registry.basePath ?? "prompts",
    steps,
    entryStepId,
    limits,
    ...(priced.pricing ? { pricing: priced.pricing } : {}),
    warnings,
  };
  return deepFreeze(definition);
}

/** agent.json `limits` with their defaults. */
function resolvedLimits(agent: AgentConfig): AgentDefinition["limits"] {
  const limits: AgentDefinition["limits"] = {
    maxTotalIterations: agent.limits?.maxTotalIterations ?? DEFAULT_MAX_TOTAL_ITERATIONS,
  };
  if (agent.limits?.stepTimeoutMs !== undefined) limits.stepTimeoutMs = agent.limits.stepTimeoutMs;
  if (agent.limits?.runTimeoutMs !== undefined) limits.runTimeoutMs = agent.limits.runTimeoutMs;
  if (agent.limits?.budget !== undefined) limits.budget = agent.limits.budget;
  return limits;
}

interface ParsedRegistry {
  registry?: StepsRegistry;
  problems: string[];
  unparsedStepIds: string[];
}

/**
 * Parses the registry text. When parts of it are malformed — unknown keys anywhere, bad top-level
 * values, malformed steps — the rest is still returned (malformed steps' ids in `unparsedStepIds`)
 * so that the flow rules are checked in the same pass.
 */
function parseRegistry(text: string, label: string): ParsedRegistry {
  let raw: unknown;
  try {
    raw = parseJsonc(text, label);
  } catch (error) {
    return { problems: [errorMessage(error)], unparsedStepIds: [] };
  }
  const parsed = StepsRegistrySchema.safeParse(raw);
  if (parsed.success) return { registry: parsed.data, problems: [], unparsedStepIds: [] };
  const problems = formatZodIssues(parsed.error.issues, label, raw, registryJsonSchema());
  const salvaged = salvageParse(StepsRegistrySchema, raw, {
    dropWhole: "steps",
    // A missing or bad version is reported above; the steps can still be checked.
    fill: { version: "0" },
  });
  if (!salvaged.data) return { problems, unparsedStepIds: [] };
  return { registry: salvaged.data, problems, unparsedStepIds: salvaged.dropped };
}

function rawRegistryName(raw: unknown): string | undefined {
  const prompts = (raw as { prompts?: { registry?: unknown } } | undefined)?.prompts;
  return typeof prompts?.registry === "string" && prompts.registry !== ""
    ? prompts.registry
    : undefined;
}

/** Reads the registry, or its `.json`/`.jsonc` twin when only that exists. */
async function readRegistry(file: string): Promise<{ file: string; text: string } | undefined> {
  const text = await readIfExists(file);
  if (text !== undefined) return { file, text };
  const ext = extname(file);
  const twin = ext === ".json" ? `${file}c` : ext === ".jsonc" ? file.slice(0, -1) : undefined;
  if (twin === undefined || basename(twin) === "") return undefined;
  const twinText = await readIfExists(twin);
  return twinText === undefined ? undefined : { file: twin, text: twinText };
}

/** The file's text; undefined when it does not exist; a clear error when it cannot be read. */
async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.IsADirectory) {
      return undefined;
    }
    throw new AgentDefinitionError(dirname(file), [
      `Cannot read ${file}: ${errorMessage(error)}. Check the file's permissions.`,
    ]);
  }
}
