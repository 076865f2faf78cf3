/**
 * How the command lines show a path in their messages.
 *
 * @module
 */
import { isAbsolute, relative, sep } from "node:path";

/**
 * `path` relative to `cwd` when it is inside it (`planspec/demo.md`), else absolute, so the user can
 * copy it from where they stand.
 *
 * @example
 * ```ts
 * import { displayPath } from "./display_path.ts";
 * displayPath("/home/me/project/planspec/a.md", "/home/me/project"); // "planspec/a.md"
 * displayPath("/tmp/x.md", "/home/me/project"); // "/tmp/x.md"
 * ```
 */
export function displayPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel && rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel) ? rel : path;
}
