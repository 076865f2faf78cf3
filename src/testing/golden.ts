/**
 * Golden prompts: the prompts a run sent, kept as files beside the test, so a prompt change shows as
 * a diff in review. Update the files with `STEPFLOW_UPDATE_GOLDEN=1 deno test -A …` (or
 * `deno test -A … -- --update-golden`).
 *
 * @module
 */
import { AssertionError } from "node:assert";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeFileAtomic } from "../atomic_write.ts";
import { shortDiff } from "../text_diff.ts";
import type { TestRun } from "./run.ts";

/** The environment variable that makes {@linkcode assertGoldenPrompts} rewrite its files. */
export const UPDATE_GOLDEN_ENV = "STEPFLOW_UPDATE_GOLDEN";

/** The test argument (`deno test … -- --update-golden`) that does the same. */
export const UPDATE_GOLDEN_FLAG = "--update-golden";

/** Options of {@linkcode assertGoldenPrompts}. */
export interface GoldenOptions {
  /** Rewrite the files instead of comparing (default: the env variable or the flag is set). */
  update?: boolean;
}

/**
 * Compares every prompt the run sent with the file kept for it in `dir`: one file per call, named
 * `NN-<stepId>[.check|.reask].md` (NN the call's number), holding the system prompt (when any), a
 * `---` line, and the prompt. Missing, changed or extra files fail with a short diff; with
 * `update` the folder is rewritten to match (stale files removed).
 *
 * @example
 * ```ts
 * import { assertGoldenPrompts, runAgentForTest } from "./mod.ts";
 * const run = await runAgentForTest({
 *   agent: "haiku", script: ".agent/haiku/demo.script.yaml", args: { topic: "autumn" },
 * });
 * await assertGoldenPrompts(run, new URL("./golden/haiku/", import.meta.url));
 * ```
 */
export async function assertGoldenPrompts(
  run: TestRun,
  dir: string | URL,
  options: GoldenOptions = {},
): Promise<void> {
  const folder = dir instanceof URL ? fileURLToPath(dir) : dir;
  const update = options.update ?? updateRequested();
  const expected = new Map<string, string>();
  run.calls.forEach((call, i) => {
    const suffix = call.kind === "step" ? "" : `.${call.kind}`;
    const name = `${String(i + 1).padStart(2, "0")}-${call.stepId}${suffix}.md`;
    const body = call.system !== undefined ? `${call.system}\n---\n${call.prompt}` : call.prompt;
    expected.set(name, body);
  });
  const existing = await listMarkdown(folder);
  if (update) {
    for (const [name, body] of expected) await writeFileAtomic(join(folder, name), body);
    for (const name of existing) {
      if (!expected.has(name)) await Deno.remove(join(folder, name));
    }
    return;
  }
  const problems: string[] = [];
  for (const [name, body] of expected) {
    let kept: string;
    try {
      kept = await Deno.readTextFile(join(folder, name));
    } catch {
      problems.push(`${name}: no golden file (the run sent this prompt)`);
      continue;
    }
    if (kept !== body) problems.push(`${name} changed:\n${shortDiff(kept, body)}`);
  }
  for (const name of existing) {
    if (!expected.has(name)) problems.push(`${name}: the run sent no such prompt`);
  }
  if (problems.length > 0) {
    throw new AssertionError({
      message: `Golden prompts in ${folder} differ from the prompts the run sent:\n${
        problems.join("\n")
      }\nIf the change is intended, update them: ${UPDATE_GOLDEN_ENV}=1 deno test -A <the test file>`,
    });
  }
}

function updateRequested(): boolean {
  if (Deno.args.includes(UPDATE_GOLDEN_FLAG)) return true;
  try {
    const value = Deno.env.get(UPDATE_GOLDEN_ENV);
    return value !== undefined && value !== "" && value !== "0";
  } catch {
    return false;
  }
}

async function listMarkdown(folder: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(folder)) {
      if (e.isFile && e.name.endsWith(".md")) names.push(e.name);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return names.sort();
}
