/**
 * Converts one climpt agent folder (climpt v1.13 format: `agent.json` with `runner.*`, a steps
 * registry with `stepKind`, `failurePatterns`, `validators`, `validationSteps`, …) into the files of
 * a stepflow agent, with a note for every field: mapped, dropped, needing a person, or a defect of
 * the source. Pure apart from reading the source folder; writing is `migrate.ts`'s job.
 *
 * @module
 */
import { join, relative } from "node:path";
import { RESERVED_PARAMETER_FLAGS } from "../definition/parameters.ts";
import { isValidStepId } from "../definition/step_id.ts";
import type { StepDefinition, StepsRegistry } from "../definition/schema.ts";
import {
  type ClimptAgentDir,
  parseSourceJson,
  type SourceText,
  sourceText,
} from "./climpt_source.ts";
import { NoteSink } from "./notes.ts";
import {
  contextTemplatesToVariables,
  renameIntentsInPrompt,
  usesInputText,
  uvVariablesOf,
} from "./prompts.ts";
import { normalizeSchemaFile } from "./schemas.ts";

type Json = Record<string, unknown>;

/** climpt intents that stepflow names differently. */
export const INTENT_RENAMES: Readonly<Record<string, string>> = Object.freeze({
  closing: "complete",
  handoff: "complete",
});

/** Variables climpt's runner supplies at run time that stepflow has no source for. */
const CLIMPT_RUNTIME_VARIABLES = new Set([
  "completed_iterations",
  "remaining",
  "iterations",
  "iteration",
  "agent_name",
]);

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

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === "object" && !Array.isArray(value);
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

/** The stepflow id of a climpt step: closures become closing steps (`complete.*`). */
export function stepflowStepId(id: string, stepKind: unknown): string {
  if (stepKind === "closure") {
    return `complete.${id.startsWith("closure.") ? id.slice("closure.".length) : id}`;
  }
  if (isValidStepId(id)) return id;
  return `${typeof stepKind === "string" && /^[a-z]+$/.test(stepKind) ? stepKind : "step"}.${id}`;
}

function splitCommand(command: string): { argv: string[]; shell: boolean } {
  const shell = /[*?|&;<>$`"'(){}\\]/.test(command.replace(/@\{u\}/g, ""));
  return { argv: command.trim().split(/\s+/), shell };
}

/**
 * Converts one climpt agent.
 *
 * @throws StepflowError `MIGRATE_SOURCE_INVALID` when agent.json or the registry is not JSON
 */
export async function convertClimptAgent(source: ClimptAgentDir): Promise<ConvertedAgent> {
  const rel = (path: string) => relative(source.base, path);
  const A = sourceText(
    rel(join(source.dir, "agent.json")),
    await Deno.readTextFile(join(source.dir, "agent.json")),
  );
  const R = sourceText(
    rel(join(source.dir, "steps_registry.json")),
    await Deno.readTextFile(join(source.dir, "steps_registry.json")),
  );
  const agentIn = parseSourceJson(A);
  const regIn = parseSourceJson(R);
  const notes = new NoteSink();
  const files = new Map<string, string>();
  // The name becomes a folder under --out: anything but a plain name falls back to the folder's.
  const declaredName = typeof agentIn.name === "string" ? agentIn.name : undefined;
  const name = declaredName !== undefined && /^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(declaredName)
    ? declaredName
    : source.name;

  // ---------------------------------------------------------------- agent.json
  const agent: Json = { name };
  const behavior: Json = {};
  const runner = isObject(agentIn.runner) ? agentIn.runner : {};
  for (const key of Object.keys(agentIn)) {
    const where = A.at(`"${key}"`);
    switch (key) {
      case "$schema":
        notes.add("dropped", key, "editor hint pointing into climpt's tree", where);
        break;
      case "name":
        notes.add("mapped", key, `kept as \`name\` ("${name}")`, where);
        break;
      case "displayName":
      case "description":
      case "version":
        agent[key] = agentIn[key];
        notes.add("mapped", key, `kept as \`${key}\``, where);
        break;
      case "parameters":
      case "runner":
        break;
      default:
        notes.add("dropped", key, "not a climpt v1.13 agent.json field; ignored", where);
    }
  }
  if (declaredName !== undefined && declaredName !== name) {
    notes.add(
      "defect",
      "name",
      `${
        JSON.stringify(declaredName)
      } is not a plain name (letters, digits, "_", "-"); the folder name "${source.name}" is used`,
      A.at('"name"'),
    );
  } else if (name !== source.name) {
    notes.add(
      "defect",
      "name",
      `"${name}" differs from the folder name "${source.name}"`,
      A.at('"name"'),
    );
  }

  const parameters: Json = {};
  const smokeArgs: string[] = [];
  const paramsIn = isObject(agentIn.parameters) ? agentIn.parameters : {};
  for (const [key, raw] of Object.entries(paramsIn)) {
    const where = A.at(`"${key}"`);
    if (!isObject(raw)) {
      notes.add("defect", `parameters.${key}`, "not an object; skipped", where);
      continue;
    }
    const out: Json = {};
    const type = raw.type;
    if (type === "string" || type === "number" || type === "boolean" || type === "array") {
      out.type = type;
    } else {
      out.type = "string";
      notes.add(
        "person",
        `parameters.${key}.type`,
        `type ${JSON.stringify(type)} unknown; became "string"`,
        where,
      );
    }
    if (typeof raw.description === "string") out.description = raw.description;
    if (raw.required === true) out.required = true;
    if (raw.default !== undefined) out.default = raw.default;
    if (Array.isArray(raw.enum)) out.enum = raw.enum;
    if (isObject(raw.validation)) {
      for (const [rule, value] of Object.entries(raw.validation)) {
        if (rule === "enum" && Array.isArray(value)) {
          out.enum = out.type === "number" ? value.map(Number) : value;
          notes.add("mapped", `parameters.${key}.validation.enum`, "→ `enum`", where);
        } else {
          notes.add(
            "person",
            `parameters.${key}.validation.${rule}`,
            `${
              JSON.stringify(value)
            }: stepflow checks type and enum only; check it in the prompt or a validator`,
            where,
          );
        }
      }
    }
    if (isObject(raw.items) && typeof raw.items.type === "string") out.items = raw.items.type;
    let flag = typeof raw.cli === "string" ? raw.cli.replace(/^--?/, "") : key;
    if (RESERVED_PARAMETER_FLAGS.has(flag)) {
      const renamed = `${flag}-param`;
      notes.add(
        "person",
        `parameters.${key}.cli`,
        `--${flag} is one of run-agent's own flags, which a parameter may not take; the parameter's flag is now --${renamed}. Check scripts that pass --${flag}.`,
        A.at(`"cli"`, A.line(`"${key}"`)),
      );
      flag = renamed;
    }
    if (flag !== key) out.flag = flag;
    for (const extra of Object.keys(raw)) {
      if (
        !["type", "description", "required", "default", "cli", "enum", "items", "validation"]
          .includes(extra)
      ) {
        notes.add("dropped", `parameters.${key}.${extra}`, "no stepflow parameter field", where);
      }
    }
    parameters[key] = out;
    notes.add(
      "mapped",
      `parameters.${key}`,
      `type ${out.type}${out.required ? ", required" : ""}${
        out.default !== undefined ? `, default ${JSON.stringify(out.default)}` : ""
      }, flag --${flag}`,
      where,
    );
    if (out.required) smokeArgs.push(`--${flag}`, out.type === "number" ? "1" : "smoke");
  }

  const flow = isObject(runner.flow) ? runner.flow : {};
  const promptsIn = isObject(flow.prompts) ? flow.prompts : {};
  let systemPromptPath: string | undefined;
  if (typeof flow.systemPromptPath === "string") {
    systemPromptPath = flow.systemPromptPath;
    behavior.systemPromptPath = systemPromptPath;
    notes.add(
      "mapped",
      "runner.flow.systemPromptPath",
      "→ `behavior.systemPromptPath`",
      A.at('"systemPromptPath"'),
    );
  }
  if (promptsIn.registry !== undefined) {
    notes.add(
      "mapped",
      "runner.flow.prompts.registry",
      "the registry is written as steps_registry.json (stepflow's default name)",
      A.at('"registry"'),
    );
  }
  if (typeof promptsIn.fallbackDir === "string") {
    agent.prompts = { fallbackDir: promptsIn.fallbackDir };
    notes.add(
      "mapped",
      "runner.flow.prompts.fallbackDir",
      "→ `prompts.fallbackDir`; stepflow uses it only under --allow-fallback (no silent fallback)",
      A.at('"fallbackDir"'),
    );
  }
  for (const key of Object.keys(flow)) {
    if (key !== "systemPromptPath" && key !== "prompts") {
      notes.add("dropped", `runner.flow.${key}`, "no stepflow equivalent", A.at(`"${key}"`));
    }
  }

  const verdict = isObject(runner.verdict) ? runner.verdict : {};
  const verdictType = typeof verdict.type === "string" ? verdict.type : "default";
  const verdictConfig = isObject(verdict.config) ? verdict.config : {};
  behavior.completionType = verdictType;
  const limits: Json = {};
  const completion: Json[] = [];
  const vWhere = A.at('"verdict"');
  notes.add(
    "mapped",
    "runner.verdict.type",
    `→ \`behavior.completionType: "${verdictType}"\` (selects entryStepMapping as in climpt)`,
    A.at('"type"', A.line('"verdict"')),
  );
  const maxIterations = typeof verdictConfig.maxIterations === "number"
    ? verdictConfig.maxIterations
    : undefined;
  switch (verdictType) {
    case "count:iteration":
      if (maxIterations !== undefined) {
        completion.push({ type: "count:iteration", maxIterations });
        notes.add(
          "mapped",
          "runner.verdict.config.maxIterations",
          `→ \`completion: [{ type: "count:iteration", maxIterations: ${maxIterations} }]\` (the run completes after ${maxIterations} iteration(s))`,
          A.at('"maxIterations"', A.line('"verdict"')),
        );
      }
      break;
    case "detect:keyword": {
      const keyword = typeof verdictConfig.verdictKeyword === "string"
        ? verdictConfig.verdictKeyword
        : "TASK_COMPLETE";
      completion.push({ type: "detect:keyword", keyword });
      notes.add(
        "mapped",
        "runner.verdict.config.verdictKeyword",
        `→ \`completion: [{ type: "detect:keyword", keyword: "${keyword}" }]\``,
        vWhere,
      );
      break;
    }
    case "poll:state":
      notes.add(
        "person",
        "runner.verdict (poll:state)",
        "climpt completes when external state (the GitHub issue) is closed; stepflow has no state poll — the run completes through its closing step. Add a validator command (e.g. `gh issue view … --json state`) if the run must check the issue",
        vWhere,
      );
      break;
    case "detect:structured":
      notes.add(
        "person",
        "runner.verdict (detect:structured)",
        `climpt completes on a "${verdictConfig.signalType}" signal with fields ${
          JSON.stringify(verdictConfig.requiredFields ?? [])
        }; in stepflow the structured gate's complete intent (→ the closing step) ends the run. Require those fields in the closing step's schema if they matter`,
        vWhere,
      );
      break;
    default:
      notes.add(
        "person",
        "runner.verdict",
        `verdict type "${verdictType}" has no stepflow equivalent`,
        vWhere,
      );
  }
  if (maxIterations !== undefined && verdictType !== "count:iteration") {
    limits.maxTotalIterations = maxIterations;
    notes.add(
      "mapped",
      "runner.verdict.config.maxIterations",
      `→ \`limits.maxTotalIterations: ${maxIterations}\``,
      A.at('"maxIterations"', A.line('"verdict"')),
    );
  } else if (maxIterations !== undefined && maxIterations > 100) {
    limits.maxTotalIterations = maxIterations;
  }
  for (const key of Object.keys(verdictConfig)) {
    if (!["maxIterations", "verdictKeyword", "signalType", "requiredFields"].includes(key)) {
      notes.add(
        "dropped",
        `runner.verdict.config.${key}`,
        "specific to climpt's verdict handler",
        A.at(`"${key}"`, A.line('"verdict"')),
      );
    }
  }

  const boundaries = isObject(runner.boundaries) ? runner.boundaries : {};
  for (const [key, value] of Object.entries(boundaries)) {
    const where = A.at(`"${key}"`, A.line('"boundaries"'));
    if (key === "allowedTools" || key === "permissionMode") {
      behavior[key] = value;
      notes.add("mapped", `runner.boundaries.${key}`, `→ \`behavior.${key}\``, where);
    } else {
      notes.add(
        "person",
        `runner.boundaries.${key}`,
        "no stepflow equivalent; enforce it in the backend's settings",
        where,
      );
    }
  }
  if (runner.integrations !== undefined) {
    notes.add(
      "person",
      "runner.integrations",
      "GitHub labels and closure actions are applied by climpt's boundary hooks/orchestrator; stepflow does not touch GitHub. Apply them from a command step or the calling workflow",
      A.at('"integrations"'),
    );
  }
  if (runner.actions !== undefined) {
    notes.add(
      "dropped",
      "runner.actions",
      "climpt's action-block parser; stepflow reads structured output only",
      A.at('"actions"'),
    );
  }
  if (runner.execution !== undefined) {
    notes.add(
      "person",
      "runner.execution",
      "worktree mode (a git worktree per run) is not a stepflow feature; create the worktree yourself and start the run from inside it (a run works in the folder it is started from; `cwd` in the API)",
      A.at('"execution"'),
    );
  }
  if (isObject(runner.logging)) {
    const logging: Json = {};
    for (const [key, value] of Object.entries(runner.logging)) {
      if (key === "directory" || key === "maxFiles" || (key === "format" && value === "jsonl")) {
        logging[key] = value;
      } else {
        notes.add(
          "dropped",
          `runner.logging.${key}`,
          "stepflow logs jsonl only",
          A.at(`"${key}"`, A.line('"logging"')),
        );
      }
    }
    agent.logging = logging;
    notes.add(
      "mapped",
      "runner.logging",
      "→ `logging` (the run store's folder)",
      A.at('"logging"'),
    );
  }
  for (const key of Object.keys(runner)) {
    if (
      !["flow", "verdict", "boundaries", "integrations", "actions", "execution", "logging"]
        .includes(key)
    ) {
      notes.add("dropped", `runner.${key}`, "unknown climpt runner section", A.at(`"${key}"`));
    }
  }

  // ---------------------------------------------------------------- registry
  const stepsIn = isObject(regIn.steps) ? regIn.steps : {};
  const stepsLine = R.line('"steps": {');
  const idMap = new Map<string, string>();
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
  const newId = (id: string) => idMap.get(id) ?? id;
  const c1 = typeof regIn.c1 === "string" ? regIn.c1 : "steps";

  const registry: StepsRegistry = {
    version: typeof regIn.version === "string" ? regIn.version : "1.0.0",
    steps: {},
  };
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

  // Prompts: every file of the prompt tree is copied; .md files get the intent renames.
  const promptsDir = join(source.dir, "prompts");
  const promptTexts = new Map<string, string>();
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
  const declared = new Set(Object.keys(parameters));
  const runtimeVariables = new Set<string>();

  const stepLine = (id: string) => R.line(`"${id}": {`, stepsLine);
  const promptPathOf = (
    ref: { c1: string; c2: string; c3: string; edition?: string; adaptation?: string },
  ) =>
    `prompts/${ref.c1}/${ref.c2}/${ref.c3}/f_${ref.edition ?? "default"}${
      ref.adaptation ? `_${ref.adaptation}` : ""
    }.md`;
  const checkVariables = (
    stepId: string,
    promptPath: string,
    uvDeclared: unknown,
    where: string,
  ) => {
    const text = promptTexts.get(promptPath);
    if (text === undefined) return;
    for (const v of uvVariablesOf(text)) {
      if (declared.has(v)) continue;
      if (CLIMPT_RUNTIME_VARIABLES.has(v)) {
        runtimeVariables.add(v);
        continue;
      }
      notes.add(
        "defect",
        `steps.${stepId}`,
        `${promptPath} uses {uv-${v}}, which no parameter provides${
          Array.isArray(uvDeclared) && uvDeclared.includes(v)
            ? " (listed in uvVariables, but climpt's runner never sets it)"
            : ""
        }; declared as an optional parameter --${v} so the run can supply it`,
        where,
      );
      runtimeVariables.add(v);
    }
    if (usesInputText(text)) {
      notes.add(
        "person",
        `steps.${stepId}`,
        `${promptPath} uses {input_text}: pipe the input on stdin`,
        where,
      );
    }
  };

  const schemaUses = new Map<string, { source: string; stepId: string }[]>();
  const commands: Json = {};
  let needsAllowRun = false;
  const validationSteps = isObject(regIn.validationSteps) ? regIn.validationSteps : {};
  const validatorsIn = isObject(regIn.validators) ? regIn.validators : {};
  const patternsIn = isObject(regIn.failurePatterns) ? regIn.failurePatterns : {};

  for (const [id, stepRaw] of Object.entries(stepsIn)) {
    const sid = newId(id);
    const base = stepLine(id);
    const where = (field: string) => R.at(`"${field}"`, base);
    const f = (field: string) => `steps.${id}.${field}`;
    if (!isObject(stepRaw)) {
      notes.add("defect", `steps.${id}`, "not an object; skipped", R.at(`"${id}": {`, stepsLine));
      continue;
    }
    const s = stepRaw;
    const out: StepDefinition = { stepId: sid };
    const kind = s.stepKind;
    const isClosing = sid.startsWith("complete.");
    const isSection = sid.startsWith("section.");
    const commandSpec = isObject(s.runner) ? s.runner : undefined;
    for (const key of Object.keys(s)) {
      switch (key) {
        case "stepId":
          if (s.stepId !== id) {
            notes.add(
              "defect",
              f("stepId"),
              `"${s.stepId}" differs from its key "${id}"`,
              where("stepId"),
            );
          }
          break;
        case "name":
        case "description":
          out[key] = s[key] as string;
          break;
        case "type":
          notes.add(
            "dropped",
            f("type"),
            `"${s.type}": every stepflow step is a prompt unless kind is "command"`,
            where("type"),
          );
          break;
        case "stepKind":
          if (!["work", "verification", "closure"].includes(kind as string)) {
            notes.add(
              "person",
              f("stepKind"),
              `unknown stepKind ${JSON.stringify(kind)}`,
              where("stepKind"),
            );
          }
          break;
        case "c2":
        case "c3":
        case "edition":
        case "adaptation":
        case "uvVariables":
        case "usesStdin":
        case "outputSchemaRef":
        case "structuredGate":
        case "transitions":
        case "runner":
          break;
        case "condition":
        case "priority":
          notes.add(
            "person",
            f(key),
            `climpt picks among entry candidates by ${key} (${
              JSON.stringify(s[key])
            }); stepflow enters at entryStepMapping[completionType] only — add a completionType per case if needed`,
            where(key),
          );
          break;
        default:
          notes.add("dropped", f(key), "not a climpt v1.13 step field", where(key));
      }
    }

    // Command step: `runner` (climpt's subprocess closure).
    if (commandSpec) {
      const commandName = sid.split(".").pop()!;
      const argv = [
        commandSpec.command,
        ...(Array.isArray(commandSpec.args) ? commandSpec.args : []),
      ]
        .map((a) => contextTemplatesToVariables(String(a)));
      const spec: Json = { argv };
      if (typeof commandSpec.timeout === "number") spec.timeoutMs = commandSpec.timeout;
      commands[commandName] = spec;
      (out as Json).kind = "command";
      (out as Json).command = commandName;
      needsAllowRun = true;
      notes.add(
        "mapped",
        f("runner"),
        `→ \`kind: "command"\`, \`command: "${commandName}"\`; agent.json \`commands.${commandName}.argv\` = ${
          JSON.stringify(argv)
        } (\${context.<key>} → {uv-<key>}); runs only with --allow-run`,
        where("runner"),
      );
      if (s.c2 !== undefined) {
        notes.add("dropped", f("c2/c3/edition"), "a command step runs no prompt", where("c2"));
      }
      for (const arg of argv) {
        for (const m of arg.matchAll(/\{uv-([^}]+)\}/g)) {
          if (!declared.has(m[1])) {
            notes.add(
              "defect",
              f("runner.args"),
              `${arg} names context "${m[1]}", which no parameter provides`,
              where("runner"),
            );
          }
        }
      }
      notes.add(
        "person",
        f("runner"),
        `the command (${
          argv.slice(0, 5).join(" ")
        } …) must exist where the agent runs; climpt parsed its stdout as JSON into the closure output — stepflow hands stdout/stderr off as {handoff.stdout}/{handoff.stderr}`,
        where("runner"),
      );
      registry.steps[sid] = out;
      continue;
    }

    // Prompt.
    if (typeof s.c2 === "string" && typeof s.c3 === "string") {
      const ref = {
        c1,
        c2: s.c2,
        c3: s.c3,
        ...(typeof s.edition === "string" ? { edition: s.edition } : {}),
        ...(typeof s.adaptation === "string" ? { adaptation: s.adaptation } : {}),
      };
      if (c1 === "steps") {
        out.c2 = ref.c2;
        out.c3 = ref.c3;
        if (ref.edition !== undefined) out.edition = ref.edition;
        if (ref.adaptation !== undefined) out.adaptation = ref.adaptation;
      } else {
        out.prompt = ref;
      }
      const path = promptPathOf(ref);
      if (!files.has(path)) {
        notes.add(
          "defect",
          f("c2/c3"),
          `prompt file ${path} does not exist in the source`,
          where("c3"),
        );
        if (!isSection) {
          files.set(
            path,
            `<!-- MIGRATION: climpt's ${path} was missing; write this step's prompt. -->\nThis step has no prompt yet (see MIGRATION.md).\n`,
          );
        }
      }
      checkVariables(id, path, s.uvVariables, where("uvVariables"));
      notes.add("mapped", f("c2/c3/edition/adaptation"), `prompt ${path}`, where("c2"));
    } else if (!isSection) {
      notes.add("defect", `steps.${id}`, "names no prompt (c2/c3)", R.at(`"${id}": {`, stepsLine));
    }
    if (s.uvVariables !== undefined) {
      notes.add(
        "dropped",
        f("uvVariables"),
        "stepflow reads the variables from the prompt text and checks them at run time",
        where("uvVariables"),
      );
    }
    if (s.usesStdin !== undefined) {
      notes.add(
        "dropped",
        f("usesStdin"),
        "stdin is always {input_text} in stepflow",
        where("usesStdin"),
      );
    }
    if (isSection) {
      registry.steps[sid] = out;
      continue;
    }

    // Output schema.
    const ref = isObject(s.outputSchemaRef) ? s.outputSchemaRef : undefined;
    if (ref && typeof ref.file === "string" && typeof ref.schema === "string") {
      out.outputSchemaRef = { file: ref.file, schema: `#/definitions/${sid}` };
      const list = schemaUses.get(ref.file) ?? [];
      list.push({ source: ref.schema, stepId: sid });
      schemaUses.set(ref.file, list);
      notes.add(
        "mapped",
        f("outputSchemaRef"),
        `${ref.file} "${ref.schema}" → #/definitions/${sid}`,
        where("outputSchemaRef"),
      );
    } else if (isClosing || s.structuredGate) {
      const file = "migrated.schema.json";
      out.outputSchemaRef = { file, schema: `#/definitions/${sid}` };
      const list = schemaUses.get(file) ?? [];
      list.push({ source: `generated:${sid}`, stepId: sid });
      schemaUses.set(file, list);
      notes.add(
        "person",
        `steps.${id}.outputSchemaRef`,
        `climpt ran this step without structured output; stepflow's closing and gate steps answer JSON — a permissive schema (any object with a "summary") was generated in schemas/${file}. Tighten it`,
        R.at(`"${id}": {`, stepsLine),
      );
    }

    // Gate and transitions.
    const gateIn = isObject(s.structuredGate) ? s.structuredGate : undefined;
    const transitionsIn = isObject(s.transitions) ? s.transitions : {};
    if (gateIn) {
      const allowed: string[] = [];
      for (const intent of Array.isArray(gateIn.allowedIntents) ? gateIn.allowedIntents : []) {
        const mapped = INTENT_RENAMES[intent as string] ?? intent;
        if (isClosing && mapped === "repeat") continue;
        if (!allowed.includes(mapped as string)) allowed.push(mapped as string);
      }
      const gate: Json = { allowedIntents: allowed };
      if (typeof gateIn.intentField === "string") gate.intentField = gateIn.intentField;
      if (typeof gateIn.targetField === "string") gate.targetField = gateIn.targetField;
      if (typeof gateIn.fallbackIntent === "string") {
        const fb = INTENT_RENAMES[gateIn.fallbackIntent] ?? gateIn.fallbackIntent;
        if (allowed.includes(fb)) gate.fallbackIntent = fb;
        else {notes.add(
            "dropped",
            f("structuredGate.fallbackIntent"),
            `"${fb}" is not allowed on this step any more`,
            where("fallbackIntent"),
          );}
      }
      if (Array.isArray(gateIn.handoffFields)) gate.handoffFields = gateIn.handoffFields;
      out.structuredGate = gate as unknown as StepDefinition["structuredGate"];
      const renamedIntents = (gateIn.allowedIntents as string[] ?? []).filter((i) =>
        INTENT_RENAMES[i]
      );
      notes.add(
        "mapped",
        f("structuredGate"),
        `allowedIntents ${JSON.stringify(allowed)}${
          renamedIntents.length
            ? ` (${renamedIntents.map((i) => `${i} → ${INTENT_RENAMES[i]}`).join(", ")})`
            : ""
        }; intentField, targetField, fallbackIntent, handoffFields kept`,
        where("structuredGate"),
      );
      if (gateIn.intentSchemaRef !== undefined) {
        notes.add(
          "dropped",
          f("structuredGate.intentSchemaRef"),
          "stepflow validates the whole answer against the step schema; the intent enum there was renamed",
          where("intentSchemaRef"),
        );
      }
      for (const key of Object.keys(gateIn)) {
        if (
          ![
            "allowedIntents",
            "intentSchemaRef",
            "intentField",
            "targetField",
            "fallbackIntent",
            "handoffFields",
          ].includes(key)
        ) {
          notes.add("dropped", f(`structuredGate.${key}`), "no stepflow gate field", where(key));
        }
      }
    }
    const transitions: Record<string, { target: string }> = {};
    for (const [intent, value] of Object.entries(transitionsIn)) {
      const mapped = INTENT_RENAMES[intent] ?? intent;
      const target = isObject(value) && typeof value.target === "string" ? value.target : null;
      const tWhere = R.at(`"${intent}"`, R.line('"transitions"', base));
      if (isClosing) {
        if (intent === "repeat") {
          notes.add(
            "person",
            f(`transitions.${intent}`),
            "a stepflow closing step runs once; the model can no longer ask to redo it (validators, when declared, re-run it on failure)",
            tWhere,
          );
        } else if (target === null) {
          notes.add(
            "mapped",
            f(`transitions.${intent}`),
            `→ intent "${mapped}": the closing step ends the run`,
            tWhere,
          );
        } else {
          notes.add(
            "person",
            f(`transitions.${intent}`),
            `closing step leads on to "${target}"; stepflow ends the run after a closing step`,
            tWhere,
          );
        }
        continue;
      }
      if (target === null) {
        notes.add(
          "mapped",
          f(`transitions.${intent}`),
          `target null → intent "${mapped}" without a transition ends the run`,
          tWhere,
        );
        continue;
      }
      if (!Object.hasOwn(stepsIn, target)) {
        notes.add("defect", f(`transitions.${intent}`), `target "${target}" is not a step`, tWhere);
        continue;
      }
      const to = newId(target);
      if (mapped === "repeat" && to !== sid) {
        notes.add(
          "person",
          f(`transitions.${intent}`),
          `repeat leads to "${target}"; stepflow's repeat always re-runs the same step, so this transition was dropped`,
          tWhere,
        );
        continue;
      }
      if (mapped === "complete" && !to.startsWith("complete.")) {
        notes.add(
          "person",
          f(`transitions.${intent}`),
          `${intent} → "${target}", a ${
            String((stepsIn[target] as Json)?.stepKind ?? "work")
          } step; stepflow's complete leads to a closing step only, so "${mapped}" here now ends the run`,
          tWhere,
        );
        continue;
      }
      if (Object.hasOwn(transitions, mapped) && transitions[mapped].target !== to) {
        notes.add(
          "person",
          f(`transitions.${intent}`),
          `two intents now both mean "${mapped}" with different targets; kept the first`,
          tWhere,
        );
        continue;
      }
      transitions[mapped] = { target: to };
      notes.add("mapped", f(`transitions.${intent}`), `→ ${mapped}: ${to}`, tWhere);
    }
    if (!isClosing && Object.keys(transitions).length > 0) out.transitions = transitions;
    if (!isClosing && !gateIn && !commandSpec) {
      notes.add(
        "defect",
        `steps.${id}`,
        "a work step without structuredGate cannot route",
        R.at(`"${id}": {`, stepsLine),
      );
    }

    // Validators (climpt validationSteps keyed by this step's id).
    if (Object.hasOwn(validationSteps, id) && isObject(validationSteps[id])) {
      const v = validationSteps[id] as Json;
      const vBase = R.line(`"${id}": {`, R.line('"validationSteps"'));
      const vWhere = (field: string) => R.at(`"${field}"`, vBase);
      const list: Json[] = [];
      for (const cond of Array.isArray(v.validationConditions) ? v.validationConditions : []) {
        const vName = isObject(cond) ? cond.validator as string : undefined;
        const def = vName && isObject(validatorsIn[vName])
          ? validatorsIn[vName] as Json
          : undefined;
        const dWhere = R.at(`"${vName}": {`, R.line('"validators"'));
        if (!vName || !def) {
          notes.add(
            "defect",
            `validationSteps.${id}`,
            `validator ${JSON.stringify(vName)} is not defined in validators`,
            vWhere("validationConditions"),
          );
          continue;
        }
        if (def.type !== "command" || typeof def.command !== "string") {
          notes.add(
            "person",
            `validators.${vName}`,
            `type ${JSON.stringify(def.type)} is not a command; skipped`,
            dWhere,
          );
          continue;
        }
        const { argv: words, shell } = splitCommand(def.command);
        // A command written for a shell keeps its meaning through an explicit `sh -c` (listed in
        // agent.json like any other argv, and flagged for review below).
        const argv = shell ? ["sh", "-c", def.command] : words;
        commands[vName] = { argv };
        needsAllowRun = true;
        const entry: Json = { command: vName };
        if (def.successWhen === "empty") entry.successWhen = "empty";
        else if (def.successWhen !== "exitCode:0" && def.successWhen !== undefined) {
          notes.add(
            "person",
            `validators.${vName}.successWhen`,
            `${
              JSON.stringify(def.successWhen)
            } unsupported; stepflow checks exit code 0 (or "empty" output)`,
            dWhere,
          );
        }
        if (typeof def.failurePattern === "string") {
          entry.pattern = def.failurePattern;
          const pattern = isObject(patternsIn[def.failurePattern])
            ? patternsIn[def.failurePattern] as Json
            : undefined;
          if (!pattern) {
            notes.add(
              "defect",
              `validators.${vName}.failurePattern`,
              `"${def.failurePattern}" is not in failurePatterns`,
              dWhere,
            );
          } else if (pattern.edition !== "failed" || pattern.adaptation !== def.failurePattern) {
            notes.add(
              "person",
              `failurePatterns.${def.failurePattern}`,
              `edition/adaptation ${pattern.edition}/${pattern.adaptation}; stepflow's retry prompt is f_failed_<pattern>.md — rename the prompt file`,
              R.at(`"${def.failurePattern}": {`, R.line('"failurePatterns"')),
            );
          }
        }
        list.push(entry);
        notes.add(
          "mapped",
          `validators.${vName}`,
          `→ agent.json \`commands.${vName}.argv\` ${
            JSON.stringify(argv)
          } and a validator on ${sid}`,
          dWhere,
        );
        if (shell) {
          notes.add(
            "person",
            `validators.${vName}.command`,
            `"${def.command}" relies on a shell (globs, quotes or expansions); it now runs as sh -c "…" — review it, or replace it by a plain argv`,
            dWhere,
          );
        }
        if (def.extractParams !== undefined) {
          notes.add(
            "dropped",
            `validators.${vName}.extractParams`,
            "climpt's output parsers; stepflow gives the retry prompt the command output as {validation.output}",
            dWhere,
          );
        }
      }
      const validation: Json = { validators: list };
      if (typeof v.c2 === "string" && typeof v.c3 === "string") {
        validation.retryPrompt = { c1, c2: v.c2, c3: v.c3 };
        const dir = `prompts/${c1}/${v.c2}/${v.c3}`;
        for (const [path, text] of promptTexts) {
          if (!path.startsWith(`${dir}/f_failed`)) continue;
          if (!text.includes("{validation.output}")) {
            files.set(
              path,
              `${text.trimEnd()}\n\n## Validator output\n\n\`\`\`\n{validation.output}\n\`\`\`\n`,
            );
          }
          if (/\{\{[#/]?[a-zA-Z]/.test(text)) {
            notes.add(
              "person",
              path,
              "uses climpt's {{…}} template parameters (filled from extractParams); stepflow leaves them as written and appends the validator output — rewrite the prompt around {validation.output}",
              rel(join(source.dir, path)),
            );
          }
        }
        for (const entry of list) {
          const pattern = entry.pattern as string | undefined;
          const path = `${dir}/f_failed_${pattern}.md`;
          if (pattern === undefined || files.has(path)) continue;
          files.set(
            path,
            `<!-- MIGRATION: climpt had no ${path}; this generic retry prompt stands in. -->\nThe "${pattern}" check of your previous answer failed.\n\n\`\`\`\n{validation.output}\n\`\`\`\n\nFix the cause and answer again.\n`,
          );
          notes.add(
            "defect",
            `validationSteps.${id}`,
            `retry prompt ${path} for pattern "${pattern}" does not exist in the source; a generic one was written — adapt it`,
            vWhere("c2"),
          );
        }
        if (!files.has(`${dir}/f_failed.md`)) {
          files.set(
            `${dir}/f_failed.md`,
            "The validation of your previous answer failed.\n\n```\n{validation.output}\n```\n\nFix the cause and answer again.\n",
          );
          notes.add(
            "mapped",
            `validationSteps.${id}`,
            `${dir}/f_failed.md written: the retry prompt used when no pattern matches`,
            vWhere("c2"),
          );
        }
      }
      const onFailure = isObject(v.onFailure) ? v.onFailure : {};
      validation.maxRetries = typeof onFailure.maxAttempts === "number" ? onFailure.maxAttempts : 3;
      (out as Json).validation = validation;
      notes.add(
        "mapped",
        `validationSteps.${id}`,
        `→ \`steps.${sid}.validation\` (${list.length} validator(s), retry prompt ${c1}/${v.c2}/${v.c3}/f_failed_<pattern>.md, maxRetries ${validation.maxRetries})`,
        vWhere("validationConditions"),
      );
      if (v.outputSchemaRef !== undefined) {
        notes.add(
          "dropped",
          `validationSteps.${id}.outputSchemaRef`,
          "the retried step answers with its own schema",
          vWhere("outputSchemaRef"),
        );
      }
    }
    registry.steps[sid] = out;
  }
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

  // Variables climpt filled at run time become optional parameters (reported above).
  for (const v of [...runtimeVariables].sort()) {
    if (Object.hasOwn(parameters, v)) continue;
    parameters[v] = {
      type: "string",
      description: `Migrated from climpt, whose runner set {uv-${v}} itself; pass --${v}.`,
    };
    smokeArgs.push(`--${v}`, "smoke");
    if (CLIMPT_RUNTIME_VARIABLES.has(v)) {
      notes.add(
        "person",
        `{uv-${v}}`,
        `climpt's runner filled it at run time; stepflow has {iteration} — declared as an optional parameter --${v}; consider replacing it by {iteration} in the prompts`,
      );
    }
  }

  // Schemas.
  const schemas = new Map<string, Json>();
  const schemaDir = join(source.dir, "schemas");
  const readSchema = (file: string): Json | undefined => {
    if (!/^[A-Za-z0-9._-]+$/.test(file)) return undefined;
    try {
      return JSON.parse(Deno.readTextFileSync(join(schemaDir, file)));
    } catch {
      return undefined;
    }
  };
  const bundledFiles = new Set<string>();
  for (const [file, uses] of schemaUses) {
    let doc: Json | undefined;
    if (file === "migrated.schema.json") {
      doc = { $schema: "http://json-schema.org/draft-07/schema#", definitions: {} };
      for (const use of uses) {
        (doc.definitions as Json)[use.stepId] = {
          type: "object",
          required: ["summary"],
          properties: { summary: { type: "string", description: "What the step did" } },
        };
      }
      schemas.set(file, doc);
      files.set(`schemas/${file}`, `${JSON.stringify(doc, null, 2)}\n`);
      continue;
    }
    doc = readSchema(file);
    if (!doc) {
      notes.add(
        "defect",
        `schemas/${file}`,
        "missing or not JSON; the steps that use it cannot load",
        R.at(`"${file}"`),
      );
      continue;
    }
    const normalized = normalizeSchemaFile(doc, uses, readSchema, INTENT_RENAMES);
    for (const m of normalized.missing) {
      notes.add("defect", `schemas/${file}`, `${m.name}: ${m.reason}`, rel(join(schemaDir, file)));
    }
    for (const b of normalized.bundled) bundledFiles.add(b);
    if (normalized.changes.length > 0) {
      notes.add(
        "mapped",
        `schemas/${file}`,
        normalized.changes.join("; "),
        rel(join(schemaDir, file)),
      );
    }
    schemas.set(file, normalized.document);
    files.set(`schemas/${file}`, `${JSON.stringify(normalized.document, null, 2)}\n`);
  }
  try {
    for await (const entry of Deno.readDir(schemaDir)) {
      if (!entry.isFile || schemaUses.has(entry.name)) continue;
      notes.add(
        "dropped",
        `schemas/${entry.name}`,
        bundledFiles.has(entry.name) ? "bundled into the files that $ref it" : "no step uses it",
        rel(join(schemaDir, entry.name)),
      );
    }
  } catch {
    // No schemas folder.
  }
  for await (const entry of Deno.readDir(source.dir)) {
    if (["agent.json", "steps_registry.json", "prompts", "schemas"].includes(entry.name)) continue;
    notes.add(
      "dropped",
      entry.name,
      entry.name === "README.md"
        ? "copied as README.md (documentation)"
        : "climpt-specific file (breakdown CLI config, registry, frontmatter schemas); not read by stepflow",
      rel(join(source.dir, entry.name)),
    );
    if (entry.name === "README.md" && entry.isFile) {
      files.set("README.md", await Deno.readTextFile(join(source.dir, entry.name)));
    }
  }

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

/** The `SourceText` type, re-exported for tests. */
export type { SourceText };
