import assert from "node:assert/strict";
import { cp } from "node:fs/promises";
import { join } from "node:path";
import { finish, REPO_ROOT, spawnCli } from "./helpers.ts";

/** The tool-fixer demo copied into a user folder, and a run-agent of it there. */
async function toolFixerDemo() {
  const user = await Deno.makeTempDir({ prefix: "stepflow_cli_tools_" });
  await cp(join(REPO_ROOT, ".agent/tool-fixer"), join(user, ".agent/tool-fixer"), {
    recursive: true,
  });
  return {
    user,
    run: (extra: string[] = []) =>
      finish(spawnCli("run-agent", [
        "--agent",
        "tool-fixer",
        "--backend",
        "scripted",
        "--script",
        join(user, ".agent/tool-fixer/demo.script.yaml"),
        "--topic",
        "the greeting misses a space",
        ...extra,
      ], { userDir: user })),
    cleanup: () => Deno.remove(user, { recursive: true }),
  };
}

Deno.test("run-agent: the tool-fixer demo edits the user's folder through the CLI's wrapped backend", async () => {
  const demo = await toolFixerDemo();
  try {
    const { user } = demo;
    const run = await demo.run();
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout + run.stderr,
      /tool-fixer succeeded: completed at s_f1e0 after 2 iterations/,
    );
    assert.equal(
      await Deno.readTextFile(join(user, "tmp/tool-fixer-demo/greet.ts")),
      'export function greet(name: string): string {\n  return "Hello, " + name;\n}\n',
    );
  } finally {
    await demo.cleanup();
  }
});

Deno.test("run-agent: each tool call is a line under its step; --verbose adds its arguments, result and the model's text", async () => {
  const demo = await toolFixerDemo();
  try {
    const plain = await demo.run();
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stderr, /step s_f1e0 #2 ↳ Edit tmp\/tool-fixer-demo\/greet\.ts ✓ \d+ ms\n/);
    assert.match(
      plain.stderr,
      /step s_f1e0 #2 ↳ Bash rm -rf tmp\/tool-fixer-demo ✗ refused \(rule Bash\(rm:\*\)\)\n/,
    );
    assert.equal(plain.stderr.match(/↳ Edit/g)?.length, 1, "one line per call");
    assert.doesNotMatch(plain.stderr, /args \{|›/, "no arguments or text without --verbose");

    await Deno.remove(join(demo.user, "tmp"), { recursive: true });
    const verbose = await demo.run(["--verbose"]);
    assert.equal(verbose.code, 0, verbose.stderr);
    assert.match(
      verbose.stderr,
      /↳ Edit tmp\/tool-fixer-demo\/greet\.ts ✓ \d+ ms\n.* {4}args \{"file_path":"tmp\/tool-fixer-demo\/greet\.ts","old_string":"\\"Hello,\\" \+ name",.*\n.* {4}result Edited tmp\/tool-fixer-demo\/greet\.ts: 1 replacement\.\n/,
    );
    assert.match(
      verbose.stderr,
      /step s_f1d0 #1 › I'll set up the sample, then look for the greeting\.\n[^]*step s_f1d0 #1 ↳ Write/,
    );
    assert.match(verbose.stderr, /answer, \d+ chars \(streamed above\)/);
  } finally {
    await demo.cleanup();
  }
});
