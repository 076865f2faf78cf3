/**
 * `deno task docs`: refreshes the table of contents of every page in docs/ (run it after adding
 * or renaming a heading; the docs tests fail while a table of contents is out of date).
 *
 * @module
 */
import { withTableOfContents } from "./markdown.ts";

const root = new URL("../docs/", import.meta.url);
let changed = 0;
for await (const entry of Deno.readDir(root)) {
  if (!entry.isFile || !entry.name.endsWith(".md")) continue;
  const file = new URL(entry.name, root);
  const text = await Deno.readTextFile(file);
  const next = withTableOfContents(text);
  if (next !== text) {
    await Deno.writeTextFile(file, next);
    changed++;
    console.log(`docs/${entry.name}: table of contents updated`);
  }
}
if (changed === 0) console.log("docs/: every table of contents is up to date");
