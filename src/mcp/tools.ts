/**
 * MCP tools as tools of the one registry: `mcp__<server>__<tool>`, their arguments checked against
 * the server's JSON Schema before the call, their results turned into bounded text.
 *
 * @module
 */
import type { SchemaCompiler } from "../definition/schema_compiler.ts";
import { StepflowError } from "../errors.ts";
import { AGENT_TOOL_LIMITS, truncateOutput } from "../tools/agent_limits.ts";
import type { AnyTool, ArgIssue, ToolArgsSchema } from "../tools/types.ts";
import type { McpCallResult, McpConnection, McpToolInfo } from "./connection.ts";
import { mcpToolName } from "./tool_names.ts";

/** Tool names a model API accepts (Anthropic and OpenAI alike). */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The registry tool for one MCP tool, or a reason to skip it (a name a model API would refuse).
 * `compiler` compiles the server's argument schema (one per set of servers: ajv keeps what it
 * compiled).
 */
export function toRegistryTool(
  connection: McpConnection,
  info: McpToolInfo,
  compiler: SchemaCompiler,
): { tool: AnyTool } | { skipped: string } {
  const name = mcpToolName(connection.name, info.name);
  if (!TOOL_NAME.test(name)) {
    return {
      skipped:
        `${name}: the name must be at most 64 letters, digits, "-" or "_" for model APIs; the tool is not offered`,
    };
  }
  const jsonSchema = objectSchema(info.inputSchema);
  return {
    tool: {
      name,
      description: info.description || `${info.name} (MCP server ${connection.name})`,
      inputSchema: jsonSchemaArgs(jsonSchema, compiler),
      jsonSchema,
      readOnly: info.readOnly,
      // A tool that changes nothing can run twice; so can one the server says is idempotent.
      idempotent: info.readOnly || info.idempotent,
      // Tool plans and QPlan scripts ask before a tool that may destroy something (see
      // mcpNeedsApproval); agent steps decide by their permission rules instead.
      ...(mcpNeedsApproval(info)
        ? {
          needsApproval: () => "MCP tool not marked read-only or non-destructive",
        }
        : {}),
      async execute(args: Record<string, unknown>, ctx) {
        const reportProgress = ctx.reportProgress;
        const result = await connection.callTool(info.name, args, {
          signal: ctx.signal,
          onProgress: reportProgress
            ? (progress, total, message) =>
              reportProgress(total ? Math.min(100, (progress / total) * 100) : 0, message)
            : undefined,
        });
        const text = resultText(result);
        if (result.isError) {
          throw new StepflowError("MCP_TOOL_ERROR", `${name} failed: ${text || "(no message)"}`, {
            details: { server: connection.name, tool: info.name },
          });
        }
        return text;
      },
    },
  };
}

/**
 * Whether a tool-plan step or QPlan action calling this MCP tool needs an approval: unless the
 * server marks it read-only (`readOnlyHint`) or not destructive (`destructiveHint: false`, a tool
 * that only adds). MCP's default for a tool without annotations is "may destroy", so it asks.
 */
export function mcpNeedsApproval(info: Pick<McpToolInfo, "readOnly" | "destructive">): boolean {
  return !info.readOnly && info.destructive;
}

/**
 * A tool result as text a model reads: text blocks as they are, images and audio named with their
 * size (not dumped), embedded resources by their text or URI; bounded like the agent tools' results.
 * Structured content stands in when there is no text.
 */
export function resultText(result: McpCallResult): string {
  const parts: string[] = [];
  for (const block of result.content) {
    if (block.type === "text" && typeof block.text === "string") parts.push(block.text);
    else if (block.type === "image" || block.type === "audio") {
      const bytes = typeof block.data === "string" ? Math.floor(block.data.length * 3 / 4) : 0;
      parts.push(`[${block.type} ${block.mimeType ?? ""}, ${bytes} bytes, not shown]`);
    } else if (block.type === "resource" && block.resource) {
      const r = block.resource;
      parts.push(
        typeof r.text === "string"
          ? r.text
          : `[resource ${r.uri ?? ""} ${r.mimeType ?? ""}, binary]`,
      );
    } else if (block.type === "resource_link") parts.push(`[resource link ${block.uri ?? ""}]`);
    else parts.push(`[${String(block.type)} content]`);
  }
  if (parts.length === 0 && result.structuredContent !== undefined) {
    parts.push(JSON.stringify(result.structuredContent));
  }
  return truncateOutput(
    parts.join("\n"),
    AGENT_TOOL_LIMITS.resultChars,
    "ask the tool for less (a narrower query, a page or a limit argument)",
  );
}

function objectSchema(schema: Record<string, unknown>): Record<string, unknown> {
  return schema && typeof schema === "object" && schema.type === "object"
    ? schema
    : { type: "object" };
}

/** Validates arguments with ajv against the server's schema (any object when it does not compile). */
function jsonSchemaArgs(
  schema: Record<string, unknown>,
  compiler: SchemaCompiler,
): ToolArgsSchema<Record<string, unknown>> {
  let validate: ((value: unknown) => boolean) & { errors?: unknown } | undefined;
  try {
    validate = compiler(schema);
  } catch {
    validate = undefined;
  }
  return {
    safeParse(value: unknown) {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        return failure([{ path: [], message: "expected an object of arguments" }]);
      }
      if (!validate || validate(value)) {
        return { success: true, data: value as Record<string, unknown> };
      }
      const errors = (validate.errors ?? []) as { instancePath: string; message?: string }[];
      return failure(
        errors.slice(0, 20).map((e) => ({
          path: e.instancePath.split("/").filter(Boolean),
          message: e.message ?? "invalid",
        })),
      );
    },
  };
}

function failure(issues: ArgIssue[]): { success: false; error: { issues: readonly ArgIssue[] } } {
  return { success: false, error: { issues } };
}
