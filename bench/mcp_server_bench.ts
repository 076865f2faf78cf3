/**
 * What `deno task mcp` adds around a run: the same scripted haiku run (two iterations, four
 * scripted calls, the file store) in-process, and as a `run_haiku` tool call over stdio through the
 * official client SDK against the real server process; and a `tools/list` round trip (which loads
 * every agent under `.agent/`). Target: the MCP call within 2 ms of the in-process run.
 *
 * The server ends when this process ends (its stdin closes).
 */
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { loadAgentDefinition } from "../src/definition/load.ts";
import { StepFlowRunner } from "../src/flow/runner.ts";
import { createBackend } from "../src/llm/factory.ts";
import { selectRunStore } from "../src/store/select.ts";

const REPO = new URL("../", import.meta.url).pathname;
const dir = await Deno.makeTempDir({ prefix: "stepflow-mcp-bench-" });
await copy(join(REPO, ".agent", "haiku"), join(dir, ".agent", "haiku"));
const script = join(dir, ".agent", "haiku", "demo.script.yaml");
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));

const client = new Client({ name: "bench", version: "1.0.0" });
await client.connect(
  new StdioClientTransport({
    command: Deno.execPath(),
    args: ["run", "-A", join(REPO, "src", "cli", "mcp.ts"), "--script", script],
    cwd: dir,
    env: { ...Deno.env.toObject(), INIT_CWD: dir, NO_COLOR: "1" },
  }),
);

Deno.bench(
  "in-process: scripted haiku run (file store)",
  { group: "run", baseline: true },
  async () => {
    const definition = await loadAgentDefinition("haiku", { cwd: dir });
    const backend = await createBackend({ name: "scripted", script });
    const store = selectRunStore(definition, { cwd: dir, store: "file" });
    const result = await new StepFlowRunner(definition, { backend, store }).run({
      args: { topic: "bench" },
      cwd: dir,
    });
    if (!result.success) throw new Error(result.completionReason);
  },
);

Deno.bench("MCP stdio: run_haiku tool call", { group: "run" }, async () => {
  const result = await client.callTool({ name: "run_haiku", arguments: { topic: "bench" } });
  if (result.isError) throw new Error(JSON.stringify(result.content));
});

Deno.bench("MCP stdio: tools/list", async () => {
  await client.listTools();
});

async function copy(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (entry.isDirectory) await copy(join(from, entry.name), join(to, entry.name));
    else if (entry.isFile) await Deno.copyFile(join(from, entry.name), join(to, entry.name));
  }
}
