/**
 * The `future` and `join` modules: start a value that arrives later, then wait for several.
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";
import { describeValue } from "../core/evaluate.ts";
import type { QPlanToolContext } from "../core/execution_context.ts";
import { QPlanFuture } from "../core/future.ts";
import { sleep } from "../../backoff.ts";
import { ModuleArgumentError, toNumber } from "./values.ts";

/** The arguments of `future`. */
export interface FutureArgs {
  /** A label; the default value is `done:<task>`. */
  task?: string;
  /** Milliseconds until the future resolves (default 0). */
  delay?: unknown;
  /** The value it resolves to. */
  value?: unknown;
}

/**
 * `future task="A" delay=500 value="x" -> f`: stores a promise in `f` that resolves after `delay`
 * ms to `value` (default `done:<task>`). A future that is never joined is cancelled when the run
 * ends.
 */
export const futureTool: Tool<FutureArgs, QPlanFuture> = {
  name: "future",
  description:
    'Starts a value that arrives later and stores the promise: future task="a" delay=200 value=42 -> f1. Collect futures with join.',
  inputSchema: z.strictObject({
    task: z.string().optional().describe("A label for the future."),
    delay: z.unknown().optional().describe("Milliseconds until it resolves (default 0)."),
    value: z.unknown().optional().describe('What it resolves to (default "done:<task>").'),
  }),
  execute({ task, delay: wait, value }, ctx) {
    const ms = wait === undefined ? 0 : toNumber(wait, "delay", "future");
    if (ms < 0) throw new ModuleArgumentError("future", `delay must not be negative, got ${ms}`);
    const result = value === undefined ? `done:${task ?? "future"}` : value;
    return new QPlanFuture(sleep(ms, ctx.signal).then(() => result));
  },
};

/**
 * `join futures="f1,f2" -> results`: waits for the named futures and returns their values in the
 * order named. `futures` may also be a future itself or a list of futures.
 */
export const joinTool: Tool<{ futures: unknown }, unknown[]> = {
  name: "join",
  description:
    'Waits for futures and returns their values in the order named: join futures="f1,f2" -> results.',
  inputSchema: z.strictObject({
    futures: z.unknown().describe('Comma-separated future variable names, e.g. "f1,f2".'),
  }),
  async execute({ futures }, ctx) {
    const vars = (ctx as QPlanToolContext).qplan;
    const items: unknown[] = Array.isArray(futures)
      ? futures
      : typeof futures === "string"
      ? futures.split(",").map((s) => s.trim()).filter(Boolean)
      : [futures];
    if (items.length === 0) {
      throw new ModuleArgumentError("join", 'futures= names no future; write futures="f1,f2"');
    }
    const promises = items.map((item) => {
      if (isThenable(item)) return item;
      if (typeof item === "string") {
        if (!vars?.has(item)) throw new ModuleArgumentError("join", `future '${item}' not found`);
        const value = vars.get(item);
        if (!isThenable(value)) {
          throw new ModuleArgumentError(
            "join",
            `'${item}' is not a future (it holds ${describeValue(value)})`,
          );
        }
        return value;
      }
      throw new ModuleArgumentError("join", `cannot wait for ${describeValue(item)}`);
    });
    return await Promise.all(promises);
  },
};

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return v !== null && typeof v === "object" &&
    typeof (v as PromiseLike<unknown>).then === "function";
}
