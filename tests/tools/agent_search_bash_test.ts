import assert from "node:assert/strict";
import { join } from "node:path";
import { StepflowError } from "../../src/errors.ts";
import { pidAlive } from "../../src/pid_alive.ts";
import { createToolRegistry } from "../../src/tools/builtin.ts";

const tools = createToolRegistry({ agentTools: true });

async function project(): Promise<{ root: string; outside: string }> {
  const base = await Deno.makeTempDir({ prefix: "stepflow_agent_search_" });
  const root = join(base, "ws");
  const outside = join(base, "outside");
  await Deno.mkdir(join(root, "src/lib"), { recursive: true });
  await Deno.mkdir(join(root, ".git"));
  await Deno.mkdir(outside);
  await Deno.writeTextFile(join(outside, "leak.ts"), "export const TODO = 'outside';\n");
  await Deno.writeTextFile(join(root, ".git/config.ts"), "TODO in git\n");
  await Deno.writeTextFile(join(root, "README.md"), "# Demo\nTODO: write docs\n");
  await Deno.writeTextFile(join(root, "src/app.ts"), "import x from './lib/x.ts';\n// todo\n");
  await Deno.writeTextFile(join(root, "src/lib/x.ts"), "a\nb\nTODO one\nc\nd\ne\nTODO two\n");
  await Deno.writeFile(join(root, "src/logo.bin"), new Uint8Array([0, 84, 79, 68, 79]));
  await Deno.symlink(outside, join(root, "src/outlink"));
  await Deno.symlink(join(outside, "leak.ts"), join(root, "src/leak.ts"));
  await Deno.utime(join(root, "src/app.ts"), 1, 2_000_000_000);
  return { root, outside };
}

function codeOf(p: Promise<unknown>): Promise<string> {
  return p.then(() => "none", (e) => e instanceof StepflowError ? e.code : String(e));
}

Deno.test("Glob lists matching files newest first, skips .git, never follows links out", async () => {
  const { root } = await project();
  const ctx = { workspaceRoot: root };
  assert.equal(
    await tools.invoke("Glob", { pattern: "**/*.ts" }, ctx),
    "src/app.ts\nsrc/lib/x.ts",
  );
  assert.equal(
    await tools.invoke("Glob", { pattern: "*.ts", path: "src/lib" }, ctx),
    "src/lib/x.ts",
  );
  assert.equal(await tools.invoke("Glob", { pattern: "*.py" }, ctx), "No files found");
  for (const pattern of ["../outside/*.ts", "/etc/*", "src/../../*"]) {
    assert.equal(await codeOf(tools.invoke("Glob", { pattern }, ctx)), "PATH_ESCAPES_WORKSPACE");
  }
  assert.equal(
    await codeOf(tools.invoke("Glob", { pattern: "*", path: "src/outlink" }, ctx)),
    "PATH_ESCAPES_WORKSPACE",
  );
  assert.equal(
    await codeOf(tools.invoke("Glob", { pattern: "*", path: "README.md" }, ctx)),
    "NOT_A_DIRECTORY",
  );
});

Deno.test("Glob shows at most 100 files and says how many matched", async () => {
  const { root } = await project();
  await Deno.mkdir(join(root, "many"));
  for (let i = 0; i < 150; i++) await Deno.writeTextFile(join(root, `many/f${i}.txt`), "");
  const out = await tools.invoke("Glob", { pattern: "many/*.txt" }, {
    workspaceRoot: root,
  }) as string;
  const lines = out.split("\n");
  assert.equal(lines.length, 101);
  assert.match(lines[100], /150 files matched; showing the 100 most recently modified/);
});

Deno.test("Grep: files, content with line numbers and context, counts, -i, glob, head_limit", async () => {
  const { root } = await project();
  const ctx = { workspaceRoot: root };
  assert.equal(
    await tools.invoke("Grep", { pattern: "TODO" }, ctx),
    "README.md\nsrc/lib/x.ts\n(1 binary or oversized files skipped)",
  );
  assert.equal(
    await tools.invoke("Grep", { pattern: "todo", "-i": true, glob: "*.ts" }, ctx),
    "src/app.ts\nsrc/lib/x.ts",
  );
  assert.equal(
    await tools.invoke(
      "Grep",
      { pattern: "TODO", path: "src/lib/x.ts", output_mode: "content" },
      ctx,
    ),
    "src/lib/x.ts:3:TODO one\nsrc/lib/x.ts:7:TODO two",
  );
  assert.equal(
    await tools.invoke("Grep", {
      pattern: "TODO",
      path: "src/lib",
      output_mode: "content",
      "-B": 1,
      "-A": 1,
    }, ctx),
    "src/lib/x.ts-2-b\nsrc/lib/x.ts:3:TODO one\nsrc/lib/x.ts-4-c\n--\nsrc/lib/x.ts-6-e\nsrc/lib/x.ts:7:TODO two",
  );
  assert.equal(
    await tools.invoke("Grep", { pattern: "TODO", output_mode: "count", glob: "src/**/*.ts" }, ctx),
    "src/lib/x.ts:2",
  );
  assert.equal(
    await tools.invoke("Grep", {
      pattern: "TODO",
      output_mode: "content",
      "-n": false,
      head_limit: 1,
    }, ctx),
    "README.md:TODO: write docs\n(stopped at head_limit 1)",
  );
  assert.equal(
    await tools.invoke("Grep", { pattern: "zzz" }, ctx),
    "No matches found\n(1 binary or oversized files skipped)",
  );
  assert.equal(await codeOf(tools.invoke("Grep", { pattern: "(" }, ctx)), "GREP_PATTERN_INVALID");
  assert.equal(
    await codeOf(tools.invoke("Grep", { pattern: "x", glob: "../*" }, ctx)),
    "PATH_ESCAPES_WORKSPACE",
  );
  assert.equal(
    await codeOf(tools.invoke("Grep", { pattern: "x", path: "../outside" }, ctx)),
    "PATH_ESCAPES_WORKSPACE",
  );
});

Deno.test("Grep bounds its result with the truncation notice", async () => {
  const { root } = await project();
  await Deno.writeTextFile(join(root, "wide.txt"), `${"match ".repeat(300)}\n`.repeat(200));
  const out = await tools.invoke("Grep", { pattern: "match", output_mode: "content" }, {
    workspaceRoot: root,
  }) as string;
  assert.ok(out.length < 30_200, String(out.length));
  assert.match(
    out,
    /… output truncated at 30000 characters; use head_limit, a narrower pattern, path or glob$/,
  );
});

Deno.test("Bash runs in the working folder and returns output, stderr and a failing exit code", async () => {
  const { root } = await project();
  const ctx = { workspaceRoot: root };
  assert.equal(
    await tools.invoke("Bash", { command: "pwd" }, ctx),
    `${await Deno.realPath(root)}\n`,
  );
  assert.equal(
    await tools.invoke(
      "Bash",
      { command: "echo out; echo err >&2; exit 3", description: "demo" },
      ctx,
    ),
    "out\n[stderr]\nerr\n[exit code 3]",
  );
  const big = await tools.invoke(
    "Bash",
    { command: "head -c 100000 /dev/zero | tr '\\0' a" },
    ctx,
  ) as string;
  assert.ok(big.length < 30_200);
  assert.match(big, /… output truncated at 30000 characters; redirect the output to a file/);
});

async function waitForPid(file: string): Promise<number> {
  for (;;) {
    const text = await Deno.readTextFile(file).catch(() => "");
    if (text.trim()) return Number(text.trim());
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Running: it exists and is not a zombie (a killed orphan waits for its reaper as a zombie). */
function running(pid: number): boolean {
  if (!pidAlive(pid)) return false;
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

async function waitUntilDead(pid: number): Promise<void> {
  // Killing is asynchronous: poll for the process's end (bounded), never sleep a fixed time.
  for (let i = 0; i < 500 && running(pid); i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(running(pid), false, `process ${pid} is still running`);
}

Deno.test("Bash timeout kills the whole process group, grandchildren included", async () => {
  const { root } = await project();
  const pidFile = join(root, "bg.pid");
  const error = await tools.invoke("Bash", {
    command: `sleep 300 & echo $! > bg.pid; echo started; wait`,
    timeout: 300,
  }, { workspaceRoot: root }).then(() => undefined, (e) => e);
  assert.ok(error instanceof StepflowError);
  assert.equal(error.code, "COMMAND_TIMEOUT");
  assert.match(error.message, /did not finish within 300 ms[\s\S]*Output so far:\nstarted/);
  await waitUntilDead(await waitForPid(pidFile));
});

Deno.test("Bash: cancelling the run kills the group; processes left in the background die with the command", async () => {
  const { root } = await project();
  const controller = new AbortController();
  const call = tools.invoke("Bash", { command: "sleep 300 & echo $! > a.pid; wait" }, {
    workspaceRoot: root,
    signal: controller.signal,
  });
  const pid = await waitForPid(join(root, "a.pid"));
  controller.abort(new Error("run cancelled"));
  await assert.rejects(call, /run cancelled/);
  await waitUntilDead(pid);

  // The command ends but leaves a child behind holding its output open: the call still returns.
  const out = await tools.invoke("Bash", { command: "sleep 300 & echo $! > b.pid; echo done" }, {
    workspaceRoot: root,
  });
  assert.equal(out, "done\n");
  await waitUntilDead(await waitForPid(join(root, "b.pid")));
});
