/**
 * `deno task schemas`: writes the generated JSON Schemas to `agents/schemas/` (atomically).
 *
 * @module
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeFileAtomic } from "../atomic_write.ts";
import { generateSchemas } from "./json_schemas.ts";

/** The folder the schemas are written to: `agents/schemas/` at the repository root. */
export const SCHEMAS_OUTPUT_DIR: string = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "agents",
  "schemas",
);

/**
 * Writes every generated schema file into `dir` (temp file + rename) and returns the paths written.
 * Files whose content is unchanged are left alone.
 */
export async function writeSchemas(dir: string = SCHEMAS_OUTPUT_DIR): Promise<string[]> {
  await Deno.mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const [name, text] of Object.entries(generateSchemas())) {
    const file = join(dir, name);
    const current = await Deno.readTextFile(file).catch(() => undefined);
    if (current === text) continue;
    await writeFileAtomic(file, text);
    written.push(file);
  }
  return written;
}

if (import.meta.main) {
  const written = await writeSchemas();
  console.log(
    written.length > 0
      ? `Wrote ${written.join(", ")}`
      : `agents/schemas/ is up to date (${SCHEMAS_OUTPUT_DIR}).`,
  );
}
