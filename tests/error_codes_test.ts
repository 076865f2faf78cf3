import assert from "node:assert/strict";
import { ERROR_CODES, type ErrorCodeOf, type StepflowErrorCode } from "../src/error_codes.ts";
import { StepflowError, UsageError } from "../src/errors.ts";

Deno.test("StepflowError: a literal code must be listed; a computed one is taken as it is", () => {
  const listed = new StepflowError("PLAN_INVALID", "bad plan");
  const code: "PLAN_INVALID" = listed.code;
  assert.equal(code, "PLAN_INVALID");
  // @ts-expect-error a code in no list of src/error_codes.ts does not compile
  const typo = new StepflowError("PLAN_INAVLID", "typo");
  assert.equal(typo.code, "PLAN_INAVLID");
  const computed = new StepflowError("aborted".toUpperCase(), "run aborted");
  assert.equal(computed.code, "ABORTED");
  const custom = new StepflowError<string>("MY_TOOL_DOWN", "a user's own code");
  assert.equal(custom.code, "MY_TOOL_DOWN");
  const usage: StepflowError = new UsageError("bad flag");
  // @ts-expect-error comparing with a code in no list is a compile error too
  assert.equal(usage.code === "USAGE_ERROR", false);
  const plan: ErrorCodeOf<"plan"> = "PLAN_EDIT_INVALID";
  // @ts-expect-error a module's union holds its own codes only
  const notPlan: ErrorCodeOf<"plan"> = "RUN_LOCKED";
  assert.ok(plan && notPlan);
});

Deno.test("ERROR_CODES: each list is sorted, and a code belongs to one module", () => {
  const owner = new Map<StepflowErrorCode, string>();
  for (const [module, codes] of Object.entries(ERROR_CODES)) {
    assert.deepEqual([...codes], [...codes].sort(), `ERROR_CODES.${module} is not sorted`);
    for (const code of codes) {
      assert.ok(!owner.has(code), `${code} is in ${owner.get(code)} and ${module}`);
      owner.set(code, module);
    }
  }
});
