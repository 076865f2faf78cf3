/**
 * Reading and writing plain records under keys that come from models, files or flags. A key such as
 * `constructor` or `toString` must not find `Object.prototype`'s member, and `__proto__` must be
 * stored as data, not change the record's prototype. Records stay plain objects, so they survive
 * JSON checkpoints unchanged. Shared by every layer (it imports nothing of stepflow).
 *
 * @module
 */

/**
 * The value `record` holds under its own key `key`, else undefined.
 *
 * @example
 * ```ts
 * import { ownValue } from "./own_record.ts";
 * ownValue({}, "constructor"); // undefined
 * ownValue({ a: 1 }, "a"); // 1
 * ```
 */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * Stores `value` under `key` as an own data property, whatever the key (`__proto__` included).
 *
 * @example
 * ```ts
 * import { setOwn } from "./own_record.ts";
 * const r: Record<string, number> = {};
 * setOwn(r, "__proto__", 1);
 * Object.keys(r); // ["__proto__"]
 * ```
 */
export function setOwn<T>(record: Record<string, T>, key: string, value: T): void {
  if (key === "__proto__") {
    Object.defineProperty(record, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else {
    record[key] = value;
  }
}
