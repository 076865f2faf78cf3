/**
 * `run-agent` with `--permission-asks wait` and nobody at a terminal: a tool call that asks makes
 * the run wait (exit 4, the request and the answer command printed); `--answer RUN_ID --value
 * '{"decision":"allow"}'` from another process resumes the run inside the step and the call runs.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { seed001Files, seed001Script, writeAgent } from "../flow/fixtures.ts";
import { finish, spawnCli } from "./helpers.ts";
import { FileRunStore } from "../../src/store/file.ts";

const SCRIPT = JSON.stringify(seed001Script({
  s_a8f3: ["Plan."],
  s_b2c1: [
    { toolCalls: [{ name: "Bash", arguments: { command: "echo done >> out.txt" } }] },
    "Appended.",
  ],
}));
const AGENT = ["--agent", "code-improver", "--script", "ask.script.json"];

Deno.test("run-agent --permission-asks wait: the run waits for the permission, --answer allows the call", async () => {
  const user = await Deno.makeTempDir({ prefix: "stepflow-permission-wait-cli-" });
  try {
    const files = seed001Files();
    Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
      allowedTools: ["Read", "Bash(npm test)"],
    });
    await writeAgent(user, "code-improver", files);
    await Deno.writeTextFile(join(user, "ask.script.json"), SCRIPT);
    const waits = await finish(
      spawnCli("run-agent", [...AGENT, "--topic", "t", "--permission-asks", "wait"], {
        userDir: user,
      }),
    );
    assert.equal(waits.code, 4, waits.stderr);
    assert.match(waits.stdout, /waits for permission to run Bash in step "s_b2c1"/);
    assert.match(waits.stdout, /asks to run Bash echo done >> out\.txt/);
    assert.match(waits.stdout, /--value '\{"decision":"allow"\}'/);
    assert.match(waits.stdout, / answer \S+ --value/);
    assert.match(waits.stdout, /--permission-asks wait/, "the printed command keeps the mode");
    const store = new FileRunStore(join(user, "tmp", "logs", "agents", "code-improver"));
    const [run] = await store.list();
    assert.equal(run.status, "waiting");
    const listed = await finish(spawnCli("run-agent", [...AGENT, "--runs"], { userDir: user }));
    assert.match(listed.stdout, new RegExp(`${run.runId} .* waiting · approve Bash `));
    const listedJson = await finish(
      spawnCli("run-agent", [...AGENT, "--runs", "--json"], { userDir: user }),
    );
    assert.deepEqual(JSON.parse(listedJson.stdout)[0].waitingFor, {
      stepId: "s_b2c1",
      tool: "Bash",
    });
    const answered = await finish(
      spawnCli("run-agent", [
        ...AGENT,
        "--answer",
        run.runId,
        "--value",
        '{"decision":"allow"}',
        "--answered-by",
        "ops",
      ], { userDir: user }),
    );
    assert.equal(answered.code, 0, answered.stderr);
    assert.equal(await Deno.readTextFile(join(user, "out.txt")), "done\n");
    const call = (await store.readLog(run.runId)).find((e) => e.type === "tool_call")!;
    assert.equal(call.decidedBy, "approved when asked by ops");
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});
