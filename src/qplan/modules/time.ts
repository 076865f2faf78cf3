/**
 * The `time` and `date` modules: the current time in several formats.
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";
import { ModuleArgumentError } from "./values.ts";

const FORMATS = ["iso", "ms", "sec", "local", "time", "date", "datetime", "object"];
const ALIASES: Record<string, string> = {
  epochms: "ms",
  epochsec: "sec",
  epochs: "sec",
  s: "sec",
};

const pad = (n: number) => String(n).padStart(2, "0");

/** The current time in `format`: iso, ms, sec, local, time, date, datetime or object. */
export function formatNow(format: string, module: string, now: Date = new Date()): unknown {
  const key = ALIASES[format.toLowerCase()] ?? format.toLowerCase();
  const ms = now.getTime();
  const date = `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
  const time = `${pad(now.getHours())}:${pad(now.getMinutes())}:${pad(now.getSeconds())}`;
  switch (key) {
    case "iso":
      return now.toISOString();
    case "ms":
      return ms;
    case "sec":
      return Math.floor(ms / 1000);
    case "local":
      return now.toString();
    case "time":
      return time;
    case "date":
      return date;
    case "datetime":
      return `${date} ${time}`;
    case "object":
      return {
        year: now.getFullYear(),
        month: now.getMonth() + 1,
        day: now.getDate(),
        hour: now.getHours(),
        minute: now.getMinutes(),
        second: now.getSeconds(),
        date,
        time,
        datetime: `${date} ${time}`,
        iso: now.toISOString(),
        epochMs: ms,
        epochSec: Math.floor(ms / 1000),
        local: now.toString(),
      };
    default:
      throw new ModuleArgumentError(
        module,
        `unknown format "${format}"; use one of ${FORMATS.join(", ")}`,
      );
  }
}

const schema = z.strictObject({
  format: z.string().optional().describe(`One of ${FORMATS.join(", ")}.`),
});

/** `time [format=…] -> now`: default `HH:mm:ss`. */
export const timeTool: Tool<{ format?: string }, unknown> = {
  name: "time",
  description:
    'The current time: time -> now ("HH:mm:ss"); time format="iso|ms|sec|local|time|date|datetime|object" -> now.',
  inputSchema: schema,
  execute: ({ format }) => formatNow(format ?? "time", "time"),
};

/** `date [format=…] -> today`: default `YYYY-MM-DD`. */
export const dateTool: Tool<{ format?: string }, unknown> = {
  name: "date",
  description:
    'The current date: date -> today ("YYYY-MM-DD"); date format="iso|ms|sec|local|time|date|datetime|object" -> now.',
  inputSchema: schema,
  execute: ({ format }) => formatNow(format ?? "date", "date"),
};
