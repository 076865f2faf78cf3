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
