/**
 * The crash story of `qplan run` (docs/qplan.md): a QPlan run keeps no state of its own — nothing
 * to resume, nothing to lock — so a killed run is simply run again from the start, and what it
 * leaves is what its `file write` statements wrote, each atomically. Killed at 20 random points,
 * every file is either absent or whole, a temp file cut short by a kill is removed by the next
 * write of the same file, and the next run completes. Two runs at once are independent.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const QPLAN_CLI = join(ROOT, "src/cli/qplan.ts");
const FILES = 12;

const SCRIPT = `@title "Writer"
var ${JSON.stringify(Array.from({ length: FILES }, (_, i) => i + 1))} -> ids
step id="write" desc="Write one file per id" {
  each i in ids {
    file write path=("out/" + i + ".json") data={"id": i, "ids": ids}
    sleep ms=25
  }
}
`;

function spawnQplan(dir: string): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", QPLAN_CLI, "run", "writer.qplan", "--quiet"],
    cwd: ROOT,
    env: { INIT_CWD: dir, NO_COLOR: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
}

/** Every output file that exists is whole; returns the temp files beside them. */
async function checkFiles(dir: string): Promise<string[]> {
  const temps: string[] = [];
  let entries: Deno.DirEntry[] = [];
  try {
    entries = [...Deno.readDirSync(join(dir, "out"))];
  } catch {
    return temps; // killed before the first write
  }
  for (const entry of entries) {
    if (entry.name.endsWith(".tmp")) {
      temps.push(entry.name);
      continue;
    }
    const id = Number(entry.name.slice(0, -".json".length));
    const value = JSON.parse(await Deno.readTextFile(join(dir, "out", entry.name)));
    assert.equal(value.id, id, entry.name);
    assert.equal(value.ids.length, FILES, `${entry.name} is whole`);
  }
  return temps;
}

Deno.test("qplan run CLI: SIGKILL at 20 random points — files are absent or whole, the next run completes and cleans up", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(join(dir, "writer.qplan"), SCRIPT);
  let kills = 0;
  while (kills < 20) {
    const child = spawnQplan(dir);
    await new Promise((r) => setTimeout(r, 100 + Math.random() * 500));
    try {
      child.kill("SIGKILL");
    } catch {
      // it already ended
    }
    await child.stderr.cancel();
    if ((await child.status).signal === "SIGKILL") kills++;
    await checkFiles(dir);
  }
  const last = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", QPLAN_CLI, "run", "writer.qplan", "--quiet"],
    cwd: ROOT,
    env: { INIT_CWD: dir, NO_COLOR: "1" },
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(last.code, 0, new TextDecoder().decode(last.stderr));
  assert.deepEqual(await checkFiles(dir), [], "temp files of killed writes were removed");
  assert.equal([...Deno.readDirSync(join(dir, "out"))].length, FILES);
});

Deno.test("qplan run CLI: two runs of one script at once are independent; every file is whole", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(join(dir, "writer.qplan"), SCRIPT);
  const [a, b] = await Promise.all([spawnQplan(dir).output(), spawnQplan(dir).output()]);
  assert.equal(a.code, 0, new TextDecoder().decode(a.stderr));
  assert.equal(b.code, 0, new TextDecoder().decode(b.stderr));
  assert.deepEqual(await checkFiles(dir), []);
  assert.equal([...Deno.readDirSync(join(dir, "out"))].length, FILES);
});
