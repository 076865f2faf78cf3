/**
 * The converters of climpt's agent.json: its top-level fields, `parameters`, `runner.flow`,
 * `runner.verdict` (→ `completion` and `limits`), the other `runner` sections, and the parameters
 * declared late for variables climpt's runner filled at run time.
 *
 * @module
 */
import { RESERVED_PARAMETER_FLAGS } from "../definition/parameters.ts";
import {
  CLIMPT_RUNTIME_VARIABLES,
  type ConvertContext,
  isObject,
  type Json,
} from "./convert_context.ts";

/** agent.json's top-level fields (`name`, `displayName`, …) and the name's defects. */
export function convertAgentFields(ctx: ConvertContext): void {
  const { agentIn, agentSrc: A, notes, agent, name, declaredName, source } = ctx;
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
}

/** `parameters` → stepflow parameters (type, flag, enum), and the smoke run's required values. */
export function convertParameters(ctx: ConvertContext): void {
  const { agentIn, agentSrc: A, notes, parameters, smokeArgs } = ctx;
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
        `the flag name "${flag}" is one of stepflow's own, which a parameter may not take; the parameter's flag is now --${renamed}. Check scripts that pass the old flag.`,
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
}

/** `runner.flow` → `behavior.systemPromptPath` and `prompts.fallbackDir`. */
export function convertFlow(ctx: ConvertContext): void {
  const { runner, agentSrc: A, notes, agent, behavior } = ctx;
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
  ctx.systemPromptPath = systemPromptPath;
}

/** `runner.verdict` → `behavior.completionType`, `completion` and `limits.maxTotalIterations`. */
export function convertVerdict(ctx: ConvertContext): void {
  const { runner, agentSrc: A, notes, behavior, limits, completion } = ctx;
  const verdict = isObject(runner.verdict) ? runner.verdict : {};
  const verdictType = typeof verdict.type === "string" ? verdict.type : "default";
  const verdictConfig = isObject(verdict.config) ? verdict.config : {};
  behavior.completionType = verdictType;
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
  ctx.verdictType = verdictType;
}

/** `runner.boundaries`, `integrations`, `actions`, `execution`, `logging` and unknown sections. */
export function convertRunnerSections(ctx: ConvertContext): void {
  const { runner, agentSrc: A, notes, agent, behavior } = ctx;
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
}

/**
 * Declares the `{uv-*}` variables no parameter provides (collected while converting the steps) as
 * optional parameters, so a run can supply them.
 */
export function declareRuntimeParameters(ctx: ConvertContext): void {
  const { runtimeVariables, parameters, smokeArgs, notes } = ctx;
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
}
