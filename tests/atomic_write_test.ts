import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFileAtomic } from "../src/atomic_write.ts";

Deno.test("writeFileAtomic writes text and bytes, creates folders, replaces the old content", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "a", "b", "plan.md");
  await writeFileAtomic(file, "one");
  assert.equal(await Deno.readTextFile(file), "one");
  await writeFileAtomic(file, new Uint8Array([116, 119, 111]), { fsync: false });
  assert.equal(await Deno.readTextFile(file), "two");
  assert.deepEqual([...Deno.readDirSync(join(dir, "a", "b"))].map((e) => e.name), ["plan.md"]);
});

Deno.test("writeFileAtomic leaves the target and no temp file behind when it fails or is aborted", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "keep.txt");
  await Deno.writeTextFile(file, "original");
  const controller = new AbortController();
  controller.abort(new Error("stop"));
  await assert.rejects(writeFileAtomic(file, "new", { signal: controller.signal }), /stop/);
  // a folder where the file should be: the rename fails
  await Deno.mkdir(join(dir, "folder"));
  await Deno.writeTextFile(join(dir, "folder", "x"), "x");
  await assert.rejects(writeFileAtomic(join(dir, "folder"), "text"));
  assert.equal(await Deno.readTextFile(file), "original");
  assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), ["folder", "keep.txt"]);
});
