import assert from "node:assert/strict";
import { join } from "node:path";
import { StepflowError } from "../src/errors.ts";
import { readTextFileOr } from "../src/read_text_file.ts";

Deno.test("readTextFileOr: the text, or the code with what the file was for and why", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-read-" });
  try {
    await Deno.writeTextFile(join(dir, "plan.json"), "{}");
    assert.equal(await readTextFileOr(join(dir, "plan.json"), "PLAN_NOT_FOUND", "plan file"), "{}");
    const missing = join(dir, "none.json");
    await assert.rejects(
      () => readTextFileOr(missing, "PLAN_FILE_NOT_FOUND", "plan file", "."),
      (error: unknown) =>
        error instanceof StepflowError && error.code === "PLAN_FILE_NOT_FOUND" &&
        error.message === `Cannot read plan file ${missing}: no such file.` &&
        error.details?.file === missing,
    );
    await assert.rejects(
      () => readTextFileOr(dir, "PLAN_NOT_FOUND", "plan file"),
      (error: unknown) =>
        error instanceof StepflowError && error.code === "PLAN_NOT_FOUND" &&
        error.message.startsWith(`Cannot read plan file ${dir}: `) &&
        !error.message.includes("no such file"),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readTextFileOr with maxBytes: up to the bound, regular files only, files whose stat says empty read whole", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-read-" });
  try {
    const file = join(dir, "a.yaml");
    await Deno.writeTextFile(file, "é".repeat(50)); // 100 bytes
    const read = (path: string, maxBytes: number) =>
      readTextFileOr(path, "SCRIPT_NOT_FOUND", "script file", ".", { maxBytes });
    assert.equal(await read(file, 100), "é".repeat(50));
    await assert.rejects(
      () => read(file, 99),
      (error: unknown) =>
        error instanceof StepflowError && error.code === "SCRIPT_NOT_FOUND" &&
        error.message ===
          `Cannot read script file ${file}: it is 100 bytes; a script file is at most 99 bytes.`,
    );
    // A /proc file says size 0 and still has text: it is read to its end, within the bound.
    assert.match(await read("/proc/self/status", 1_000_000), /^Name:/);
    await assert.rejects(() => read("/proc/self/status", 10), /is over 10 bytes; a script file/);
    await assert.rejects(() => read("/dev/null", 10), /it is a device, not a file\.$/);
    await assert.rejects(() => read(join(dir, "none"), 10), /: no such file\.$/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
