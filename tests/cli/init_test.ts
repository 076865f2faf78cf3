import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { initAgent, TEMPLATES_URL } from "../../src/cli/init.ts";
import { TEMPLATE_FILES } from "../../src/cli/template_files.ts";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepflowError, UsageError } from "../../src/errors.ts";
import { writeFiles } from "./helpers.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-init-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("initAgent: the gate-routed template becomes a valid agent named after NAME", async () => {
  await withDir(async (cwd) => {
    const created = await initAgent("release-notes", { cwd });
    assert.equal(created.dir, join(cwd, ".agent", "release-notes"));
    assert.equal(created.template, "gate-routed");
    assert.ok(created.files.includes("agent.json"));
    assert.ok(created.files.includes("steps_registry.json"));
    assert.ok(created.files.includes("demo.script.yaml"));
    for (const file of created.files) {
      const text = await Deno.readTextFile(join(created.dir, file));
      assert.ok(!text.includes("__AGENT_NAME__"), `${file} still has the placeholder`);
    }
    const def = await loadAgentDefinition("release-notes", { cwd });
    assert.equal(def.name, "release-notes");
    // The "$schema" references still find the package's JSON Schemas from the new folder.
    for (const file of ["agent.json", "steps_registry.json"]) {
      const ref = JSON.parse(await Deno.readTextFile(join(created.dir, file))).$schema;
      assert.ok((await Deno.stat(resolve(created.dir, ref))).isFile, `${file}: ${ref}`);
    }
  });
});

Deno.test("initAgent: names in paths are replaced, binary files copied as is, symlinks skipped", async () => {
  await withDir(async (root) => {
    const templates = join(root, "templates");
    await writeFiles(join(templates, "t"), {
      "agent.json": '{ "name": "__AGENT_NAME__" }',
      "prompts/__AGENT_NAME__/f_default.md": "I am __AGENT_NAME__.",
    });
    const binary = new Uint8Array([0xff, 0xfe, 0x00, 0x5f, 0x5f]);
    await Deno.writeFile(join(templates, "t", "logo.bin"), binary);
    await Deno.symlink("/etc/passwd", join(templates, "t", "link"));
    const cwd = join(root, "user");
    const created = await initAgent("bot", { cwd, template: "t", templatesDir: templates });
    assert.deepEqual(created.files, ["agent.json", "logo.bin", "prompts/bot/f_default.md"]);
    assert.equal(
      await Deno.readTextFile(join(created.dir, "prompts/bot/f_default.md")),
      "I am bot.",
    );
    assert.deepEqual(await Deno.readFile(join(created.dir, "logo.bin")), binary);
  });
});

Deno.test("initAgent: refuses bad names, existing folders and missing templates", async () => {
  await withDir(async (cwd) => {
    for (const name of ["../x", "a/b", "", "-x", "has space"]) {
      await assert.rejects(
        () => initAgent(name, { cwd }),
        UsageError,
        `name ${JSON.stringify(name)}`,
      );
    }
    await Deno.mkdir(join(cwd, ".agent", "taken"), { recursive: true });
    await Deno.writeTextFile(join(cwd, ".agent", "taken", "keep.txt"), "mine");
    await assert.rejects(
      () => initAgent("taken", { cwd }),
      /already exists\. init never overwrites/,
    );
    assert.equal(await Deno.readTextFile(join(cwd, ".agent", "taken", "keep.txt")), "mine");
    await assert.rejects(
      () => initAgent("fresh", { cwd, template: "nope" }),
      (e: unknown) => e instanceof StepflowError && e.code === "TEMPLATE_NOT_FOUND",
    );
    assert.deepEqual([...Deno.readDirSync(join(cwd, ".agent"))].map((e) => e.name), ["taken"]);
  });
});

Deno.test("TEMPLATE_FILES lists exactly the files of each template folder", () => {
  const root = fileURLToPath(TEMPLATES_URL);
  const folders = [...Deno.readDirSync(root)].filter((e) => e.isDirectory).map((e) => e.name);
  assert.deepEqual(folders.sort(), Object.keys(TEMPLATE_FILES).sort());
  for (const template of folders) {
    const files: string[] = [];
    const walk = (dir: string, rel: string) => {
      for (const entry of Deno.readDirSync(dir)) {
        const path = rel ? `${rel}/${entry.name}` : entry.name;
        if (entry.isDirectory) walk(join(dir, entry.name), path);
        else files.push(path);
      }
    };
    walk(join(root, template), "");
    assert.deepEqual(files.sort(), [...TEMPLATE_FILES[template]], template);
  }
});

Deno.test("initAgent from a package served over HTTP (as from JSR) fetches the template", async () => {
  const packageRoot = fileURLToPath(new URL("../../", import.meta.url));
  const requested: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = decodeURIComponent(new URL(req.url).pathname);
    requested.push(path);
    if (!path.startsWith("/agents/") || path.includes("..")) {
      return new Response("no", { status: 404 });
    }
    try {
      return new Response(await Deno.readFile(join(packageRoot, path)));
    } catch {
      return new Response("missing", { status: 404 });
    }
  });
  try {
    await withDir(async (cwd) => {
      const templatesDir = new URL(`http://127.0.0.1:${server.addr.port}/agents/templates/`);
      const created = await initAgent("remote-bot", { cwd, templatesDir });
      assert.deepEqual(created.files, [...TEMPLATE_FILES["gate-routed"]]);
      const agent = JSON.parse(await Deno.readTextFile(join(created.dir, "agent.json")));
      assert.equal(agent.name, "remote-bot");
      assert.equal(agent.$schema, new URL("../schemas/agent.schema.json", templatesDir).href);
      const def = await loadAgentDefinition("remote-bot", { cwd });
      assert.equal(def.name, "remote-bot");
      assert.equal(requested.length, TEMPLATE_FILES["gate-routed"].length);
      await assert.rejects(
        () => initAgent("x", { cwd, templatesDir, template: "nope" }),
        (e: unknown) => e instanceof StepflowError && e.code === "TEMPLATE_NOT_FOUND",
      );
    });
  } finally {
    await server.shutdown();
  }
});
