/**
 * Runs the whole test suite and ends with the plain line `N passed, M failed` that CI reads.
 * The exit code is deno test's own.
 *
 * Why the files are grouped: `deno test` gives every test file an isolate of its own and loads
 * its whole module graph again (~0.4 s of CPU per file, ~50 s for the suite on two cores). Here
 * the folders of tests/ are dealt into as many isolates as run at once (`DENO_JOBS`, default: the
 * cores + 2, since many tests wait on a process, a server or a browser): a generated entry module
 * per isolate imports its folders' test files, whose tests then run one file after the other
 * exactly as they would alone. The folders are dealt by their time in `.ci/test_times.json`,
 * longest first, each to the isolate with the least time so far, so the isolates end together.
 * Type checking is skipped because `deno task check`, which runs first, has already checked every
 * file. Failures still point at the real test file.
 *
 * Extra arguments are passed to `deno test` (e.g. `--filter NAME`), except `--record-times`: it
 * runs each folder in an isolate of its own and rewrites `.ci/test_times.json` with the time each
 * folder took (from its first to its last line of output). Re-record when a folder's time changes
 * much or a folder is added (an unmeasured folder counts as the slowest).
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

/** Where the measured time of each folder is kept: the slowest folders start first. */
const TIMES_FILE = join(ROOT, ".ci", "test_times.json");

/** Seconds per folder from the last `--record-times` run; a folder not listed counts as slowest. */
function readTimes(): Map<string, number> {
  try {
    const data = JSON.parse(Deno.readTextFileSync(TIMES_FILE)) as Record<string, number>;
    return new Map(Object.entries(data).filter(([, seconds]) => typeof seconds === "number"));
  } catch {
    return new Map();
  }
}

const recordTimes = Deno.args.includes("--record-times");
const testArgs = Deno.args.filter((arg) => arg !== "--record-times");
// Three or four isolates at once on two cores: many tests wait on a process, a server or a browser.
const jobs = Number(Deno.env.get("DENO_JOBS")) || Math.max(2, navigator.hardwareConcurrency + 2);
const groups = groupByFolder(findTestFiles(TESTS));
const times = readTimes();
// A folder not measured yet counts as the slowest one, so it starts first.
const slowest = Math.max(1, ...times.values());
const expected = (folder: string) => times.get(folder) ?? slowest;

/**
 * The folders dealt into `count` isolates, longest first, each to the isolate with the least
 * expected time so far (longest-processing-time first): every isolate ends at about the same
 * moment, and no isolate loads the module graph for a folder of a few quick tests alone.
 */
function packFolders(count: number): string[][] {
  const bins = Array.from({ length: count }, () => ({ folders: [] as string[], total: 0 }));
  for (const folder of [...groups.keys()].sort((a, b) => expected(b) - expected(a))) {
    const bin = bins.reduce((least, b) => (b.total < least.total ? b : least));
    bin.folders.push(folder);
    bin.total += expected(folder);
  }
  return bins.filter((bin) => bin.folders.length > 0).map((bin) => bin.folders);
}

/**
 * A folder that alone would take longer than an even share of the suite (`tests/cli`: its files
 * spawn the CLI one after another) is dealt into parts of its files, `cli~1`, `cli~2`…, each
 * expected to take its share of the folder's time, so the parts run at once in several isolates.
 * Its test files keep running one after the other inside each part.
 */
function splitSlowFolders(count: number): void {
  const share = [...groups.keys()].reduce((sum, folder) => sum + expected(folder), 0) / count;
  for (const [folder, files] of [...groups]) {
    const parts = Math.min(files.length, Math.ceil(expected(folder) / (share * 0.75)));
    if (parts < 2) continue;
    groups.delete(folder);
    for (let i = 0; i < parts; i++) {
      const part = files.filter((_, n) => n % parts === i);
      groups.set(`${folder}~${i + 1}`, part);
      times.set(`${folder}~${i + 1}`, expected(folder) / parts);
    }
  }
}

// --record-times measures each folder in an isolate of its own; a normal run packs them.
if (!recordTimes) splitSlowFolders(jobs);
const isolates = recordTimes ? [...groups.keys()].map((folder) => [folder]) : packFolders(jobs);
const entryDir = Deno.makeTempDirSync({ prefix: "stepflow-test-" });
const entries = isolates.map((folders) => {
  const entry = join(entryDir, `${folders.join("+").replaceAll("~", "-")}_test.ts`);
  const files = folders.flatMap((folder) => groups.get(folder)!);
  const imports = files.map((file) => `import ${JSON.stringify(pathToFileURL(file).href)};`);
  Deno.writeTextFileSync(entry, `// tests/{${folders.join(",")}}\n${imports.join("\n")}\n`);
  return entry;
});

const args = [
  "test",
  "-A",
  "--no-check",
  "--parallel",
  "--config",
  join(ROOT, "deno.json"),
  ...testArgs,
  ...entries,
];
const child = new Deno.Command(Deno.execPath(), {
  args,
  cwd: ROOT,
  stdout: "piped",
  stderr: "inherit",
  env: { NO_COLOR: "1", DENO_JOBS: String(jobs) },
}).spawn();

const decoder = new TextDecoder();
let tail = "";
// When each folder printed its first and its last line: its time in this run.
const span = new Map<string, { first: number; last: number }>();
const started = performance.now();
let pending = "";
for await (const chunk of child.stdout) {
  await Deno.stdout.write(chunk);
  const text = decoder.decode(chunk, { stream: true });
  tail = (tail + text).slice(-4000);
  const lines = (pending + text).split("\n");
  pending = lines.pop() ?? "";
  const now = (performance.now() - started) / 1000;
  for (const line of lines) {
    const folder = /\/([\w-]+)_test\.ts\b/.exec(line)?.[1];
    if (folder === undefined || !groups.has(folder)) continue;
    const seen = span.get(folder);
    if (seen) seen.last = now;
    else span.set(folder, { first: now, last: now });
  }
}
const status = await child.status;
Deno.removeSync(entryDir, { recursive: true });
if (recordTimes) {
  const measured = Object.fromEntries(
    [...span]
      .map(([folder, { first, last }]) => [folder, Math.round((last - first) * 10) / 10] as const)
      .sort((a, b) => b[1] - a[1]),
  );
  Deno.writeTextFileSync(TIMES_FILE, JSON.stringify(measured, null, 2) + "\n");
  console.error(`Recorded each folder's time in ${relative(ROOT, TIMES_FILE)}.`);
}
const summary = /(?:ok|FAILED) \| (\d+) passed(?: \([^)]*\))? \| (\d+) failed/.exec(tail);
if (summary) console.log(`\n${summary[1]} passed, ${summary[2]} failed`);
else console.log("\n0 passed, 1 failed");
Deno.exit(status.code);
