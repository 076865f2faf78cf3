/**
 * Recursively freezes a plain data value (objects and arrays) and returns it.
 *
 * @example
 * ```ts
 * import { deepFreeze } from "./deep_freeze.ts";
 * const value = deepFreeze({ a: { b: [1] } });
 * Object.isFrozen(value.a.b); // true
 * ```
 */
export function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== "object" || Object.isFrozen(node)) continue;
    Object.freeze(node);
    for (const key of Object.keys(node)) stack.push((node as Record<string, unknown>)[key]);
  }
  return value;
}
