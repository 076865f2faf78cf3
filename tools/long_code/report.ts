/**
 * Lists long code in src/ (or the folders named): every function over 150 lines and every file
 * over 600 lines that does not say at its top why (the rules of tools/long_code/plugin.ts, run
 * through `deno lint` with Deno's own parser). Exits 1 when there is one.
 *
 * Usage: `deno task long-code [folder or file …]` (default: src).
 *
 * @module
 */
import { relative } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";

interface Diagnostic {
  filename: string;
  range: { start: { line: number } };
  message: string;
  code: string;
}

const config = fromFileUrl(new URL("./lint_config.json", import.meta.url));
const targets = Deno.args.length > 0 ? Deno.args : ["src"];
const output = await new Deno.Command(Deno.execPath(), {
  args: ["lint", "--config", config, "--json", ...targets],
  stdout: "piped",
  stderr: "inherit",
}).output();
const report = JSON.parse(new TextDecoder().decode(output.stdout)) as {
  diagnostics: Diagnostic[];
  errors: { file_path: string; message: string }[];
};
for (const error of report.errors) {
  console.error(`${error.file_path}: ${error.message}`);
}
const found = report.diagnostics.filter((d) => d.code.startsWith("long-code/"));
for (const d of found) {
  const where = relative(Deno.cwd(), fromFileUrl(d.filename));
  console.log(`${where}:${d.range.start.line}  ${d.message}`);
}
console.log(
  found.length === 0
    ? "no long code without a stated reason"
    : `${found.length} place(s) long without a stated reason`,
);
if (found.length > 0 || report.errors.length > 0) Deno.exit(1);
