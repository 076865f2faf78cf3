/**
 * `--show RUN_ID --as-script` on the PostgreSQL store: a run recorded there becomes the same replay
 * file as `--record` wrote, and replaying it gives the same history.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { copyDir, finish, REPO_ROOT, spawnCli } from "../cli/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

async function runAgent(userDir: string, args: string[]) {
  return await finish(spawnCli("run-agent", args, { userDir }));
}

Deno.test({
  name: "replay pg: a run in the PostgreSQL store becomes a replay file with --show --as-script",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const userDir = await Deno.makeTempDir({ prefix: "stepflow-replay-pg-" });
    try {
      await copyDir(join(REPO_ROOT, ".agent", "haiku"), join(userDir, ".agent", "haiku"));
      const base = ["--agent", "haiku", "--topic", "autumn", "--json", "--store", db];
      const recorded = await runAgent(userDir, [
        ...base,
        "--script",
        ".agent/haiku/demo.script.yaml",
        "--record",
        "haiku.yaml",
      ]);
      assert.equal(recorded.code, 0, recorded.stderr);
      const runId = JSON.parse(recorded.stdout).runId;
      const shown = await runAgent(userDir, [
        "--agent",
        "haiku",
        "--store",
        db,
        "--show",
        runId,
        "--as-script",
      ]);
      assert.equal(shown.code, 0, shown.stderr);
      const fromStore = parseYaml(shown.stdout) as Record<string, Record<string, unknown>[]>;
      const fromRecord = parseYaml(await Deno.readTextFile(join(userDir, "haiku.yaml"))) as Record<
        string,
        Record<string, unknown>[]
      >;
      const calls = (doc: typeof fromStore) =>
        ["draft.haiku", "draft.haiku#check"].map((k) =>
          doc[k].map((e) => [e.kind, e.iteration, e.text, e.fingerprint])
        );
      assert.deepEqual(calls(fromStore), calls(fromRecord));
      await Deno.writeTextFile(join(userDir, "from-store.yaml"), shown.stdout);
      const replayed = await runAgent(userDir, [...base, "--script", "from-store.yaml"]);
      assert.equal(replayed.code, 0, replayed.stderr);
      const path = (out: string) =>
        JSON.parse(out).state.history.map((h: Record<string, unknown>) => [h.stepId, h.transition]);
      assert.deepEqual(path(replayed.stdout), path(recorded.stdout));
    } finally {
      await Deno.remove(userDir, { recursive: true });
    }
  },
});
