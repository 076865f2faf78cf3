/**
 * The `sleep` module: waits.
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";
import { sleep } from "../../backoff.ts";
import { toNumber } from "./values.ts";

/** `sleep ms=N`: waits N milliseconds (cancelled by abort/timeout); returns N. */
export const sleepTool: Tool<{ ms: unknown }, number> = {
  name: "sleep",
  description: "Waits ms milliseconds: sleep ms=500. Returns the number of milliseconds waited.",
  inputSchema: z.strictObject({ ms: z.unknown().describe("Milliseconds to wait (number).") }),
  execute: async ({ ms }, ctx) => {
    const n = toNumber(ms, "ms", "sleep");
    if (n < 0) throw new Error(`sleep: ms must not be negative, got ${n}`);
    await sleep(n, ctx.signal);
    return n;
  },
};
