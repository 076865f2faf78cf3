import assert from "node:assert/strict";
import { join } from "node:path";
import { appendJsonLine, openAppendLog, writeAll } from "../../src/store/append_log.ts";

Deno.test("openAppendLog cuts a torn last line before appending, and leaves whole lines alone", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "log.jsonl");
  const torn: number[] = [];
  const onTornTail = (bytes: number) => void torn.push(bytes);

  // A missing file is created; an intact file is appended to as is.
  appendJsonLine(path, { n: 1 }, { onTornTail });
  appendJsonLine(path, { n: 2 }, { onTornTail });
  assert.equal(await Deno.readTextFile(path), '{"n":1}\n{"n":2}\n');
  assert.deepEqual(torn, []);

  // A kill in the middle of an append: the fragment is cut, never glued to the next entry.
  await Deno.writeTextFile(path, '{"n":3,"long":"', { append: true });
  appendJsonLine(path, { n: 4 }, { onTornTail });
  assert.equal(await Deno.readTextFile(path), '{"n":1}\n{"n":2}\n{"n":4}\n');
  assert.deepEqual(torn, [15]);

  // A file that is one torn line (no newline at all) is emptied first.
  await Deno.writeTextFile(path, '{"only":');
  const log = openAppendLog(path, { onTornTail });
  writeAll(log, new TextEncoder().encode('{"n":5}\n'));
  log.close();
  assert.equal(await Deno.readTextFile(path), '{"n":5}\n');
  assert.deepEqual(torn, [15, 8]);
});

Deno.test("openAppendLog finds the last newline beyond one read chunk", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "log.jsonl");
  const fragment = "x".repeat(200_000); // a torn line longer than the 64 KiB read chunk
  await Deno.writeTextFile(path, `{"n":1}\n${fragment}`);
  let cut = 0;
  appendJsonLine(path, { n: 2 }, { onTornTail: (bytes) => void (cut = bytes) });
  assert.equal(cut, fragment.length);
  assert.equal(await Deno.readTextFile(path), '{"n":1}\n{"n":2}\n');
});
