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
import { openResolved } from "../../src/tools/opened_file.ts";
import { resolveInWorkspace } from "../../src/tools/workspace.ts";

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

Deno.test("files are opened where their path was checked: a link swapped in afterwards is PATH_CHANGED", async () => {
  const { root, outside } = await setup();
  const real = await Deno.realPath(root);
  await Deno.writeTextFile(join(outside, "secret.txt"), "outside");
  await Deno.writeTextFile(join(real, "real_dir/note.txt"), "inside");
  const checked = await resolveInWorkspace(real, "real_dir/note.txt");
  const opened = await openResolved(checked, "read_file", "real_dir/note.txt");
  assert.equal(new TextDecoder().decode(opened.readAll()), "inside");
  opened.close();
  // The file becomes a link out…
  await Deno.rename(join(real, "real_dir/note.txt"), join(real, "note.bak"));
  await Deno.symlink(join(outside, "secret.txt"), join(real, "real_dir/note.txt"));
  for (const how of ["read", "append"] as const) {
    const error = await openResolved(checked, "read_file", "real_dir/note.txt", how)
      .catch((e) => e);
    assert.equal(error?.code, "PATH_CHANGED", `${how}: ${error}`);
  }
  // …or its folder does.
  await Deno.remove(join(real, "real_dir/note.txt"));
  await Deno.rename(join(real, "real_dir"), join(real, "real_dir_old"));
  await Deno.symlink(outside, join(real, "real_dir"));
  await Deno.rename(join(outside, "secret.txt"), join(outside, "note.txt"));
  const error = await openResolved(checked, "read_file", "real_dir/note.txt").catch((e) => e);
  assert.equal(error?.code, "PATH_CHANGED");
  assert.match(
    error.message,
    /"real_dir\/note\.txt" changed after it was checked: it was ".*\/real_dir\/note\.txt", and opening it reached ".*\/outside\/note\.txt"/,
  );
  assert.equal(await Deno.readTextFile(join(outside, "note.txt")), "outside");
});
