/**
 * The `ai` module: one call to an LLM backend of the project (`src/llm`).
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";
import type { LlmBackend, LlmRequest } from "../../llm/types.ts";
import { extractJson } from "../../llm/structured_output.ts";
import { ModuleArgumentError } from "./values.ts";

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
 * @param backend the LLM backend; without one, calls fail with a message saying how to configure it
 */
export function createAiTool(backend?: LlmBackend): Tool<AiArgs, unknown> {
  return {
    name: "ai",
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
        throw new ModuleArgumentError(
          "ai",
          "no LLM backend is configured (pass backend to createQPlanRegistry, or --backend on the CLI)",
        );
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
      if (args.schema !== undefined) request.outputSchema = args.schema;
      const response = await backend.complete(request, { signal: ctx.signal });
      if (!wantsJson) return response.text;
      if (response.structuredOutput !== undefined) return response.structuredOutput;
      const extracted = extractJson(response.text);
      if (!extracted.ok) {
        throw new ModuleArgumentError(
          "ai",
          `the answer is not JSON (format="json" was asked): ${response.text.slice(0, 120)}`,
        );
      }
      return extracted.value;
    },
  };
}
