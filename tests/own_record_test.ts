import assert from "node:assert/strict";
import { ownValue, setOwn } from "../src/own_record.ts";

Deno.test("ownValue: only own keys count — Object.prototype's members are not values", () => {
  assert.equal(ownValue({}, "constructor"), undefined);
  assert.equal(ownValue({}, "toString"), undefined);
  assert.equal(ownValue({ a: 1 }, "a"), 1);
  assert.equal(ownValue(Object.create({ inherited: 1 }), "inherited"), undefined);
});

Deno.test("setOwn: __proto__ is stored as data and never changes the prototype", () => {
  const record: Record<string, unknown> = {};
  setOwn(record, "__proto__", { polluted: true });
  setOwn(record, "a", 1);
  setOwn(record, "a", 2);
  assert.equal(Object.getPrototypeOf(record), Object.prototype);
  assert.deepEqual(Object.keys(record), ["__proto__", "a"]);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(JSON.stringify(record), '{"__proto__":{"polluted":true},"a":2}');
  assert.deepEqual(ownValue(record, "__proto__"), { polluted: true });
});
