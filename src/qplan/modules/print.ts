/**
 * The `print` module: writes a line.
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";
import { toText } from "./values.ts";

/** One item of a `print` call. */
export interface PrintItemValue {
  /** The `k` of a `k=v` item. */
  label?: string;
  /** The value. */
  value: unknown;
}

/**
 * `print "text", k=v, var`: writes one line (text as is, other values as JSON, `k=v` items as
 * `k=<value>`) and returns the last value.
 *
 * @param write where lines go (default `console.log`)
 */
export function createPrintTool(
  write: (line: string) => void = (line) => console.log(line),
): Tool<{ items?: PrintItemValue[] }, unknown> {
  return {
    name: "print",
    description:
      'Prints one line to the output: print "Total:", total, avg=average. Returns the last value.',
    inputSchema: z.strictObject({
      items: z.array(z.object({ label: z.string().optional(), value: z.unknown() })).optional()
        .describe("Written by the print statement itself from its comma-separated items."),
    }),
    execute: ({ items = [] }) => {
      write(
        items.map((i) => i.label === undefined ? toText(i.value) : `${i.label}=${toText(i.value)}`)
          .join(" "),
      );
      return items.length ? items[items.length - 1].value : undefined;
    },
  };
}
