/**
 * LLM backends: the interface, the scripted backend, and structured-output extraction.
 *
 * @module
 */
export * from "./types.ts";
export * from "./scripted.ts";
export * from "./structured_output.ts";
export * from "./script_file.ts";
