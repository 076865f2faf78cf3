import assert from "node:assert/strict";
import { StepflowError } from "../../src/errors.ts";
import {
  DEFAULT_PG_CONNECT_TIMEOUT_MS,
  DEFAULT_PG_STATEMENT_TIMEOUT_MS,
  openPgConnection,
  pgTimeouts,
} from "../../src/store/pg_connection.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { freshSchema, pg } from "./pg_server.ts";

Deno.test("pg timeouts: defaults, the URL's connect_timeout (s) and statement_timeout (ms), options first", () => {
  assert.deepEqual(pgTimeouts("postgres://db/app"), {
    connectTimeoutMs: DEFAULT_PG_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: DEFAULT_PG_STATEMENT_TIMEOUT_MS,
  });
  assert.deepEqual(pgTimeouts("postgres://db/app?connect_timeout=3&statement_timeout=2500"), {
    connectTimeoutMs: 3000,
    statementTimeoutMs: 2500,
  });
  assert.deepEqual(pgTimeouts("postgres://db/app?connect_timeout=0", { statementTimeoutMs: 0 }), {
    connectTimeoutMs: 0,
    statementTimeoutMs: 0,
  });
  assert.deepEqual(
    pgTimeouts("postgres://db/app?connect_timeout=3", { connectTimeoutMs: 500 }).connectTimeoutMs,
    500,
  );
});

Deno.test("pg timeouts: a value that is not a whole number is STORE_OPTION_INVALID, before connecting", async () => {
  for (
    const bad of [
      "connect_timeout=-1",
      "connect_timeout=1.5",
      "statement_timeout=abc",
      "statement_timeout=",
    ]
  ) {
    const url = `postgres://u:secret@127.0.0.1:1/app?${bad}`;
    assert.throws(
      () => pgTimeouts(url),
      (e: unknown) =>
        e instanceof StepflowError && e.code === "STORE_OPTION_INVALID" &&
        e.message.includes(bad.split("=")[0]) && !e.message.includes("secret"),
    );
    const store = new PostgresRunStore(url);
    const error = await store.list().then(() => undefined, (e) => e);
    assert.equal(error?.code, "STORE_OPTION_INVALID");
    await store.close();
  }
  assert.throws(
    () => pgTimeouts("postgres://db/app", { connectTimeoutMs: -5 }),
    /connectTimeoutMs/,
  );
});

Deno.test({
  name: "pg timeouts: the server gets the statement timeout (the API's over the URL's)",
  ignore: pg === undefined,
  async fn() {
    const schema = freshSchema();
    const fromUrl = await openPgConnection(`${pg!.url}?statement_timeout=4321&connect_timeout=5`, {
      schema,
    });
    const overridden = await openPgConnection(`${pg!.url}?statement_timeout=4321`, {
      schema,
      statementTimeoutMs: 1234,
    });
    try {
      const show = async (c: typeof fromUrl) =>
        (await c.query<{ statement_timeout: string }>("SHOW statement_timeout")).rows[0]
          .statement_timeout;
      assert.equal(await show(fromUrl), "4321ms");
      assert.equal(await show(overridden), "1234ms");
    } finally {
      await fromUrl.close();
      await overridden.close();
    }
  },
});
