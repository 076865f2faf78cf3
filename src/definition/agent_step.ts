/**
 * Agent steps (`"kind": "agent"`): another agent runs the sub-task as a child run. This file holds
 * what the loader checks about them — the step's own fields, the child it names (loaded with the
 * parent: it must load, its declared parameters must take the step's `args`, and no chain of
 * agent steps may lead back to an agent already on the way: A → B → A) — and how an `args` value
 * is read ({@linkcode argReference}), which the runner uses too.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { errorMessage } from "../errors.ts";
import { realpathOr } from "../prompt/confine.ts";
import type { AgentConfig } from "./schema.ts";
import { AgentNotFoundError } from "./errors.ts";
import { closestMatch } from "./suggest.ts";
import type { AgentDefinition, FlowStep } from "./types.ts";

/**
 * A reference an `args` value may be: a handoff value, a parameter of the parent run, or (in a
 * fan-out step) the item the child runs for — `item` is the path in it, `""` for the whole item.
 */
export type ArgReference = { handoff: string } | { parameter: string } | { item: string };

const HANDOFF_REF = /^\{handoff\.([A-Za-z0-9_][A-Za-z0-9_.-]*)\}$/;
const PARAMETER_REF = /^\{uv-([A-Za-z][A-Za-z0-9_-]*)\}$/;
const ITEM_REF = /^\{item(?:\.([A-Za-z0-9_][A-Za-z0-9_.\[\]-]*))?\}$/;

/**
 * What an `args` value refers to: `"{handoff.<key>}"` (the latest handoff value of the key) or
 * `"{uv-<name>}"` (the parent's parameter); undefined for a literal (any other value, passed as is).
 *
 * @example
 * ```ts
 * import { argReference } from "./agent_step.ts";
 * argReference("{handoff.version}"); // { handoff: "version" }
 * argReference("{uv-topic}"); // { parameter: "topic" }
 * argReference("{item.path}"); // { item: "path" } (a fan-out step's item)
 * argReference("v1.2"); // undefined: a literal
 * ```
 */
export function argReference(value: unknown): ArgReference | undefined {
  if (typeof value !== "string") return undefined;
  const handoff = HANDOFF_REF.exec(value);
  if (handoff) return { handoff: handoff[1] };
  const parameter = PARAMETER_REF.exec(value);
  if (parameter) return { parameter: parameter[1] };
  const item = ITEM_REF.exec(value);
  return item ? { item: item[1] ?? "" } : undefined;
}

/** `agent`, `args` or `handoffFields` on a step that is not an agent step. */
export function checkAgentFieldsPlace(step: FlowStep, fail: (message: string) => void): void {
  if (step.kind === "agent") return;
  const misplaced = (["agent", "args", "handoffFields"] as const).filter((k) =>
    step.raw[k] !== undefined
  );
  if (misplaced.length === 0) return;
  fail(
    `sets ${
      misplaced.map((k) => `"${k}"`).join(", ")
    } but is not an agent step: add "kind": "agent"${
      misplaced.includes("handoffFields")
        ? " (a model step hands off with structuredGate.handoffFields)"
        : ""
    }, or remove ${misplaced.length > 1 ? "them" : "it"}.`,
  );
}

/**
 * An agent step's own fields: it names a child agent, routes only with `transitions.next` (or
 * completes the run when it has none), calls no model itself, and its `{uv-<name>}` args name the
 * parent's declared parameters.
 */
export function checkAgentStep(
  step: FlowStep,
  agent: AgentConfig | undefined,
  fail: (message: string) => void,
  targetProblem: (field: string, target: string) => string | undefined,
): void {
  const raw = step.raw;
  if (step.agent === undefined) {
    fail(
      'is an agent step ("kind": "agent") but names no agent: add "agent": "<folder under .agent/, or a path from this agent\'s folder>".',
    );
  }
  const extra = ([
    "structuredGate",
    "check",
    "outputSchemaRef",
    "validation",
    "command",
    "prompt",
    "c2",
    "c3",
    "model",
    "allowedTools",
    "disallowedTools",
    "permissionMode",
    "timeoutMs",
  ] as const).filter((k) => raw[k] !== undefined);
  if (extra.length > 0) {
    fail(
      `is an agent step: the child agent's own steps call the model, so it takes no ${
        extra.join(", ")
      }. Remove ${extra.length > 1 ? "them" : "it"} (set them in the child agent).`,
    );
  }
  for (const [intent, { target }] of Object.entries(step.transitions)) {
    if (intent !== "next") {
      fail(
        `transitions.${intent}: an agent step routes only with "next" (the child run completed); a child that did not complete follows onError.`,
      );
      continue;
    }
    const problem = targetProblem("transitions.next.target", target);
    if (problem) fail(problem);
  }
  const declared = Object.keys(agent?.parameters ?? {});
  for (const [name, value] of Object.entries(step.args ?? {})) {
    const ref = argReference(value);
    if (ref && "parameter" in ref && !declared.includes(ref.parameter)) {
      const guess = closestMatch(ref.parameter, declared);
      fail(
        `args.${name}: {uv-${ref.parameter}} is not a parameter of this agent${
          guess ? ` (did you mean {uv-${guess}}?)` : ""
        }: declare it in agent.json "parameters", or pass a literal value.`,
      );
    }
  }
}

/** Where an agent step's child lives: a name under the agent root, or a path from the parent's folder. */
export function childAgentDir(name: string, parentDir: string, agentRoot: string): string {
  const byName = !/[\\/]/.test(name) && !name.startsWith(".");
  return byName ? join(agentRoot, name) : resolve(parentDir, name);
}

/** One agent on the way from the agent being loaded to the child being loaded. */
export interface AgentChainLink {
  /** The agent's real folder. */
  realDir: string;
  /** Its name as written (agent.json `name`). */
  name: string;
}

/** Loads a child agent with the chain of agents that lead to it (the loader itself). */
export type ChildLoader = (
  dir: string,
  chain: readonly AgentChainLink[],
) => Promise<AgentDefinition>;

/**
 * Loads the child of every agent step (setting `step.child`) and returns the problems: a child
 * that does not load, a cycle (the child is already on the way), `args` the child's parameters
 * do not take, a required child parameter the step leaves out.
 */
export async function linkChildAgents(
  steps: Record<string, FlowStep>,
  where: { dir: string; agentRoot: string; registry: string },
  chain: readonly AgentChainLink[],
  load: ChildLoader,
): Promise<string[]> {
  const problems: string[] = [];
  for (const step of Object.values(steps)) {
    if (step.kind !== "agent" || step.agent === undefined) continue;
    const at = `${where.registry}: step "${step.id}"`;
    const dir = childAgentDir(step.agent, where.dir, where.agentRoot);
    const realDir = await realpathOr(dir);
    const loop = chain.findIndex((link) => link.realDir === realDir);
    if (loop >= 0) {
      const names = [...chain.slice(loop).map((l) => l.name), chain[loop].name].join(" → ");
      problems.push(
        `${at}: runs agent "${step.agent}", which is already on the way (${names}): agent steps may not lead back to an agent that runs them. Break the cycle.`,
      );
      continue;
    }
    let child: AgentDefinition;
    try {
      child = await load(dir, chain);
    } catch (error) {
      if (error instanceof AgentNotFoundError) {
        const guess = closestMatch(step.agent, error.available);
        problems.push(
          `${at}: its agent "${step.agent}" is not found (no agent.json in ${dir})${
            guess ? `; did you mean "${guess}"?` : ""
          } Name a folder under ${where.agentRoot} or a path from ${where.dir}.`,
        );
      } else {
        problems.push(
          `${at}: its agent "${step.agent}" (${dir}) does not load:\n${
            indent(errorMessage(error))
          }`,
        );
      }
      continue;
    }
    problems.push(...argsProblems(step, child, at));
    step.child = child;
  }
  return problems;
}

function argsProblems(step: FlowStep, child: AgentDefinition, at: string): string[] {
  const problems: string[] = [];
  const params = child.agent.parameters ?? {};
  const names = Object.keys(params);
  const args = step.args ?? {};
  for (const [name, value] of Object.entries(args)) {
    const def = Object.hasOwn(params, name) ? params[name] : undefined;
    if (!def) {
      const guess = closestMatch(name, names);
      problems.push(
        `${at}: args.${name} is not a parameter of agent "${child.name}" (${
          names.length > 0 ? `it declares ${names.join(", ")}` : "it declares none"
        })${
          guess ? `; did you mean "${guess}"?` : ""
        }. Remove it, or declare it in ${child.agentFile}.`,
      );
      continue;
    }
    if (argReference(value) === undefined) {
      const problem = argTypeProblem(value, def.type);
      if (problem) problems.push(`${at}: args.${name} ${problem}`);
    }
  }
  for (const [name, def] of Object.entries(params)) {
    if (def.required && def.default === undefined && !Object.hasOwn(args, name)) {
      problems.push(
        `${at}: agent "${child.name}" requires the parameter "${name}", which args does not set: add "args": { "${name}": "{handoff.<key>}" } (or a literal, or "{uv-<name>}").`,
      );
    }
  }
  return problems;
}

/** Why `value` cannot be a parameter of `type`, or undefined when it can. */
export function argTypeProblem(
  value: unknown,
  type: "string" | "number" | "boolean" | "array",
): string | undefined {
  const ok = type === "array"
    ? Array.isArray(value) && value.every((v) => typeof v === "string" || typeof v === "number")
    : type === "number"
    ? typeof value === "number" && Number.isFinite(value)
    : type === "boolean"
    ? typeof value === "boolean"
    : typeof value === "string";
  if (ok) return undefined;
  const got = Array.isArray(value) ? "a list" : value === null ? "null" : `a ${typeof value}`;
  return `is ${got}, but the child's parameter is of type "${type}"${
    type === "array" ? " (a list of strings or numbers)" : ""
  }.`;
}

function indent(text: string): string {
  return text.split("\n").map((line) => `    ${line}`).join("\n");
}
