/**
 * In-process tests of `main(argv, io)`: what needs a fake terminal, a fake stdin or a signal.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { EXIT_CODES as EXIT } from "../../src/cli/kit/exit_codes.ts";
import { type CliIo, main } from "../../src/cli/run_agent.ts";
import { stepflowMain } from "../../src/cli/stepflow.ts";
import { report, work, writeFiles, writeTinyAgent } from "./helpers.ts";

interface Captured {
  code: number;
  stdout: string;
  stderr: string;
}

async function runMain(argv: string[], io: Partial<CliIo>): Promise<Captured> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: { write: (t) => void (stdout += t) },
    stderr: { write: (t) => void (stderr += t) },
    ...io,
  });
  return { code, stdout, stderr };
}

/** True when `text` holds an escape sequence other than the live line's "clear line". */
function hasColour(text: string): boolean {
  return text.replaceAll("\x1b[2K", "").includes("\x1b[");
}

/** A stream that never yields and never closes (an idle pipe or a terminal). */
function silentStream(): ReadableStream<Uint8Array> {
  return new ReadableStream({ pull: () => new Promise(() => {}) });
}

function textStream(text: string): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
      controller.close();
    },
  });
}

async function withUserDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-main-" });
  try {
    await writeTinyAgent(dir, "tiny");
    await writeTinyAgent(dir, "reader", { prompt: "Read: {input_text}", parameters: {} });
    await writeFiles(dir, {
      "ok.json": {
        "work.task": [{ ...work("complete"), usage: { inputTokens: 1000, outputTokens: 234 } }],
        "complete.task": [report("all done")],
      },
    });
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("main: on a terminal the progress is a live line, coloured unless NO_COLOR", async () => {
  await withUserDir(async (dir) => {
    const tty = { stdin: true, stdout: true, stderr: true };
    const argv = ["--agent", "tiny", "--script", "ok.json", "--topic", "x"];
    const colour = await runMain(argv, { cwd: dir, env: {}, isTerminal: tty, columns: 120 });
    assert.equal(colour.code, EXIT.success, colour.stderr);
    assert.ok(colour.stderr.startsWith("\r\x1b[2K"), "the status line redraws in place");
    assert.match(colour.stderr, /work\.task · iteration 1/);
    assert.ok(
      colour.stderr.includes(
        "\x1b[32m✓ succeeded: completed at complete.task after 2 iterations (1,234 tokens",
      ),
      colour.stderr,
    );
    assert.ok(colour.stderr.endsWith("\x1b[39m\n"), "the summary line is the last thing on stderr");
    assert.ok(!/^\[\d\d:/m.test(colour.stderr), "no plain event lines on a terminal");
    assert.ok(colour.stdout.startsWith("\x1b[32m✓ tiny succeeded"), colour.stdout);

    const plain = await runMain(argv, { cwd: dir, env: { NO_COLOR: "1" }, isTerminal: tty });
    assert.equal(plain.code, EXIT.success);
    assert.ok(!hasColour(plain.stderr + plain.stdout), "NO_COLOR: no colour codes");
    assert.match(plain.stderr, /✓ succeeded/);

    // --verbose on a terminal: plain lines, with the backend calls.
    const verbose = await runMain([...argv, "--verbose"], {
      cwd: dir,
      env: { NO_COLOR: "1" },
      isTerminal: tty,
    });
    assert.match(verbose.stderr, /^\[\d\d:\d\d\.\d{3}\] {3}call step of work\.task #1 started$/m);
    assert.match(verbose.stderr, /answered in \d+\.\ds \(1,000 in, 234 out tokens\)$/m);
  });
});

Deno.test("main: INIT_CWD wins over the process directory", async () => {
  await withUserDir(async (dir) => {
    const r = await runMain(["--list"], { cwd: "/", env: { INIT_CWD: dir } });
    assert.equal(r.code, EXIT.success);
    assert.match(r.stdout, /^ {2}tiny /m);
  });
});

Deno.test("main: stdin is read only when piped, and never blocks", async () => {
  await withUserDir(async (dir) => {
    const argv = ["--agent", "reader", "--script", join(dir, "ok.json")];
    const piped = await runMain(argv, { cwd: dir, stdin: textStream("hello") });
    assert.equal(piped.code, EXIT.success, piped.stdout);

    // A terminal is never read, even if it would deliver text.
    const tty = await runMain(argv, {
      cwd: dir,
      stdin: textStream("typed"),
      isTerminal: { stdin: true, stdout: false, stderr: false },
    });
    assert.equal(tty.code, EXIT.failed);
    assert.match(tty.stdout, /\{input_text\} ← pipe text on stdin/);

    // An idle pipe: the run goes ahead after the wait (and --verbose says why).
    const started = performance.now();
    const idle = await runMain([...argv, "--verbose"], {
      cwd: dir,
      stdin: silentStream(),
      stdinWaitMs: 30,
    });
    assert.ok(performance.now() - started < 5000);
    assert.equal(idle.code, EXIT.failed);
    assert.match(idle.stderr, /^note: stdin is a pipe but nothing arrived within 30 ms/m);

    // Empty or whitespace-only input counts as none.
    const empty = await runMain(argv, { cwd: dir, stdin: textStream(" \n") });
    assert.equal(empty.code, EXIT.failed);
  });
});

Deno.test("main: an unexpected error is reported as a bug with exit 70", async () => {
  await withUserDir(async (dir) => {
    let stderr = "";
    const code = await stepflowMain(["list"], {
      cwd: dir,
      stdout: {
        write: () => {
          throw new TypeError("stdout exploded");
        },
      },
      stderr: { write: (t) => void (stderr += t) },
    });
    assert.equal(code, EXIT.internal);
    assert.match(stderr, /^error: stdout exploded\n\(this is a bug; please report it/);
    assert.ok(!/^\s+at /m.test(stderr), "no stack trace without --verbose");
  });
});

Deno.test("main: Ctrl-C (the signal) cancels the run and exits 130", async () => {
  await withUserDir(async (dir) => {
    await writeFiles(dir, {
      "slow.json": { "work.task": [{ ...work("complete"), delayMs: 10_000 }] },
    });
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 100);
    const started = performance.now();
    const r = await runMain(
      ["--agent", "tiny", "--script", "slow.json", "--topic", "x", "--json"],
      {
        cwd: dir,
        signal: controller.signal,
      },
    );
    clearTimeout(timer);
    assert.ok(performance.now() - started < 5000, "the call in flight is cancelled");
    assert.equal(r.code, EXIT.interrupted, r.stderr);
    assert.equal(JSON.parse(r.stdout).completionReason, "cancelled");
  });
});

Deno.test("main: exit 2 when the backend cannot be used at all", async () => {
  await withUserDir(async (dir) => {
    await writeFiles(dir, {
      "auth.json": { "work.task": [{ error: "401 unauthorized" }] },
    });
    // The scripted backend's error is a plain backend failure: the flow failed (1).
    const failed = await runMain(["--agent", "tiny", "--script", "auth.json", "--topic", "x"], {
      cwd: dir,
    });
    assert.equal(failed.code, EXIT.failed);
    // Missing credentials are found before the run: a usage error (2).
    const noKey = await runMain(["--agent", "tiny", "--backend", "anthropic", "--topic", "x"], {
      cwd: dir,
      env: {},
    });
    assert.equal(noKey.code, EXIT.usage);
    assert.match(
      noKey.stderr,
      /^error: The anthropic backend needs an API key: set ANTHROPIC_API_KEY/,
    );
    // A script with --backend other than scripted is contradictory.
    const both = await runMain([
      "--agent",
      "tiny",
      "--backend",
      "openai",
      "--script",
      "ok.json",
      "--topic",
      "x",
    ], {
      cwd: dir,
    });
    assert.equal(both.code, EXIT.usage);
    assert.match(both.stderr, /--script is for the scripted backend, but --backend is "openai"/);
    // Two modes at once.
    const modes = await runMain(["--list", "--init", "x"], { cwd: dir });
    assert.equal(modes.code, EXIT.usage);
    assert.match(modes.stderr, /--list and --init cannot be combined/);
    // Re-running an unfinished tool call is a way to resume, nothing else.
    const rerun = await runMain(["--agent", "tiny", "--rerun-unfinished-call"], { cwd: dir });
    assert.equal(rerun.code, EXIT.usage);
    assert.match(rerun.stderr, /--rerun-unfinished-call goes with --resume RUN_ID/);
  });
});
