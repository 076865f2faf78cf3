/**
 * Run stores: the contract and the in-memory store.
 *
 * @module
 */
export * from "./types.ts";
export * from "./memory.ts";
