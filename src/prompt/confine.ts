/**
 * Symbolic links that leave the agent folder are refused wherever an agent's files are opened
 * (docs/agents.md, "Prompts"), so a shared agent folder cannot read files outside itself. The agent
 * folder itself may be a link: every check compares real paths against the agent folder's real
 * path.
 *
 * @module
 */
import { realpath } from "node:fs/promises";
import { isWithin } from "./c3l_path.ts";

/** The real path of `path`, or `path` itself when it does not exist (yet). */
export async function realpathOr(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return path;
  }
}

/**
 * Where `path` really is, and whether that stays inside `realBase` (a real path). A missing `path`
 * counts as inside: the caller reports it as missing.
 *
 * @example
 * ```ts ignore
 * import { realpathOr, realLocation } from "./confine.ts";
 * const where = await realLocation("/a/.agent/x/prompts", await realpathOr("/a/.agent/x"));
 * if (!where.inside) console.error(`prompts/ is a link to ${where.real}`);
 * ```
 */
export async function realLocation(
  path: string,
  realBase: string,
): Promise<{ real: string; inside: boolean }> {
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    return { real: path, inside: true };
  }
  return { real, inside: isWithin(realBase, real) };
}

/** The message for a file or folder of an agent that is a link out of the agent folder. */
export function outsideLinkMessage(what: string, path: string, real: string, base: string): string {
  return `Refused ${what} ${path}: it is a symbolic link to ${real}, outside the agent folder ${base}. Keep the agent's files inside its folder (the agent folder itself may be a link).`;
}
