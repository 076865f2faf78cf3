/**
 * Converts one climpt agent folder (climpt v1.13 format: `agent.json` with `runner.*`, a steps
 * registry with `stepKind`, `failurePatterns`, `validators`, `validationSteps`, …) into the files of
 * a stepflow agent, with a note for every field: mapped, dropped, needing a person, or a defect of
 * the source. Pure apart from reading the source folder; writing is `migrate.ts`'s job.
 *
 * Each section has its converter, all sharing one {@linkcode ConvertContext}: agent.json
 * (`convert_agent.ts`), the registry and the prompt tree (`convert_registry.ts`), each step
 * (`convert_step.ts`, its validators `convert_validation.ts`) and the schemas
 * (`convert_schemas.ts`). The order of the calls below is the order of the report's notes.
 *
 * @module
 */
import { join } from "node:path";
import type { StepsRegistry } from "../definition/schema.ts";
import type { ClimptAgentDir, SourceText } from "./climpt_source.ts";
import {
  convertAgentFields,
  convertFlow,
  convertParameters,
  convertRunnerSections,
  convertVerdict,
  declareRuntimeParameters,
} from "./convert_agent.ts";
import { type ConvertContext, type Json, newConvertContext } from "./convert_context.ts";
import {
  convertRegistryFields,
  copyPrompts,
  mapStepIds,
  reportUnusedValidation,
} from "./convert_registry.ts";
import { convertOtherFiles, convertSchemas } from "./convert_schemas.ts";
import { convertSteps } from "./convert_step.ts";
import type { NoteSink } from "./notes.ts";

export { INTENT_RENAMES } from "./convert_context.ts";
export { stepflowStepId } from "./convert_registry.ts";

/** The converted agent, in memory. */
export interface ConvertedAgent {
  /** Agent name. */
  name: string;
  /** Source folder. */
  sourceDir: string;
  /** Files to write, by path relative to the agent's output folder. */
  files: Map<string, string>;
  /** The notes. */
  notes: NoteSink;
  /** The converted registry (for the smoke script). */
  registry: StepsRegistry;
  /** The converted agent.json. */
  agent: Json;
  /** Schema documents by file name (for the smoke script). */
  schemas: Map<string, Json>;
  /** Values for required parameters in the smoke command, `--flag value`. */
  smokeArgs: string[];
  /** True when a command step or validator needs `--allow-run`. */
  needsAllowRun: boolean;
  /** True when a step has validators. */
  hasValidators: boolean;
}

/**
 * Converts one climpt agent.
 *
 * @throws StepflowError `MIGRATE_SOURCE_INVALID` when agent.json or the registry is not JSON
 */
export async function convertClimptAgent(source: ClimptAgentDir): Promise<ConvertedAgent> {
  const ctx = newConvertContext(
    source,
    await Deno.readTextFile(join(source.dir, "agent.json")),
    await Deno.readTextFile(join(source.dir, "steps_registry.json")),
  );
  convertAgentFields(ctx);
  convertParameters(ctx);
  convertFlow(ctx);
  convertVerdict(ctx);
  convertRunnerSections(ctx);
  mapStepIds(ctx);
  convertRegistryFields(ctx);
  await copyPrompts(ctx);
  convertSteps(ctx);
  reportUnusedValidation(ctx);
  declareRuntimeParameters(ctx);
  const schemas = await convertSchemas(ctx);
  await convertOtherFiles(ctx);
  writeAgentFiles(ctx);
  const { name, files, notes, registry, agent, smokeArgs, needsAllowRun } = ctx;
  return {
    name,
    sourceDir: source.dir,
    files,
    notes,
    registry,
    agent,
    schemas,
    smokeArgs,
    needsAllowRun,
    hasValidators: Object.values(registry.steps).some((st) => st.validation !== undefined),
  };
}

/** Assembles agent.json and steps_registry.json from what the converters built. */
export function writeAgentFiles(ctx: ConvertContext): void {
  const { agent, parameters, behavior, completion, commands, limits, registry, files } = ctx;
  if (Object.keys(parameters).length > 0) agent.parameters = parameters;
  agent.behavior = behavior;
  if (completion.length > 0) agent.completion = completion;
  if (Object.keys(commands).length > 0) agent.commands = commands;
  if (Object.keys(limits).length > 0) agent.limits = limits;
  files.set("agent.json", `${JSON.stringify(agent, null, 2)}\n`);
  const registryOut: Json = { version: registry.version };
  if (registry.entryStep) registryOut.entryStep = registry.entryStep;
  if (registry.entryStepMapping) registryOut.entryStepMapping = registry.entryStepMapping;
  registryOut.steps = registry.steps;
  files.set("steps_registry.json", `${JSON.stringify(registryOut, null, 2)}\n`);
}

/** The `SourceText` type, re-exported for tests. */
export type { SourceText };
