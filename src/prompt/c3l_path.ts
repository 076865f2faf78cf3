/**
 * C3L prompt paths (docs/agents.md, "Prompts"):
 * `<basePath>/<c1>/<c2>/<c3>/f_<edition>[_<adaptation>].md`. Every segment is checked, so a
 * registry can never point a prompt outside its tree.
 *
 * @module
 */
import { isAbsolute, join, normalize, relative, resolve, sep } from "node:path";
import { StepflowError } from "../errors.ts";

/** A C3L reference (`edition` defaults to `default`). */
export interface C3lRef {
  /** Layer 1, e.g. `steps` or `checks`. */
  c1: string;
  /** Layer 2, e.g. `phase` or `initial`. */
  c2: string;
  /** Layer 3, e.g. `analyze` or `issue`. */
  c3: string;
  /** Edition, default `default`. */
  edition?: string;
  /** Adaptation suffix. */
  adaptation?: string;
}

/** A path reference relative to the prompt base path. */
export interface PathRef {
  /** Relative path, e.g. `system.md`. */
  path: string;
}

/** A prompt reference in either form. */
export type PromptReference = C3lRef | PathRef;

/** The pattern every C3L segment must match. */
export const SEGMENT_PATTERN: RegExp = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;

/** Thrown for a prompt reference that is malformed or escapes its folder. */
export class PromptPathError extends StepflowError {
  /**
   * Creates the error.
   *
   * @param message what is wrong
   * @param details the reference
   */
  constructor(message: string, details?: Record<string, unknown>) {
    super("PROMPT_PATH_INVALID", message, { details });
  }
}

/** True when `ref` is a `{ path }` reference. */
export function isPathRef(ref: PromptReference): ref is PathRef {
  return typeof (ref as PathRef).path === "string";
}

/**
 * The relative C3L path of a reference, segments validated.
 *
 * @example
 * ```ts
 * import { c3lRelativePath } from "./c3l_path.ts";
 * c3lRelativePath({ c1: "steps", c2: "phase", c3: "analyze" }); // "steps/phase/analyze/f_default.md"
 * ```
 */
export function c3lRelativePath(ref: C3lRef): string {
  const edition = ref.edition ?? "default";
  const parts: Array<[string, string | undefined]> = [
    ["c1", ref.c1],
    ["c2", ref.c2],
    ["c3", ref.c3],
    ["edition", edition],
    ["adaptation", ref.adaptation],
  ];
  for (const [name, value] of parts) {
    if (value === undefined && name === "adaptation") continue;
    if (typeof value !== "string" || !SEGMENT_PATTERN.test(value)) {
      throw new PromptPathError(
        `Invalid C3L segment ${name}=${
          JSON.stringify(value)
        }: segments must match ${SEGMENT_PATTERN.source} (no "..", "/" or absolute paths).`,
        { segment: name, value },
      );
    }
  }
  const file = ref.adaptation ? `f_${edition}_${ref.adaptation}.md` : `f_${edition}.md`;
  return [ref.c1, ref.c2, ref.c3, file].join("/");
}

/**
 * The absolute path of a prompt reference under `<agentDir>/<basePath>`, refusing any reference
 * that would leave that folder. (Symlinks are checked when the file is read.)
 *
 * @example
 * ```ts
 * import { resolvePromptPath } from "./c3l_path.ts";
 * resolvePromptPath("/a/.agent/x", "prompts", { path: "system.md" }); // "/a/.agent/x/prompts/system.md"
 * ```
 */
export function resolvePromptPath(
  agentDir: string,
  basePath: string,
  ref: PromptReference,
): string {
  const root = promptRoot(agentDir, basePath);
  if (isPathRef(ref)) {
    const p = ref.path;
    if (p === "" || p.includes("\0") || isAbsolute(p) || /^[A-Za-z]:[\\/]/.test(p)) {
      throw new PromptPathError(
        `Invalid prompt path ${JSON.stringify(p)}: it must be a relative path inside ${root}.`,
        { path: p },
      );
    }
    const full = resolve(root, normalize(p));
    if (!isWithin(root, full)) {
      throw new PromptPathError(
        `Refused prompt path ${JSON.stringify(p)}: it resolves to ${full}, outside ${root}.`,
        { path: p },
      );
    }
    return full;
  }
  return join(root, ...c3lRelativePath(ref).split("/"));
}

/** The absolute prompt root `<agentDir>/<basePath>`; `basePath` must stay inside the agent folder. */
export function promptRoot(agentDir: string, basePath: string): string {
  const dir = resolve(agentDir);
  const root = resolve(dir, basePath);
  if (isAbsolute(basePath) || !isWithin(dir, root)) {
    throw new PromptPathError(
      `Invalid basePath ${
        JSON.stringify(basePath)
      }: it must be a folder inside the agent folder ${dir}.`,
      { basePath },
    );
  }
  return root;
}

/** True when `target` is `root` or below it. */
export function isWithin(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
