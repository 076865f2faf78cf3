/**
 * A worker refuses to start on a path that is not a folder of agents (`/dev/null`, a file, a
 * missing or empty folder) — before it reaches the database — instead of taking every run from
 * the queue and failing each one.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { StepflowError } from "../../src/errors.ts";
import { startWorker } from "../../src/worker/worker.ts";
import { finish, hasStackTrace, spawnCli } from "../cli/helpers.ts";
import { startSilentServer } from "../silent_server.ts";

async function notAgentFolders(): Promise<{ root: string; paths: Record<string, string> }> {
  const root = await Deno.makeTempDir({ prefix: "stepflow-agents-" });
  await Deno.writeTextFile(join(root, "file.txt"), "not a folder");
  await Deno.mkdir(join(root, "empty"));
  await Deno.mkdir(join(root, "no-agent", "x"), { recursive: true });
  await Deno.writeTextFile(join(root, "no-agent", "x", "README.md"), "no agent.json here");
  return {
    root,
    paths: {
      "/dev/null": "/dev/null",
      "a file": join(root, "file.txt"),
      "a missing folder": join(root, "missing"),
      "an empty folder": join(root, "empty"),
      "a folder without agent.json": join(root, "no-agent"),
    },
  };
}

Deno.test("worker --agents that is not a folder of agents: usage error, exit 2, the database never contacted", async () => {
  using server = startSilentServer();
  const { root, paths } = await notAgentFolders();
  try {
    for (const [what, path] of Object.entries(paths)) {
      const result = await finish(
        spawnCli(
          "worker",
          ["--store", server.postgresUrl("?connect_timeout=1"), "--agents", path],
          {
            userDir: root,
          },
        ),
      );
      assert.equal(result.code, 2, `${what}: ${result.stderr}`);
      assert.match(result.stderr, /--agents .*(not a folder|does not exist|holds no agent folder)/);
      assert.match(result.stderr, /each <name>\/agent\.json/);
      assert.ok(!hasStackTrace(result.stderr), result.stderr);
      assert.equal(server.accepted, 0, `${what}: the worker connected to the database`);
    }
    // Without --agents, the default .agent folder of the user's folder is checked the same way.
    const fallback = await finish(
      spawnCli("worker", ["--store", server.postgresUrl("?connect_timeout=1")], { userDir: root }),
    );
    assert.equal(fallback.code, 2);
    assert.match(
      fallback.stderr,
      /No --agents given, and the default \.agent folder: .*does not exist/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("startWorker: an agentRoot that is not a folder of agents is WORKER_OPTION_INVALID", async () => {
  using server = startSilentServer();
  const { root, paths } = await notAgentFolders();
  try {
    for (const path of Object.values(paths)) {
      const error = await startWorker({ store: server.postgresUrl(), agentRoot: path }).then(
        () => undefined,
        (e) => e,
      );
      assert.ok(error instanceof StepflowError);
      assert.equal(error.code, "WORKER_OPTION_INVALID");
      assert.ok(error.message.includes(path), error.message);
    }
    assert.equal(server.accepted, 0);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
