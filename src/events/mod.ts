/**
 * The shared event vocabulary and a safe emitter.
 *
 * @module
 */
export * from "./types.ts";
export * from "./emitter.ts";
