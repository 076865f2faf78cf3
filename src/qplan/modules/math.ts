/**
 * The `math` module: add/sub/mul/div(a, b), sum/avg(arr).
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";
import { ModuleArgumentError, toNumber, toNumberList } from "./values.ts";

/** The arguments of `math`. */
export interface MathArgs {
  /** The operation. */
  op: "add" | "sub" | "mul" | "div" | "sum" | "avg";
  /** Left operand of add/sub/mul/div. */
  a?: unknown;
  /** Right operand of add/sub/mul/div. */
  b?: unknown;
  /** The list of sum/avg. */
  arr?: unknown;
}

/**
 * `math add a=1 b=2 -> x`, `math avg arr="[1,2,3]" -> y`, `math sum arr="1 2 3" -> t`.
 * Operands may be numbers or numeric text; anything else is an error naming the operand.
 */
export const mathTool: Tool<MathArgs, number> = {
  name: "math",
  description:
    'Arithmetic. add/sub/mul/div use a and b: math add a=1 b=2 -> x. sum/avg use arr (a list, JSON text or "1 2 3"): math avg arr=scores -> mean.',
  inputSchema: z.strictObject({
    op: z.enum(["add", "sub", "mul", "div", "sum", "avg"]).describe("The operation."),
    a: z.unknown().optional().describe("First operand (number) of add/sub/mul/div."),
    b: z.unknown().optional().describe("Second operand (number) of add/sub/mul/div."),
    arr: z.unknown().optional().describe('Numbers for sum/avg: a list, JSON text or "1 2 3".'),
  }),
  execute: ({ op, a, b, arr }) => {
    switch (op) {
      case "add":
        return toNumber(a, "a", "math add") + toNumber(b, "b", "math add");
      case "sub":
        return toNumber(a, "a", "math sub") - toNumber(b, "b", "math sub");
      case "mul":
        return toNumber(a, "a", "math mul") * toNumber(b, "b", "math mul");
      case "div": {
        const x = toNumber(a, "a", "math div");
        const y = toNumber(b, "b", "math div");
        if (y === 0) throw new ModuleArgumentError("math div", "division by zero (b is 0)");
        return x / y;
      }
      case "sum":
        return toNumberList(arr, "arr", "math sum").reduce((s, v) => s + v, 0);
      case "avg": {
        const list = toNumberList(arr, "arr", "math avg");
        return list.length === 0 ? 0 : list.reduce((s, v) => s + v, 0) / list.length;
      }
    }
  },
};
