/**
 * The SDKs stay out of the static module graph (importing stepflow loads none of them), and the
 * specifiers the backends load at run time match the deno.json aliases.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { SDK_SPECIFIERS } from "../../src/llm/sdk_loader.ts";
import { OTEL_SDK_SPECIFIERS } from "../../src/cli/kit/telemetry_export.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
// The MCP SDK too: the MCP client is imported only when an agent has servers.
const SDK_PACKAGES = [
  "@anthropic-ai/sdk",
  "openai",
  "@anthropic-ai/claude-agent-sdk",
  "@modelcontextprotocol/sdk",
  // The OpenTelemetry SDK and exporters: loaded only when OTEL_* variables ask for an export.
  ...Object.keys(OTEL_SDK_SPECIFIERS),
];

async function moduleGraph(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: { specifier: string }[];
    packages?: Record<string, string>;
  };
  return [...info.modules.map((m) => m.specifier), ...Object.keys(info.packages ?? {})];
}

for (
  const entry of [
    "mod.ts",
    "src/llm/mod.ts",
    "src/llm/factory.ts",
    "src/cli/run_agent.ts",
    // MCP tools in plans and scripts: the client is loaded only when a server starts.
    "src/plan/mod.ts",
    "src/qplan/mod.ts",
    "src/cli/run_plan.ts",
    "src/cli/qplan.ts",
    "src/cli/worker.ts",
    "src/cli/eval.ts",
  ]
) {
  Deno.test(`deno info ${entry} lists no SDK`, async () => {
    const graph = await moduleGraph(entry);
    assert.ok(graph.some((s) => s.includes("src/llm/claude_code.ts") || entry !== "mod.ts"));
    for (const pkg of SDK_PACKAGES) {
      const hits = graph.filter((s) =>
        s.includes(`npm:/${pkg}@`) || s.includes(`npm:${pkg}@`) || s === pkg
      );
      assert.deepEqual(hits, [], `${entry} pulls in ${pkg}`);
    }
  });
}

Deno.test("the SDK specifiers loaded at run time equal the deno.json aliases", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)) as {
    imports: Record<string, string>;
  };
  for (const pkg of Object.keys(SDK_SPECIFIERS)) {
    assert.equal(
      SDK_SPECIFIERS[pkg as keyof typeof SDK_SPECIFIERS],
      config.imports[pkg],
      `src/llm/sdk_loader.ts and deno.json disagree on ${pkg}`,
    );
  }
});

Deno.test("the OpenTelemetry SDK specifiers loaded at run time equal the deno.json aliases", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)) as {
    imports: Record<string, string>;
  };
  for (const [name, specifier] of Object.entries(OTEL_SDK_SPECIFIERS)) {
    assert.equal(
      specifier,
      config.imports[name],
      `telemetry_export.ts and deno.json disagree on ${name}`,
    );
  }
});
