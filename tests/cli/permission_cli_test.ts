/**
 * Permission asks through the real `run-agent`: without a terminal a call that asks is refused and
 * the progress line, the run log and `--show` say how to allow it; `--permission-mode` sets the
 * mode of the run (recorded; a typo is a usage error); at a real terminal (util-linux `script`)
 * the person is asked — yes, no, always for this run — and `--show` names who decided.
 */
import assert from "node:assert/strict";
import { cp } from "node:fs/promises";
import { join } from "node:path";
import { finish, HAS_SCRIPT, readUntil, REPO_ROOT, spawnAtTerminal, spawnCli } from "./helpers.ts";

const ok = { output: { result: "ok", message: "fine" } };
const bash = (command: string) => ({ toolCalls: [{ name: "Bash", arguments: { command } }] });

/** tool-fixer (acceptEdits; Bash only for grep) with a script whose steps run other commands. */
async function askingAgent(): Promise<string> {
  const user = await Deno.makeTempDir({ prefix: "stepflow_permission_cli_" });
  await cp(join(REPO_ROOT, ".agent/tool-fixer"), join(user, ".agent/tool-fixer"), {
    recursive: true,
  });
  await Deno.writeTextFile(
    join(user, "asks.script.json"),
    JSON.stringify({
      s_f1d0: ["Looked."],
      "s_f1d0#check": [ok],
      // The fix step offers Bash (for grep): these commands ask.
      s_f1e0: [bash("echo one"), bash("echo two \u001b[31mred"), bash("ls"), "Done."],
      "s_f1e0#check": [ok],
    }),
  );
  return user;
}

const RUN = ["--agent", "tool-fixer", "--script", "asks.script.json", "--topic", "x"];

async function onlyRunId(user: string): Promise<string> {
  const runs = await finish(spawnCli("run-agent", ["--agent", "tool-fixer", "--runs"], {
    userDir: user,
  }));
  const id = runs.stdout.match(/^(\d{8}T\d{6}Z-\w+)/m)?.[1];
  assert.ok(id, runs.stdout + runs.stderr);
  return id;
}

async function logLines(user: string, runId: string): Promise<Record<string, unknown>[]> {
  const text = await Deno.readTextFile(
    join(user, "tmp", "logs", "agents", "tool-fixer", `${runId}.jsonl`),
  );
  return text.trim().split("\n").map((l) => JSON.parse(l));
}

Deno.test("run-agent without a terminal: a call that asks is refused; the line, the log and --show say how to allow it", async () => {
  const user = await askingAgent();
  try {
    const run = await finish(spawnCli("run-agent", RUN, { userDir: user }));
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stderr,
      /↳ Bash echo one ✗ refused \(nobody to ask\): allow with allowedTools "Bash\(echo:\*\)"\n/,
    );
    // What the model wrote never reaches the terminal as an escape sequence.
    assert.ok(!run.stderr.includes("\u001b"), run.stderr);
    assert.match(run.stderr, /↳ Bash echo two \?\[31mred ✗ refused/);
    const id = await onlyRunId(user);
    const calls = (await logLines(user, id)).filter((l) => l.type === "tool_call");
    assert.deepEqual(calls.map((c) => [c.tool, c.decision, c.decidedBy, c.allowWith]), [
      ["Bash", "deny", "nobody to ask", { allowedTools: "Bash(echo:*)" }],
      ["Bash", "deny", "nobody to ask", { allowedTools: "Bash(echo two:*)" }],
      ["Bash", "deny", "nobody to ask", { allowedTools: "Bash(ls)" }],
    ]);
    assert.ok(calls.every((c) => typeof c.decidedAt === "string"));
    const shown = await finish(spawnCli("run-agent", ["--agent", "tool-fixer", "--show", id], {
      userDir: user,
    }));
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(
      shown.stdout,
      /s_f1e0.*\n {4}↳ Bash echo one ✗ refused · nobody to ask\n {4}↳ Bash echo two \?\[31mred ✗ refused · nobody to ask\n {4}↳ Bash ls ✗ refused · nobody to ask/,
    );
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});

Deno.test("run-agent --permission-mode sets the run's mode over agent.json's, recorded in its state; a typo is a usage error", async () => {
  const user = await askingAgent();
  try {
    const run = await finish(
      spawnCli("run-agent", [...RUN, "--permission-mode", "bypassPermissions"], { userDir: user }),
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /↳ Bash echo one ✓ \d+ ms/);
    assert.match(run.stderr, /↳ Bash ls ✓ \d+ ms/);
    const id = await onlyRunId(user);
    const checkpoint = JSON.parse(
      await Deno.readTextFile(
        join(user, "tmp", "logs", "agents", "tool-fixer", `${id}.checkpoint.json`),
      ),
    );
    assert.equal(checkpoint.state.permissionMode, "bypassPermissions");
    const calls = (await logLines(user, id)).filter((l) => l.type === "tool_call");
    assert.deepEqual(
      [...new Set(calls.map((c) => c.decidedBy))],
      ["bypassPermissions mode"],
    );

    const typo = await finish(
      spawnCli("run-agent", [...RUN, "--permission-mode", "acceptEdit"], { userDir: user }),
    );
    assert.equal(typo.code, 2, typo.stderr);
    assert.match(
      typo.stderr,
      /--permission-mode: unknown permissionMode "acceptEdit" \(did you mean "acceptEdits"\?\)/,
    );
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});

Deno.test({
  name:
    "run-agent at a real terminal asks each call that needs permission: yes, no, always for this run",
  ignore: !(await HAS_SCRIPT),
  fn: async () => {
    const user = await askingAgent();
    try {
      const child = spawnAtTerminal(RUN, { userDir: user, env: { USER: "erin" } });
      const out = { text: "" };
      const reader = child.stdout.getReader();
      const writer = child.stdin.getWriter();
      const answer = (text: string) => writer.write(new TextEncoder().encode(`${text}\r`));
      const prompt = "[y/n/a]: ";
      // Reads until the `n`th question; returns what came since the one before.
      const question = async (n: number) => {
        const decoder = new TextDecoder();
        while (out.text.split(prompt).length - 1 < n) {
          const chunk = await reader.read();
          if (chunk.done) break;
          out.text += decoder.decode(chunk.value, { stream: true });
        }
        return out.text.split(prompt)[n - 1];
      };
      const first = await question(1);
      assert.match(
        first,
        /Step "s_f1e0" \(iteration 2\) asks to run Bash:\r?\n {4}command: echo one/,
      );
      assert.match(first, /Why it asks: Bash needs permission/);
      assert.match(first, /Allowed without asking by: "Bash\(echo:\*\)" in allowedTools/);
      assert.match(first, /a = always for this run \(allows "Bash\(echo:\*\)"\) $/);
      await answer("maybe");
      assert.match(await question(2), /Answer y \(yes\), n \(no\) or a \(always for this run\)\./);
      await answer("a");
      // "echo two" is covered by the grant: the next question is about `ls`.
      const third = await question(3);
      assert.match(third, /asks to run Bash:\r?\n {4}command: ls/);
      assert.doesNotMatch(third, /asks to run Bash:\r?\n {4}command: echo two/);
      await answer("n");
      await readUntil(reader, out);
      await writer.close().catch(() => {});
      const status = await child.status;
      await child.stderr.cancel();
      assert.equal(status.code, 0, out.text);
      assert.match(out.text, /completed/);
      const id = await onlyRunId(user);
      const shown = await finish(spawnCli("run-agent", ["--agent", "tool-fixer", "--show", id], {
        userDir: user,
      }));
      assert.match(
        shown.stdout,
        /↳ Bash echo one ✓ · terminal \(erin\), always for this run \(Bash\(echo:\*\)\)\n/,
      );
      assert.match(
        shown.stdout,
        /↳ Bash echo two \?\[31mred ✓ · rule Bash\(echo:\*\), allowed for this run by terminal \(erin\)\n/,
      );
      assert.match(shown.stdout, /↳ Bash ls ✗ refused · terminal \(erin\)/);
      const grants = (await logLines(user, id)).filter((l) => l.type === "permission_grant");
      assert.deepEqual(grants.map((g) => [g.rule, g.grantedBy]), [
        ["Bash(echo:*)", "terminal (erin)"],
      ]);
    } finally {
      await Deno.remove(user, { recursive: true });
    }
  },
});
