import assert from "node:assert/strict";
import { join } from "node:path";
import { StepflowError } from "../../src/errors.ts";
import { AGENT_TOOL_LIMITS } from "../../src/tools/agent_limits.ts";
import { createToolRegistry } from "../../src/tools/builtin.ts";

async function workspace(): Promise<{ root: string; outside: string }> {
  const base = await Deno.makeTempDir({ prefix: "stepflow_agent_fs_" });
  const root = join(base, "ws");
  const outside = join(base, "outside");
  await Deno.mkdir(root);
  await Deno.mkdir(outside);
  await Deno.writeTextFile(join(outside, "secret.txt"), "top secret\n");
  return { root, outside };
}

const tools = createToolRegistry({ agentTools: true });

function failure(p: Promise<unknown>): Promise<StepflowError> {
  return p.then(
    () => assert.fail("expected an error"),
    (e) => {
      assert.ok(e instanceof StepflowError, String(e));
      return e;
    },
  );
}

function codeOf(p: Promise<unknown>): Promise<string> {
  return p.then(() => "none", (e) => e instanceof StepflowError ? e.code : String(e));
}

Deno.test("agent tools sit in the one registry beside the built-ins, with Claude Code's shapes", () => {
  const names = tools.list().map((t) => t.name);
  for (const name of ["read_file", "Read", "Write", "Edit", "Glob", "Grep", "Bash"]) {
    assert.ok(names.includes(name), name);
  }
  const schema = tools.descriptor("Edit")!.inputSchema as {
    properties: Record<string, unknown>;
    required: string[];
  };
  assert.deepEqual(Object.keys(schema.properties), [
    "file_path",
    "old_string",
    "new_string",
    "replace_all",
  ]);
  assert.deepEqual(schema.required, ["file_path", "old_string", "new_string"]);
  const grep = tools.descriptor("Grep")!.inputSchema as { properties: Record<string, unknown> };
  for (const key of ["-i", "-n", "-A", "-B", "-C", "head_limit", "output_mode", "glob"]) {
    assert.ok(key in grep.properties, key);
  }
  assert.equal(tools.descriptor("Read")!.idempotent, true);
  assert.equal(tools.descriptor("Bash")!.idempotent, false);
  assert.equal(createToolRegistry().has("Read"), false, "off unless asked for");
});

Deno.test("Read numbers lines, honours offset/limit and says when the offset is past the end", async () => {
  const { root } = await workspace();
  const ctx = { workspaceRoot: root };
  await Deno.writeTextFile(join(root, "a.txt"), "one\r\ntwo\nthree\n");
  assert.equal(
    await tools.invoke("Read", { file_path: "a.txt" }, ctx),
    "     1\tone\n     2\ttwo\n     3\tthree",
  );
  assert.equal(
    await tools.invoke("Read", { file_path: join(root, "a.txt"), offset: 2, limit: 1 }, ctx),
    "     2\ttwo",
  );
  assert.match(
    await tools.invoke("Read", { file_path: "a.txt", offset: 9 }, ctx) as string,
    /has 3 lines; offset 9 is past its end/,
  );
  await Deno.writeTextFile(join(root, "empty.txt"), "");
  assert.match(await tools.invoke("Read", { file_path: "empty.txt" }, ctx) as string, /is empty/);
});

Deno.test("Read bounds its result: long lines cut, output truncated with the offset to go on", async () => {
  const { root } = await workspace();
  const ctx = { workspaceRoot: root };
  await Deno.writeTextFile(join(root, "wide.txt"), `${"x".repeat(50_000)}\nshort\n`);
  const wide = await tools.invoke("Read", { file_path: "wide.txt" }, ctx) as string;
  assert.match(wide, /line cut at 2000 characters/);
  assert.match(wide, /2\tshort$/);
  assert.ok(wide.length < 2_100);
  const line = "y".repeat(99);
  await Deno.writeTextFile(join(root, "long.txt"), `${line}\n`.repeat(1_500));
  const long = await tools.invoke("Read", { file_path: "long.txt" }, ctx) as string;
  assert.ok(long.length <= AGENT_TOOL_LIMITS.readChars + 200, String(long.length));
  const notice = long.split("\n").at(-1)!;
  assert.match(
    notice,
    /^… output truncated at 100000 characters; use offset\/limit \(next line: \d+\)$/,
  );
  const next = Number(/next line: (\d+)/.exec(notice)![1]);
  const rest = await tools.invoke("Read", { file_path: "long.txt", offset: next }, ctx) as string;
  assert.ok(rest.startsWith(`${String(next).padStart(6)}\t`));
  assert.match(rest, /1500\ty+$/);
});

Deno.test("Read streams a huge file: the first lines of 20 MB come back without reading it all", async () => {
  const { root } = await workspace();
  const file = await Deno.open(join(root, "huge.log"), { write: true, create: true });
  const block = new TextEncoder().encode("log line\n".repeat(100_000));
  for (let i = 0; i < 22; i++) await file.write(block);
  file.close();
  const text = await tools.invoke("Read", { file_path: "huge.log", limit: 2 }, {
    workspaceRoot: root,
  });
  assert.equal(text, "     1\tlog line\n     2\tlog line");
});

Deno.test("Read reports binary files and folders instead of dumping them", async () => {
  const { root } = await workspace();
  const ctx = { workspaceRoot: root };
  await Deno.writeFile(join(root, "img.png"), new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]));
  await Deno.writeFile(join(root, "latin1.txt"), new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]));
  await Deno.mkdir(join(root, "dir"));
  const error = await failure(tools.invoke("Read", { file_path: "img.png" }, ctx));
  assert.equal(error.code, "FILE_IS_BINARY");
  assert.match(error.message, /"img.png" is a binary file \(7 bytes\)/);
  assert.equal(
    await codeOf(tools.invoke("Read", { file_path: "latin1.txt" }, ctx)),
    "FILE_IS_BINARY",
  );
  assert.equal(await codeOf(tools.invoke("Read", { file_path: "dir" }, ctx)), "FILE_IS_DIRECTORY");
  assert.equal(await codeOf(tools.invoke("Read", { file_path: "no.txt" }, ctx)), "FILE_NOT_FOUND");
});

Deno.test("Read, Write, Edit refuse paths that leave the working folder: .., absolute, symlinks out", async () => {
  const { root, outside } = await workspace();
  const ctx = { workspaceRoot: root };
  await Deno.symlink(join(outside, "secret.txt"), join(root, "link.txt"));
  await Deno.symlink(outside, join(root, "outdir"));
  await Deno.symlink(join(outside, "missing.txt"), join(root, "dangling.txt"));
  const attempts: [string, Record<string, unknown>][] = [
    ["Read", { file_path: "../outside/secret.txt" }],
    ["Read", { file_path: join(outside, "secret.txt") }],
    ["Read", { file_path: "link.txt" }],
    ["Read", { file_path: "outdir/secret.txt" }],
    ["Write", { file_path: "../outside/new.txt", content: "x" }],
    ["Write", { file_path: "outdir/new.txt", content: "x" }],
    ["Write", { file_path: "dangling.txt", content: "x" }],
    ["Edit", { file_path: "link.txt", old_string: "top", new_string: "no" }],
  ];
  for (const [tool, args] of attempts) {
    const error = await failure(tools.invoke(tool, args, ctx));
    assert.equal(error.code, "PATH_ESCAPES_WORKSPACE", `${tool} ${JSON.stringify(args)}`);
    assert.match(error.message, /Refused path/);
  }
  assert.equal(await Deno.readTextFile(join(outside, "secret.txt")), "top secret\n");
  assert.deepEqual([...Deno.readDirSync(outside)].map((e) => e.name), ["secret.txt"]);
});

Deno.test("Write creates and replaces atomically, makes folders, refuses folders and huge content", async () => {
  const { root } = await workspace();
  const ctx = { workspaceRoot: root };
  assert.equal(
    await tools.invoke("Write", { file_path: "src/a.ts", content: "export {};\n" }, ctx),
    "Created src/a.ts (11 bytes).",
  );
  assert.equal(
    await tools.invoke("Write", { file_path: "src/a.ts", content: "x" }, ctx),
    "Replaced src/a.ts (1 bytes).",
  );
  assert.equal(await Deno.readTextFile(join(root, "src/a.ts")), "x");
  assert.deepEqual([...Deno.readDirSync(join(root, "src"))].map((e) => e.name), ["a.ts"]);
  assert.equal(
    await codeOf(tools.invoke("Write", { file_path: "src", content: "x" }, ctx)),
    "FILE_IS_DIRECTORY",
  );
  const huge = "z".repeat(AGENT_TOOL_LIMITS.fileBytes + 1);
  assert.equal(
    await codeOf(tools.invoke("Write", { file_path: "big.txt", content: huge }, ctx)),
    "FILE_TOO_LARGE",
  );
  assert.equal(await Deno.lstat(join(root, "big.txt")).then(() => true, () => false), false);
});

Deno.test("Edit replaces a unique string; a missing or repeated one is an error that changes nothing", async () => {
  const { root } = await workspace();
  const ctx = { workspaceRoot: root };
  const file = join(root, "app.ts");
  const original = "const a = 1;\nconst b = 1;\n";
  await Deno.writeTextFile(file, original);

  const missing = await failure(tools.invoke("Edit", {
    file_path: "app.ts",
    old_string: "const c",
    new_string: "const d",
  }, ctx));
  assert.equal(missing.code, "EDIT_NOT_FOUND");
  assert.match(missing.message, /not found in "app.ts"; the file is unchanged/);

  const repeated = await failure(tools.invoke("Edit", {
    file_path: "app.ts",
    old_string: "= 1",
    new_string: "= 2",
  }, ctx));
  assert.equal(repeated.code, "EDIT_NOT_UNIQUE");
  assert.match(repeated.message, /occurs 2 times/);
  assert.equal(await Deno.readTextFile(file), original);

  assert.equal(
    await codeOf(
      tools.invoke("Edit", { file_path: "app.ts", old_string: "a", new_string: "a" }, ctx),
    ),
    "EDIT_NO_CHANGE",
  );
  assert.equal(
    await tools.invoke(
      "Edit",
      { file_path: "app.ts", old_string: "const a", new_string: "let $&" },
      ctx,
    ),
    "Edited app.ts: 1 replacement.",
  );
  assert.equal(await Deno.readTextFile(file), "let $& = 1;\nconst b = 1;\n", "no $& expansion");
  assert.equal(
    await tools.invoke("Edit", {
      file_path: "app.ts",
      old_string: "= 1",
      new_string: "= 2",
      replace_all: true,
    }, ctx),
    "Edited app.ts: 2 replacements.",
  );
  assert.equal(await Deno.readTextFile(file), "let $& = 2;\nconst b = 2;\n");
  assert.deepEqual([...Deno.readDirSync(root)].map((e) => e.name), ["app.ts"], "no temp files");

  await Deno.writeFile(join(root, "bin"), new Uint8Array([1, 0, 2]));
  assert.equal(
    await codeOf(
      tools.invoke("Edit", { file_path: "bin", old_string: "\u0001", new_string: "x" }, ctx),
    ),
    "FILE_IS_BINARY",
  );
});

Deno.test("hostile arguments: huge, deeply nested, not an object, unknown keys, constructor", async () => {
  const { root } = await workspace();
  const ctx = { workspaceRoot: root };
  let nested: unknown = "x";
  for (let i = 0; i < 10_000; i++) nested = { a: nested };
  const bad: [string, unknown][] = [
    ["Read", { file_path: "a".repeat(1_000_000) }],
    ["Read", { file_path: nested }],
    ["Write", nested],
    ["Read", "not json {"],
    ["Read", null],
    ["Read", ["file_path"]],
    ["Read", { file_path: "a.txt", constructor: "x" }],
    [
      "Edit",
      JSON.parse('{"file_path":"a.txt","old_string":"a","new_string":"b","__proto__":{"x":1}}'),
    ],
    ["Bash", { command: "true", timeout: 10_000_000 }],
    ["Grep", { pattern: "x", "-C": -1 }],
  ];
  for (const [tool, args] of bad) {
    assert.equal(await codeOf(tools.invoke(tool, args, ctx)), "TOOL_ARGS_INVALID", tool);
  }
  // A file may well be called "constructor" or "__proto__".
  await tools.invoke("Write", { file_path: "constructor", content: "c" }, ctx);
  await tools.invoke("Write", { file_path: "__proto__", content: "p" }, ctx);
  assert.equal(await tools.invoke("Read", { file_path: "constructor" }, ctx), "     1\tc");
  assert.equal(await tools.invoke("Read", { file_path: "__proto__" }, ctx), "     1\tp");
  assert.equal(
    await codeOf(tools.invoke("Read", { file_path: "a\0b" }, ctx)),
    "PATH_ESCAPES_WORKSPACE",
  );
});
