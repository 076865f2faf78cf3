/**
 * Value conversions shared by the QPlan modules: numbers and lists that may arrive as text
 * (params, file contents, bare words), with errors that name the argument.
 *
 * @module
 */
import { StepflowError } from "../../errors.ts";
import { describeValue } from "../core/evaluate.ts";

/** A module's own argument error (e.g. `math add: b must be a number, got "unknown"`). */
export class ModuleArgumentError extends StepflowError {
  /**
   * Creates the error for a module's argument.
   *
   * @param module the module name
   * @param message what is wrong with which argument
   */
  constructor(module: string, message: string) {
    super("QPLAN_MODULE_ARGS", `${module}: ${message}`, { details: { module } });
  }
}

/** Converts a number or numeric text; anything else is an error naming `name`. */
export function toNumber(value: unknown, name: string, module: string): number {
  if (typeof value === "number" && !Number.isNaN(value)) return value;
  if (typeof value === "string" && value.trim() !== "") {
    const n = Number(value.trim());
    if (!Number.isNaN(n)) return n;
  }
  if (value === undefined) throw new ModuleArgumentError(module, `${name}= is required`);
  throw new ModuleArgumentError(module, `${name} must be a number, got ${describeValue(value)}`);
}

/** Converts a list, a JSON list in text, or text such as `"1 2 3"` / `"1,2,3"` into numbers. */
export function toNumberList(value: unknown, name: string, module: string): number[] {
  if (Array.isArray(value)) return value.map((v, i) => toNumber(v, `${name}[${i}]`, module));
  if (typeof value === "string") {
    const text = value.trim();
    if (text === "") return [];
    if (text.startsWith("[")) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new ModuleArgumentError(
          module,
          `${name} is not a valid JSON list: ${describeValue(text)}`,
        );
      }
      if (Array.isArray(parsed)) return parsed.map((v, i) => toNumber(v, `${name}[${i}]`, module));
    }
    return text.split(/[\s,]+/).filter(Boolean).map((v, i) => toNumber(v, `${name}[${i}]`, module));
  }
  if (value === undefined) throw new ModuleArgumentError(module, `${name}= is required`);
  throw new ModuleArgumentError(
    module,
    `${name} must be a list of numbers (a list, JSON text or "1 2 3"), got ${describeValue(value)}`,
  );
}

/** Text of a value: strings as they are, other values as JSON. */
export function toText(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  if (typeof value === "object" && value !== null) {
    try {
      return JSON.stringify(value);
    } catch {
      return String(value);
    }
  }
  return String(value);
}
