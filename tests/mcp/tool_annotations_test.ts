/**
 * What an MCP tool's annotations mean to stepflow: `readOnlyHint` makes it read-only (and safe to
 * run twice), `idempotentHint` alone makes it safe to run twice — a resumed step runs such a call
 * again when it was interrupted, and a tool plan re-runs such a step.
 */
import assert from "node:assert/strict";
import { createSchemaCompiler } from "../../src/definition/schema_compiler.ts";
import type { McpConnection, McpToolInfo } from "../../src/mcp/connection.ts";
import { toRegistryTool } from "../../src/mcp/tools.ts";

const connection = { name: "notes" } as unknown as McpConnection;

function tool(readOnly: boolean, idempotent: boolean) {
  const info: McpToolInfo = {
    name: "t",
    description: "",
    inputSchema: { type: "object" },
    readOnly,
    idempotent,
    destructive: true,
  };
  const made = toRegistryTool(connection, info, createSchemaCompiler());
  assert.ok("tool" in made);
  return { readOnly: made.tool.readOnly, idempotent: made.tool.idempotent };
}

Deno.test("MCP annotations: readOnlyHint and idempotentHint both make a tool safe to run twice", () => {
  assert.deepEqual(tool(true, false), { readOnly: true, idempotent: true });
  assert.deepEqual(tool(false, true), { readOnly: false, idempotent: true });
  assert.deepEqual(tool(false, false), { readOnly: false, idempotent: false });
});
