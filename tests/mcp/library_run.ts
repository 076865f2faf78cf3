/**
 * A library user's program (spawned by run_servers_test.ts): one run of the code-improver agent in
 * the folder given as its argument, whose steps call an MCP server, then nothing more. The process
 * must end on its own once the run has: nothing of the run may keep Deno's event loop alive.
 *
 * @module
 */
import { loadAgentDefinition, StepFlowRunner } from "../../mod.ts";
import { ScriptedBackend } from "../../src/llm/mod.ts";
import { seed001Script } from "../flow/fixtures.ts";

const [root] = Deno.args;
const echo = (message: string) => ({
  toolCalls: [{ name: "mcp__everything__echo", arguments: { message } }],
});
const definition = await loadAgentDefinition("code-improver", { cwd: root });
const backend = new ScriptedBackend(seed001Script({
  s_a8f3: [echo("one"), "Echoed one."],
  s_b2c1: [echo("two"), "Echoed two."],
}));
const result = await new StepFlowRunner(definition, { backend }).run({
  args: { topic: "t" },
  cwd: root,
});
console.log(JSON.stringify({ success: result.success, error: result.error?.code ?? null }));
// No Deno.exit(): the program ends when its event loop is empty, as a library user's would.
