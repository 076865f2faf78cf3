/**
 * Runs the whole test suite and ends with the plain line `N passed, M failed` that CI reads.
 * The exit code is deno test's own.
 *
 * Why the files are grouped: `deno test` gives every test file an isolate of its own and loads
 * its whole module graph again (~0.4 s of CPU per file, ~50 s for the suite on two cores). Here
 * each folder of tests/ runs in one isolate instead: a generated entry module per folder imports
 * that folder's test files, so their tests run one file after the other exactly as they would
 * alone, and the folders run in parallel. Type checking is skipped because `deno task check`, which
 * runs first, has already checked every file. Failures still point at the real test file.
 *
 * Extra arguments are passed to `deno test` (e.g. `--filter NAME`).
 *
 * @module
 */
import { join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = resolve(fileURLToPath(new URL("../", import.meta.url)));
const TESTS = join(ROOT, "tests");

/** Every `*_test.ts` file under `dir`, sorted. */
function findTestFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of Deno.readDirSync(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) found.push(...findTestFiles(path));
    else if (entry.isFile && entry.name.endsWith("_test.ts")) found.push(path);
  }
  return found.sort();
}

/** The test files grouped by their first folder under tests/ ("tests" for files at the top). */
function groupByFolder(files: string[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const file of files) {
    const parts = relative(TESTS, file).split("/");
    const key = parts.length > 1 ? parts[0] : "tests";
    groups.set(key, [...(groups.get(key) ?? []), file]);
  }
  return groups;
}

/**
 * Weight of a group for scheduling: the largest groups start first so that the last one to
 * start is a short one. The byte size of the files is a rough but stable stand-in for their time.
 */
function weight(files: string[]): number {
  return files.reduce((sum, file) => sum + Deno.statSync(file).size, 0);
}

const groups = groupByFolder(findTestFiles(TESTS));
const entryDir = Deno.makeTempDirSync({ prefix: "stepflow-test-" });
const entries: string[] = [];
for (const [folder, files] of [...groups].sort((a, b) => weight(b[1]) - weight(a[1]))) {
  const entry = join(entryDir, `${folder}_test.ts`);
  const imports = files.map((file) => `import ${JSON.stringify(pathToFileURL(file).href)};`);
  Deno.writeTextFileSync(
    entry,
    `// tests/${folder}: ${files.length} file(s)\n${imports.join("\n")}\n`,
  );
  entries.push(entry);
}

// Three folders at once on two cores: many tests wait on a child process, a server or a browser.
const jobs = Deno.env.get("DENO_JOBS") ?? String(Math.max(2, navigator.hardwareConcurrency + 1));
const args = [
  "test",
  "-A",
  "--no-check",
  "--parallel",
  "--config",
  join(ROOT, "deno.json"),
  ...Deno.args,
  ...entries,
];
const child = new Deno.Command(Deno.execPath(), {
  args,
  cwd: ROOT,
  stdout: "piped",
  stderr: "inherit",
  env: { NO_COLOR: "1", DENO_JOBS: jobs },
}).spawn();

const decoder = new TextDecoder();
let tail = "";
for await (const chunk of child.stdout) {
  await Deno.stdout.write(chunk);
  tail = (tail + decoder.decode(chunk, { stream: true })).slice(-4000);
}
const status = await child.status;
Deno.removeSync(entryDir, { recursive: true });
const summary = /(?:ok|FAILED) \| (\d+) passed(?: \([^)]*\))? \| (\d+) failed/.exec(tail);
if (summary) console.log(`\n${summary[1]} passed, ${summary[2]} failed`);
else console.log("\n0 passed, 1 failed");
Deno.exit(status.code);
