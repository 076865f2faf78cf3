/**
 * Flags named like Object's members: `--constructor`, `--__proto__`, `--toString`
 * are unknown flags unless the agent declares them, and then they are ordinary parameters.
 */
import assert from "node:assert/strict";
import { parseCommandLine } from "../../src/cli/args.ts";
import { UsageError } from "../../src/errors.ts";

const OBJECT_KEYS = ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"];

Deno.test("args: --constructor & co. are unknown flags, named in our own words", () => {
  for (const key of OBJECT_KEYS) {
    for (const argv of [[`--${key}`, "x"], [`--${key}`], [`--${key}=true`]]) {
      assert.throws(
        () =>
          parseCommandLine(["--topic", "t", ...argv], {
            parameters: { topic: { type: "string" } },
          }),
        (error: unknown) => {
          assert.ok(error instanceof UsageError, `${argv.join(" ")}: ${error}`);
          assert.match(error.message, new RegExp(`^Unknown option --${key.replace(/_/g, "_")}\\.`));
          return true;
        },
        argv.join(" "),
      );
    }
  }
});

Deno.test("args: parameters declared with Object's member names are ordinary own parameters", () => {
  const parameters = Object.fromEntries(
    OBJECT_KEYS.map((key) => [key, { type: "string" as const, required: true }]),
  );
  // JSON.parse makes "__proto__" an own key, as agent.json would.
  const declared = JSON.parse(JSON.stringify(parameters));
  assert.ok(Object.hasOwn(declared, "__proto__"));
  const argv = OBJECT_KEYS.flatMap((key) => [`--${key}`, `v-${key}`]);
  const { params } = parseCommandLine(argv, { parameters: declared });
  for (const key of OBJECT_KEYS) {
    assert.ok(Object.hasOwn(params, key), key);
    assert.equal(params[key], `v-${key}`);
  }
  assert.equal(Object.getPrototypeOf(params), Object.prototype, "__proto__ did not replace it");
  // Missing ones are reported as missing, not found on Object.prototype.
  assert.throws(
    () => parseCommandLine([], { parameters: declared }),
    /Missing required parameters --constructor, --__proto__, --toString, --hasOwnProperty, --valueOf/,
  );
});
