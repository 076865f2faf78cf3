/**
 * Lists import circles in src/: between files (a imports b imports … a) and between folders
 * (src/x → src/y → … → src/x, leaf files at src/ root counting as their own layer). Exits 1 when
 * there is one, so `deno task check` keeps the layers one-way (docs/architecture.md).
 *
 * Reads every `import … from` / `export … from` / `import("…")` with a relative specifier, type-only
 * imports included (they tie the files together as much as the others do).
 *
 * Usage: `deno run --allow-read tools/import_cycles.ts [root]` (default: src).
 *
 * @module
 */
import { dirname, join, relative, resolve, sep } from "node:path";

const SPECIFIER =
  /(?:^|[\s;}])(?:import|export)\s[^;]*?\sfrom\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

/** `source` with its comments blanked out (JSDoc examples import their own file). */
export function withoutComments(source: string): string {
  let out = "";
  let quote = "";
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (quote) {
      out += c;
      if (c === "\\") out += source[++i] ?? "";
      else if (c === quote) quote = "";
      continue;
    }
    if (c === "/" && source[i + 1] !== "/" && source[i + 1] !== "*" && startsRegex(out)) {
      // A regular expression literal: copied whole, so the quotes in it open no string.
      let inClass = false;
      out += c;
      for (i++; i < source.length && source[i] !== "\n"; i++) {
        const r = source[i];
        out += r;
        if (r === "\\") out += source[++i] ?? "";
        else if (r === "[") inClass = true;
        else if (r === "]") inClass = false;
        else if (r === "/" && !inClass) break;
      }
      continue;
    }
    if (c === '"' || c === "'" || c === "`") quote = c;
    else if (c === "/" && source[i + 1] === "/") {
      while (i < source.length && source[i] !== "\n") i++;
      out += "\n";
      continue;
    } else if (c === "/" && source[i + 1] === "*") {
      const end = source.indexOf("*/", i + 2);
      i = end === -1 ? source.length : end + 1;
      out += " ";
      continue;
    }
    out += c;
  }
  return out;
}

/** True when a `/` after `before` starts a regular expression rather than a division. */
function startsRegex(before: string): boolean {
  const last = before.trimEnd().at(-1);
  return last === undefined || "(,=:[!&|?{};+-*%<>~^".includes(last) ||
    /\b(?:return|typeof|case|in|of)$/.test(before.trimEnd());
}

/** The relative imports of each .ts file under `root`, as paths relative to `root`. */
export async function importGraph(root: string): Promise<Map<string, string[]>> {
  const graph = new Map<string, string[]>();
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile && path.endsWith(".ts")) {
        const text = withoutComments(await Deno.readTextFile(path));
        const targets = new Set<string>();
        for (const m of text.matchAll(SPECIFIER)) {
          const spec = m[1] ?? m[2];
          if (!spec.startsWith(".")) continue;
          const target = relative(root, resolve(dirname(path), spec)).split(sep).join("/");
          if (!target.startsWith("..")) targets.add(target);
        }
        graph.set(relative(root, path).split(sep).join("/"), [...targets]);
      }
    }
  };
  await walk(root);
  return graph;
}

/** The strongly connected groups of more than one node (or with a self-edge), each sorted. */
export function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  let counter = 0;
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** The folder graph: `x` → `y` when a file in src/x imports one in src/y (root files: "(root)"). */
export function folderGraph(files: Map<string, string[]>): Map<string, string[]> {
  const folder = (file: string) => file.includes("/") ? file.slice(0, file.indexOf("/")) : "(root)";
  const graph = new Map<string, Set<string>>();
  for (const [file, targets] of files) {
    const from = folder(file);
    const edges = graph.get(from) ?? graph.set(from, new Set()).get(from)!;
    for (const target of targets) if (folder(target) !== from) edges.add(folder(target));
  }
  return new Map([...graph].map(([k, v]) => [k, [...v]]));
}

if (import.meta.main) {
  const root = Deno.args[0] ?? "src";
  const files = await importGraph(root);
  const fileCycles = cycles(files);
  const folderCycles = cycles(folderGraph(files));
  for (const c of fileCycles) console.log(`file circle: ${c.join(" ↔ ")}`);
  for (const c of folderCycles) console.log(`folder circle: ${c.join(" ↔ ")}`);
  if (fileCycles.length + folderCycles.length > 0) Deno.exit(1);
  console.log(`no import circle in ${root}/ (${files.size} files)`);
}
