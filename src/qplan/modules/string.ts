/**
 * The `string` module: lower, upper, trim, replace, split, join, includes, length, substring.
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";
import { describeValue } from "../core/evaluate.ts";
import { ModuleArgumentError, toNumber, toText } from "./values.ts";

/** The arguments of `string`. */
export interface StringArgs {
  /** The operation. */
  op:
    | "lower"
    | "upper"
    | "trim"
    | "replace"
    | "split"
    | "join"
    | "includes"
    | "length"
    | "substring";
  /** The text. */
  text?: unknown;
  /** replace/includes: what to look for. */
  search?: unknown;
  /** replace: the replacement. */
  replace?: unknown;
  /** split/join: the separator (default ","). */
  sep?: unknown;
  /** join: the list (or JSON text of a list). */
  arr?: unknown;
  /** substring: first index. */
  start?: unknown;
  /** substring: index after the last. */
  end?: unknown;
  /** replace: every occurrence instead of the first. */
  all?: unknown;
}

/** `string upper text=name -> shout`, `string split text=csv sep="," -> parts`, … */
export const stringTool: Tool<StringArgs, unknown> = {
  name: "string",
  description:
    'Text helpers: string lower|upper|trim|length text=t -> out; string replace text=t search="a" replace="b" [all=true] -> out; string split text=t sep="," -> list; string join arr=list sep="-" -> text; string includes text=t search="x" -> bool; string substring text=t start=0 end=5 -> out.',
  inputSchema: z.strictObject({
    op: z.enum([
      "lower",
      "upper",
      "trim",
      "replace",
      "split",
      "join",
      "includes",
      "length",
      "substring",
    ]).describe("The operation."),
    text: z.unknown().optional().describe("The text."),
    search: z.unknown().optional().describe("replace/includes: what to look for."),
    replace: z.unknown().optional().describe("replace: the replacement."),
    sep: z.unknown().optional().describe('split/join: the separator (default ",").'),
    arr: z.unknown().optional().describe("join: the list."),
    start: z.unknown().optional().describe("substring: first index."),
    end: z.unknown().optional().describe("substring: index after the last."),
    all: z.unknown().optional().describe("replace: true to replace every occurrence."),
  }),
  execute(args) {
    const text = toText(args.text);
    const sep = args.sep === undefined ? "," : toText(args.sep);
    switch (args.op) {
      case "lower":
        return text.toLowerCase();
      case "upper":
        return text.toUpperCase();
      case "trim":
        return text.trim();
      case "replace": {
        const search = toText(args.search);
        const replacement = toText(args.replace);
        if (search === "") throw new ModuleArgumentError("string replace", "search= is required");
        return args.all === true || args.all === "true"
          ? text.split(search).join(replacement)
          : text.replace(search, () => replacement);
      }
      case "split":
        return text.split(sep);
      case "join": {
        let list = args.arr;
        if (typeof list === "string") {
          try {
            list = JSON.parse(list);
          } catch { /* reported below */ }
        }
        if (!Array.isArray(list)) {
          throw new ModuleArgumentError(
            "string join",
            `arr must be a list, got ${describeValue(args.arr)}`,
          );
        }
        return list.map(toText).join(sep);
      }
      case "includes":
        return text.includes(toText(args.search));
      case "length":
        return text.length;
      case "substring":
        return text.substring(
          args.start === undefined ? 0 : toNumber(args.start, "start", "string substring"),
          args.end === undefined ? undefined : toNumber(args.end, "end", "string substring"),
        );
    }
  },
};
