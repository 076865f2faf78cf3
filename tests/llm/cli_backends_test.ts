/**
 * The real backends through the real CLI (`deno task run-agent`): missing credentials are one clear
 * line and exit code 2, and `--backend openai --base-url … --model …` runs the issue-solver agent
 * against a fake OpenAI-compatible server.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { openAiCompletion, startFakeServer } from "./fake_server.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

async function runAgent(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "run-agent", ...args],
    cwd: ROOT,
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "",
      HOME: Deno.env.get("HOME") ?? "",
      ...(Deno.env.get("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
      INIT_CWD: ROOT,
      NO_COLOR: "1",
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

function assertNoStackTrace(stderr: string) {
  assert.doesNotMatch(stderr, /^\s+at .+:\d+:\d+\)?$/m, `a stack trace leaked:\n${stderr}`);
}

Deno.test("cli: --backend anthropic without ANTHROPIC_API_KEY exits 2 with what to set", async () => {
  const { code, stderr, stdout } = await runAgent([
    "--agent",
    "issue-solver",
    "--backend",
    "anthropic",
    "--topic",
    "x",
  ]);
  assert.equal(code, 2, stderr);
  assert.match(stderr, /set ANTHROPIC_API_KEY/);
  assert.match(stderr, /--backend claude-code/);
  assertNoStackTrace(stderr);
  assert.equal(stdout, "");
});

Deno.test("cli: --backend openai without a key or a base URL exits 2 naming both", async () => {
  const { code, stderr } = await runAgent([
    "--agent",
    "issue-solver",
    "--backend",
    "openai",
    "--topic",
    "x",
  ]);
  assert.equal(code, 2, stderr);
  assert.match(stderr, /OPENAI_API_KEY/);
  assert.match(stderr, /--base-url .*http:\/\/127\.0\.0\.1:11434\/v1/);
  assertNoStackTrace(stderr);
});

Deno.test("cli: a local server without --model exits 2 asking for one", async () => {
  const { code, stderr } = await runAgent([
    "--agent",
    "issue-solver",
    "--backend",
    "openai",
    "--base-url",
    "http://127.0.0.1:9/v1",
    "--topic",
    "x",
  ]);
  assert.equal(code, 2, stderr);
  assert.match(stderr, /pass --model/);
  assertNoStackTrace(stderr);
});

Deno.test("cli: --backend openai --base-url --model runs issue-solver on a local server", async () => {
  const script = parseYaml(
    await Deno.readTextFile(`${ROOT}.agent/issue-solver/demo.script.yaml`),
  ) as Record<string, { output: unknown }[]>;
  const answers = [
    script["initial.issue"][0],
    script["continuation.issue"][0],
    script["continuation.issue"][1],
    script["complete.issue"][0],
  ].map((a) => openAiCompletion(JSON.stringify(a.output)));
  const server = startFakeServer(answers);
  try {
    const { code, stdout, stderr } = await runAgent([
      "--agent",
      "issue-solver",
      "--backend",
      "openai",
      "--base-url",
      `${server.url}/v1`,
      "--model",
      "llama3.2",
      "--json",
      "--topic",
      "Fix the flaky login test",
    ]);
    assert.equal(code, 0, stderr);
    const result = JSON.parse(stdout);
    assert.equal(result.success, true);
    assert.equal(result.completionReason, "completed");
    assert.equal(result.finalStepId, "complete.issue");
    assert.equal(result.usage.calls, 4);
    assert.equal(server.requests.length, 4);
    assert.ok(server.requests.every((r) => r.body.model === "llama3.2"));
    assert.equal(server.requests[0].headers.authorization, "Bearer not-needed", "no key needed");
    assert.ok(server.requests.every((r) => r.body.stream === true), "streamed by default");
  } finally {
    await server.close();
  }
});

Deno.test("cli: --no-stream and STEPFLOW_STREAM=0 send plain requests; a bad STEPFLOW_STREAM exits 2", async () => {
  const args = (url: string) => [
    "--agent",
    "issue-solver",
    "--backend",
    "openai",
    "--base-url",
    `${url}/v1`,
    "--model",
    "llama3.2",
    "--json",
    "--topic",
    "x",
  ];
  const script = parseYaml(
    await Deno.readTextFile(`${ROOT}.agent/issue-solver/demo.script.yaml`),
  ) as Record<string, { output: unknown }[]>;
  const answers = () =>
    [
      script["initial.issue"][0],
      script["continuation.issue"][0],
      script["continuation.issue"][1],
      script["complete.issue"][0],
    ].map((a) => openAiCompletion(JSON.stringify(a.output)));
  for (const [extra, env] of [[["--no-stream"], {}], [[], { STEPFLOW_STREAM: "0" }]] as const) {
    const server = startFakeServer(answers());
    try {
      const { code, stderr } = await runAgent([...args(server.url), ...extra], env);
      assert.equal(code, 0, stderr);
      assert.equal(server.requests.length, 4);
      assert.ok(server.requests.every((r) => r.body.stream === undefined), "plain requests");
    } finally {
      await server.close();
    }
  }
  const bad = await runAgent(args("http://127.0.0.1:9"), { STEPFLOW_STREAM: "maybe" });
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /STEPFLOW_STREAM must be 1\/true\/on or 0\/false\/off/);
  assertNoStackTrace(bad.stderr);
});

Deno.test("cli: a local server that is not running is BACKEND_NETWORK, retried, with a hint", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const base = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/v1`;
  listener.close();
  const { code, stdout, stderr } = await runAgent([
    "--agent",
    "issue-solver",
    "--backend",
    "openai",
    "--base-url",
    base,
    "--model",
    "llama3.2",
    "--topic",
    "Fix the flaky login test",
  ]);
  const output = stdout + stderr;
  assert.equal(code, 1, output);
  assertNoStackTrace(stderr);
  assert.match(output, /Error BACKEND_NETWORK at step initial\.issue/);
  assert.match(output, /retry 2: openai attempt 2\/3 failed \(network error: Connection refused/);
  assert.ok(output.includes(`is the server at ${base} running?`), output);
});

Deno.test("cli: --max-attempts N sets how often run-agent tries a model call that gets a 500", async () => {
  const server = startFakeServer(
    Array.from({ length: 6 }, () => ({ status: 500, json: { error: { message: "boom" } } })),
  );
  try {
    const { code, stderr } = await runAgent([
      "--agent",
      "issue-solver",
      "--backend",
      "openai",
      "--base-url",
      `${server.url}/v1`,
      "--model",
      "llama3.2",
      "--max-attempts",
      "2",
      "--topic",
      "x",
    ], { OPENAI_API_KEY: "sk-test" });
    assert.equal(code, 1, stderr);
    assert.equal(server.requests.length, 2, "two attempts, then the step fails");
    assertNoStackTrace(stderr);
  } finally {
    await server.close();
  }
});
