/**
 * The file side of load-time validation: every prompt file exists inside its tree (symlinks
 * included), every `outputSchemaRef` resolves, and agent.json's system prompt exists. Files are
 * checked concurrently with a bounded pool; each prompt path and each schema file is read once,
 * however many steps share it.
 *
 * @module
 */
import { answerForm, intentFieldProblem } from "./answer_form.ts";
import { resolve } from "node:path";
import { realpath } from "node:fs/promises";
import { errorMessage } from "../errors.ts";
import { retryPromptRefs } from "./validate_features.ts";
import {
  isWithin,
  type PromptReference,
  promptRoot,
  resolvePromptPath,
} from "../prompt/c3l_path.ts";
import { outsideLinkMessage, realLocation, realpathOr } from "../prompt/confine.ts";
import { splitFrontmatter } from "../prompt/frontmatter.ts";
import { isMissingFileError, PromptResolver } from "../prompt/resolver.ts";
import { listRequiredVariables } from "../prompt/variables.ts";
import {
  createSchemaDocumentLoader,
  resolveOutputSchema,
  type SchemaDocumentLoader,
} from "./output_schema.ts";
import {
  compileErrorMessage,
  createSchemaChecker,
  createSchemaCompiler,
} from "./schema_compiler.ts";
import type { AgentConfig, OutputSchemaRef } from "./schema.ts";
import type { FlowStep } from "./types.ts";

/** Input of {@linkcode checkFlowFiles}. */
export interface FlowFilesInput {
  /** Absolute agent folder. */
  dir: string;
  /** Prompt root relative to the agent folder. */
  basePath: string;
  /** agent.json, when it parsed. */
  agent?: AgentConfig;
  /** The steps to check, in registry order. */
  steps: readonly FlowStep[];
  /** File labels for messages. */
  files: { agent: string; registry: string };
  /** Missing prompts become warnings when a fallback can stand in. */
  allowFallback?: boolean;
  /** Compile every output schema in full (default: meta-schema and reference check). */
  compileSchemas?: boolean;
  /** Files checked at once (default 16). */
  concurrency?: number;
}

/** What {@linkcode checkFlowFiles} found. */
export interface FlowFilesResult {
  /** Problems not tied to a step (basePath, system prompt). */
  general: string[];
  /** Problems per step id. */
  byStep: Map<string, string[]>;
  /** Warnings (fallbacks that will be used). */
  warnings: string[];
  /**
   * Per step id, the `{handoff.<key>}` keys its prompts need (used without `?`), for the
   * handoff-path warnings.
   */
  handoffUses: Map<string, string[]>;
}

/** Prompt files larger than this are not scanned for variables (a prompt is text for a model). */
const MAX_SCANNED_PROMPT_BYTES = 4 * 1024 * 1024;

type PromptStatus =
  | { ok: true; handoffKeys: string[] }
  | { ok: false; missing: true }
  | { ok: false; missing: false; message: string };

/** Checks every file the definition names. Never throws for a bad file; reports it. */
export async function checkFlowFiles(input: FlowFilesInput): Promise<FlowFilesResult> {
  const { dir, files } = input;
  const result: FlowFilesResult = {
    general: [],
    byStep: new Map(),
    warnings: [],
    handoffUses: new Map(),
  };
  // Tasks finish in any order; problems are reported in task order so messages are stable.
  const found: Array<{ order: number; stepId: string; message: string }> = [];
  const stepProblem = (order: number, stepId: string, message: string) =>
    found.push({ order, stepId, message });
  const warnings: Array<{ order: number; message: string }> = [];

  const realDir = await realpathOr(dir);
  const { root, realRoot, problem } = await promptFolder(dir, input.basePath, realDir);
  if (problem !== undefined) result.general.push(`${files.registry}: basePath: ${problem}`);
  const promptCache = new Map<string, Promise<PromptStatus>>();
  // Each schema file is read once for all steps; each step's schema is compiled exactly as the
  // runner will compile it, so a typo in a schema is a load-time error, not a run-time strike.
  const loadSchema = createSchemaDocumentLoader(dir);
  const compile = input.compileSchemas ? createSchemaCompiler() : createSchemaChecker();
  const fallbackResolver = input.allowFallback && root !== undefined
    ? new PromptResolver({
      agentDir: dir,
      basePath: input.basePath,
      fallbackDir: input.agent?.prompts?.fallbackDir,
      allowFallback: true,
      onWarning: () => {},
    })
    : undefined;

  const tasks: Array<() => Promise<void>> = [];

  if (input.agent?.behavior.systemPromptPath !== undefined) {
    const path = input.agent.behavior.systemPromptPath;
    const label = `${files.agent}: behavior.systemPromptPath`;
    tasks.push(async () => {
      let file: string;
      try {
        file = resolvePromptPath(dir, ".", { path });
      } catch (error) {
        result.general.push(`${label}: ${errorMessage(error)}`);
        return;
      }
      const status = await promptStatus(file, realDir, dir);
      if (status.ok) return;
      result.general.push(
        status.missing
          ? `${label}: file not found: ${file}. Create it, or fix the path (it is relative to the agent folder).`
          : `${label}: ${status.message}`,
      );
    });
  }

  for (const step of input.steps) {
    const prefix = `${files.registry}: step "${step.id}": `;
    const prompts: Array<[string, PromptReference, string | undefined]> = [];
    if (step.prompt) prompts.push(["prompt", step.prompt, step.fallbackKey]);
    if (step.check) prompts.push(["check.prompt", step.check.prompt, undefined]);
    if (step.validation) {
      for (const ref of retryPromptRefs(step.validation)) {
        prompts.push(["validation.retryPrompt", ref, undefined]);
      }
    }
    for (const [field, ref, fallbackKey] of prompts) {
      if (root === undefined || realRoot === undefined) break;
      const order = tasks.length;
      tasks.push(async () => {
        let file: string;
        try {
          file = resolvePromptPath(dir, input.basePath, ref);
        } catch (error) {
          stepProblem(order, step.id, `${prefix}${field}: ${errorMessage(error)}`);
          return;
        }
        let pending = promptCache.get(file);
        if (!pending) {
          pending = promptStatus(file, realRoot, root);
          promptCache.set(file, pending);
        }
        const status = await pending;
        if (status.ok) {
          if (status.handoffKeys.length > 0) {
            const uses = result.handoffUses.get(step.id) ?? [];
            for (const key of status.handoffKeys) if (!uses.includes(key)) uses.push(key);
            result.handoffUses.set(step.id, uses);
          }
          return;
        }
        if (!status.missing) {
          stepProblem(order, step.id, `${prefix}${field}: ${status.message}`);
          return;
        }
        if (fallbackResolver) {
          try {
            const used = await fallbackResolver.template(ref, { stepId: step.id, fallbackKey });
            warnings.push({
              order,
              message:
                `${prefix}${field} file not found: ${file}; the fallback ${used.file} will be used (allowFallback is on — fallbacks are for development only).`,
            });
            return;
          } catch (error) {
            stepProblem(order, step.id, `${prefix}${field}: ${errorMessage(error)}`);
            return;
          }
        }
        stepProblem(
          order,
          step.id,
          `${prefix}${field} file not found: ${file}. Create it, or fix the step's ${field} reference (there is no fallback unless --allow-fallback is given).`,
        );
      });
    }
    const ref = step.outputSchemaRef;
    if (ref) {
      const order = tasks.length;
      tasks.push(async () => {
        const problem = await outputSchemaProblem(dir, ref, loadSchema, compile, step);
        if (problem !== undefined) {
          stepProblem(order, step.id, `${prefix}outputSchemaRef: ${problem}`);
        }
      });
    }
  }

  await runPool(tasks, input.concurrency ?? 16);
  found.sort((a, b) => a.order - b.order);
  warnings.sort((a, b) => a.order - b.order);
  result.warnings.push(...warnings.map((w) => w.message));
  for (const { stepId, message } of found) {
    const list = result.byStep.get(stepId);
    if (list) list.push(message);
    else result.byStep.set(stepId, [message]);
  }
  return result;
}

/**
 * The prompt folder (`basePath` under the agent folder `dir`) and its real path, or the problem
 * that makes it unusable: a path that escapes the agent folder, or a link that leads out of it.
 */
async function promptFolder(
  dir: string,
  basePath: string,
  realDir: string,
): Promise<{ root?: string; realRoot?: string; problem?: string }> {
  let root: string;
  try {
    root = promptRoot(dir, basePath);
  } catch (error) {
    return { problem: errorMessage(error) };
  }
  const where = await realLocation(root, realDir);
  if (!where.inside) {
    return { root, problem: outsideLinkMessage("prompt folder", root, where.real, realDir) };
  }
  return { root, realRoot: where.real };
}

/**
 * Why the output schema `ref` of a step is unusable — it cannot be read or resolved, or it does
 * not compile as the runner will compile it — or undefined when it is fine.
 */
async function outputSchemaProblem(
  dir: string,
  ref: OutputSchemaRef,
  loadSchema: SchemaDocumentLoader,
  compile: (schema: Record<string, unknown>) => unknown,
  step: FlowStep,
): Promise<string | undefined> {
  let schema: Record<string, unknown>;
  try {
    schema = (await resolveOutputSchema(dir, ref, undefined, loadSchema)).schema;
  } catch (error) {
    return errorMessage(error);
  }
  // An input step's schema is shown to a person as a form: it must be one a form can render.
  if (step.kind === "input") {
    const problem = answerFormProblem(schema, step.gate?.intentField);
    if (problem !== undefined) {
      return `schema ${ref.schema} in ${
        resolve(dir, "schemas", ref.file)
      } cannot be an answer form: ${problem}.`;
    }
  }
  try {
    compile(schema);
  } catch (error) {
    return `schema ${ref.schema} in ${resolve(dir, "schemas", ref.file)} does not compile: ${
      compileErrorMessage(error)
    }. Fix the schema (ajv, JSON Schema ${
      schema.$schema === undefined ? "draft-07" : String(schema.$schema)
    }).`;
  }
  return undefined;
}

/** Exists, is a file, and its real path stays inside `realRoot`. */
async function promptStatus(file: string, realRoot: string, root: string): Promise<PromptStatus> {
  let real: string;
  try {
    real = await realpath(file);
  } catch (error) {
    if (isMissingFileError(error)) return { ok: false, missing: true };
    return { ok: false, missing: false, message: `cannot read ${file}: ${errorMessage(error)}` };
  }
  if (!isWithin(realRoot, real)) {
    return {
      ok: false,
      missing: false,
      message:
        `Refused prompt file ${file}: it is a symbolic link to ${real}, outside the prompt folder ${root}.`,
    };
  }
  const info = await Deno.stat(real);
  if (!info.isFile) {
    return { ok: false, missing: false, message: `${file} is not a file.` };
  }
  if (info.size > MAX_SCANNED_PROMPT_BYTES) return { ok: true, handoffKeys: [] };
  let body: string;
  try {
    body = splitFrontmatter(await Deno.readTextFile(real), file).body;
  } catch (error) {
    return { ok: false, missing: false, message: errorMessage(error) };
  }
  const handoffKeys = listRequiredVariables(body).filter((v) => v.startsWith("handoff."))
    .map((v) => v.slice("handoff.".length));
  return { ok: true, handoffKeys };
}

/** Runs `tasks` with at most `limit` in flight. */
async function runPool(tasks: ReadonlyArray<() => Promise<void>>, limit: number): Promise<void> {
  let index = 0;
  const worker = async () => {
    while (index < tasks.length) await tasks[index++]();
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}

/** Why an input step's schema cannot be the form a person answers, or `undefined`. */
function answerFormProblem(
  schema: Record<string, unknown>,
  intentField: string | undefined,
): string | undefined {
  try {
    const form = answerForm(schema);
    return intentField === undefined ? undefined : intentFieldProblem(form, intentField);
  } catch (error) {
    return errorMessage(error);
  }
}
