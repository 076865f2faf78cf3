/** The two meanings of "exists" (src/path_exists.ts). */
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathExists, pathVisible, pathVisibleSync } from "../src/path_exists.ts";

Deno.test("pathExists / pathVisible: a file, a folder and a dangling link are there; nothing is not", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "a.txt"), "a");
    await Deno.symlink(join(dir, "gone"), join(dir, "link"));
    for (const name of ["a.txt", ".", "link"]) {
      assert.equal(await pathExists(join(dir, name)), true, name);
      assert.equal(await pathVisible(join(dir, name)), true, name);
      assert.equal(pathVisibleSync(join(dir, name)), true, name);
    }
    assert.equal(await pathExists(join(dir, "missing")), false);
    assert.equal(await pathVisible(join(dir, "missing")), false);
    assert.equal(pathVisibleSync(join(dir, "missing")), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("pathExists throws when it cannot tell; pathVisible answers false", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "a.txt"), "a");
    const underFile = join(dir, "a.txt", "child");
    await assert.rejects(pathExists(underFile), (e) => !(e instanceof Deno.errors.NotFound));
    assert.equal(await pathVisible(underFile), false);
    assert.equal(pathVisibleSync(underFile), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
