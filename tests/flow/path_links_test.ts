/**
 * Path rules judge the file a call reaches, not only the path the model wrote: a symbolic link
 * committed in the repository (`src/link -> ../.git/config`) must not turn `Edit(src/**)` into an
 * edit of `.git/config`, nor let `Read src/envlink` return what `Read(.env)` keeps from the model.
 * Each case runs the real runner over a real agent folder in a real git repository, with a
 * scripted model calling the tools, and checks the side effect on disk.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend, type ScriptedEntry } from "../../src/llm/scripted.ts";
import { seed001Files, seed001Script, writeAgent } from "./fixtures.ts";

/** A git repository with an agent folder, `src/`, `.env`, `package.json` and the links given. */
async function repository(
  behavior: Record<string, unknown>,
  links: Record<string, string>,
): Promise<string> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "stepflow_path_links_" }));
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, behavior);
  await writeAgent(root, "code-improver", files);
  await Deno.mkdir(join(root, "src"));
  await Deno.writeTextFile(join(root, "src/app.ts"), "export const answer = 41;\n");
  await Deno.writeTextFile(join(root, ".env"), "API_KEY=s3cret-value\n");
  await Deno.writeTextFile(
    join(root, "package.json"),
    JSON.stringify({ name: "demo", private: true, scripts: { test: "echo original-tests" } }),
  );
  for (const [link, target] of Object.entries(links)) {
    await Deno.symlink(target, join(root, link));
  }
  await git(root, "init", "-q");
  await git(root, "add", "-A");
  await git(root, "-c", "user.email=pr@example.com", "-c", "user.name=pr", "commit", "-qm", "pr");
  return root;
}

async function git(cwd: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}

/** Runs the first step's calls through the real runner; returns what the model saw of each. */
async function run(root: string, calls: ScriptedEntry[]): Promise<string[]> {
  const def = await loadAgentDefinition("code-improver", { cwd: root });
  const backend = new ScriptedBackend(seed001Script({ s_a8f3: [...calls, "Done."] }));
  const result = await new StepFlowRunner(def, { backend }).run({
    args: { topic: "links" },
    cwd: root,
  });
  assert.equal(result.success, true, JSON.stringify(result.error));
  const seen = backend.toolTurns.flatMap((t) => {
    const last = t.messages.at(-1)!;
    return last.role === "tool" ? last.results.map((r) => `${r.name}: ${r.content}`) : [];
  });
  if (Deno.env.get("SHOW")) console.log(seen.join("\n---\n"));
  return seen;
}

const call = (name: string, args: Record<string, unknown>): ScriptedEntry => ({
  toolCalls: [{ name, arguments: args }],
});

Deno.test("Edit(src/**) through src/link_gitcfg -> ../.git/config: refused, so git status runs no planted fsmonitor", async () => {
  const root = await repository(
    { allowedTools: ["Edit(src/**)", "Bash(git status)"], permissionMode: "default" },
    { "src/link_gitcfg": "../.git/config" },
  );
  const config = await Deno.readTextFile(join(root, ".git/config"));
  const marker = join(root, "PWNED");
  const seen = await run(root, [
    call("Edit", {
      file_path: "src/link_gitcfg",
      old_string: "[core]",
      new_string: `[core]\n\tfsmonitor = touch ${marker}; true`,
    }),
    call("Bash", { command: "git status" }),
  ]);
  assert.equal(await Deno.readTextFile(join(root, ".git/config")), config);
  assert.equal(await exists(marker), false, "the planted command ran");
  assert.match(seen[0], /^Edit: Permission denied: /);
  assert.match(seen[0], /"src\/link_gitcfg" is a symbolic link to "\.\.\/\.git\/config"/);
  assert.match(seen[0], /\.git\/config/);
  assert.match(seen[0], /adding "Edit\(\.git\/config\)" to allowedTools/);
  assert.match(seen[1], /^Bash: On branch/);
  // The link is untouched.
  assert.equal(await Deno.readLink(join(root, "src/link_gitcfg")), "../.git/config");
});

Deno.test("Edit(src/**) through src/link_pkg -> ../package.json: refused, so npm test runs the real tests", async () => {
  const root = await repository(
    { allowedTools: ["Edit(src/**)", "Bash(npm test)"], permissionMode: "default" },
    { "src/link_pkg": "../package.json" },
  );
  const pkg = await Deno.readTextFile(join(root, "package.json"));
  const marker = join(root, "PWNED");
  const seen = await run(root, [
    call("Edit", {
      file_path: "src/link_pkg",
      old_string: "echo original-tests",
      new_string: `touch ${marker}`,
    }),
    call("Bash", { command: "npm test" }),
  ]);
  assert.equal(await Deno.readTextFile(join(root, "package.json")), pkg);
  assert.equal(await exists(marker), false, "the rewritten test script ran");
  assert.match(seen[0], /^Edit: Permission denied: .*"src\/link_pkg" is a symbolic link/s);
  assert.match(seen[1], /original-tests/);
});

Deno.test('disallowedTools "Read(.env)": Read and Grep through src/envlink -> ../.env never return the secret', async () => {
  const root = await repository(
    {
      allowedTools: ["Read", "Grep", "Glob"],
      disallowedTools: ["Read(.env)"],
      permissionMode: "bypassPermissions",
    },
    { "src/envlink": "../.env" },
  );
  const seen = await run(root, [
    call("Read", { file_path: "src/envlink" }),
    call("Grep", { pattern: "API_KEY", path: "src/envlink", output_mode: "content" }),
    call("Grep", { pattern: "API_KEY", output_mode: "content" }),
    call("Grep", { pattern: "API_KEY", path: "src", output_mode: "content" }),
    call("Glob", { pattern: "**/*" }),
  ]);
  for (const text of seen) assert.doesNotMatch(text, /s3cret/, text);
  assert.match(seen[0], /^Read: Permission denied: Read is refused by the rule "Read\(\.env\)"/);
  assert.match(seen[0], /"src\/envlink" is a symbolic link to "\.\.\/\.env"/);
  assert.match(seen[1], /^Grep: Permission denied: .*Read\(\.env\)/);
  // Searches of the whole tree hide the file and the link to it, and say so.
  assert.match(seen[2], /^Grep: No matches found\n\(2 files hidden: a disallowedTools rule/);
  assert.match(seen[3], /^Grep: No matches found\n\(1 file hidden: /);
  assert.doesNotMatch(seen[4], /envlink|\.env/);
  assert.match(seen[4], /src\/app\.ts/);
});

Deno.test('disallowedTools "Edit(.git/**)": Edit and Write through src/gitcfg -> ../.git/config are refused in every mode', async () => {
  const root = await repository(
    {
      allowedTools: ["Edit", "Write"],
      disallowedTools: ["Edit(.git/**)"],
      permissionMode: "bypassPermissions",
    },
    { "src/gitcfg": "../.git/config", "src/gitdir": "../.git" },
  );
  const config = await Deno.readTextFile(join(root, ".git/config"));
  const seen = await run(root, [
    call("Edit", { file_path: "src/gitcfg", old_string: "[core]", new_string: "[core]\n\tx = 1" }),
    call("Write", { file_path: "src/gitcfg", content: "[core]\n" }),
    call("Write", { file_path: "src/gitdir/hooks/pre-commit", content: "#!/bin/sh\nexit 0\n" }),
    call("Edit", { file_path: "src/app.ts", old_string: "41", new_string: "42" }),
  ]);
  assert.equal(await Deno.readTextFile(join(root, ".git/config")), config);
  assert.equal(await exists(join(root, ".git/hooks/pre-commit")), false);
  assert.match(
    seen[0],
    /^Edit: Permission denied: Edit is refused by the rule "Edit\(\.git\/\*\*\)"/,
  );
  assert.match(
    seen[1],
    /^Write: Permission denied: Write is refused by the rule "Edit\(\.git\/\*\*\)"/,
  );
  assert.match(seen[2], /"src\/gitdir" is a symbolic link to "\.\.\/\.git"/);
  assert.equal(seen[3], "Edit: Edited src/app.ts: 1 replacement.");
});

Deno.test("Edit(src/**) offers Write: a new file under src/ is created, one elsewhere is refused", async () => {
  const root = await repository(
    { allowedTools: ["Edit(src/**)"], permissionMode: "default" },
    {},
  );
  const seen = await run(root, [
    call("Write", { file_path: "src/new.ts", content: "export const x = 1;\n" }),
    call("Write", { file_path: "lib/other.ts", content: "no" }),
  ]);
  assert.equal(await Deno.readTextFile(join(root, "src/new.ts")), "export const x = 1;\n");
  assert.equal(await exists(join(root, "lib")), false);
  assert.equal(seen[0], "Write: Created src/new.ts (20 bytes).");
  assert.match(seen[1], /^Write: Permission denied: .*adding "Edit\(lib\/other\.ts\)"/);
});

async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}
