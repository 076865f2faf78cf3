/**
 * `Glob` and `Grep` on a 10,000-file tree (100 folders of 100 source files of ~1 kB, one file in
 * a hundred holding the searched word), called as a step calls them — the path judged, each file
 * the search comes across judged by the step's rules (`allowedTools: ["Glob", "Grep"]` plus a
 * `disallowedTools` rule on `.env`) — against a bare walk (`Deno.readDir`, and for Grep
 * `Deno.readTextFile` and the regular expression on each line) and `rg` (ripgrep, a process per
 * search) when it is installed.
 */
import { parsePermissionRules } from "../src/definition/permission_rule.ts";
import { createGlobTool, createGrepTool } from "../src/tools/agent_search.ts";
import { pathGuard, reachCallPaths } from "../src/tools/call_paths.ts";
import { ToolRegistry } from "../src/tools/registry.ts";

const DIRS = 100;
const FILES = 100;

const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "stepflow-search-bench-" }));
const body = Array.from(
  { length: 30 },
  (_, i) => `export function f${i}(x: number): number {\n  return x + ${i};\n}`,
).join("\n");
for (let d = 0; d < DIRS; d++) {
  await Deno.mkdir(`${root}/src/d${d}`, { recursive: true });
  for (let f = 0; f < FILES; f++) {
    const marked = (d * FILES + f) % 100 === 0 ? "\n// needle here\n" : "";
    await Deno.writeTextFile(`${root}/src/d${d}/f${f}.ts`, body + marked);
  }
}
await Deno.writeTextFile(`${root}/.env`, "SECRET=1\n");
globalThis.addEventListener("unload", () => Deno.removeSync(root, { recursive: true }));

const tools = new ToolRegistry().register(createGlobTool()).register(createGrepTool());
const policy = {
  mode: "default" as const,
  allow: parsePermissionRules(["Glob", "Grep"]).rules,
  deny: parsePermissionRules(["Read(./.env)"]).rules,
};

/** The tool called as the tool loop calls it: its path resolved once and judged. */
async function call(tool: "Glob" | "Grep", args: Record<string, unknown>): Promise<string> {
  const paths = (await reachCallPaths(tool, args, root))!;
  return await tools.invoke(tool, args, {
    workspaceRoot: root,
    paths: pathGuard(policy, root, tool, paths),
  }) as string;
}

/** Every file below `dir`, as a bare program walks it. */
async function bareWalk(dir: string, out: string[] = []): Promise<string[]> {
  for await (const entry of Deno.readDir(dir)) {
    const full = `${dir}/${entry.name}`;
    if (entry.isDirectory) await bareWalk(full, out);
    else if (entry.isFile) out.push(full);
  }
  return out;
}

const rg = await new Deno.Command("rg", { args: ["--version"], stdout: "null", stderr: "null" })
  .output().then((o) => o.success, () => false);
if (!rg) console.error("rg benches skipped: ripgrep is not installed (apt-get install ripgrep).");

async function ripgrep(args: string[]): Promise<string> {
  const out = await new Deno.Command("rg", { args, cwd: root, stdout: "piped" }).output();
  return new TextDecoder().decode(out.stdout);
}

Deno.bench({
  name: `bare walk, names ending in .ts (${DIRS * FILES} files)`,
  group: "Glob **/*.ts",
  baseline: true,
  async fn() {
    const found = (await bareWalk(root)).filter((f) => f.endsWith(".ts"));
    if (found.length !== DIRS * FILES) throw new Error(`found ${found.length}`);
  },
});
Deno.bench({
  name: "Glob **/*.ts",
  group: "Glob **/*.ts",
  async fn() {
    const out = await call("Glob", { pattern: "**/*.ts" });
    if (!out.includes(`(${DIRS * FILES} files matched`)) throw new Error(out.slice(-200));
  },
});
if (rg) {
  Deno.bench({
    name: "rg --files -g '*.ts' (a process)",
    group: "Glob **/*.ts",
    async fn() {
      const out = await ripgrep(["--files", "-g", "*.ts"]);
      if (out.split("\n").length !== DIRS * FILES + 1) throw new Error("rg found another count");
    },
  });
}

const needle = /needle/;
/** The result's lines naming a file (the rest are notes: the hidden `.env`). */
const hits = (out: string) => out.split("\n").filter((line) => line.startsWith("src/")).length;
Deno.bench({
  name: "bare walk + readTextFile + a RegExp on each line",
  group: "Grep needle",
  baseline: true,
  async fn() {
    const found: string[] = [];
    for (const file of await bareWalk(root)) {
      const text = await Deno.readTextFile(file);
      if (text.split(/\r?\n/).some((line) => needle.test(line))) found.push(file);
    }
    if (found.length !== DIRS * FILES / 100) throw new Error(`found ${found.length}`);
  },
});
Deno.bench({
  name: "Grep needle (files_with_matches)",
  group: "Grep needle",
  async fn() {
    const out = await call("Grep", { pattern: "needle" });
    if (hits(out) !== DIRS * FILES / 100) throw new Error(out.slice(-300));
  },
});
Deno.bench({
  name: "Grep needle (content, -n)",
  group: "Grep needle",
  async fn() {
    const out = await call("Grep", { pattern: "needle", output_mode: "content" });
    if (hits(out) !== DIRS * FILES / 100) throw new Error(out.slice(-300));
  },
});
if (rg) {
  Deno.bench({
    name: "rg -l needle (a process)",
    group: "Grep needle",
    async fn() {
      const out = await ripgrep(["-l", "needle"]);
      if (out.split("\n").length !== DIRS * FILES / 100 + 1) {
        throw new Error("rg found another count");
      }
    },
  });
}
