import assert from "node:assert/strict";
import { cp } from "node:fs/promises";
import { join } from "node:path";
import { finish, REPO_ROOT, spawnCli } from "./helpers.ts";

Deno.test("run-agent: the tool-fixer demo edits the user's folder through the CLI's wrapped backend", async () => {
  const user = await Deno.makeTempDir({ prefix: "stepflow_cli_tools_" });
  await cp(join(REPO_ROOT, ".agent/tool-fixer"), join(user, ".agent/tool-fixer"), {
    recursive: true,
  });
  const run = await finish(spawnCli("run-agent", [
    "--agent",
    "tool-fixer",
    "--backend",
    "scripted",
    "--script",
    join(user, ".agent/tool-fixer/demo.script.yaml"),
    "--topic",
    "the greeting misses a space",
  ], { userDir: user }));
  assert.equal(run.code, 0, run.stderr);
  assert.match(
    run.stdout + run.stderr,
    /tool-fixer succeeded: completed at s_f1e0 after 2 iterations/,
  );
  assert.equal(
    await Deno.readTextFile(join(user, "tmp/tool-fixer-demo/greet.ts")),
    'export function greet(name: string): string {\n  return "Hello, " + name;\n}\n',
  );
});
