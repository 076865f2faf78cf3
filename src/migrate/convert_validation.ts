/**
 * The converter of climpt's validation: the `validationSteps` entry of one step becomes the step's
 * `validation` (validators as agent.json commands, the retry prompt, the retry limit), with the
 * retry prompts stepflow needs written where the source lacks them.
 *
 * @module
 */
import { join } from "node:path";
import { type ConvertContext, isObject, type Json, type StepScope } from "./convert_context.ts";

/** A validator command as an argv, and whether it relies on a shell. */
export function splitCommand(command: string): { argv: string[]; shell: boolean } {
  const shell = /[*?|&;<>$`"'(){}\\]/.test(command.replace(/@\{u\}/g, ""));
  return { argv: command.trim().split(/\s+/), shell };
}

/** The climpt `validationSteps` entry of the step, when there is one, → `st.out.validation`. */
export function convertValidation(ctx: ConvertContext, st: StepScope): void {
  const { regIn, registrySrc: R, notes, c1 } = ctx;
  const { id, sid, out } = st;
  const validationSteps = isObject(regIn.validationSteps) ? regIn.validationSteps : {};
  if (!Object.hasOwn(validationSteps, id) || !isObject(validationSteps[id])) return;
  const v = validationSteps[id] as Json;
  const vBase = R.line(`"${id}": {`, R.line('"validationSteps"'));
  const vWhere = (field: string) => R.at(`"${field}"`, vBase);
  const list: Json[] = [];
  for (const cond of Array.isArray(v.validationConditions) ? v.validationConditions : []) {
    const entry = convertValidator(ctx, st, cond, vWhere);
    if (entry) list.push(entry);
  }
  const validation: Json = { validators: list };
  if (typeof v.c2 === "string" && typeof v.c3 === "string") {
    validation.retryPrompt = { c1, c2: v.c2, c3: v.c3 };
    writeRetryPrompts(ctx, st, `prompts/${c1}/${v.c2}/${v.c3}`, list, vWhere);
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

/**
 * One validation condition → an agent.json command and the validator entry naming it (undefined
 * when the validator is missing or not a command: both are reported).
 */
export function convertValidator(
  ctx: ConvertContext,
  st: StepScope,
  cond: unknown,
  vWhere: (field: string) => string,
): Json | undefined {
  const { regIn, registrySrc: R, notes, commands } = ctx;
  const { id, sid } = st;
  const validatorsIn = isObject(regIn.validators) ? regIn.validators : {};
  const patternsIn = isObject(regIn.failurePatterns) ? regIn.failurePatterns : {};
  const vName = isObject(cond) ? cond.validator as string : undefined;
  const def = vName && isObject(validatorsIn[vName]) ? validatorsIn[vName] as Json : undefined;
  const dWhere = R.at(`"${vName}": {`, R.line('"validators"'));
  if (!vName || !def) {
    notes.add(
      "defect",
      `validationSteps.${id}`,
      `validator ${JSON.stringify(vName)} is not defined in validators`,
      vWhere("validationConditions"),
    );
    return undefined;
  }
  if (def.type !== "command" || typeof def.command !== "string") {
    notes.add(
      "person",
      `validators.${vName}`,
      `type ${JSON.stringify(def.type)} is not a command; skipped`,
      dWhere,
    );
    return undefined;
  }
  const { argv: words, shell } = splitCommand(def.command);
  // A command written for a shell keeps its meaning through an explicit `sh -c` (listed in
  // agent.json like any other argv, and flagged for review below).
  const argv = shell ? ["sh", "-c", def.command] : words;
  commands[vName] = { argv };
  ctx.needsAllowRun = true;
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
  notes.add(
    "mapped",
    `validators.${vName}`,
    `→ agent.json \`commands.${vName}.argv\` ${JSON.stringify(argv)} and a validator on ${sid}`,
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
  return entry;
}

/**
 * The retry prompts in `dir`: each `f_failed*` prompt gets the validator output, a pattern without
 * its prompt gets a generic one, and `f_failed.md` (no pattern matched) is written when missing.
 */
export function writeRetryPrompts(
  ctx: ConvertContext,
  st: StepScope,
  dir: string,
  list: readonly Json[],
  vWhere: (field: string) => string,
): void {
  const { files, notes, promptTexts, rel, source } = ctx;
  const { id } = st;
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
