/**
 * The crash story of `qplan run` (docs/qplan.md): a QPlan run keeps no state of its own — nothing
 * to resume, nothing to lock — so a killed run is simply run again from the start, and what it
 * leaves is what its `file write` statements wrote, each atomically. Killed at points spread over
 * the run, every file is either absent or whole, a temp file cut short by a kill is removed by the
 * next write of the same file, and the next run completes. Two runs at once are independent.
 *
 * `STEPFLOW_FULL_CAMPAIGN=1` adds 20 kills at random moments after the six timed by events.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { finish, spawnCli } from "../cli/helpers.ts";
import { FULL_CAMPAIGN, jitter, killAtMoment, pause, tempFilesCreated } from "../kill_campaign.ts";

const FILES = 12;

const SCRIPT = `@title "Writer"
var ${JSON.stringify(Array.from({ length: FILES }, (_, i) => i + 1))} -> ids
step id="write" desc="Write one file per id" {
  each i in ids {
    file write path=("out/" + i + ".json") data={"id": i, "ids": ids}
    sleep ms=10
  }
}
`;

function spawnQplan(dir: string): Deno.ChildProcess {
  return spawnCli("qplan", ["run", "writer.qplan", "--quiet"], { userDir: dir, stdout: "null" });
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

/** The inode of every output file: each atomic write (a rename) gives its file a new one. */
function inodes(dir: string): Map<string, number | null> {
  const found = new Map<string, number | null>();
  try {
    for (const entry of Deno.readDirSync(join(dir, "out"))) {
      if (entry.name.endsWith(".json")) {
        found.set(entry.name, Deno.statSync(join(dir, "out", entry.name)).ino);
      }
    }
  } catch {
    // no output yet
  }
  return found;
}

/**
 * When the campaign kills a run: `jitterMs` after the run wrote its `written`-th file (the writes
 * come 10 ms apart, so the kill lands in the pause or in the next write); as soon as the temp file
 * of its `writing`-th file appears (in the middle of that write: the temp file is written and
 * flushed before its rename); or at a random moment (drawn again for each run).
 */
type KillMoment = { written: number; jitterMs: number } | { writing: number } | { random: true };

/**
 * Six kills spread over the run, three of them in the middle of a write. A run that ended before
 * its moment (on a busy machine the kill may come late) is run again.
 */
const EVENT_KILLS: KillMoment[] = [
  { written: 1, jitterMs: jitter(12) },
  { writing: 3 },
  { written: 5, jitterMs: jitter(12) },
  { writing: 8 },
  { written: 10, jitterMs: jitter(12) },
  { writing: FILES - 1 },
];

/**
 * The full campaign adds 20 kills at random moments, 100–600 ms after the start (a run that ended
 * before its moment is not counted: the moment is drawn again).
 */
const RANDOM_KILLS: KillMoment[] = Array.from({ length: 20 }, () => ({ random: true }) as const);

Deno.test("qplan run CLI: SIGKILL at points spread over the run — files are absent or whole, the next run completes and cleans up", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(join(dir, "writer.qplan"), SCRIPT);
  await Deno.mkdir(join(dir, "out")); // watched for temp files from the first run on
  const moments = FULL_CAMPAIGN ? [...EVENT_KILLS, ...RANDOM_KILLS] : EVENT_KILLS;
  for (const moment of moments) {
    await killAtMoment({
      describe: JSON.stringify(moment),
      tries: "random" in moment ? 10 : 3,
      ...("writing" in moment ? { watch: join(dir, "out") } : {}),
      spawn: () => spawnQplan(dir),
      arm: (watcher) => {
        const before = inodes(dir);
        return async (_child, ended) => {
          if ("random" in moment) return await pause(100 + Math.random() * 500);
          if ("writing" in moment) return await tempFilesCreated(watcher!, moment.writing);
          const rewritten = () =>
            [...inodes(dir)].filter(([name, ino]) => before.get(name) !== ino).length;
          while (!ended.aborted && rewritten() < moment.written) await pause(3);
          await pause(moment.jitterMs);
        };
      },
      afterRun: async () => void await checkFiles(dir),
    });
  }
  const last = await finish(spawnQplan(dir));
  assert.equal(last.code, 0, last.stderr);
  assert.deepEqual(await checkFiles(dir), [], "temp files of killed writes were removed");
  assert.equal([...Deno.readDirSync(join(dir, "out"))].length, FILES);
});

Deno.test("qplan run CLI: two runs of one script at once are independent; every file is whole", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(join(dir, "writer.qplan"), SCRIPT);
  const [a, b] = await Promise.all([finish(spawnQplan(dir)), finish(spawnQplan(dir))]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  assert.deepEqual(await checkFiles(dir), []);
  assert.equal([...Deno.readDirSync(join(dir, "out"))].length, FILES);
});
