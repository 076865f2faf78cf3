import assert from "node:assert/strict";
import { join } from "node:path";
import { removeStaleTemps, writeFileAtomic } from "../src/atomic_write.ts";

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

/** A process id that belongs to no running process: one that just exited. */
async function deadPid(): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), { args: ["eval", "0"] }).spawn();
  await child.status;
  return child.pid;
}

Deno.test("temp files carry the writer's pid; stale ones are removed, live ones kept", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "plan.md");
  const dead = await deadPid();
  const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
  const names = {
    deadWriter: `.plan.md.${dead}-0a1b2c3d.tmp`, // a crashed writer: removed
    reusedPid: `.plan.md.1-0a1b2c3e.tmp`, // pid 1 is alive, but two hours old: removed
    liveWriter: `.plan.md.1-0a1b2c3f.tmp`, // pid 1, fresh: a live writer's, kept
    mine: `.plan.md.${Deno.pid}-0a1b2c40.tmp`, // this process's own: kept
    legacyOld: `.plan.md.0a1b2c41.tmp`, // the naming before pids, two hours old
    legacyFresh: `.plan.md.0a1b2c42.tmp`, // the naming before pids, fresh: kept
    otherTarget: `.notes.md.${dead}-0a1b2c43.tmp`, // another file's, crashed writer
    notOurs: `.plan.md.notes.tmp`, // not our naming: kept
  };
  for (const name of Object.values(names)) await Deno.writeTextFile(join(dir, name), "{");
  for (const name of [names.reusedPid, names.legacyOld]) Deno.utimeSync(join(dir, name), old, old);
  const left = () => [...Deno.readDirSync(dir)].map((e) => e.name).sort();

  // The plan engines, opening plan.md under its lock: every stale temp of plan.md goes.
  assert.deepEqual(
    (await removeStaleTemps(file)).sort(),
    [names.deadWriter, names.reusedPid, names.legacyOld].map((n) => join(dir, n)).sort(),
  );
  assert.deepEqual(
    left(),
    [
      names.liveWriter,
      names.mine,
      names.legacyFresh,
      names.otherTarget,
      names.notOurs,
    ].sort(),
  );

  // The first write into a folder sweeps it once: stale temps of this convention, any target.
  await Deno.writeTextFile(join(dir, names.deadWriter), "{");
  await writeFileAtomic(join(dir, "other.txt"), "x");
  assert.deepEqual(
    left(),
    [names.liveWriter, names.mine, names.legacyFresh, names.notOurs, "other.txt"].sort(),
  );
  // Later writes into the same folder do not list it again.
  await Deno.writeTextFile(join(dir, names.deadWriter), "{");
  await writeFileAtomic(file, "# Plan: p\n");
  assert.ok(left().includes(names.deadWriter));
});

Deno.test("writeFileAtomic names its temp file .<name>.<pid>-<id>.tmp", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "plan.json");
  const seen: string[] = [];
  const watcher = Deno.watchFs(dir);
  const watching = (async () => {
    for await (const event of watcher) seen.push(...event.paths);
  })();
  await writeFileAtomic(file, "{}\n");
  await new Promise((r) => setTimeout(r, 50));
  watcher.close();
  await watching;
  const pattern = new RegExp(`/\\.plan\\.json\\.${Deno.pid}-[0-9a-f]{8}\\.tmp$`);
  assert.ok(seen.some((p) => pattern.test(p)), seen.join("\n"));
});

Deno.test("resolvedFolder: writes only into the folder that was checked — a link swapped in, a removed folder are PATH_CHANGED", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  await Deno.mkdir(join(dir, "checked"));
  await Deno.mkdir(join(dir, "protected"));
  await Deno.writeTextFile(join(dir, "protected/config"), "safe");
  const file = join(dir, "checked/config");
  // Checked, then replaced by a link to a folder the caller never judged.
  await writeFileAtomic(file, "one", { resolvedFolder: true });
  assert.equal(await Deno.readTextFile(file), "one");
  await Deno.rename(join(dir, "checked"), join(dir, "checked_old"));
  await Deno.symlink(join(dir, "protected"), join(dir, "checked"));
  const swapped = await writeFileAtomic(file, "evil", { resolvedFolder: true }).catch((e) => e);
  assert.equal(swapped?.code, "PATH_CHANGED", String(swapped));
  assert.match(swapped.message, /its folder changed after the path was checked/);
  assert.equal(await Deno.readTextFile(join(dir, "protected/config")), "safe");
  assert.deepEqual([...Deno.readDirSync(join(dir, "protected"))].map((e) => e.name), ["config"]);
  // A folder that is gone is not created again.
  await Deno.remove(join(dir, "checked"));
  const gone = await writeFileAtomic(file, "x", { resolvedFolder: true }).catch((e) => e);
  assert.equal(gone?.code, "PATH_CHANGED");
  assert.match(gone.message, /it was removed/);
  assert.equal(await Deno.lstat(join(dir, "checked")).catch(() => "none"), "none");
  // The final name is never followed: a link there is replaced, its target left alone.
  await Deno.mkdir(join(dir, "checked"));
  await Deno.symlink(join(dir, "protected/config"), file);
  await writeFileAtomic(file, "two", { resolvedFolder: true });
  assert.equal((await Deno.lstat(file)).isFile, true);
  assert.equal(await Deno.readTextFile(join(dir, "protected/config")), "safe");
});
