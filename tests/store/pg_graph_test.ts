/**
 * The PostgreSQL packages stay out of the static module graph (importing stepflow, running the
 * CLI on the file store or the demo loads neither), and the specifiers loaded at run time match
 * the deno.json aliases.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { PG_SPECIFIERS } from "../../src/store/pg_loader.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const PACKAGES = ["pg", "pg-boss"] as const;

for (const entry of ["mod.ts", "src/cli/run_agent.ts", "src/cli/worker.ts", "src/worker/mod.ts"]) {
  Deno.test(`deno info ${entry} lists neither pg nor pg-boss`, async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
      modules: { specifier: string }[];
      packages?: Record<string, string>;
    };
    const graph = [...info.modules.map((m) => m.specifier), ...Object.keys(info.packages ?? {})];
    for (const pkg of PACKAGES) {
      const hits = graph.filter((s) =>
        s.startsWith(`npm:/${pkg}@`) || s.startsWith(`npm:${pkg}@`) || s === pkg
      );
      assert.deepEqual(hits, [], `${entry} pulls in ${pkg}`);
    }
  });
}

Deno.test("the PostgreSQL specifiers loaded at run time equal the deno.json aliases", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)) as {
    imports: Record<string, string>;
  };
  for (const pkg of PACKAGES) assert.equal(PG_SPECIFIERS[pkg], config.imports[pkg], pkg);
});
