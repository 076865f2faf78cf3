/**
 * Using a checkout from another project: the documented ways to import mod.ts
 * (`--config <checkout>/deno.json`, or an import map in the project's own deno.json) work from a
 * folder outside the checkout, and `--init` there prints next steps that run where the user stands.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { JSR_RUN_AGENT, stepflowPrefix } from "../../src/invocation.ts";
import { REPO_ROOT, runCli } from "./helpers.ts";

const MAIN = (specifier: string) =>
  `import { loadAgentDefinition } from "${specifier}";
const def = await loadAgentDefinition("my-agent");
console.log("loaded", def.name, def.entryStepId);
`;

async function run(cmd: string[], cwd: string): Promise<{ code: number; out: string }> {
  // As typed in a shell: no INIT_CWD from an enclosing `deno task` (the test runner's own).
  const result = await new Deno.Command("env", {
    args: ["-u", "INIT_CWD", ...cmd],
    cwd,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: result.code,
    out: decoder.decode(result.stdout) + decoder.decode(result.stderr),
  };
}

/** A project folder outside the checkout holding a freshly scaffolded agent. */
async function project(): Promise<{ dir: string; init: string }> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-elsewhere-" });
  const init = await runCli(["--init", "my-agent"], { userDir: dir });
  assert.equal(init.code, 0, init.stderr);
  return { dir, init: init.stdout };
}

Deno.test("outside the checkout: --init prints next steps that work there, and they do", async () => {
  const { dir, init } = await project();
  try {
    assert.doesNotMatch(init, /deno task run-agent/, "deno task only works inside the checkout");
    const lines = init.split("\n").filter((l) => l.startsWith("  deno "));
    assert.equal(lines.length, 3, init);
    for (const line of lines) {
      assert.ok(line.startsWith(`  deno run -A --config ${join(REPO_ROOT, "deno.json")} `), line);
    }
    // Run the scripted demo and the validation exactly as printed, from the project folder.
    for (const line of [lines[0], lines[2]]) {
      const command = line.trim().replace('"…"', '"from elsewhere"');
      const result = await run(["sh", "-c", command], dir);
      assert.equal(result.code, 0, `${command}\n${result.out}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("outside the checkout: importing mod.ts works with --config <checkout>/deno.json", async () => {
  const { dir } = await project();
  try {
    await Deno.writeTextFile(
      join(dir, "main.ts"),
      MAIN(new URL("mod.ts", `file://${REPO_ROOT}`).href),
    );
    const plain = await run([Deno.execPath(), "run", "-A", "main.ts"], dir);
    assert.notEqual(plain.code, 0, "without the config the checkout's bare imports do not resolve");
    assert.match(plain.out, /Import "[^"]+" not a dependency/);
    const withConfig = await run(
      [Deno.execPath(), "run", "-A", "--config", join(REPO_ROOT, "deno.json"), "main.ts"],
      dir,
    );
    assert.equal(withConfig.code, 0, withConfig.out);
    assert.match(withConfig.out, /^loaded my-agent initial\.task$/m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("outside the checkout: importing it through the project's own import map works", async () => {
  const { dir } = await project();
  try {
    const checkout = JSON.parse(await Deno.readTextFile(join(REPO_ROOT, "deno.json")));
    await Deno.writeTextFile(
      join(dir, "deno.json"),
      JSON.stringify({
        imports: {
          ...checkout.imports,
          "@stepflow/core": join(REPO_ROOT, "mod.ts"),
          "@stepflow/core/llm": join(REPO_ROOT, checkout.exports["./llm"]),
        },
      }),
    );
    await Deno.writeTextFile(
      join(dir, "main.ts"),
      MAIN("@stepflow/core") +
        `import { ScriptedBackend } from "@stepflow/core/llm";\n` +
        `console.log("backend", new ScriptedBackend({}).name);\n`,
    );
    const result = await run([Deno.execPath(), "run", "-A", "main.ts"], dir);
    assert.equal(result.code, 0, result.out);
    assert.match(result.out, /^loaded my-agent initial\.task$/m);
    assert.match(result.out, /^backend scripted$/m, "a subpath entry point maps the same way");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("outside the checkout: a usage error of ui shows its help as the command is typed there", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-elsewhere-" });
  try {
    const config = join(REPO_ROOT, "deno.json");
    const ui = join(REPO_ROOT, "src", "cli", "ui.ts");
    const result = await run(
      [Deno.execPath(), "run", "-A", "--config", config, ui, "--prot", "0"],
      dir,
    );
    assert.equal(result.code, 2, result.out);
    assert.match(result.out, /Unknown option --prot/);
    assert.ok(
      result.out.includes(
        `Usage: deno run -A --config ${config} ${
          join(REPO_ROOT, "src", "cli", "mod.ts")
        } ui [--store`,
      ),
      result.out,
    );
    assert.doesNotMatch(result.out, /deno task/, "deno task only works inside the checkout");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stepflowPrefix: deno task inside the checkout, --config outside, JSR when loaded from JSR", () => {
  const none = { path: "" }; // no installed stepflow on this PATH
  assert.equal(stepflowPrefix(join(REPO_ROOT, "some", "sub"), none), "deno task stepflow");
  assert.equal(
    stepflowPrefix("/elsewhere/project", none),
    `deno run -A --config ${join(REPO_ROOT, "deno.json")} ${
      join(REPO_ROOT, "src", "cli", "mod.ts")
    }`,
  );
  assert.equal(
    stepflowPrefix("/x", {
      ...none,
      moduleUrl: "https://jsr.io/@stepflow/core/0.1.0/src/invocation.ts",
    }),
    JSR_RUN_AGENT,
  );
  assert.match(
    stepflowPrefix("/x", { ...none, moduleUrl: "file:///opt/my%20checkout/src/invocation.ts" }),
    /^deno run -A --config '\/opt\/my checkout\/deno\.json' '\/opt\/my checkout\/src\/cli\/mod\.ts'$/,
  );
});
