/**
 * The docs are part of the product: a page that drifts from the code fails here.
 *
 * - every `console` block is run and must print what it claims (after normalising times and ids);
 * - every block marked `<!-- file: PATH -->` must equal that file;
 * - every relative link and anchor must resolve;
 * - pages keep to 100 columns outside tables, tables stay terminal-sized, every docs page has an
 *   up-to-date table of contents (`deno task docs` refreshes it).
 *
 * TypeScript blocks are type-checked by `deno check --doc-only` in `deno task check`.
 */
import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ERROR_CODES } from "../../src/error_codes.ts";
import {
  isTableRow,
  parseMarkdown,
  TOC_END,
  TOC_START,
  withTableOfContents,
} from "../../tools/markdown.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** Prose and code lines; wider lines wrap in a terminal and in review tools. */
const MAX_LINE = 100;
/** Table rows and code blocks (commands, program output): the width of a wide terminal. */
const MAX_TABLE_ROW = 120;

async function pages(): Promise<string[]> {
  const files = ["README.md", "CONTRIBUTING.md"];
  for await (const entry of Deno.readDir(join(ROOT, "docs"))) {
    if (entry.isFile && entry.name.endsWith(".md")) files.push(`docs/${entry.name}`);
  }
  return files.sort();
}

async function read(page: string): Promise<string> {
  return await Deno.readTextFile(join(ROOT, page));
}

Deno.test("docs: prose fits 100 columns; tables and code blocks fit a wide terminal", async () => {
  const problems: string[] = [];
  for (const page of await pages()) {
    const text = await read(page);
    const { codeLines } = parseMarkdown(text);
    text.split("\n").forEach((line, i) => {
      const width = [...line].length;
      // A table row or a program's output cannot be re-wrapped, only kept terminal-sized.
      const limit = isTableRow(line) || codeLines.has(i + 1) ? MAX_TABLE_ROW : MAX_LINE;
      if (width > limit) problems.push(`${page}:${i + 1}: ${width} columns (at most ${limit})`);
    });
  }
  assert.deepEqual(problems, [], problems.join("\n"));
});

Deno.test("docs: the README is a front page (at most 250 lines)", async () => {
  const lines = (await read("README.md")).split("\n").length;
  assert.ok(lines <= 250, `README.md has ${lines} lines; move reference material into docs/`);
});

Deno.test("docs: every docs page has an up-to-date table of contents", async () => {
  const stale: string[] = [];
  for (const page of await pages()) {
    if (!page.startsWith("docs/")) continue;
    const text = await read(page);
    if (!text.includes(TOC_START) || !text.includes(TOC_END)) stale.push(`${page}: no contents`);
    else if (withTableOfContents(text) !== text) stale.push(`${page}: contents out of date`);
  }
  assert.deepEqual(stale, [], `${stale.join("\n")}\nRun: deno task docs`);
});

Deno.test("docs: every relative link points at a file, and every anchor at a heading", async () => {
  const anchors = new Map<string, Set<string>>();
  const anchorsOf = async (page: string) => {
    let set = anchors.get(page);
    if (!set) {
      set = new Set(parseMarkdown(await read(page)).headings.map((h) => h.slug));
      anchors.set(page, set);
    }
    return set;
  };
  const broken: string[] = [];
  for (const page of await pages()) {
    const text = await read(page);
    const { codeLines } = parseMarkdown(text);
    const lines = text.split("\n");
    for (let i = 0; i < lines.length; i++) {
      if (codeLines.has(i + 1)) continue;
      for (const match of lines[i].matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1];
        if (/^[a-z]+:/i.test(target)) continue; // http:, mailto:, …
        const [path, anchor] = target.split("#", 2);
        const file = path === "" ? page : relative(ROOT, resolve(ROOT, dirname(page), path));
        try {
          await Deno.stat(join(ROOT, file));
        } catch {
          broken.push(`${page}:${i + 1}: ${target} (no file ${file})`);
          continue;
        }
        if (anchor !== undefined && file.endsWith(".md") && !(await anchorsOf(file)).has(anchor)) {
          broken.push(`${page}:${i + 1}: ${target} (no heading #${anchor} in ${file})`);
        }
      }
    }
  }
  assert.deepEqual(broken, [], broken.join("\n"));
});

Deno.test("docs: blocks marked <!-- file: PATH --> show that file exactly", async () => {
  const drift: string[] = [];
  let checked = 0;
  for (const page of await pages()) {
    for (const block of parseMarkdown(await read(page)).blocks) {
      if (!block.file) continue;
      checked++;
      const actual = await Deno.readTextFile(join(ROOT, block.file));
      const shown = block.lines.join("\n") + "\n";
      if (actual !== shown) drift.push(`${page}:${block.line}: differs from ${block.file}`);
    }
  }
  assert.ok(checked > 0, "the README shows the example agent's files");
  assert.deepEqual(drift, [], drift.join("\n"));
});

Deno.test("docs: the README's first agent can be followed by hand: every file of .agent/haiku is shown, and --script links to the script format", async () => {
  const shown = new Set(
    parseMarkdown(await read("README.md")).blocks.flatMap((b) => b.file ? [b.file] : []),
  );
  const missing: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(join(ROOT, dir))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (!shown.has(path)) missing.push(path);
    }
  };
  await walk(".agent/haiku");
  assert.deepEqual(missing, [], `README.md does not show ${missing.join(", ")}`);
  // The flag's help names the section, and the section exists.
  const { BACKEND_FLAGS } = await import("../../src/cli/kit/backend.ts");
  const help = BACKEND_FLAGS.script.description;
  const link = /docs\/([a-z-]+\.md)#([a-z0-9-]+)/.exec(help);
  assert.ok(link, help);
  const slugs = parseMarkdown(await read(`docs/${link[1]}`)).headings.map((h) => h.slug);
  assert.ok(slugs.includes(link[2]), `no #${link[2]} in ${link[1]}`);
});

/** One `$ command` of a console block and the output the page claims for it. */
interface ConsoleExample {
  page: string;
  line: number;
  command: string;
  expected: string[];
}

async function consoleExamples(): Promise<ConsoleExample[]> {
  const examples: ConsoleExample[] = [];
  for (const page of await pages()) {
    for (const block of parseMarkdown(await read(page)).blocks) {
      if (block.info !== "console") continue;
      let current: ConsoleExample | undefined;
      block.lines.forEach((line, i) => {
        if (line.startsWith("$ ")) {
          current = { page, line: block.line + 1 + i, command: line.slice(2), expected: [] };
          examples.push(current);
        } else if (current) {
          current.expected.push(line);
        } else {
          throw new Error(`${page}:${block.line}: a console block starts with "$ command"`);
        }
      });
    }
  }
  return examples;
}

/**
 * What may differ between two runs of the same command: clock times, run ids, durations, the
 * column widths those change, where the repository is (`/path/to/stepflow` in the docs), and the
 * `Task …` line `deno task` echoes to stderr. Line breaks count as spaces, so that a page may wrap
 * long output lines at 100 columns as a terminal would.
 */
export function normaliseOutput(lines: string[], repo = "/path/to/stepflow"): string {
  return lines
    // deno-lint-ignore no-control-regex
    .map((line) => line.replace(/\x1b\[[0-9;]*[A-Za-z]/g, ""))
    .filter((line) => !/^Task \S+ /.test(line))
    .join(" ")
    .replaceAll(repo, "/path/to/stepflow")
    .replace(/\d{8}T\d{6}Z-[0-9a-f]{6}/g, "RUN_ID")
    .replace(/\[\d\d:\d\d\.\d{3}\]/g, "[TIME]")
    .replace(/\b\d{2}:\d{2}\.\d\b/g, "CLOCK")
    .replace(/\b\d+(?:\.\d+)?(?:ms|µs|s)\b/g, "DURATION")
    .replace(/\s+/g, " ")
    .trim();
}

/** A copy of the working tree (no .git, no tmp), so that examples that write files leave no trace. */
async function copyOfRepo(): Promise<string> {
  const target = await Deno.makeTempDir({ prefix: "stepflow-docs-" });
  const skip = new Set([".git", "tmp", "node_modules"]);
  const copy = async (from: string, to: string) => {
    for await (const entry of Deno.readDir(from)) {
      if (skip.has(entry.name)) continue;
      const source = join(from, entry.name);
      const dest = join(to, entry.name);
      if (entry.isDirectory) {
        await Deno.mkdir(dest, { recursive: true });
        await copy(source, dest);
      } else if (entry.isFile) {
        await Deno.copyFile(source, dest);
      }
    }
  };
  await copy(ROOT, target);
  return target;
}

Deno.test("docs: every console example prints what the page says it prints", async () => {
  const examples = await consoleExamples();
  assert.ok(examples.length >= 5, "the docs show the demo, --validate, --graph and errors");
  const failures: string[] = [];
  // One copy for all: no example reads what another writes (none lists runs), and the copy's
  // compiled modules are cached after the first example instead of compiled again for each.
  const cwd = await copyOfRepo();
  // The pages show the installed `stepflow` (README: `deno task install`): install the copy's, into
  // a root of its own, and put it on the examples' PATH.
  const root = await Deno.makeTempDir({ prefix: "stepflow-docs-install-" });
  const install = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "install"],
    cwd,
    env: { DENO_INSTALL_ROOT: root },
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.ok(install.success, new TextDecoder().decode(install.stderr));
  const path = [join(root, "bin"), dirname(Deno.execPath()), Deno.env.get("PATH") ?? ""].join(":");
  const runOne = async (example: ConsoleExample) => {
    // One stream, in the order the command printed it (as a reader's terminal shows it).
    const output = await new Deno.Command("bash", {
      args: ["-c", `(${example.command}) 2>&1`],
      cwd,
      env: { NO_COLOR: "1", INIT_CWD: cwd, PATH: path },
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).output();
    const printed = new TextDecoder().decode(output.stdout);
    const actual = normaliseOutput(printed.split("\n"), cwd);
    const expected = normaliseOutput(example.expected);
    if (actual !== expected) {
      failures.push(
        `${example.page}:${example.line}: $ ${example.command}\n--- the page says\n${expected}` +
          `\n--- the command printed (paths as /path/to/stepflow)\n${printed}`,
      );
    }
  };
  try {
    // Two at a time: each example is a fresh deno process, mostly waiting on its own start-up.
    for (let i = 0; i < examples.length; i += 2) {
      await Promise.all(examples.slice(i, i + 2).map(runOne));
    }
  } finally {
    await Deno.remove(cwd, { recursive: true });
    await Deno.remove(root, { recursive: true });
  }
  assert.deepEqual(failures, [], failures.join("\n\n"));
});

/** Error codes in `src/`: the first argument of an error constructor, or a `code:` / `code =`. */
async function codesInSource(): Promise<Map<string, string>> {
  const patterns = [
    /(?:Error|super)\(\s*"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"/g,
    /\bcode\s*[:=]\s*"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"/g,
  ];
  const codes = new Map<string, string>();
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(join(ROOT, dir))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (path.endsWith(".ts")) {
        const text = await Deno.readTextFile(join(ROOT, path));
        for (const pattern of patterns) {
          for (const match of text.matchAll(pattern)) {
            if (!codes.has(match[1])) codes.set(match[1], path);
          }
        }
      }
    }
  };
  await walk("src");
  return codes;
}

/** The codes docs/errors.md has an entry for (`- **`CODE`** — …`). */
async function documentedCodes(): Promise<Set<string>> {
  const page = await read("docs/errors.md");
  return new Set([...page.matchAll(/^- \*\*`([A-Z0-9_]+)`\*\*/gm)].map((m) => m[1]));
}

/** Every listed code, with its module. */
function listedCodes(): Map<string, string> {
  const listed = new Map<string, string>();
  for (const [module, codes] of Object.entries(ERROR_CODES)) {
    for (const code of codes) listed.set(code, module);
  }
  return listed;
}

Deno.test("docs: every listed error code has an entry in docs/errors.md, and every entry is listed", async () => {
  const documented = await documentedCodes();
  const listed = listedCodes();
  assert.ok(listed.size > 100, `only ${listed.size} codes listed: src/error_codes.ts is broken`);
  const undocumented = [...listed].filter(([code]) => !documented.has(code))
    .map(([code, module]) => `${code} (ERROR_CODES.${module})`);
  assert.deepEqual(undocumented, [], `add these to docs/errors.md:\n${undocumented.join("\n")}`);
  const unknown = [...documented].filter((code) => !listed.has(code));
  assert.deepEqual(
    unknown,
    [],
    `docs/errors.md documents codes no module lists: add each to its module in src/error_codes.ts, or drop the entry:\n${
      unknown.join("\n")
    }`,
  );
});

Deno.test("docs: every error code written in src/ is listed in src/error_codes.ts", async () => {
  // The compiler checks the codes passed to StepflowError; this catches the rest (`code: "…"` of a
  // run's result, a subclass's field).
  const listed = listedCodes();
  const codes = await codesInSource();
  assert.ok(codes.size > 50, `found only ${codes.size} codes: the scan is broken`);
  const missing = [...codes].filter(([code]) => !listed.has(code)).map(([code, file]) =>
    `${code} (in ${file})`
  );
  assert.deepEqual(
    missing,
    [],
    `add these to src/error_codes.ts and docs/errors.md:\n${missing.join("\n")}`,
  );
});
