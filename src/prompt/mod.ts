/**
 * C3L prompt paths, frontmatter, variables and the no-fallback prompt resolver.
 *
 * @module
 */
export * from "./c3l_path.ts";
export * from "./frontmatter.ts";
export * from "./variables.ts";
export * from "./resolver.ts";
// The base class of this module's errors.
export { StepflowError } from "../errors.ts";
