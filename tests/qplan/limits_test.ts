/**
 * Multi-megabyte tokens: a 6.5 MB non-ASCII name once made `qplan validate` print "unexpected
 * error: Maximum call stack size exceeded" (exit 1) — the identifier regexp overflowed. Names are
 * now scanned in bounded chunks; every length works and errors keep their documented exit code.
 */
import assert from "node:assert/strict";
import { qplanMain } from "../../src/cli/qplan.ts";
import { runMain } from "../cli/helpers.ts";
import { createQPlanRegistry, validateScript } from "../../src/qplan/mod.ts";
import { workspace } from "./helpers.ts";

// 6.5 million Cyrillic letters (13 MB of UTF-8): the old regexp overflowed from ~4.3 million
// non-Latin-1 letters on.
const HUGE_NAME = "ж".repeat(6_500_000);

Deno.test("a 6.5-million-letter variable name and step id validate without a stack overflow", () => {
  const registry = createQPlanRegistry({ print: () => {} });
  const ok = validateScript(`var 1 -> ${HUGE_NAME}\nprint ${HUGE_NAME}\n`, { registry });
  assert.equal(ok.ok, true, JSON.stringify(ok.issues.map((i) => i.message.slice(0, 200))));
  const id = validateScript(`step id="${HUGE_NAME}" { var 1 -> x }\n`, { registry });
  assert.equal(id.ok, true);
  const unknown = validateScript(`${HUGE_NAME} op=1\n`, { registry });
  assert.equal(unknown.ok, false);
  assert.match(unknown.issues[0].message, /unknown module/);
  assert.ok(unknown.issues[0].message.length < 500, "the message quotes a clipped name");
  assert.match(unknown.issues[0].message, /characters left out/);
});

Deno.test("qplan validate on a 6.5-million-letter token: a clean verdict and the documented exit code", async () => {
  const dir = await workspace({
    "ok.qplan": `var 1 -> ${HUGE_NAME}\n`,
    "bad.qplan": `${HUGE_NAME}\n`,
  });
  for (const [file, code] of [["ok.qplan", 0], ["bad.qplan", 2]] as const) {
    const out = await runMain(qplanMain, ["validate", file], { userDir: dir });
    const stderr = out.stderr;
    assert.equal(out.code, code, `${file}: ${stderr.slice(0, 300)}`);
    assert.doesNotMatch(stderr, /Maximum call stack|unexpected error|this is a bug/);
    assert.ok(stderr.length < 5_000, `a short report, not the token: ${stderr.length} characters`);
  }
});
