/**
 * Every path a tool call reaches, resolved once before the call is decided: the permission rules
 * judge these resolutions, and the tool then acts on them (through `ToolContext.paths`), never on a
 * fresh resolution of its arguments — what was judged is what runs. A search (`Glob`, `Grep`) is
 * also given the rules to hide each file it comes across that a `disallowedTools` rule covers.
 *
 * @module
 */
import { relative, resolve, sep } from "node:path";
import { type PermissionPolicy, searchRefusal } from "./permissions.ts";
import type { PathGuard, ReachedPath } from "./types.ts";
import { reachPath } from "./workspace.ts";

/** The path argument of each agent tool that takes one, and its default. */
const PATH_ARGUMENTS: Readonly<Record<string, { arg: string; fallback?: string }>> = {
  Read: { arg: "file_path" },
  Write: { arg: "file_path" },
  Edit: { arg: "file_path" },
  Glob: { arg: "path", fallback: "." },
  Grep: { arg: "path", fallback: "." },
};

/** A call's path arguments, resolved: each to where it leads, or to the error resolving it gave. */
export interface CallPaths {
  /** The resolutions permission rules judge (an argument that could not be resolved: as written). */
  readonly judged: readonly ReachedPath[];
  /** By argument name: the resolution, or the error (the tool reports it when it runs). */
  readonly byArgument: ReadonlyMap<string, ReachedPath | Error>;
}

/**
 * Resolves the path arguments of a call to an agent tool (`file_path`, `path`) inside `cwd`, or
 * `undefined` for a tool without any. Never throws: a path that cannot be resolved (it leaves the
 * working folder, a link loop) is judged as written, and the tool reports the error when it runs.
 *
 * @example
 * ```ts
 * import { reachCallPaths } from "./call_paths.ts";
 * const paths = await reachCallPaths("Read", { file_path: "deno.json" }, Deno.cwd());
 * console.log(paths?.judged[0].real); // "deno.json"
 * ```
 */
export async function reachCallPaths(
  tool: string,
  args: Readonly<Record<string, unknown>>,
  cwd: string,
): Promise<CallPaths | undefined> {
  const spec = Object.hasOwn(PATH_ARGUMENTS, tool) ? PATH_ARGUMENTS[tool] : undefined;
  if (!spec) return undefined;
  const value = args[spec.arg] ?? spec.fallback;
  if (typeof value !== "string") return undefined;
  const byArgument = new Map<string, ReachedPath | Error>();
  const judged: ReachedPath[] = [];
  try {
    const reached = await reachPath(cwd, value);
    byArgument.set(spec.arg, reached);
    judged.push(reached);
  } catch (error) {
    byArgument.set(spec.arg, error instanceof Error ? error : new Error(String(error)));
    const abs = resolve(cwd, value);
    const written = relative(cwd, abs).split(sep).join("/") || ".";
    judged.push({ written, real: written, abs, exists: false });
  }
  return { judged, byArgument };
}

/**
 * The guard a tool receives as `ToolContext.paths`: the judged resolutions, and the rules that
 * hide files from a search.
 *
 * @example
 * ```ts
 * import { pathGuard, reachCallPaths } from "./call_paths.ts";
 * const cwd = Deno.cwd();
 * const paths = (await reachCallPaths("Grep", { pattern: "x" }, cwd))!;
 * const guard = pathGuard({ mode: "default", allow: [], deny: [] }, cwd, "Grep", paths);
 * console.log(guard.reached("path").real); // "."
 * ```
 */
export function pathGuard(
  policy: PermissionPolicy,
  cwd: string,
  tool: string,
  paths: CallPaths,
): PathGuard {
  return {
    reached(arg) {
      const found = paths.byArgument.get(arg);
      if (found instanceof Error) throw found;
      if (!found) throw new Error(`${tool}: the path argument "${arg}" was not resolved`);
      return found;
    },
    hides: (file) => searchRefusal(policy, tool, cwd, file),
  };
}
