/**
 * The `echo` module: returns its arguments.
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";

/** `echo k=v …`: returns its arguments as an object. */
export const echoTool: Tool<Record<string, unknown>, Record<string, unknown>> = {
  name: "echo",
  description: 'Returns its arguments as an object: echo msg="hi" n=2 -> out gives {msg, n}.',
  inputSchema: z.record(z.string(), z.unknown()),
  execute: (args) => ({ ...args }),
};
