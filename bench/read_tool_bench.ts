/**
 * The `Read` tool's cost per call in the tool loop — its path resolved and judged by the rules,
 * the file opened without following a final link, the kernel's name of the opened file checked,
 * the lines numbered — against a bare tool that does one `realpath` and `Deno.readTextFile`
 * (target: ≤ 2×). Each bench is a step of 1,000 calls of a 3-byte file, 32 a turn, with a
 * zero-latency model: divide by 1,000.
 */
import { z } from "zod";
import { parsePermissionRules } from "../src/definition/permission_rule.ts";
import { completeWithTools } from "../src/engine/tool_loop.ts";
import { createReadTool } from "../src/tools/agent_files.ts";
import { ToolRegistry } from "../src/tools/registry.ts";
import { BENCH_REQUEST, BYPASS_POLICY } from "./tool_loop_fixtures.ts";
import type { ToolTurnBackend, ToolTurnRequest, ToolTurnResponse } from "../src/llm/tool_turn.ts";

const CALLS = 1_000;
const PER_TURN = 32;

const workspace = await Deno.realPath(await Deno.makeTempDir({ prefix: "stepflow-read-bench-" }));
await Deno.mkdir(`${workspace}/files`);
for (let i = 0; i < 16; i++) await Deno.writeTextFile(`${workspace}/files/f${i}.txt`, "abc");
globalThis.addEventListener("unload", () => Deno.removeSync(workspace, { recursive: true }));

/** A model that asks to read `files/f<n%16>.txt`, 32 calls a turn, then answers. */
class ReadingModel implements ToolTurnBackend {
  readonly name = "reading";
  made = 0;
  constructor(readonly tool: string) {}
  toolTurn(_request: ToolTurnRequest): Promise<ToolTurnResponse> {
    if (this.made >= CALLS) return Promise.resolve({ text: "done", toolCalls: [] });
    const n = Math.min(PER_TURN, CALLS - this.made);
    const toolCalls = Array.from({ length: n }, (_, i) => ({
      id: `c${this.made + i}`,
      name: this.tool,
      arguments: { file_path: `files/f${(this.made + i) % 16}.txt` },
    }));
    this.made += n;
    return Promise.resolve({ text: "", toolCalls });
  }
}

const bare = new ToolRegistry().register({
  name: "read_bare",
  description: "Reads a file",
  inputSchema: z.object({ file_path: z.string() }).strict(),
  execute: async (args, ctx) => {
    const real = await Deno.realPath(`${ctx.workspaceRoot}/${args.file_path}`);
    return await Deno.readTextFile(real);
  },
});
const read = new ToolRegistry().register(createReadTool());
// As a step with `allowedTools: ["Read"]` runs it.
const readPolicy = {
  mode: "default" as const,
  allow: parsePermissionRules(["Read"]).rules,
  deny: [],
};

Deno.bench({
  name: `bare tool (realpath + Deno.readTextFile): ${CALLS} calls`,
  group: "read a 3-byte file",
  baseline: true,
  async fn() {
    await completeWithTools({ ...BENCH_REQUEST, cwd: workspace }, {
      backend: new ReadingModel("read_bare"),
      tools: bare,
      offered: ["read_bare"],
      policy: BYPASS_POLICY,
      maxToolTurns: CALLS,
    });
  },
});

Deno.bench({
  name: `Read (allowedTools: ["Read"]): ${CALLS} calls`,
  group: "read a 3-byte file",
  async fn() {
    await completeWithTools({ ...BENCH_REQUEST, cwd: workspace }, {
      backend: new ReadingModel("Read"),
      tools: read,
      offered: ["Read"],
      policy: readPolicy,
      maxToolTurns: CALLS,
    });
  },
});
