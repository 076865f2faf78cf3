/**
 * The converters of climpt's steps registry as a whole: the step ids (closures become closing
 * steps), the registry's top-level fields, the prompt tree, and the validation entries no step
 * uses. Each step is converted by `convert_step.ts`.
 *
 * @module
 */
import { join, relative } from "node:path";
import { isValidStepId } from "../definition/step_id.ts";
import { type ConvertContext, INTENT_RENAMES, isObject, newStepId } from "./convert_context.ts";
import { renameIntentsInPrompt } from "./prompts.ts";

/** The stepflow id of a climpt step: closures become closing steps (`complete.*`). */
export function stepflowStepId(id: string, stepKind: unknown): string {
  if (stepKind === "closure") {
    return `complete.${id.startsWith("closure.") ? id.slice("closure.".length) : id}`;
  }
  if (isValidStepId(id)) return id;
  return `${typeof stepKind === "string" && /^[a-z]+$/.test(stepKind) ? stepKind : "step"}.${id}`;
}

/** Maps every climpt step id to its stepflow id (`ctx.stepIds`); a clash keeps the climpt id. */
export function mapStepIds(ctx: ConvertContext): void {
  const { stepsIn, registrySrc: R, notes, stepIds: idMap } = ctx;
  const stepsLine = R.line('"steps": {');
  for (const [id, step] of Object.entries(stepsIn)) {
    const next = stepflowStepId(id, isObject(step) ? step.stepKind : undefined);
    if ([...idMap.values()].includes(next)) {
      notes.add(
        "person",
        `steps.${id}`,
        `its stepflow id "${next}" is taken by another step; kept "${id}"`,
        R.at(`"${id}": {`, stepsLine),
      );
      idMap.set(id, id);
    } else {
      idMap.set(id, next);
    }
  }
  const renamedIds = [...idMap].filter(([a, b]) => a !== b);
  if (renamedIds.length > 0) {
    notes.add(
      "mapped",
      "step ids",
      `renamed: ${
        renamedIds.map(([a, b]) => `${a} → ${b}`).join(", ")
      } (climpt closure steps are stepflow closing steps, \`complete.*\`)`,
      R.at('"steps": {'),
    );
  }
}

/** The registry's top-level fields: version, c1, path templates, entry steps. */
export function convertRegistryFields(ctx: ConvertContext): void {
  const { regIn, registrySrc: R, notes, registry, name, c1, verdictType } = ctx;
  const newId = (id: string) => newStepId(ctx, id);
  for (const key of Object.keys(regIn)) {
    const where = R.at(`"${key}"`);
    switch (key) {
      case "$schema":
        notes.add("dropped", key, "editor hint pointing into climpt's tree", where);
        break;
      case "agentId":
        if (regIn.agentId !== name) {
          notes.add(
            "defect",
            "agentId",
            `"${regIn.agentId}" differs from agent name "${name}"`,
            where,
          );
        }
        notes.add("dropped", "agentId", "the agent is named by agent.json and its folder", where);
        break;
      case "version":
        notes.add("mapped", "version", "kept", where);
        break;
      case "c1":
        notes.add(
          "mapped",
          "c1",
          c1 === "steps" ? "stepflow's default c1 for c2/c3 steps" : "→ each step's `prompt.c1`",
          where,
        );
        break;
      case "pathTemplate":
      case "pathTemplateNoAdaptation": {
        const expected = key === "pathTemplate"
          ? "{c1}/{c2}/{c3}/f_{edition}_{adaptation}.md"
          : "{c1}/{c2}/{c3}/f_{edition}.md";
        if (regIn[key] === expected) {
          notes.add("dropped", key, "identical to stepflow's fixed C3L layout", where);
        } else {
          notes.add(
            "person",
            key,
            `custom layout ${
              JSON.stringify(regIn[key])
            }; stepflow's is ${expected} — move the prompt files`,
            where,
          );
        }
        break;
      }
      case "entryStep":
        if (typeof regIn.entryStep === "string") registry.entryStep = newId(regIn.entryStep);
        notes.add("mapped", key, "step id renamed", where);
        break;
      case "entryStepMapping":
        if (isObject(regIn.entryStepMapping)) {
          registry.entryStepMapping = {};
          for (const [type, target] of Object.entries(regIn.entryStepMapping)) {
            if (typeof target === "string") registry.entryStepMapping[type] = newId(target);
          }
          notes.add("mapped", key, "kept (step ids renamed)", where);
          if (
            !Object.hasOwn(regIn.entryStepMapping, verdictType) && regIn.entryStep === undefined
          ) {
            notes.add(
              "defect",
              key,
              `no entry for the agent's verdict type "${verdictType}"`,
              where,
            );
          }
        }
        break;
      case "steps":
      case "failurePatterns":
      case "validators":
      case "validationSteps":
        break;
      default:
        notes.add("dropped", key, "not a climpt v1.13 registry field", where);
    }
  }
}

async function readTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const visit = async (at: string) => {
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(at));
    } catch {
      return;
    }
    for (const entry of entries.sort((a, b) => a.name < b.name ? -1 : 1)) {
      const full = join(at, entry.name);
      if (entry.isDirectory) await visit(full);
      else if (entry.isFile) out.push(full);
    }
  };
  await visit(dir);
  return out;
}

/**
 * Copies every file of the prompt tree; `.md` files get the intent renames and are kept in
 * `ctx.promptTexts` for the steps' checks. Reports a `systemPromptPath` that names no file.
 */
export async function copyPrompts(ctx: ConvertContext): Promise<void> {
  const { source, files, promptTexts, notes, rel, systemPromptPath, agentSrc: A } = ctx;
  const promptsDir = join(source.dir, "prompts");
  for (const file of await readTree(promptsDir)) {
    const relPath = relative(source.dir, file);
    const text = await Deno.readTextFile(file);
    if (!file.endsWith(".md")) {
      files.set(relPath, text);
      continue;
    }
    const rewrite = renameIntentsInPrompt(text, INTENT_RENAMES);
    files.set(relPath, rewrite.text);
    promptTexts.set(relPath, rewrite.text);
    if (rewrite.changes.length > 0) {
      const label = rel(file);
      notes.add(
        "mapped",
        relPath,
        `intents renamed in the model's instructions: ${
          rewrite.changes.map((c) => `line ${c.line} ${c.from} → ${c.to}`).join("; ")
        }`,
        `${label}:${rewrite.changes[0].line}`,
      );
    }
  }
  if (systemPromptPath && !files.has(systemPromptPath.replace(/^\.\//, ""))) {
    notes.add(
      "defect",
      "runner.flow.systemPromptPath",
      `${systemPromptPath} does not exist`,
      A.at('"systemPromptPath"'),
    );
  }
}

/** validationSteps that name no step, and failure patterns no validator uses. */
export function reportUnusedValidation(ctx: ConvertContext): void {
  const { regIn, stepsIn, registrySrc: R, notes } = ctx;
  const validationSteps = isObject(regIn.validationSteps) ? regIn.validationSteps : {};
  const validatorsIn = isObject(regIn.validators) ? regIn.validators : {};
  const patternsIn = isObject(regIn.failurePatterns) ? regIn.failurePatterns : {};
  for (const id of Object.keys(validationSteps)) {
    if (!Object.hasOwn(stepsIn, id)) {
      notes.add(
        "defect",
        `validationSteps.${id}`,
        "names no step; its validators never ran",
        R.at(`"${id}": {`, R.line('"validationSteps"')),
      );
    }
  }
  const usedPatterns = new Set(
    Object.values(validatorsIn).map((d) => isObject(d) ? d.failurePattern : undefined),
  );
  for (const p of Object.keys(patternsIn)) {
    if (!usedPatterns.has(p)) {
      notes.add(
        "dropped",
        `failurePatterns.${p}`,
        "no validator uses it",
        R.at(`"${p}": {`, R.line('"failurePatterns"')),
      );
    }
  }
}
