/**
 * The `var` module: stores a value.
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";

/** `var <expr> -> name`: stores a value. */
export const varTool: Tool<{ value?: unknown }, unknown> = {
  name: "var",
  description:
    "Creates a variable from a value: var 0 -> total, var [1,2,3] -> items, var (a + 1) -> b.",
  inputSchema: z.strictObject({ value: z.unknown().describe("The value to store.") }),
  execute: ({ value }) => value,
};
