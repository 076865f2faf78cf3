/**
 * The zero-latency fan-out side by side: stepflow (`fan_out_stepflow.ts`), Mastra `.foreach` and
 * LangGraph.js `Send` — the same parent mapping N items to a child sub-flow (one step: a prompt
 * from a template, one call to a model that answers at once, the answer checked against an output
 * schema), 4 at once, the results in item order — each with and without its store. The peers'
 * drivers live in scratch folders with the peers installed from npm (they are not dependencies of
 * this project); docs/performance.md ("Fan-out side by side") describes them.
 *
 * Every configuration runs in a process of its own, one after another in a rotating order, REPEATS
 * times, so that all of them share the machine's load; the figures are the medians.
 *
 * ```sh
 * deno run -A bench/peers/fan_out_side_by_side.ts --mastra DIR --langgraph DIR \
 *   [--items 100,1000] [--repeats 5] [--only stepflow,mastra,langgraph]
 * ```
 *
 * `--mastra DIR`: a folder with `fanout.ts` and `@mastra/core` + `@mastra/libsql` in its
 * node_modules; `--langgraph DIR`: a folder with `fanout.ts` and `@langchain/langgraph`,
 * `@langchain/langgraph-checkpoint-sqlite` and `libsql` in its node_modules. Prints one line per
 * process as it ends, then a Markdown table.
 *
 * @module
 */
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    mastra: { type: "string" },
    langgraph: { type: "string" },
    items: { type: "string", default: "100,1000" },
    repeats: { type: "string", default: "5" },
    only: { type: "string", default: "stepflow,mastra,langgraph" },
  },
});
const tools = new Set(values.only.split(","));
for (const peer of ["mastra", "langgraph"] as const) {
  if (tools.has(peer) && !values[peer]) {
    throw new Error(`--${peer} DIR is needed (or leave ${peer} out of --only).`);
  }
}
const sizes = values.items.split(",").map(Number);
const repeats = Number(values.repeats);
if (sizes.some((n) => !Number.isInteger(n) || n < 1) || !(repeats >= 1)) {
  throw new Error("--items takes whole numbers ≥ 1 separated by commas; --repeats a number ≥ 1.");
}

interface Config {
  tool: string;
  store: string;
  cwd: string;
  script: string;
}
const stepflowScript = new URL("./fan_out_stepflow.ts", import.meta.url).pathname;
const configs: Config[] = [
  ...["memory", "file-process", "file"].map((store) => ({
    tool: "stepflow",
    store,
    cwd: Deno.cwd(),
    script: stepflowScript,
  })),
  ...["none", "memory", "libsql"].map((store) => ({
    tool: "mastra",
    store,
    cwd: values.mastra ?? "",
    script: "fanout.ts",
  })),
  ...["none", "memory", "sqlite"].map((store) => ({
    tool: "langgraph",
    store,
    cwd: values.langgraph ?? "",
    script: "fanout.ts",
  })),
].filter((c) => tools.has(c.tool));

interface Sample {
  tool: string;
  store: string;
  items: number;
  wallMs: number;
  cpuMs: number;
}

async function measure(config: Config, items: number): Promise<Sample> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", config.script, config.store, String(items), "1"],
    cwd: config.cwd,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) {
    throw new Error(`${config.tool} ${config.store} ${items} items failed (exit ${out.code}).`);
  }
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  return JSON.parse(lines[lines.length - 1]) as Sample;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const samples: Sample[] = [];
for (let r = 0; r < repeats; r++) {
  for (const items of sizes) {
    // Rotate the order each repeat so that no configuration always runs first or last.
    const order = configs.map((_, i) => configs[(i + r) % configs.length]);
    for (const config of order) {
      const s = await measure(config, items);
      samples.push(s);
      console.log(
        `${s.tool} ${s.store} ${s.items} items: ${s.wallMs.toFixed(0)} ms wall, ` +
          `${s.cpuMs.toFixed(0)} ms CPU (repeat ${r + 1}/${repeats})`,
      );
    }
  }
}

console.log(
  `\nmedians of ${repeats} processes each; per child = the run's time / items ` +
    `(load average at the end: ${Deno.loadavg().map((x) => x.toFixed(1)).join(", ")})\n`,
);
console.log("| tool | store | items | wall | per child | CPU per child |");
console.log("| --- | --- | ---: | ---: | ---: | ---: |");
for (const items of sizes) {
  for (const c of configs) {
    const mine = samples.filter((s) =>
      s.tool === c.tool && s.store === c.store && s.items === items
    );
    const wall = median(mine.map((s) => s.wallMs));
    const cpu = median(mine.map((s) => s.cpuMs));
    console.log(
      `| ${c.tool} | ${c.store} | ${items} | ${wall.toFixed(0)} ms | ` +
        `${(wall / items * 1000).toFixed(0)} µs | ${(cpu / items * 1000).toFixed(0)} µs |`,
    );
  }
}
