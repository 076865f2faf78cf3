/**
 * The `ai` module: one call to an LLM backend of the project (`src/llm`).
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";
import type { LlmBackend, LlmRequest } from "../../llm/types.ts";
import type { ValidateFunction } from "ajv";
import { StepflowError } from "../../errors.ts";
import { askStructured } from "../../engine/ask_structured.ts";
import { createSchemaCompiler, validationProblems } from "../../llm/json_schema.ts";
import { compileErrorMessage } from "../../definition/schema_compiler.ts";
import { ModuleArgumentError } from "./values.ts";

/** The `outputSchema` sent for `format="json"` without `schema=`: any JSON value. */
const ANY_JSON: Readonly<Record<string, unknown>> = Object.freeze({});

/** The arguments of `ai`. */
export interface AiArgs {
  /** The prompt (`ai "prompt" …` puts the string here). */
  prompt: string;
  /** Values the model should see (`USING a, b` passes `{a, b}`). */
  context?: unknown;
  /** System prompt. */
  system?: string;
  /** Model override. */
  model?: string;
  /** `text` (default) returns the answer text; `json` returns the parsed JSON answer. */
  format?: "text" | "json";
  /** A JSON Schema the answer must follow; implies `format="json"`. */
  schema?: Record<string, unknown>;
}

/**
 * Creates the `ai` tool: `ai "Summarize" USING text -> summary`,
 * `ai prompt="List 3 risks" format="json" -> risks`. Requests go to `backend` with
 * `kind: "step"`, `agent: "qplan"` and the current step id (scripted backends key answers by it).
 *
 * `format="json"` and `schema=` take the runner's structured-output path ({@linkcode askStructured}):
 * the schema (or `{}` — any JSON — for a bare `format="json"`) is sent as the request's
 * `outputSchema`, the answer is read, bounded and validated, and an invalid answer is re-asked once
 * with what was wrong; a second invalid answer fails the step with `OUTPUT_SCHEMA_INVALID`.
 *
 * @param backend the LLM backend; without one the tool is `unavailable` (validation reports every
 *   `ai` line) and calls fail with a message saying how to configure it
 */
export function createAiTool(backend?: LlmBackend): Tool<AiArgs, unknown> {
  const compile = createSchemaCompiler();
  // Scripts run the same `ai` line many times; compile each distinct schema once.
  const compiled = new Map<string, ValidateFunction>();
  const validatorOf = (schema: Record<string, unknown>): ValidateFunction => {
    const key = JSON.stringify(schema);
    let validate = compiled.get(key);
    if (!validate) {
      try {
        validate = compile(schema);
      } catch (error) {
        throw new ModuleArgumentError(
          "ai",
          `schema does not compile as a JSON Schema: ${compileErrorMessage(error)}`,
        );
      }
      compiled.set(key, validate);
    }
    return validate;
  };
  const noBackend =
    "no LLM backend is configured (pass --backend scripted|claude-code|anthropic|openai or --script FILE on the CLI, or backend to createQPlanRegistry)";
  return {
    name: "ai",
    ...(backend ? {} : { unavailable: noBackend }),
    description:
      'Asks the LLM: ai "Summarize in 3 bullets" USING text -> summary. Options: system="…", model="…", format="json" (returns parsed JSON), schema={…} (JSON Schema of the answer).',
    inputSchema: z.strictObject({
      prompt: z.string().min(1).describe("The prompt."),
      context: z.unknown().optional().describe("Values the model should see (USING a, b)."),
      system: z.string().optional().describe("System prompt."),
      model: z.string().optional().describe("Model override."),
      format: z.enum(["text", "json"]).optional().describe('"text" (default) or "json".'),
      schema: z.record(z.string(), z.unknown()).optional().describe(
        "JSON Schema the answer must follow (implies json).",
      ),
    }),
    async execute(args, ctx) {
      if (!backend) {
        throw new ModuleArgumentError("ai", noBackend);
      }
      let prompt = args.prompt;
      if (args.context !== undefined) {
        prompt += `\n\nContext:\n\`\`\`json\n${JSON.stringify(args.context, null, 2)}\n\`\`\``;
      }
      const wantsJson = args.format === "json" || args.schema !== undefined;
      const request: LlmRequest = {
        kind: "step",
        agent: "qplan",
        stepId: ctx.stepId ?? "qplan",
        iteration: 1,
        prompt,
        cwd: ctx.workspaceRoot,
      };
      if (args.system !== undefined) request.systemPrompt = args.system;
      if (args.model !== undefined) request.model = args.model;
      const call = (req: LlmRequest) => backend.complete(req, { signal: ctx.signal });
      if (!wantsJson) return (await call(request)).text;
      const validate = args.schema ? validatorOf(args.schema) : undefined;
      request.outputSchema = args.schema ?? { ...ANY_JSON };
      const asked = await askStructured({
        request,
        call,
        validate: (value) => validate ? validationProblems(validate, value) : [],
        maxReasks: 1,
        // Visible wherever the executor listens to tool logs.
        onReask: (r) =>
          ctx.log?.(
            `ai: re-asking (${r.attempt}) because ${r.reason}${
              r.errors.length > 0 ? `: ${r.errors.join("; ")}` : ""
            }`,
          ),
      });
      if (asked.ok) return asked.value;
      const problems = [asked.reason, ...asked.errors];
      throw new StepflowError(
        "OUTPUT_SCHEMA_INVALID",
        `ai (step "${request.stepId}"): the answer does not match ${
          args.schema ? "schema=" : 'format="json"'
        } after ${asked.reasks} re-ask(s): ${
          problems.join("; ")
        }. The answer (${asked.answer.length} chars) began: ${
          JSON.stringify(asked.answer.text.slice(0, 200))
        }`,
        { details: { stepId: request.stepId, problems, answer: asked.answer } },
      );
    },
  };
}
