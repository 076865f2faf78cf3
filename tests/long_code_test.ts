/** The long-code report of tools/long_code/: functions over 150 lines, files over 600. */
import assert from "node:assert/strict";
import { join } from "node:path";

const REPORT = new URL("../tools/long_code/report.ts", import.meta.url).pathname;

/** A function named `name` spanning exactly `lines` lines, after an optional comment. */
function fn(name: string, lines: number, comment = ""): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`);
  return `${comment}export function ${name}(): void {\n${body.join("\n")}\n}\n`;
}

async function report(dir: string): Promise<{ code: number; stdout: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-run", REPORT, dir],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: new TextDecoder().decode(out.stdout) };
}

Deno.test("long-code: a function over 150 lines or a file over 600 needs a stated reason", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "ok.ts"), fn("fits", 150));
    await Deno.writeTextFile(join(dir, "long_fn.ts"), fn("tooLong", 151));
    await Deno.writeTextFile(
      join(dir, "reasoned_fn.ts"),
      fn("grammar", 200, "/** Long because: one case per token kind. */\n"),
    );
    const filler = Array.from({ length: 600 }, (_, i) => `export const c${i} = ${i};`).join("\n");
    await Deno.writeTextFile(join(dir, "long_file.ts"), `/** Constants. */\n${filler}\n`);
    await Deno.writeTextFile(
      join(dir, "reasoned_file.ts"),
      `/** A table.\n *\n * Long because: generated from the spec. */\n${filler}\n`,
    );
    // A reason excuses only what it stands on top of: not the next function, not the file.
    const reasonedFirst = fn("first", 160, "/** Long because: a table. */\n");
    await Deno.writeTextFile(
      join(dir, "next_fn.ts"),
      `export const v = 1;\n${reasonedFirst}${fn("second", 160)}${filler}\n`,
    );
    const { code, stdout } = await report(dir);
    assert.equal(code, 1, stdout);
    assert.match(stdout, /long_fn\.ts:1\s+function tooLong of 151 lines \(over 150\)/);
    assert.match(stdout, /long_file\.ts:\d+\s+file of 601 lines \(over 600\)/);
    assert.match(stdout, /next_fn\.ts:\d+\s+function second of 160 lines/);
    assert.match(stdout, /next_fn\.ts:\d+\s+file of \d+ lines/);
    assert.doesNotMatch(stdout, /ok\.ts|reasoned_fn\.ts|reasoned_file\.ts|function first/);
    assert.match(stdout, /4 place\(s\) long without a stated reason/);

    await Deno.remove(join(dir, "long_fn.ts"));
    await Deno.remove(join(dir, "long_file.ts"));
    await Deno.remove(join(dir, "next_fn.ts"));
    const clean = await report(dir);
    assert.equal(clean.code, 0, clean.stdout);
    assert.match(clean.stdout, /no long code without a stated reason/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
