/**
 * A fresh machine needs nothing but the README: the line above its first commands says how to get
 * Deno, and wherever it tells to run `deno task install` it says what Deno says at the end of that
 * install — the `stepflow` command is in `~/.deno/bin`, which must be on `PATH`. The last test runs
 * the real install task in a home folder of its own to prove that is where it goes and what Deno
 * prints.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** A shell command that installs Deno on a machine that has none. */
const GET_DENO = /`(curl -fsSL https:\/\/deno\.land\/install\.sh \| sh|npm install -g deno)`/;

async function readme(): Promise<string[]> {
  return (await readFile(join(ROOT, "README.md"), "utf8")).split("\n");
}

/** The README's paragraphs, list items and code blocks that name `deno task install`. */
function installMentions(lines: string[]): string[] {
  const blocks: string[] = [];
  let current: string[] = [];
  let fenced = false;
  for (const line of lines) {
    if (line.startsWith("```")) fenced = !fenced;
    const breaks = !fenced && (line.trim() === "" || /^\s*- /.test(line) || line.startsWith("```"));
    if (fenced) {
      // In a code block each line stands alone (a command and its comment).
      if (!line.startsWith("```")) blocks.push(line);
      continue;
    }
    if (breaks && current.length > 0) {
      blocks.push(current.join(" "));
      current = [];
    }
    if (line.trim() !== "" && !line.startsWith("```")) current.push(line.trim());
  }
  if (current.length > 0) blocks.push(current.join(" "));
  return blocks.filter((block) => block.includes("deno task install"));
}

Deno.test("README: the line right above its first commands says how to get Deno", async () => {
  const lines = await readme();
  const fence = lines.findIndex((line) => line.startsWith("```sh"));
  assert.ok(fence > 0, "the README starts with commands to run");
  const firstCommand = lines[fence + 1];
  assert.match(firstCommand, /^deno /, "its first commands need Deno");
  const above = lines.slice(0, fence).filter((line) => line.trim() !== "").at(-1) ?? "";
  assert.match(above, GET_DENO, `the line above them installs Deno: ${above}`);
});

Deno.test("README: every `deno task install` says it goes to ~/.deno/bin, to be put on PATH", async () => {
  const mentions = installMentions(await readme());
  assert.ok(mentions.length > 0, "the README tells how to install the stepflow command");
  for (const text of mentions) {
    assert.match(text, /~\/\.deno\/bin/, `names the folder: ${text}`);
    assert.match(text, /\bPATH\b/, `says to put it on PATH: ${text}`);
  }
});

Deno.test("deno task install puts stepflow in ~/.deno/bin and Deno says to add that to PATH", async () => {
  const home = await Deno.makeTempDir({ prefix: "stepflow-home-" });
  try {
    const env: Record<string, string> = {
      HOME: home,
      // The cache the other tests use (a new home would otherwise start an empty one).
      DENO_DIR: Deno.env.get("DENO_DIR") ?? join(Deno.env.get("HOME") ?? home, ".cache", "deno"),
      PATH: ["/usr/bin", "/bin", join(Deno.execPath(), "..")].join(":"),
      NO_COLOR: "1",
    };
    const result = await new Deno.Command(Deno.execPath(), {
      args: ["task", "install"],
      cwd: ROOT,
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(result.stdout) + new TextDecoder().decode(result.stderr);
    assert.equal(result.code, 0, out);
    const bin = join(home, ".deno", "bin");
    const installed = await Deno.stat(join(bin, "stepflow"));
    assert.ok(installed.isFile, out);
    assert.ok(out.includes(`Add ${bin} to PATH`), `Deno's closing hint names the folder:\n${out}`);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
