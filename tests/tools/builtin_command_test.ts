import assert from "node:assert/strict";
import { join } from "node:path";
import type { StepflowError } from "../../src/errors.ts";
import { createToolRegistry } from "../../src/tools/builtin.ts";
import type { RunCommandResult } from "../../src/tools/builtin_command.ts";

const codeOf = (p: Promise<unknown>) => p.then(() => "none", (e) => (e as StepflowError).code);

Deno.test("run_command is absent unless enabled, and always needs approval", async () => {
  assert.equal(createToolRegistry().has("run_command"), false);
  const tools = createToolRegistry({ enableCommands: true });
  assert.equal(
    await tools.approvalReason("run_command", { command: "true" }, { workspaceRoot: "." }),
    "run_command always needs approval",
  );
});

Deno.test("run_command runs without a shell in the workspace and captures output", async () => {
  const root = await Deno.makeTempDir();
  await Deno.mkdir(join(root, "sub"));
  await Deno.writeTextFile(join(root, "sub", "f.txt"), "content");
  const tools = createToolRegistry({ enableCommands: true });
  const ctx = { workspaceRoot: root };
  const ls = await tools.invoke(
    "run_command",
    { command: "ls", args: ["sub"] },
    ctx,
  ) as RunCommandResult;
  assert.equal(ls.code, 0);
  assert.equal(ls.stdout.trim(), "f.txt");
  const cat = await tools.invoke(
    "run_command",
    { command: "cat", cwd: "sub", args: ["f.txt"] },
    ctx,
  ) as RunCommandResult;
  assert.equal(cat.stdout, "content");
  const stdin = await tools.invoke(
    "run_command",
    { command: "cat", stdin: "piped in" },
    ctx,
  ) as RunCommandResult;
  assert.equal(stdin.stdout, "piped in");
  const literal = await tools.invoke(
    "run_command",
    { command: "echo", args: ["$HOME", "*"] },
    ctx,
  ) as RunCommandResult;
  assert.equal(literal.stdout, "$HOME *\n");
});

Deno.test("run_command fails on non-zero exit unless allowFailure; unknown commands and cwd escapes are refused", async () => {
  const root = await Deno.makeTempDir();
  const tools = createToolRegistry({
    enableCommands: { allowedCommands: ["false", "ls", "no-such-cmd-xyz"] },
  });
  const ctx = { workspaceRoot: root };
  const error = await tools.invoke("run_command", { command: "false" }, ctx).catch((
    e: StepflowError,
  ) => e) as StepflowError;
  assert.equal(error.code, "COMMAND_FAILED");
  assert.match(error.message, /exited with code 1/);
  const allowed = await tools.invoke(
    "run_command",
    { command: "false", allowFailure: true },
    ctx,
  ) as RunCommandResult;
  assert.deepEqual([allowed.code, allowed.success], [1, false]);
  assert.equal(
    await codeOf(tools.invoke("run_command", { command: "no-such-cmd-xyz" }, ctx)),
    "COMMAND_NOT_FOUND",
  );
  assert.equal(
    await codeOf(tools.invoke("run_command", { command: "rm" }, ctx)),
    "COMMAND_REFUSED",
  );
  assert.equal(
    await codeOf(tools.invoke("run_command", { command: "ls", cwd: ".." }, ctx)),
    "PATH_ESCAPES_WORKSPACE",
  );
});

Deno.test("run_command stops a command that outlives its timeout", async () => {
  const tools = createToolRegistry({ enableCommands: true });
  const started = performance.now();
  const code = await codeOf(
    tools.invoke("run_command", { command: "sleep", args: ["5"], timeoutMs: 100 }, {
      workspaceRoot: ".",
    }),
  );
  assert.equal(code, "COMMAND_TIMEOUT");
  assert.ok(performance.now() - started < 3000);
});
