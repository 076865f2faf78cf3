import assert from "node:assert/strict";
import { shortDiff } from "../src/text_diff.ts";

Deno.test("shortDiff: equal texts give nothing; a changed line shows - then + with context", () => {
  assert.equal(shortDiff("a\nb", "a\nb"), "");
  assert.equal(shortDiff("a\nb\nc\nd", "a\nb\nC\nd", { context: 1 }), "  b\n- c\n+ C\n  d");
});

Deno.test("shortDiff: distant changes are separated by … and long diffs are cut with a count", () => {
  const before = Array.from({ length: 30 }, (_, i) => `line ${i}`).join("\n");
  const after = before.replace("line 2\n", "LINE 2\n").replace("line 27", "LINE 27");
  const diff = shortDiff(before, after, { context: 1 });
  assert.match(diff, /- line 2\n\+ LINE 2/);
  assert.match(diff, /\n…\n/);
  assert.match(diff, /- line 27\n\+ LINE 27/);
  const many = shortDiff(before, before.replaceAll("line", "row"), { maxLines: 5 });
  assert.equal(many.split("\n").length, 6);
  assert.match(many, /… \(\d+ more diff lines\)$/);
});

Deno.test("shortDiff: huge texts are compared without the quadratic table", () => {
  const before = Array.from({ length: 5_000 }, (_, i) => `l${i}`).join("\n");
  const after = Array.from({ length: 5_000 }, (_, i) => `m${i}`).join("\n");
  const diff = shortDiff(before, after, { maxLines: 4 });
  assert.match(diff, /^- l0\n- l1\n- l2\n- l3\n… \(9996 more diff lines\)$/);
});
