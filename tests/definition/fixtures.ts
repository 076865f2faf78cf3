/**
 * Real agent folders in temp dirs for definition tests: copies of the example agents, mutated.
 *
 * @module
 */
import assert from "node:assert/strict";
import { cp } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { AgentDefinitionError } from "../../src/definition/errors.ts";
import { loadAgentDefinition, type LoadAgentOptions } from "../../src/definition/load.ts";
import type { AgentDefinition } from "../../src/definition/types.ts";

/** The repository root. */
export const REPO_ROOT: string = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The example agents in `.agent/`. */
export type Example = "code-improver" | "issue-solver";

// deno-lint-ignore no-explicit-any
export type Json = Record<string, any>;

/** A temp project holding one agent copied from an example. */
export interface TempAgent {
  /** The temp project (use as `cwd`). */
  root: string;
  /** The agent folder. */
  dir: string;
  /** The agent name. */
  name: string;
}

/**
 * Copies example `example` to `<tmp>/.agent/<name>`, then lets `mutate` edit the registry and
 * agent.json before they are written back.
 */
export async function copyExample(
  example: Example,
  mutate?: (registry: Json, agent: Json) => void,
  name: string = example,
): Promise<TempAgent> {
  const root = await Deno.makeTempDir({ prefix: "stepflow_def_" });
  const dir = join(root, ".agent", name);
  await cp(join(REPO_ROOT, ".agent", example), dir, { recursive: true });
  if (mutate) {
    const registry = JSON.parse(await Deno.readTextFile(join(dir, "steps_registry.json")));
    const agent = JSON.parse(await Deno.readTextFile(join(dir, "agent.json")));
    mutate(registry, agent);
    await writeJson(join(dir, "steps_registry.json"), registry);
    await writeJson(join(dir, "agent.json"), agent);
  }
  return { root, dir, name };
}

/** Writes `value` as JSON, creating folders. */
export async function writeJson(path: string, value: unknown): Promise<void> {
  await writeText(path, JSON.stringify(value, null, 2));
}

/** Writes `text`, creating folders. */
export async function writeText(path: string, text: string): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true });
  await Deno.writeTextFile(path, text);
}

/** Loads the temp agent. */
export function load(agent: TempAgent, options: LoadAgentOptions = {}): Promise<AgentDefinition> {
  return loadAgentDefinition(agent.name, { cwd: agent.root, ...options });
}

/** Loads the temp agent, which must fail; returns the error. */
export async function loadFails(
  agent: TempAgent,
  options: LoadAgentOptions = {},
): Promise<AgentDefinitionError> {
  try {
    await load(agent, options);
  } catch (error) {
    assert.ok(error instanceof AgentDefinitionError, `expected AgentDefinitionError, got ${error}`);
    assert.equal(error.code, "AGENT_DEFINITION_INVALID");
    return error;
  }
  assert.fail("expected the agent to be invalid");
}

/** Asserts that `problems` holds exactly `expected` (in any order). */
export function assertProblems(error: AgentDefinitionError, expected: readonly string[]): void {
  assert.deepEqual([...error.problems].sort(), [...expected].sort(), error.message);
}
