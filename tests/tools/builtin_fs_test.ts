import assert from "node:assert/strict";
import { join } from "node:path";
import { StepflowError } from "../../src/errors.ts";
import { createBuiltinTools, createToolRegistry } from "../../src/tools/builtin.ts";
import type { ListDirResult, WriteFileResult } from "../../src/tools/builtin_fs.ts";

async function workspace(): Promise<{ root: string; outside: string }> {
  const base = await Deno.makeTempDir({ prefix: "stepflow_fs_" });
  const root = join(base, "ws");
  const outside = join(base, "outside");
  await Deno.mkdir(root);
  await Deno.mkdir(outside);
  await Deno.writeTextFile(join(outside, "secret.txt"), "top secret");
  return { root, outside };
}

async function refused(promise: Promise<unknown>): Promise<StepflowError> {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof StepflowError, `expected a StepflowError, got ${error}`);
  assert.equal(error.code, "PATH_ESCAPES_WORKSPACE", error.message);
  return error;
}

Deno.test("built-ins: file tools always, http_get and run_command only when enabled", () => {
  assert.deepEqual(createBuiltinTools().map((t) => t.name), [
    "read_file",
    "write_file",
    "list_dir",
  ]);
  const all = createBuiltinTools({ enableHttp: true, enableCommands: true });
  assert.deepEqual(all.map((t) => t.name), [
    "read_file",
    "write_file",
    "list_dir",
    "http_get",
    "run_command",
  ]);
  const registry = createToolRegistry({ enableCommands: true });
  assert.equal(registry.descriptor("run_command")?.requiresApproval, true);
  const schema = registry.descriptor("read_file")!.inputSchema as {
    properties: object;
    required: string[];
  };
  assert.ok("path" in schema.properties);
  assert.deepEqual(schema.required, ["path"]);
});

Deno.test("write_file then read_file round-trips; JSON content is pretty-printed; folders are created", async () => {
  const { root } = await workspace();
  const tools = createToolRegistry();
  const ctx = { workspaceRoot: root };
  const written = await tools.invoke(
    "write_file",
    { path: "a/b/c.json", content: { x: 1 } },
    ctx,
  ) as WriteFileResult;
  assert.deepEqual(written, { path: "a/b/c.json", bytes: 13, created: true });
  assert.equal(await tools.invoke("read_file", { path: "a/b/c.json" }, ctx), '{\n  "x": 1\n}\n');
  const again = await tools.invoke(
    "write_file",
    { path: "a/b/c.json", content: "text" },
    ctx,
  ) as WriteFileResult;
  assert.equal(again.created, false);
  await tools.invoke("write_file", { path: "a/b/c.json", content: "+more", append: true }, ctx);
  assert.equal(await Deno.readTextFile(join(root, "a/b/c.json")), "text+more");
  // No temporary files are left behind.
  assert.deepEqual([...Deno.readDirSync(join(root, "a/b"))].map((e) => e.name), ["c.json"]);
});

Deno.test("write_file needs approval only when it would overwrite a file", async () => {
  const { root } = await workspace();
  const tools = createToolRegistry();
  const ctx = { workspaceRoot: root };
  assert.equal(
    await tools.approvalReason("write_file", { path: "new.txt", content: "x" }, ctx),
    undefined,
  );
  await Deno.writeTextFile(join(root, "old.txt"), "keep");
  assert.match(
    (await tools.approvalReason("write_file", { path: "old.txt", content: "x" }, ctx))!,
    /overwrite the existing file "old.txt"/,
  );
  assert.equal(
    await tools.needsApproval("write_file", { path: "old.txt", content: "x" }, ctx),
    true,
  );
  assert.equal(await tools.needsApproval("read_file", { path: "old.txt" }, ctx), false);
});

Deno.test("read_file reports missing files, folders and files over the size limit", async () => {
  const { root } = await workspace();
  const tools = createToolRegistry();
  const ctx = { workspaceRoot: root };
  await Deno.writeTextFile(join(root, "big.txt"), "x".repeat(100));
  await Deno.mkdir(join(root, "dir"));
  const codeOf = (p: Promise<unknown>) => p.then(() => "none", (e) => (e as StepflowError).code);
  assert.equal(
    await codeOf(tools.invoke("read_file", { path: "nope.txt" }, ctx)),
    "FILE_NOT_FOUND",
  );
  assert.equal(await codeOf(tools.invoke("read_file", { path: "dir" }, ctx)), "FILE_IS_DIRECTORY");
  assert.equal(
    await codeOf(tools.invoke("read_file", { path: "big.txt", maxBytes: 10 }, ctx)),
    "FILE_TOO_LARGE",
  );
  assert.equal(
    await codeOf(tools.invoke("read_file", { path: "big.txt", extra: 1 }, ctx)),
    "TOOL_ARGS_INVALID",
  );
});

Deno.test("list_dir lists sorted entries, recursively on request, and never follows links", async () => {
  const { root, outside } = await workspace();
  const tools = createToolRegistry();
  const ctx = { workspaceRoot: root };
  await Deno.writeTextFile(join(root, "b.txt"), "bb");
  await Deno.mkdir(join(root, "a"));
  await Deno.writeTextFile(join(root, "a", "x.txt"), "x");
  await Deno.symlink(outside, join(root, "link"));
  const flat = await tools.invoke("list_dir", {}, ctx) as ListDirResult;
  assert.deepEqual(flat.entries, [
    { path: "a", name: "a", type: "dir" },
    { path: "b.txt", name: "b.txt", type: "file", size: 2 },
    { path: "link", name: "link", type: "symlink" },
  ]);
  const deep = await tools.invoke("list_dir", { path: ".", recursive: true }, ctx) as ListDirResult;
  assert.deepEqual(deep.entries.map((e) => e.path), ["a", "a/x.txt", "b.txt", "link"]);
  assert.equal(deep.truncated, false);
  const capped = await tools.invoke(
    "list_dir",
    { recursive: true, maxEntries: 2 },
    ctx,
  ) as ListDirResult;
  assert.equal(capped.entries.length, 2);
  assert.equal(capped.truncated, true);
});

Deno.test("workspace escapes are refused: .., absolute paths, symlinked folders and files, dangling links", async () => {
  const { root, outside } = await workspace();
  const tools = createToolRegistry();
  const ctx = { workspaceRoot: root };
  await Deno.symlink(outside, join(root, "out_dir"));
  await Deno.symlink(join(outside, "secret.txt"), join(root, "secret_link.txt"));
  await Deno.symlink(join(outside, "not_yet.txt"), join(root, "dangling.txt"));

  await refused(tools.invoke("read_file", { path: "../outside/secret.txt" }, ctx));
  await refused(tools.invoke("read_file", { path: join(outside, "secret.txt") }, ctx));
  await refused(tools.invoke("read_file", { path: "out_dir/secret.txt" }, ctx));
  await refused(tools.invoke("read_file", { path: "secret_link.txt" }, ctx));
  await refused(tools.invoke("list_dir", { path: "out_dir" }, ctx));
  await refused(tools.invoke("list_dir", { path: ".." }, ctx));
  await refused(tools.invoke("write_file", { path: "out_dir/new.txt", content: "x" }, ctx));
  await refused(tools.invoke("write_file", { path: "../evil.txt", content: "x" }, ctx));
  await refused(tools.invoke("write_file", { path: "secret_link.txt", content: "x" }, ctx));
  await refused(tools.invoke("write_file", { path: "dangling.txt", content: "x" }, ctx));
  await refused(
    tools.invoke("write_file", { path: "dangling.txt", content: "x", append: true }, ctx),
  );

  // Nothing outside changed.
  assert.equal(await Deno.readTextFile(join(outside, "secret.txt")), "top secret");
  assert.deepEqual([...Deno.readDirSync(outside)].map((e) => e.name).sort(), ["secret.txt"]);
  await assert.rejects(Deno.stat(join(outside, "..", "evil.txt")), Deno.errors.NotFound);
});

Deno.test("a link that stays inside the workspace is allowed", async () => {
  const { root } = await workspace();
  const tools = createToolRegistry();
  await Deno.mkdir(join(root, "real"));
  await Deno.writeTextFile(join(root, "real", "f.txt"), "inside");
  await Deno.symlink(join(root, "real"), join(root, "alias"));
  assert.equal(
    await tools.invoke("read_file", { path: "alias/f.txt" }, { workspaceRoot: root }),
    "inside",
  );
});

Deno.test("a fixed workspaceRoot option wins over the context's", async () => {
  const { root } = await workspace();
  await Deno.writeTextFile(join(root, "f.txt"), "fixed");
  const tools = createToolRegistry({ workspaceRoot: root });
  assert.equal(await tools.invoke("read_file", { path: "f.txt" }, { workspaceRoot: "/" }), "fixed");
});
