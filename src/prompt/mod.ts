/**
 * Prompts: how a step names its prompt (a C3L reference or a path) and the errors a missing or
 * unsafe prompt raises. Resolving, front matter and variable substitution are the runner's business
 * and stay in their files.
 *
 * @module
 */
export { type C3lRef, type PathRef, PromptPathError, type PromptReference } from "./c3l_path.ts";
export { MissingVariablesError } from "./variables.ts";
export { PromptNotFoundError } from "./resolver.ts";
// The base class of this module's errors.
export { StepflowError } from "../errors.ts";
