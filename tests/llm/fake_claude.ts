/**
 * Test helpers around tests/llm/fixtures/fake_claude: a temp dir with the fake's turn script and
 * log, the backend options that make the Claude Agent SDK spawn the fake, and the fake's log.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ClaudeCodeBackendOptions } from "../../src/llm/claude_code.ts";

/** The fake Claude Code executable. */
export const FAKE_CLAUDE = fileURLToPath(new URL("./fixtures/fake_claude", import.meta.url));

/** What the fake logged for one process. */
export interface FakeClaudeRun {
  argv: string[];
  cwd: string;
  env: Record<string, string | undefined>;
  received: { type: string; request?: Record<string, unknown>; message?: unknown }[];
}

/** A temp dir with a turn script for the fake, and the backend options that point at it. */
export async function fakeClaude(turns: Record<string, unknown>[]) {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-claude-" });
  const script = join(dir, "turns.json");
  const log = join(dir, "log.jsonl");
  await Deno.writeTextFile(script, JSON.stringify(turns));
  const options: ClaudeCodeBackendOptions = {
    pathToClaudeCodeExecutable: FAKE_CLAUDE,
    env: {
      ...Deno.env.toObject(),
      FAKE_CLAUDE_SCRIPT: script,
      FAKE_CLAUDE_LOG: log,
      FAKE_CLAUDE_DENO: Deno.execPath(),
    },
    retry: { initialDelayMs: 1, maxDelayMs: 5 },
  };
  return {
    dir,
    options,
    async runs(): Promise<FakeClaudeRun[]> {
      const text = await Deno.readTextFile(log).catch(() => "");
      return text.split("\n").filter(Boolean).map((line) => JSON.parse(line));
    },
    cleanup: () => Deno.remove(dir, { recursive: true }),
  };
}

/** The value of `--name=value` in the fake's argv. */
export function flag(run: FakeClaudeRun, name: string): string | undefined {
  const arg = run.argv.find((a) => a.startsWith(`--${name}=`));
  return arg?.slice(name.length + 3);
}
