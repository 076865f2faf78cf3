/**
 * The state one climpt conversion shares between its converters (agent.json, parameters,
 * completion, registry, each step, validators, schemas): the two source files with their
 * `file:line` lookups, the notes, and the stepflow agent as it is being built. Each converter reads
 * the parts of the source it owns and adds to the parts of the output it owns; the order in which
 * `convertClimptAgent` calls them is the order of the report's notes.
 *
 * @module
 */
import { join, relative } from "node:path";
import type { StepDefinition, StepsRegistry } from "../definition/schema.ts";
import {
  type ClimptAgentDir,
  parseSourceJson,
  type SourceText,
  sourceText,
} from "./climpt_source.ts";
import { NoteSink } from "./notes.ts";

/** A JSON object as read from a source file or written to an output file. */
export type Json = Record<string, unknown>;

/** climpt intents that stepflow names differently. */
export const INTENT_RENAMES: Readonly<Record<string, string>> = Object.freeze({
  closing: "complete",
  handoff: "complete",
});

/** Variables climpt's runner supplies at run time that stepflow has no source for. */
export const CLIMPT_RUNTIME_VARIABLES: ReadonlySet<string> = new Set([
  "completed_iterations",
  "remaining",
  "iterations",
  "iteration",
  "agent_name",
]);

/** One output schema use: the step that answers with it and the source definition it came from. */
export interface SchemaUse {
  /** The source definition (`schema` of climpt's `outputSchemaRef`), or `generated:<step>`. */
  source: string;
  /** The stepflow step id. */
  stepId: string;
}

/** What the converters share. Fields marked "output" are filled as the conversion goes. */
export interface ConvertContext {
  /** The source agent folder. */
  readonly source: ClimptAgentDir;
  /** `path` relative to the source's base, as the report shows it. */
  rel(path: string): string;
  /** The source agent.json, for `file:line` lookups. */
  readonly agentSrc: SourceText;
  /** The source steps registry, for `file:line` lookups. */
  readonly registrySrc: SourceText;
  /** The parsed source agent.json. */
  readonly agentIn: Json;
  /** Its `runner` section (empty when absent). */
  readonly runner: Json;
  /** The parsed source registry. */
  readonly regIn: Json;
  /** The registry's `steps` (empty when absent). */
  readonly stepsIn: Json;
  /** The agent's name: agent.json's when it is a plain name, else the folder's. */
  readonly name: string;
  /** The name agent.json declares, when it is a string. */
  readonly declaredName: string | undefined;
  /** The report. */
  readonly notes: NoteSink;
  /** Output: files to write, by path relative to the agent's output folder. */
  readonly files: Map<string, string>;
  /** Output: the stepflow agent.json's top-level fields (assembled last). */
  readonly agent: Json;
  /** Output: `behavior`. */
  readonly behavior: Json;
  /** Output: `parameters`. */
  readonly parameters: Json;
  /** Output: `completion`. */
  readonly completion: Json[];
  /** Output: `limits`. */
  readonly limits: Json;
  /** Output: `commands` (command steps and validators). */
  readonly commands: Json;
  /** Output: the converted registry. */
  readonly registry: StepsRegistry;
  /** Output: the smoke command's values for required parameters, `--flag value`. */
  readonly smokeArgs: string[];
  /** Output: true once a command step or validator needs `--allow-run`. */
  needsAllowRun: boolean;
  /** climpt's verdict type (`default` when absent); selects the entry step. */
  verdictType: string;
  /** `runner.flow.systemPromptPath`, when set. */
  systemPromptPath: string | undefined;
  /** climpt step id → stepflow step id (filled by the registry converter). */
  readonly stepIds: Map<string, string>;
  /** The registry's `c1` (`steps` when absent). */
  readonly c1: string;
  /** The `.md` prompt texts after the intent renames, by output path. */
  readonly promptTexts: Map<string, string>;
  /** `{uv-*}` variables the prompts use that no parameter provides (become parameters). */
  readonly runtimeVariables: Set<string>;
  /** Output schema uses by schema file name. */
  readonly schemaUses: Map<string, SchemaUse[]>;
}

/** True for a JSON object (not null, not an array). */
export function isObject(value: unknown): value is Json {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The stepflow id of a climpt step id, after the registry converter has mapped them. */
export function newStepId(ctx: ConvertContext, id: string): string {
  return ctx.stepIds.get(id) ?? id;
}

/**
 * A conversion's context from the two source texts. Pure: the caller reads the files.
 *
 * @throws StepflowError `MIGRATE_SOURCE_INVALID` when either text is not a JSON object
 */
export function newConvertContext(
  source: ClimptAgentDir,
  agentJson: string,
  registryJson: string,
): ConvertContext {
  const rel = (path: string) => relative(source.base, path);
  const agentSrc = sourceText(rel(join(source.dir, "agent.json")), agentJson);
  const registrySrc = sourceText(rel(join(source.dir, "steps_registry.json")), registryJson);
  const agentIn = parseSourceJson(agentSrc);
  const regIn = parseSourceJson(registrySrc);
  // The name becomes a folder under --out: anything but a plain name falls back to the folder's.
  const declaredName = typeof agentIn.name === "string" ? agentIn.name : undefined;
  const name = declaredName !== undefined && /^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(declaredName)
    ? declaredName
    : source.name;
  return {
    source,
    rel,
    agentSrc,
    registrySrc,
    agentIn,
    runner: isObject(agentIn.runner) ? agentIn.runner : {},
    regIn,
    stepsIn: isObject(regIn.steps) ? regIn.steps : {},
    name,
    declaredName,
    notes: new NoteSink(),
    files: new Map(),
    agent: { name },
    behavior: {},
    parameters: {},
    completion: [],
    limits: {},
    commands: {},
    registry: {
      version: typeof regIn.version === "string" ? regIn.version : "1.0.0",
      steps: {},
    },
    smokeArgs: [],
    needsAllowRun: false,
    verdictType: "default",
    systemPromptPath: undefined,
    stepIds: new Map(),
    c1: typeof regIn.c1 === "string" ? regIn.c1 : "steps",
    promptTexts: new Map(),
    runtimeVariables: new Set(),
    schemaUses: new Map(),
  };
}

/** One step being converted, and where its fields stand in the source registry. */
export interface StepScope {
  /** The climpt step id. */
  readonly id: string;
  /** The stepflow step id. */
  readonly sid: string;
  /** The source step. */
  readonly s: Json;
  /** The converted step. */
  readonly out: StepDefinition;
  /** A closing step (`complete.*`): runs once and ends the run. */
  readonly isClosing: boolean;
  /** A section step (`section.*`): a heading, no prompt of its own. */
  readonly isSection: boolean;
  /** The line of the step's key in the registry. */
  readonly base: number;
  /** `file:line` of the step's key. */
  readonly at: string;
  /** `file:line` of one of the step's fields. */
  where(field: string): string;
  /** The report's name of one of the step's fields, `steps.<id>.<field>`. */
  f(field: string): string;
}

/** The scope of the climpt step `id` holding `s`. */
export function stepScope(ctx: ConvertContext, id: string, s: Json): StepScope {
  const R = ctx.registrySrc;
  const stepsLine = R.line('"steps": {');
  const sid = newStepId(ctx, id);
  const base = R.line(`"${id}": {`, stepsLine);
  return {
    id,
    sid,
    s,
    out: { stepId: sid },
    isClosing: sid.startsWith("complete."),
    isSection: sid.startsWith("section."),
    base,
    at: R.at(`"${id}": {`, stepsLine),
    where: (field: string) => R.at(`"${field}"`, base),
    f: (field: string) => `steps.${id}.${field}`,
  };
}
