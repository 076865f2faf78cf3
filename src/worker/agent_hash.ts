/**
 * The content hash of an agent's definition: what a queued run records so that a worker whose copy
 * of the agent differs refuses the run instead of running other prompts than were submitted.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join, relative, sep } from "node:path";

/**
 * SHA-256 over every file of the agent folder (agent.json, the registry, prompts, schemas, …): each
 * file's path relative to the folder, then its bytes, in path order. Editing, adding, removing or
 * renaming any file changes the hash; where the folder lives does not.
 *
 * @param dir the agent folder (`AgentDefinition.dir`)
 * @returns `sha256:<hex>`
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition } from "jsr:@stepflow/core";
 * import { agentContentHash } from "jsr:@stepflow/core/worker";
 * const definition = await loadAgentDefinition("issue-solver");
 * console.log(await agentContentHash(definition.dir)); // "sha256:3f1c…"
 * ```
 */
export async function agentContentHash(dir: string): Promise<string> {
  const files: string[] = [];
  await collect(dir, dir, files);
  files.sort();
  const hash = createHash("sha256");
  for (const rel of files) {
    const bytes = await Deno.readFile(join(dir, rel));
    // Length-prefixed fields: no choice of names and contents can collide with another.
    hash.update(`${rel.length}:${rel}\n${bytes.length}:`);
    hash.update(bytes);
  }
  return `sha256:${hash.digest("hex")}`;
}

async function collect(root: string, dir: string, out: string[]): Promise<void> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) await collect(root, path, out);
    else if (entry.isFile) out.push(relative(root, path).split(sep).join("/"));
  }
}
