/**
 * The relatives of the symbolic-link hole, probed as a hostile model would, through the real tool
 * loop and the agent tools on real files: hard links, a link swapped between the check and the
 * write (on the `decided` report, and by a real process racing the calls), `..` after a link, a
 * link to a folder, a dangling link a write would follow, a call resumed after its path changed,
 * and an "always" grant asked to cover a link.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  completeWithTools,
  type ToolCallRecord,
  type ToolLoopOptions,
} from "../../src/engine/tool_loop.ts";
import type { ToolCallEvent } from "../../src/events/types.ts";
import { coveringGrant } from "../../src/flow/permission_asks.ts";
import { ScriptedBackend, type ScriptedEntry } from "../../src/llm/scripted.ts";
import type { LlmRequest } from "../../src/llm/types.ts";
import { parsePermissionRules, type PermissionMode } from "../../src/definition/permission_rule.ts";
import { createAgentTools } from "../../src/tools/agent_tools.ts";
import { offeredTools } from "../../src/tools/permissions.ts";
import { ToolRegistry } from "../../src/tools/registry.ts";
import { reachPath } from "../../src/tools/workspace.ts";

const GIT_CONFIG = "[core]\n\tbare = false\n";
const SECRET = "API_KEY=s3cret-value\n";

/** A working folder with `.git/config`, `.env`, `src/app.ts`. */
async function project(): Promise<string> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "stepflow_links_" }));
  await Deno.mkdir(join(root, ".git/hooks"), { recursive: true });
  await Deno.writeTextFile(join(root, ".git/config"), GIT_CONFIG);
  await Deno.writeTextFile(join(root, ".env"), SECRET);
  await Deno.mkdir(join(root, "src"));
  await Deno.writeTextFile(join(root, "src/app.ts"), "export const answer = 41;\n");
  return root;
}

interface Rules {
  allow: string[];
  deny?: string[];
  mode?: PermissionMode;
}

/** Runs `entries` through the real tool loop in `cwd`; the results the model saw, in order. */
async function run(
  cwd: string,
  entries: ScriptedEntry[],
  rules: Rules,
  extra: Partial<ToolLoopOptions> = {},
): Promise<{ seen: string[]; records: ToolCallRecord[] }> {
  const backend = new ScriptedBackend([...entries, "Done."]);
  const tools = new ToolRegistry();
  for (const tool of createAgentTools()) tools.register(tool);
  const allow = parsePermissionRules(rules.allow).rules;
  const deny = parsePermissionRules(rules.deny ?? []).rules;
  const records: ToolCallRecord[] = [];
  await completeWithTools(request(cwd), {
    backend,
    tools,
    offered: offeredTools(allow, deny, tools.list().map((t) => t.name)),
    policy: { mode: rules.mode ?? "default", allow, deny },
    onToolCall: (r) => records.push(r),
    maxBadCalls: 10_000,
    maxToolTurns: 10_000,
    ...extra,
  });
  return { seen: records.map((r) => `${r.tool}: ${r.result}`), records };
}

function request(cwd: string): LlmRequest {
  return { kind: "step", agent: "t", stepId: "probe", iteration: 1, prompt: "Probe.", cwd };
}

const call = (name: string, args: Record<string, unknown>): ScriptedEntry => ({
  toolCalls: [{ name, arguments: args }],
});

/** Replaces `path` by a symbolic link to `target` in one rename (no moment without an entry). */
async function swapInLink(path: string, target: string): Promise<void> {
  const temp = `${path}.swap-link`;
  await Deno.symlink(target, temp);
  await Deno.rename(temp, path);
}

Deno.test("hard links: a file with two names is not read while Read(…) rules refuse paths; writes replace the name only", async () => {
  const root = await project();
  await Deno.link(join(root, ".env"), join(root, "src/env_hard"));
  await Deno.link(join(root, ".git/config"), join(root, "src/config_hard"));
  const { seen } = await run(root, [
    call("Read", { file_path: "src/env_hard" }),
    call("Grep", { pattern: "API_KEY", path: "src/env_hard", output_mode: "content" }),
    call("Grep", { pattern: "API_KEY", output_mode: "content" }),
    call("Edit", { file_path: "src/config_hard", old_string: "bare = false", new_string: "x" }),
  ], { allow: ["Read", "Grep", "Edit(src/**)"], deny: ["Read(.env)"] });
  for (const text of seen) assert.doesNotMatch(text, /s3cret/, text);
  assert.match(
    seen[0],
    /^Read: Permission denied: Read: "src\/env_hard" is a file with 2 names \(hard links\), and disallowedTools refuses paths \("Read\(\.env\)"\)/,
  );
  assert.match(seen[0], /cp "src\/env_hard" copy && mv copy "src\/env_hard"/);
  assert.match(seen[1], /^Grep: Permission denied: Grep: "src\/env_hard" is a file with 2 names/);
  // The whole tree: .env by its rule, its second name by its link count
  // (and .git/config's second name, src/config_hard, by its link count).
  assert.match(seen[2], /^Grep: No matches found\n\(3 files hidden: /);
  // Edit(src/**) allows the edit of src/config_hard: it replaces that name, .git/config stays.
  assert.equal(seen[3], "Edit: Edited src/config_hard: 1 replacement.");
  assert.equal(await Deno.readTextFile(join(root, ".git/config")), GIT_CONFIG);
  assert.equal(await Deno.readTextFile(join(root, "src/config_hard")), "[core]\n\tx\n");
  assert.equal((await Deno.stat(join(root, ".git/config"))).nlink, 1);

  // Without Read(…) deny rules nothing is hidden: the rule is what makes names matter.
  const open = await run(root, [call("Read", { file_path: "src/env_hard" })], { allow: ["Read"] });
  assert.match(open.seen[0], /API_KEY=s3cret-value/);
});

Deno.test("a link swapped in after the check: the tool refuses (PATH_CHANGED) and touches nothing", async () => {
  const root = await project();
  await Deno.writeTextFile(join(root, "src/swap"), GIT_CONFIG);
  await Deno.writeTextFile(join(root, "src/note"), "nothing here\n");
  await Deno.mkdir(join(root, "src/d"));
  await Deno.writeTextFile(join(root, "src/d/config"), GIT_CONFIG);
  const swaps: Record<string, () => Promise<void>> = {
    // The file itself becomes a link to .git/config.
    "src/swap": () => swapInLink(join(root, "src/swap"), "../.git/config"),
    // Its folder becomes a link to .git.
    "src/d/config": async () => {
      await Deno.rename(join(root, "src/d"), join(root, "src/d_old"));
      await Deno.symlink("../.git", join(root, "src/d"));
    },
    "src/note": () => swapInLink(join(root, "src/note"), "../.env"),
  };
  let swapped = "";
  const onToolCallEvent = async (event: ToolCallEvent) => {
    // Between the decision and the call: the rules judged the path before the swap.
    const path = String(event.args?.file_path ?? "");
    if (event.phase === "decided" && event.decision === "allow" && swaps[path]) {
      await swaps[path]();
      swapped += `${path};`;
    }
  };
  const { seen } = await run(
    root,
    [
      call("Edit", { file_path: "src/swap", old_string: "bare = false", new_string: "pwned" }),
      call("Write", { file_path: "src/d/config", content: "[core]\n\tfsmonitor = evil\n" }),
      call("Read", { file_path: "src/note" }),
    ],
    { allow: ["Read", "Edit(src/**)"], deny: ["Read(.env)"] },
    { onToolCallEvent },
  );
  assert.equal(swapped, "src/swap;src/d/config;src/note;");
  assert.equal(await Deno.readTextFile(join(root, ".git/config")), GIT_CONFIG);
  assert.deepEqual([...Deno.readDirSync(join(root, ".git"))].map((e) => e.name).sort(), [
    "config",
    "hooks",
  ]);
  assert.match(
    seen[0],
    /^Edit: Error \(PATH_CHANGED\): Edit: "src\/swap" changed after it was checked/,
  );
  assert.match(
    seen[1],
    /^Write: Error \(PATH_CHANGED\): Write: "src\/d\/config" changed after it was checked: its folder ".*\/src\/d" is now a symbolic link/,
  );
  assert.match(
    seen[2],
    /^Read: Error \(PATH_CHANGED\): Read: "src\/note" changed after it was checked/,
  );
  assert.doesNotMatch(seen[2], /s3cret/);
});

Deno.test("a real race: a process swapping links while the model edits and reads never reaches .git/config or .env", async () => {
  const root = await project();
  await Deno.writeTextFile(join(root, "src/swap"), GIT_CONFIG);
  await Deno.mkdir(join(root, "src/d"));
  await Deno.writeTextFile(join(root, "src/d/config"), GIT_CONFIG);
  await Deno.writeTextFile(join(root, "src/note"), "API_KEY=harmless\n");
  // Three names flip as fast as a process can: a file ⇄ a link to .git/config and a note ⇄ a
  // link to .env (each flip one rename over the name), a folder ⇄ a link to .git (a folder cannot
  // be renamed over, so the name is briefly missing — and a Write may create it meanwhile).
  const swapper = `
    const root = ${JSON.stringify(root)};
    const at = (p) => root + "/" + p;
    const quietly = (f) => { try { f(); } catch { /* the model's call got there first */ } };
    const flipFile = (name, target, text) => {
      quietly(() => { Deno.symlinkSync(target, at(name + ".l")); Deno.renameSync(at(name + ".l"), at(name)); });
      quietly(() => { Deno.writeTextFileSync(at(name + ".f"), text); Deno.renameSync(at(name + ".f"), at(name)); });
    };
    let aside = 0;
    const flipFolder = () => {
      const info = Deno.lstatSync(at("src/d"));
      if (info.isDirectory) {
        Deno.renameSync(at("src/d"), at("src/aside-" + ++aside));
        quietly(() => Deno.symlinkSync("../.git", at("src/d")));
      } else {
        quietly(() => Deno.removeSync(at("src/d")));
        quietly(() => Deno.renameSync(at("src/aside-" + aside), at("src/d")));
      }
    };
    console.log("ready");
    for (;;) {
      flipFile("src/swap", "../.git/config", ${JSON.stringify(GIT_CONFIG)});
      quietly(flipFolder);
      flipFile("src/note", "../.env", "API_KEY=harmless\\n");
    }
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", swapper],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = child.stdout.getReader();
    const { value } = await reader.read();
    assert.match(new TextDecoder().decode(value), /ready/);
    reader.releaseLock();
    const rounds = Number(Deno.env.get("STEPFLOW_FULL_CAMPAIGN") ? 60 : 12);
    const turn: ScriptedEntry = {
      toolCalls: [
        ...Array.from({ length: 10 }, () => ({
          name: "Edit",
          arguments: { file_path: "src/swap", old_string: "bare = false", new_string: "bare = 1" },
        })),
        ...Array.from({ length: 10 }, () => ({
          name: "Write",
          arguments: { file_path: "src/d/config", content: "[core]\n\tfsmonitor = evil\n" },
        })),
        ...Array.from({ length: 10 }, () => ({
          name: "Read",
          arguments: { file_path: "src/note" },
        })),
      ],
    };
    const { seen } = await run(root, Array.from({ length: rounds }, () => turn), {
      allow: ["Read", "Edit(src/**)"],
      deny: ["Read(.env)"],
    });
    assert.equal(seen.length, rounds * 30);
    assert.equal(await Deno.readTextFile(join(root, ".git/config")), GIT_CONFIG);
    for (const text of seen) assert.doesNotMatch(text, /s3cret/, text);
    // Every call either ran on the plain file, was refused as a link, or caught the swap.
    const kinds = new Set(
      seen.map((text) =>
        /^(Edit|Write): (Edited|Replaced|Created)|^Read: +1\tAPI_KEY=harmless/.test(text)
          ? "ran"
          : /Permission denied: /.test(text)
          ? "refused"
          : /\((PATH_CHANGED|FILE_NOT_FOUND|EDIT_NOT_FOUND)\)/.test(text)
          ? "caught"
          : text
      ),
    );
    for (const kind of kinds) assert.ok(["ran", "refused", "caught"].includes(kind), kind);
    if (Deno.env.get("SHOW")) {
      const count = (k: RegExp) => seen.filter((t) => k.test(t)).length;
      console.log({
        calls: seen.length,
        ran: count(/^(Edit|Write): (Edited|Replaced|Created)|^Read: +1\tAPI_KEY=harmless/),
        refused: count(/Permission denied: /),
        changed: count(/PATH_CHANGED/),
        other: count(/FILE_NOT_FOUND|EDIT_NOT_FOUND/),
      });
    }
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // it ended on its own: its status says how
    }
    assert.equal((await child.status).signal, "SIGKILL", "the swapper stopped before the calls");
    await child.stdout.cancel().catch(() => {});
  }
  // Nothing ran on .git: no hook, no config change, no stray temporary file.
  assert.deepEqual([...Deno.readDirSync(join(root, ".git"))].map((e) => e.name).sort(), [
    "config",
    "hooks",
  ]);
  assert.equal(await Deno.readTextFile(join(root, ".git/config")), GIT_CONFIG);
});

Deno.test('".." after a link is read as the system reads it: src/dirlink/../config is .git/config', async () => {
  const root = await project();
  await Deno.symlink("../.git/hooks", join(root, "src/dirlink"));
  await Deno.writeTextFile(join(root, "src/config"), "the file the text names\n");
  const reached = await reachPath(root, "src/dirlink/../config");
  assert.deepEqual(
    { written: reached.written, real: reached.real, link: reached.link },
    {
      written: "src/config",
      real: ".git/config",
      link: { path: "src/dirlink", to: "../.git/hooks" },
    },
  );
  const { seen } = await run(root, [
    call("Edit", {
      file_path: "src/dirlink/../config",
      old_string: "bare = false",
      new_string: "pwned",
    }),
    call("Read", { file_path: "src/dirlink/../config" }),
    call("Read", { file_path: "src/dirlink/../../src/app.ts" }),
  ], { allow: ["Read", "Edit(src/**)"], deny: ["Read(.git/**)"] });
  assert.equal(await Deno.readTextFile(join(root, ".git/config")), GIT_CONFIG);
  assert.equal(await Deno.readTextFile(join(root, "src/config")), "the file the text names\n");
  assert.match(
    seen[0],
    /^Edit: Permission denied: .*"src\/dirlink" is a symbolic link to "\.\.\/\.git\/hooks", so "src\/config" is "\.git\/config"/,
  );
  assert.match(
    seen[1],
    /^Read: Permission denied: Read is refused by the rule "Read\(\.git\/\*\*\)"/,
  );
  assert.equal(seen[2], "Read:      1\texport const answer = 41;");
});

Deno.test("a link to a folder: src/d -> ../.git is judged as .git for Read, Glob, Grep and Write", async () => {
  const root = await project();
  await Deno.symlink("../.git", join(root, "src/d"));
  const { seen } = await run(root, [
    call("Read", { file_path: "src/d/config" }),
    call("Glob", { pattern: "*", path: "src/d" }),
    call("Grep", { pattern: "bare", path: "src/d" }),
    call("Grep", { pattern: "bare", path: "src" }),
    call("Write", { file_path: "src/d/hooks/pre-commit", content: "#!/bin/sh\n" }),
  ], { allow: ["Read", "Glob", "Grep", "Edit(src/**)"], deny: ["Read(.git/**)"] });
  for (const text of seen.slice(0, 3)) {
    assert.match(text, /Permission denied: \w+ is refused by the rule "Read\(\.git\/\*\*\)"/);
    assert.match(text, /"src\/d" is a symbolic link to "\.\.\/\.git"/);
  }
  // A search of src never enters the folder link.
  assert.equal(seen[3], "Grep: No matches found");
  assert.match(
    seen[4],
    /^Write: Permission denied: .*"src\/d\/hooks\/pre-commit" is "\.git\/hooks\/pre-commit"/,
  );
  assert.equal(await Deno.lstat(join(root, ".git/hooks/pre-commit")).catch(() => "none"), "none");
});

Deno.test("a link loop is refused with a message that says so", async () => {
  const root = await project();
  await Deno.symlink("loop", join(root, "src/loop"));
  const { seen } = await run(root, [
    call("Read", { file_path: "src/loop" }),
    call("Write", { file_path: "src/loop/x", content: "x" }),
  ], { allow: ["Read", "Edit(src/**)"] });
  for (const text of seen) {
    assert.match(
      text,
      /PATH_ESCAPES_WORKSPACE\): Refused path "src\/loop.*": its symbolic links lead round in a loop/,
    );
  }
});

Deno.test("a dangling link: judged by the file a write would create, and never written through", async () => {
  const root = await project();
  await Deno.symlink("../.git/hooks/post-checkout", join(root, "src/hook"));
  const { seen } = await run(root, [
    call("Write", { file_path: "src/hook", content: "#!/bin/sh\ntouch PWNED\n" }),
  ], { allow: ["Edit(src/**)"] });
  assert.match(
    seen[0],
    /^Write: Permission denied: .*"src\/hook" is a symbolic link to "\.\.\/\.git\/hooks\/post-checkout", which does not exist: writing "src\/hook" would create "\.git\/hooks\/post-checkout"/,
  );
  assert.match(seen[0], /adding "Edit\(\.git\/hooks\/post-checkout\)"/);
  // Even where every edit runs, a deny rule on the target refuses, and without one the tool does.
  const denied = await run(root, [
    call("Write", { file_path: "src/hook", content: "x" }),
  ], { allow: ["Write"], deny: ["Edit(.git/**)"], mode: "bypassPermissions" });
  assert.match(denied.seen[0], /refused by the rule "Edit\(\.git\/\*\*\)"/);
  const bypass = await run(root, [
    call("Write", { file_path: "src/hook", content: "x" }),
  ], { allow: ["Write"], mode: "bypassPermissions" });
  assert.match(
    bypass.seen[0],
    /PATH_ESCAPES_WORKSPACE.*"src\/hook" is a symbolic link whose target does not exist/,
  );
  assert.equal(
    await Deno.lstat(join(root, ".git/hooks/post-checkout")).catch(() => "none"),
    "none",
  );
});

Deno.test("resume: a started call whose path became a link to what disallowedTools refuses does not run", async () => {
  const root = await project();
  await Deno.symlink("../.git/config", join(root, "src/cfg"));
  const { records } = await run(root, ["(recorded turn)"], {
    allow: ["Edit"],
    deny: ["Edit(.git/**)"],
  }, {
    resume: {
      turns: [{
        text: "",
        toolCalls: [{
          id: "a",
          name: "Edit",
          arguments: { file_path: "src/cfg", old_string: "bare = false", new_string: "x" },
        }],
      }],
      finished: new Map(),
      started: new Map([["1:a", "approved when asked"]]),
    },
  });
  assert.equal(records.length, 1);
  assert.equal(records[0].decision, "deny");
  assert.equal(records[0].decidedBy, "rule Edit(.git/**)");
  assert.equal(await Deno.readTextFile(join(root, ".git/config")), GIT_CONFIG);
});

Deno.test('an "always" grant covers the file a call reaches, not a link to it', async () => {
  const root = await project();
  await Deno.symlink("../.git/config", join(root, "src/cfg"));
  const grants = [{
    rule: "Edit(src/**)",
    stepId: "s",
    callId: "c",
    grantedBy: "terminal (erin)",
    grantedAt: "2025-01-01T00:00:00Z",
  }];
  const link = await reachPath(root, "src/cfg");
  const plain = await reachPath(root, "src/app.ts");
  const args = (file_path: string) => ({ file_path, old_string: "a", new_string: "b" });
  assert.equal(
    coveringGrant(grants, { tool: "Edit", args: args("src/cfg"), paths: [link] }, root),
    undefined,
  );
  assert.equal(
    coveringGrant(grants, { tool: "Edit", args: args("src/app.ts"), paths: [plain] }, root)?.rule,
    "Edit(src/**)",
  );
});
