/**
 * What a run produced, as the CLI prints it: a run that ends on a check-gated step produced that
 * step's answer — the summary prints it under `Output:`, and `--json` gives the same `output`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { seed001Files, writeAgent } from "../flow/fixtures.ts";
import { runCli } from "./helpers.ts";

const ok = (message: string) => ({ output: { result: "ok", message } });

Deno.test("run-agent: a run ending on a check-gated step prints that step's answer as its output", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-output-" });
  try {
    await writeAgent(root, "code-improver", seed001Files());
    const script = join(root, "answers.json");
    await Deno.writeTextFile(
      script,
      JSON.stringify({
        s_a8f3: ["analysis"],
        "s_a8f3#check": [ok("analysed")],
        s_b2c1: ["implementation"],
        "s_b2c1#check": [ok("green")],
        s_c9d4: ["The review: every change is sound."],
        "s_c9d4#check": [ok("all done")],
      }),
    );
    const args = ["--agent", "code-improver", "--script", script, "--topic", "auth"];
    const text = await runCli(args, { userDir: root });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /\nOutput:\n {2}The review: every change is sound\.\n$/);

    const json = await runCli([...args, "--json"], { userDir: root });
    assert.equal(json.code, 0, json.stderr);
    assert.equal(JSON.parse(json.stdout).output, "The review: every change is sound.");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
