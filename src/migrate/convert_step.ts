/**
 * The converter of one climpt step: its fields, a command step (`runner`), its prompt, its output
 * schema, its structured gate and its transitions. Validators are `convert_validation.ts`'s.
 *
 * @module
 */
import type { StepDefinition } from "../definition/schema.ts";
import {
  CLIMPT_RUNTIME_VARIABLES,
  type ConvertContext,
  INTENT_RENAMES,
  isObject,
  type Json,
  newStepId,
  type StepScope,
  stepScope,
} from "./convert_context.ts";
import { GENERATED_SCHEMA_FILE } from "./convert_schemas.ts";
import { convertValidation } from "./convert_validation.ts";
import { contextTemplatesToVariables, usesInputText, uvVariablesOf } from "./prompts.ts";

/** Converts every step of the registry into `ctx.registry.steps`, in the source's order. */
export function convertSteps(ctx: ConvertContext): void {
  const R = ctx.registrySrc;
  const stepsLine = R.line('"steps": {');
  for (const [id, stepRaw] of Object.entries(ctx.stepsIn)) {
    if (!isObject(stepRaw)) {
      ctx.notes.add(
        "defect",
        `steps.${id}`,
        "not an object; skipped",
        R.at(`"${id}": {`, stepsLine),
      );
      continue;
    }
    const st = stepScope(ctx, id, stepRaw);
    convertStep(ctx, st);
    ctx.registry.steps[st.sid] = st.out;
  }
}

/** Converts one step into `st.out`. */
export function convertStep(ctx: ConvertContext, st: StepScope): void {
  noteStepFields(ctx, st);
  const commandSpec = isObject(st.s.runner) ? st.s.runner : undefined;
  if (commandSpec) return convertCommandStep(ctx, st, commandSpec);
  convertStepPrompt(ctx, st);
  if (st.isSection) return;
  convertOutputSchema(ctx, st);
  convertGate(ctx, st);
  convertTransitions(ctx, st);
  if (!st.isClosing && !isObject(st.s.structuredGate)) {
    ctx.notes.add(
      "defect",
      `steps.${st.id}`,
      "a work step without structuredGate cannot route",
      st.at,
    );
  }
  convertValidation(ctx, st);
}

/** The step's plain fields: kept, dropped, or a defect (a `stepId` that differs from its key). */
export function noteStepFields(ctx: ConvertContext, st: StepScope): void {
  const { notes } = ctx;
  const { id, s, out, where, f } = st;
  const kind = s.stepKind;
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
}

/** `runner` (climpt's subprocess closure) → a command step and its `commands` entry. */
export function convertCommandStep(ctx: ConvertContext, st: StepScope, commandSpec: Json): void {
  const { notes, commands } = ctx;
  const { sid, s, out, where, f } = st;
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
  ctx.needsAllowRun = true;
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
      if (!Object.hasOwn(ctx.parameters, m[1])) {
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
}

/** `c1`/`c2`/`c3`/`edition`/`adaptation` → the step's prompt; checks the file and its variables. */
export function convertStepPrompt(ctx: ConvertContext, st: StepScope): void {
  const { notes, files, c1 } = ctx;
  const { id, s, out, isSection, where, f } = st;
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
    checkVariables(ctx, id, path, s.uvVariables, where("uvVariables"));
    notes.add("mapped", f("c2/c3/edition/adaptation"), `prompt ${path}`, where("c2"));
  } else if (!isSection) {
    notes.add("defect", `steps.${id}`, "names no prompt (c2/c3)", st.at);
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
}

/** The prompt file of a C3L reference, relative to the agent folder. */
export function promptPathOf(
  ref: { c1: string; c2: string; c3: string; edition?: string; adaptation?: string },
): string {
  return `prompts/${ref.c1}/${ref.c2}/${ref.c3}/f_${ref.edition ?? "default"}${
    ref.adaptation ? `_${ref.adaptation}` : ""
  }.md`;
}

/**
 * The `{uv-*}` variables of a step's prompt that no parameter provides: climpt's run-time ones and
 * the undeclared ones are collected in `ctx.runtimeVariables` (they become optional parameters).
 */
export function checkVariables(
  ctx: ConvertContext,
  stepId: string,
  promptPath: string,
  uvDeclared: unknown,
  where: string,
): void {
  const { notes, promptTexts, runtimeVariables } = ctx;
  const text = promptTexts.get(promptPath);
  if (text === undefined) return;
  for (const v of uvVariablesOf(text)) {
    if (Object.hasOwn(ctx.parameters, v)) continue;
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
}

/** `outputSchemaRef` → a schema use; closing and gate steps without one get a generated schema. */
export function convertOutputSchema(ctx: ConvertContext, st: StepScope): void {
  const { notes, schemaUses } = ctx;
  const { id, sid, s, out, isClosing, where, f } = st;
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
    const file = GENERATED_SCHEMA_FILE;
    out.outputSchemaRef = { file, schema: `#/definitions/${sid}` };
    const list = schemaUses.get(file) ?? [];
    list.push({ source: `generated:${sid}`, stepId: sid });
    schemaUses.set(file, list);
    notes.add(
      "person",
      `steps.${id}.outputSchemaRef`,
      `climpt ran this step without structured output; stepflow's closing and gate steps answer JSON — a permissive schema (any object with a "summary") was generated in schemas/${file}. Tighten it`,
      st.at,
    );
  }
}

/** `structuredGate` → the gate, with climpt's intents renamed. */
export function convertGate(ctx: ConvertContext, st: StepScope): void {
  const { notes } = ctx;
  const { s, out, isClosing, where, f } = st;
  const gateIn = isObject(s.structuredGate) ? s.structuredGate : undefined;
  if (!gateIn) return;
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
  const renamedIntents = (gateIn.allowedIntents as string[] ?? []).filter((i) => INTENT_RENAMES[i]);
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

/** `transitions` → stepflow transitions; what a closing step or stepflow's routing cannot keep. */
export function convertTransitions(ctx: ConvertContext, st: StepScope): void {
  const { notes, stepsIn, registrySrc: R } = ctx;
  const { sid, s, out, isClosing, base, f } = st;
  const transitionsIn = isObject(s.transitions) ? s.transitions : {};
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
    const to = newStepId(ctx, target);
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
}
