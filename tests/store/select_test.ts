/**
 * Store selection: `--store` over `STEPFLOW_STORE` over agent.json `logging.store` over the file
 * store; bad values and misuse of `--submit`/`--wait` are usage errors naming the fix.
 */
import assert from "node:assert/strict";
import { StepflowError } from "../../src/errors.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { resolveStoreSetting, selectRunStore } from "../../src/store/select.ts";
import { runCli } from "../cli/helpers.ts";
import { pipelineWorkspace } from "./helpers.ts";

/** `run-agent …` in-process (its `main(argv, io)`): these are usage errors, not process matters. */
const runAgent = (root: string, args: string[]) => runCli(args, { userDir: root });

const agent = (store?: string) => ({
  name: "demo",
  agent: { logging: { ...(store ? { store } : {}), maxFiles: 3 } },
});

Deno.test("store selection: --store, then STEPFLOW_STORE, then logging.store, then file", () => {
  const env = { STEPFLOW_STORE: "postgres://env/db" };
  assert.deepEqual(resolveStoreSetting(agent("postgres://json/db"), { store: "file", env }), {
    value: "file",
    source: "--store",
  });
  assert.equal(
    resolveStoreSetting(agent("postgres://json/db"), { env }).value,
    "postgres://env/db",
  );
  assert.equal(
    resolveStoreSetting(agent("postgres://json/db"), {}).source,
    "agent.json logging.store",
  );
  assert.equal(resolveStoreSetting(agent(), { env: { STEPFLOW_STORE: "" } }).value, "file");
  assert.ok(selectRunStore(agent(), { cwd: "/tmp" }) instanceof FileRunStore);
  const pg = selectRunStore(agent(), { store: "postgresql://u:secret@h/db" });
  assert.ok(pg instanceof PostgresRunStore);
  assert.equal(pg.displayUrl, "postgresql://u:***@h/db");
});

Deno.test("store selection: anything else is STORE_INVALID, with the password hidden", () => {
  assert.throws(
    () => resolveStoreSetting(agent(), { env: { STEPFLOW_STORE: "mysql://u:pw@h/db" } }),
    (error: unknown) =>
      error instanceof StepflowError && error.code === "STORE_INVALID" &&
      /STEPFLOW_STORE is "mysql:\/\/u:\*\*\*@h\/db"/.test(error.message) &&
      /postgres:\/\/user@host:5432\/database/.test(error.message),
  );
});

Deno.test("run-agent: --wait needs --submit, --submit needs the PostgreSQL store", async () => {
  const { root } = await pipelineWorkspace();
  try {
    const wait = await runAgent(root, ["--agent", "pipeline", "--topic", "x", "--wait"]);
    assert.equal(wait.code, 2);
    assert.match(wait.stderr, /--wait follows a run the workers drive/);
    const submit = await runAgent(root, ["--agent", "pipeline", "--topic", "x", "--submit"]);
    assert.equal(submit.code, 2);
    assert.match(submit.stderr, /--submit needs the PostgreSQL store/);
    const script = await runAgent(root, [
      "--agent",
      "pipeline",
      "--topic",
      "x",
      "--submit",
      "--script",
      "s.json",
      "--store",
      "postgres://h/db",
    ]);
    assert.equal(script.code, 2);
    assert.match(script.stderr, /drop --script/);
    const bad = await runAgent(root, ["--agent", "pipeline", "--runs", "--store", "nope"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--store is "nope"/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
