/**
 * The tool loop where a user waits: over HTTP to a local OpenAI-compatible server
 * (`bench/chat_server.ts`, a process of its own), through the `openai` backend and the official
 * client — streamed (the default) against non-streamed, at 32 calls a turn and at one; the same
 * with the real `Read` tool (its path resolution, permission decision and checked open) against the
 * AI SDK with an `fs.readFile` tool over the same server; and a streamed answer written one byte
 * per write, at two sizes (the time must grow with the bytes, no faster).
 *
 * The AI SDK is not a dependency: its group runs when a bundle of it is found in the scratch
 * folder (`STEPFLOW_BENCH_AISDK`, default `/work/scratch/aisdk/aisdk_bundle.mjs`), and is skipped
 * otherwise. To make one:
 *
 * ```sh
 * mkdir -p /work/scratch/aisdk && cd /work/scratch/aisdk && npm init -y
 * npm install ai @ai-sdk/openai zod esbuild
 * printf 'export { generateText, streamText, tool, stepCountIs } from "ai";\nexport { createOpenAI } from "@ai-sdk/openai";\nexport { z } from "zod";\n' > entry.mjs
 * npx esbuild entry.mjs --bundle --format=esm --platform=node --outfile=aisdk_bundle.mjs \
 *   --banner:js='import { createRequire as __cr } from "node:module"; const require = __cr(import.meta.url);'
 * ```
 *
 * Each bench is one whole step (1,000 calls at 32 a turn, 100 at one a turn): divide by the calls
 * for the cost per call.
 */
import { z } from "zod";
import { parsePermissionRules } from "../src/definition/permission_rule.ts";
import { completeWithTools } from "../src/engine/tool_loop.ts";
import { OpenAiBackend } from "../src/llm/openai.ts";
import { createReadTool } from "../src/tools/agent_files.ts";
import { ToolRegistry } from "../src/tools/registry.ts";
import { type ChatServerScript, startChatServer } from "./chat_server.ts";
import { BENCH_REQUEST, BYPASS_POLICY } from "./tool_loop_fixtures.ts";

const MANY = 1_000;
const FEW = 100;
/** Each bench is a whole step (tenths of a second to seconds): a few samples each. */
const SAMPLES = { n: 8, warmup: 2 };

// The working folder of the Read benches: 16 files of 3 bytes.
const workspace = await Deno.makeTempDir({ prefix: "stepflow-http-bench-" });
await Deno.mkdir(`${workspace}/files`);
for (let i = 0; i < 16; i++) await Deno.writeTextFile(`${workspace}/files/f${i}.txt`, "abc");

const servers: AsyncDisposable[] = [];
async function server(script: ChatServerScript): Promise<string> {
  const started = await startChatServer(script);
  servers.push(started);
  return started.baseUrl;
}
globalThis.addEventListener("unload", () => {
  for (const s of servers) void s[Symbol.asyncDispose]();
  Deno.removeSync(workspace, { recursive: true });
});

const noopTools = new ToolRegistry().register({
  name: "noop",
  description: "Does nothing",
  inputSchema: z.object({ value: z.number() }).strict(),
  execute: () => "ok",
});
const readTools = new ToolRegistry().register(createReadTool());
// As a step with `allowedTools: ["Read"]` runs it: the rule is matched against the resolved path.
const readPolicy = {
  mode: "default" as const,
  allow: parsePermissionRules(["Read"]).rules,
  deny: [],
};

/** One step of the tool loop through the openai backend against `baseUrl`. */
function stepflowStep(
  baseUrl: string,
  stream: boolean,
  tool: "noop" | "Read",
  calls: number,
): () => Promise<void> {
  return async () => {
    const backend = new OpenAiBackend({ baseUrl, model: "bench-model", stream });
    const answer = await completeWithTools({ ...BENCH_REQUEST, cwd: workspace }, {
      backend,
      tools: tool === "noop" ? noopTools : readTools,
      offered: [tool],
      policy: tool === "noop" ? BYPASS_POLICY : readPolicy,
      maxToolTurns: calls + 1,
    });
    if (answer.text !== "done") throw new Error(`unexpected answer ${answer.text}`);
  };
}

for (const [perTurn, calls] of [[32, MANY], [1, FEW]] as const) {
  const script = { calls, perTurn, tool: "noop", args: "value" } as const;
  const url = await server(script);
  const group = `noop, ${perTurn} a turn`;
  Deno.bench({
    ...SAMPLES,
    name: `stepflow openai, not streamed: ${calls} no-op calls, ${perTurn} a turn`,
    group,
    baseline: true,
    fn: stepflowStep(url, false, "noop", calls),
  });
  Deno.bench({
    ...SAMPLES,
    name: `stepflow openai, streamed: ${calls} no-op calls, ${perTurn} a turn`,
    group,
    fn: stepflowStep(url, true, "noop", calls),
  });
}

const readUrl = await server({ calls: MANY, perTurn: 32, tool: "Read", args: "read" });
Deno.bench({
  ...SAMPLES,
  name: `stepflow openai + Read, not streamed: ${MANY} calls, 32 a turn`,
  group: "Read, 32 a turn",
  baseline: true,
  fn: stepflowStep(readUrl, false, "Read", MANY),
});
Deno.bench({
  ...SAMPLES,
  name: `stepflow openai + Read, streamed: ${MANY} calls, 32 a turn`,
  group: "Read, 32 a turn",
  fn: stepflowStep(readUrl, true, "Read", MANY),
});

// The AI SDK over the same server, with a tool that reads the file as a bare program would.
const aisdkPath = Deno.env.get("STEPFLOW_BENCH_AISDK") ?? "/work/scratch/aisdk/aisdk_bundle.mjs";
const aisdk = await import(`file://${aisdkPath}`).catch(() => undefined);
if (aisdk) {
  const { generateText, streamText, tool, stepCountIs, createOpenAI, z: aiZod } = aisdk;
  const provider = createOpenAI({ baseURL: readUrl, apiKey: "not-needed" });
  const tools = {
    Read: tool({
      description: "Read a file",
      inputSchema: aiZod.object({ file_path: aiZod.string() }),
      execute: ({ file_path }: { file_path: string }) =>
        Deno.readTextFile(`${workspace}/${file_path}`),
    }),
  };
  Deno.bench({
    ...SAMPLES,
    name: `AI SDK generateText + fs.readFile tool: ${MANY} calls, 32 a turn`,
    group: "Read, 32 a turn",
    async fn() {
      const result = await generateText({
        model: provider.chat("bench-model"),
        prompt: "Go.",
        tools,
        stopWhen: stepCountIs(MANY),
      });
      if (result.text !== "done") throw new Error(`unexpected answer ${result.text}`);
    },
  });
  Deno.bench({
    ...SAMPLES,
    name: `AI SDK streamText + fs.readFile tool: ${MANY} calls, 32 a turn`,
    group: "Read, 32 a turn",
    async fn() {
      const result = streamText({
        model: provider.chat("bench-model"),
        prompt: "Go.",
        tools,
        stopWhen: stepCountIs(MANY),
      });
      if (await result.text !== "done") throw new Error("unexpected answer");
    },
  });
} else {
  console.error(
    `AI SDK benches skipped: no bundle at ${aisdkPath} (see this file's header to make one).`,
  );
}

// One streamed answer of 2k and 8k characters of text (4-character pieces, ~100 bytes each on
// the wire: 50 and 200 kB), written one byte per write — the server's own writes are most of it.
for (const chars of [2_000, 8_000]) {
  const url = await server({
    calls: 0,
    perTurn: 1,
    tool: "noop",
    textChars: chars,
    writes: "byte",
  });
  Deno.bench({
    n: 4,
    warmup: 1,
    name: `streamed answer of ${chars} characters, one byte per write`,
    group: "one byte per write",
    ...(chars === 2_000 ? { baseline: true } : {}),
    async fn() {
      const backend = new OpenAiBackend({ baseUrl: url, model: "bench-model" });
      let seen = 0;
      const answer = await backend.toolTurn({ ...BENCH_REQUEST, messages: [], tools: [] }, {
        onText: (t) => void (seen += t.length),
      });
      if (answer.text.length !== chars || seen !== chars) throw new Error("text lost");
    },
  });
}
