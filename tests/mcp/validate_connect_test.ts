/**
 * `run-agent --validate --connect` with a real server from npm: each configured server is started,
 * its tools listed and the server closed again; one that cannot start is named, with exit code 2.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli } from "../cli/helpers.ts";
import { seed001Files, writeAgent } from "../flow/fixtures.ts";
import { groupGone, serverCommand } from "./npm_servers.ts";

async function agentWith(mcpServers: Record<string, unknown>): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "stepflow_mcp_connect_" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Read", "mcp__everything"],
    mcpServers,
  });
  await writeAgent(root, "code-improver", files);
  return root;
}

Deno.test("--validate --connect starts each server, lists its tools and closes it", async () => {
  const everything = await serverCommand("mcp-server-everything");
  const pidFile = join(await Deno.makeTempDir({ prefix: "stepflow_mcp_pid_" }), "server.pid");
  const root = await agentWith({
    everything: { command: "bash", args: ["-c", `echo $$ > '${pidFile}'; exec '${everything}'`] },
  });
  const out = await runCli(["--agent", "code-improver", "--validate", "--connect"], {
    userDir: root,
  });
  assert.equal(out.code, 0, out.stderr + out.stdout);
  assert.match(out.stdout, /^OK/m);
  assert.match(
    out.stdout,
    /MCP servers \(1\):\n {2}✓ everything: \d+ tools\n {6}mcp__everything__/,
  );
  assert.match(out.stdout, /^ {6}mcp__everything__echo$/m);
  const pid = Number((await Deno.readTextFile(pidFile)).trim());
  assert.deepEqual(await groupGone(pid), [], "the server was closed again");

  const json = await runCli(["--agent", "code-improver", "--validate", "--connect", "--json"], {
    userDir: root,
  });
  assert.equal(json.code, 0, json.stderr);
  const report = JSON.parse(json.stdout);
  assert.equal(report.valid, true);
  assert.equal(report.mcpServers[0].name, "everything");
  assert.ok(report.mcpServers[0].tools.includes("mcp__everything__echo"));
});

Deno.test("--validate --connect names the server that cannot start and exits 2; the others still report", async () => {
  const everything = await serverCommand("mcp-server-everything");
  const root = await agentWith({
    everything: { command: everything },
    broken: { command: "no-such-mcp-server-xyz" },
  });
  const out = await runCli(["--agent", "code-improver", "--validate", "--connect"], {
    userDir: root,
  });
  assert.equal(out.code, 2, out.stdout);
  assert.match(out.stdout, /✓ everything: \d+ tools/);
  assert.match(out.stdout, /✗ broken: MCP_[A-Z_]+: .*no-such-mcp-server-xyz/);
  assert.match(out.stderr, /the MCP server "broken" of agent "code-improver" could not be started/);
  assert.doesNotMatch(out.stderr, /^\s+at /m);

  // An unset variable: the configuration problem, and no server started.
  const unset = await agentWith({ files: { command: "${NOT_SET_ANYWHERE_42}" } });
  const bad = await runCli(["--agent", "code-improver", "--validate", "--connect"], {
    userDir: unset,
  });
  assert.equal(bad.code, 2);
  assert.match(
    bad.stdout,
    /✗ files: MCP_CONFIG_INVALID: mcpServers\.files\.command: .*NOT_SET_ANYWHERE_42/,
  );
  assert.match(bad.stderr, /the MCP server "files" of agent "code-improver"/);
});

Deno.test("--connect without --validate is a usage error; an agent without servers says so", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow_mcp_connect_" });
  await writeAgent(root, "code-improver", seed001Files());
  const alone = await runCli(["--agent", "code-improver", "--connect"], { userDir: root });
  assert.equal(alone.code, 2);
  assert.match(alone.stderr, /--connect goes with --validate/);
  const none = await runCli(["--agent", "code-improver", "--validate", "--connect"], {
    userDir: root,
  });
  assert.equal(none.code, 0, none.stderr);
  assert.match(none.stdout, /No MCP servers to connect to/);
});
