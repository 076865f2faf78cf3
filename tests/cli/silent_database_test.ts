/**
 * Every CLI against a PostgreSQL store whose server accepts the connection and never answers
 * (`tests/silent_server.ts`): each gives up within the store URL's `connect_timeout` with
 * `RUN_STORE_TIMEOUT`, exit 2, the server named (no password) and how to check it, no stack; and
 * Ctrl-C or SIGTERM while it waits (default timeouts) stops it at once.
 */
import assert from "node:assert/strict";
import { finish, hasStackTrace, spawnCli, writeTinyAgent } from "./helpers.ts";
import { startSilentServer } from "../silent_server.ts";

/** The commands that read or write the store, by their arguments after `--store URL`. */
const COMMANDS: { name: string; cli: "run-agent" | "worker" | "ui"; args: string[] }[] = [
  {
    name: "run-agent (a run)",
    cli: "run-agent",
    args: ["--agent", "tiny", "--topic", "x", "--backend", "scripted", "--script", "answers.json"],
  },
  { name: "run-agent --runs", cli: "run-agent", args: ["--agent", "tiny", "--runs"] },
  { name: "run-agent --show", cli: "run-agent", args: ["--agent", "tiny", "--show", "last"] },
  {
    name: "run-agent --submit",
    cli: "run-agent",
    args: ["--agent", "tiny", "--topic", "x", "--submit"],
  },
  { name: "worker", cli: "worker", args: ["--poll-ms", "100"] },
  { name: "ui", cli: "ui", args: ["--port", "0"] },
];

async function userFolder(): Promise<string> {
  const userDir = await Deno.makeTempDir({ prefix: "stepflow-silent-" });
  await writeTinyAgent(userDir, "tiny");
  await Deno.writeTextFile(`${userDir}/answers.json`, JSON.stringify({ "work.task": [] }));
  return userDir;
}

for (const command of COMMANDS) {
  Deno.test(`${command.name}: a database that never answers is RUN_STORE_TIMEOUT, exit 2`, async () => {
    using server = startSilentServer();
    const userDir = await userFolder();
    try {
      const child = spawnCli(
        command.cli,
        ["--store", server.postgresUrl("?connect_timeout=1"), ...command.args],
        { userDir },
      );
      const result = await finish(child);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /RUN_STORE_TIMEOUT|did not accept a connection within 1 s/);
      assert.match(result.stderr, /127\.0\.0\.1:\d+\/app/);
      assert.match(result.stderr, /pg_isready -h 127\.0\.0\.1 -p \d+/);
      assert.match(result.stderr, /connect_timeout=SECONDS/);
      assert.ok(!result.stderr.includes("secret"), result.stderr);
      assert.ok(!hasStackTrace(result.stderr), result.stderr);
      assert.ok(server.accepted >= 1, "the command reached the server");
    } finally {
      await Deno.remove(userDir, { recursive: true });
    }
  });
}

for (const command of COMMANDS) {
  const signal: Deno.Signal = command.cli === "worker" ? "SIGTERM" : "SIGINT";
  Deno.test(`${command.name}: ${signal} while it waits for a silent database stops it at once`, async () => {
    using server = startSilentServer();
    const userDir = await userFolder();
    try {
      // The default timeouts (10 s to connect): the signal, not a timeout, must end the wait.
      const child = spawnCli(command.cli, ["--store", server.postgresUrl(), ...command.args], {
        userDir,
      });
      // Waits for the connection, or fails at once if the command ended before making one.
      const ended = child.status.then((s) => {
        throw new Error(`${command.name} ended (${s.code}) before reaching the server`);
      });
      await Promise.race([server.connected(), ended]);
      ended.catch(() => {});
      const sent = performance.now();
      child.kill(signal);
      const result = await finish(child);
      const took = performance.now() - sent;
      assert.ok(took < 5_000, `stopped ${Math.round(took)} ms after ${signal}`);
      if (command.cli === "ui") {
        // The dashboard has no Ctrl-C handler before it listens: the signal ends it.
        assert.ok(result.signal === signal || result.code === 130, JSON.stringify(result));
      } else {
        // 128 + the signal: 130 after Ctrl-C, 143 after SIGTERM.
        assert.equal(result.code, signal === "SIGTERM" ? 143 : 130, result.stderr);
        assert.match(
          result.stderr,
          /PostgreSQL server at postgres:\/\/stepflow:\*\*\*@127\.0\.0\.1/,
        );
        assert.match(result.stderr, /has not answered/);
      }
      assert.ok(!hasStackTrace(result.stderr), result.stderr);
    } finally {
      await Deno.remove(userDir, { recursive: true });
    }
  });
}
