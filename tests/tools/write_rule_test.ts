/**
 * One rule for writing through symbolic links, shared by `write_file` (tool plans) and QPlan's
 * `file write`: the same refusals, with the same message, from one implementation
 * (`prepareWriteInWorkspace`).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createToolRegistry } from "../../src/tools/builtin.ts";
import { createQPlanRegistry, runScript } from "../../src/qplan/mod.ts";
import { StepflowError } from "../../src/errors.ts";

async function setup(): Promise<{ root: string; outside: string }> {
  const base = await Deno.makeTempDir({ prefix: "stepflow_write_rule_" });
  const root = join(base, "ws");
  const outside = join(base, "outside");
  await Deno.mkdir(root);
  await Deno.mkdir(outside);
  await Deno.mkdir(join(root, "real_dir"));
  // A dangling file link, a dangling folder link, and a folder.
  await Deno.symlink(join(outside, "not_yet.txt"), join(root, "dangling.txt"));
  await Deno.symlink(join(outside, "gone_dir"), join(root, "gone_dir"));
  return { root, outside };
}

async function viaWriteFile(root: string, path: string): Promise<StepflowError> {
  const error = await createToolRegistry()
    .invoke("write_file", { path, content: "x" }, { workspaceRoot: root })
    .then(() => undefined, (e) => e);
  assert.ok(error instanceof StepflowError, `write_file ${path}: expected a refusal, got ${error}`);
  return error;
}

async function viaQPlan(root: string, path: string): Promise<string> {
  const result = await runScript(`file write path="${path}" data="x"`, {
    registry: createQPlanRegistry({ print: () => {} }),
    workspaceRoot: root,
  });
  assert.equal(result.status, "error", `file write ${path} must be refused`);
  return result.error!.message;
}

Deno.test("write_file and QPlan file write refuse the same paths with the same message", async () => {
  const { root, outside } = await setup();
  const cases: [string, string, RegExp][] = [
    ["dangling.txt", "PATH_ESCAPES_WORKSPACE", /"dangling\.txt" is a symbolic link whose target/],
    ["gone_dir/a.txt", "PATH_ESCAPES_WORKSPACE", /"gone_dir" is a symbolic link whose target/],
    ["gone_dir/deep/a.txt", "PATH_ESCAPES_WORKSPACE", /"gone_dir" is a symbolic link/],
    ["real_dir", "FILE_IS_DIRECTORY", /"real_dir" is a folder\. Name a file path instead\./],
    [".", "FILE_IS_DIRECTORY", /is the workspace root itself/],
  ];
  for (const [path, code, message] of cases) {
    const tool = await viaWriteFile(root, path);
    assert.equal(tool.code, code, `${path}: ${tool.message}`);
    assert.match(tool.message, message);
    const script = await viaQPlan(root, path);
    // The same text, only the tool's name differs.
    assert.ok(
      script.includes(tool.message.replace(/^write_file: /, "file write: ")),
      `${path}:\n  write_file: ${tool.message}\n  file write: ${script}`,
    );
  }
  // Nothing was written anywhere, and the links are still links.
  assert.deepEqual([...Deno.readDirSync(outside)], []);
  assert.ok(Deno.lstatSync(join(root, "dangling.txt")).isSymlink);
  assert.ok(Deno.lstatSync(join(root, "gone_dir")).isSymlink);
});

Deno.test("writing through a live link inside the workspace and into new folders still works", async () => {
  const { root } = await setup();
  await Deno.symlink(join(root, "real_dir"), join(root, "alias"));
  await createToolRegistry().invoke(
    "write_file",
    { path: "alias/a.txt", content: "tool" },
    { workspaceRoot: root },
  );
  const result = await runScript(`file write path="alias/new/b.txt" data="script"`, {
    registry: createQPlanRegistry({ print: () => {} }),
    workspaceRoot: root,
  });
  assert.equal(result.status, "completed", result.error?.message);
  assert.equal(await Deno.readTextFile(join(root, "real_dir", "a.txt")), "tool");
  assert.equal(await Deno.readTextFile(join(root, "real_dir", "new", "b.txt")), "script");
});
