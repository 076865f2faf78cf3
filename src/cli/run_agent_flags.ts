/**
 * The flags of the agent subcommands of `stepflow` (`run`, `validate`, `runs`, `show`, `resume`,
 * `redrive`, `answer`, `submit`, …), declared once in groups: each subcommand's file
 * (`src/cli/commands/`) takes the groups it needs, and its help rows, parser and parsed type follow
 * from them. The old `run-agent` form takes every group ({@linkcode RUN_AGENT_FLAGS}, parsed as
 * {@linkcode CliFlags}). Parsing is in `args.ts`.
 *
 * @module
 */
import { UsageError } from "../errors.ts";
import type { Exactly } from "../type_equality.ts";
import { REPLAY_MODES, type ReplayMode } from "../llm/replay.ts";
import { BACKEND_FLAGS } from "./kit/backend.ts";
import { MAX_CHILDREN_LIMIT } from "../definition/fan_out_limits.ts";
import { parsePermissionMode, type PermissionMode } from "../definition/permission_rule.ts";
import {
  choiceFlag,
  declaredTable,
  defineFlags,
  type FlagsOf,
  type FlagSpec,
  parsePositiveInt,
  readDeclaredFlags,
} from "./kit/flags.ts";

// -- The flag groups: each flag is declared once, here; every agent subcommand takes the groups it
// needs (src/cli/commands/*.ts), and the old `run-agent` form takes them all (RUN_AGENT_FLAGS).
// A new flag of runs (`stepflow run`, `resume`, `redrive`, `answer`): add it to RUN_OPTION_FLAGS,
// to CliFlags below, and to RESERVED_PARAMETER_FLAGS (src/definition/parameters.ts; a drift test
// keeps them equal); read it in src/cli/agent_run.ts.

/** `--agent NAME`: the agent of a run subcommand (`show`, `resume`, …) when its id alone is not enough. */
export const AGENT_FLAG = defineFlags({
  agent: {
    type: "string",
    value: "NAME",
    description: "The agent that recorded the run: a name under .agent/ or a folder path\n" +
      "(needed only when the run id alone does not find it)",
    complete: "agent",
  },
});

/** The backend of a run: `--backend`, `--model`, `--base-url`, `--script`, `--max-attempts`, `--no-stream`. */
export const RUN_BACKEND_FLAGS = defineFlags({
  backend: {
    ...BACKEND_FLAGS.backend,
    complete: ["claude-code", "anthropic", "openai", "scripted"],
  },
  model: {
    ...BACKEND_FLAGS.model,
    description: "Model for every call (overrides the agent and its steps)",
  },
  baseUrl: BACKEND_FLAGS.baseUrl,
  script: BACKEND_FLAGS.script,
  fallbackModel: BACKEND_FLAGS.fallbackModel,
  maxAttempts: BACKEND_FLAGS.maxAttempts,
  maxRateLimitWaitMs: BACKEND_FLAGS.maxRateLimitWaitMs,
  idleTimeoutMs: BACKEND_FLAGS.idleTimeoutMs,
  noStream: BACKEND_FLAGS.noStream,
});

/** How a run may proceed: limits, fallbacks, commands, validators, permissions. */
export const RUN_OPTION_FLAGS = defineFlags({
  maxIterations: {
    type: "string",
    value: "N",
    description: "Upper bound on iterations (overrides limits.maxTotalIterations)",
    parse: parsePositiveInt("--max-iterations"),
  },
  maxChildren: {
    type: "string",
    value: "N",
    description:
      "Children of fan-out steps in flight at once, whole run and nested (1-4096, default 64)",
    parse: parseMaxChildren,
  },
  budgetUsd: {
    type: "string",
    value: "USD",
    description: "Hard budget in US dollars, child runs included (on resume: raises it)",
    parse: parsePositiveAmount("--budget-usd"),
  },
  budgetTokens: {
    type: "string",
    value: "N",
    description: "Hard budget in tokens, input plus output (on resume: raises it)",
    parse: parsePositiveInt("--budget-tokens"),
  },
  pricing: {
    type: "string",
    value: "FILE",
    description: "Model prices (JSON) over agent.json's and the built-in table (STEPFLOW_PRICING)",
  },
  allowFallback: {
    type: "boolean",
    description: "Allow fallback prompts (development only; each use warns)",
  },
  allowRun: {
    type: "boolean",
    description: "Let command steps and validators run the commands agent.json lists",
  },
  skipValidators: {
    type: "boolean",
    description: "Do not run step validators (warns each time; for scripted dry runs)",
  },
  permissionAsks: {
    type: "string",
    value: "MODE",
    description: "An ask with nobody to ask: refuse (default) or wait (for stepflow answer)",
    parse: choiceFlag("--permission-asks", ["refuse", "wait"] as const),
    complete: ["refuse", "wait"],
  },
  permissionMode: {
    type: "string",
    value: "MODE",
    description:
      "Permission mode of every step's tool calls for this run (over agent.json's; kept on resume)",
    parse: (raw): PermissionMode => {
      const parsed = parsePermissionMode(raw);
      if (parsed.ok) return parsed.mode;
      throw new UsageError(`--permission-mode: ${parsed.problem}.`);
    },
    complete: ["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"],
  },
});

/** `--resume`'s own: re-run the tool call an interrupted run was killed in. */
export const RERUN_FLAG = defineFlags({
  rerunUnfinishedCall: {
    type: "boolean",
    description: "Re-run the non-idempotent tool call the run was killed in",
  },
});

/** The answer of `stepflow answer RUN_ID`. */
export const ANSWER_FLAGS = defineFlags({
  value: {
    type: "string",
    value: "JSON",
    description: "The answer, as JSON (checked against the step's schema); else JSON on stdin",
  },
  requestId: {
    type: "string",
    value: "ID",
    description: "The request it answers, of a run that waits on several (show RUN_ID lists them)",
  },
  answeredBy: {
    type: "string",
    value: "WHO",
    description: "Who gives the answer, as the history records it (default: cli)",
  },
});

/** `--run-group NAME`: the group of a new run, or the group `runs` lists. */
export const GROUP_FLAG = defineFlags({
  group: {
    name: "run-group",
    type: "string",
    value: "NAME",
    description: "Start the run in this group (with runs: list only the group's runs)",
  },
});

/** The replay flags of a run (docs/testing.md): `--record FILE`, `--replay MODE`. */
export const RECORD_FLAGS = defineFlags({
  record: {
    type: "string",
    value: "FILE",
    description: "After the run, write its backend calls as a replay file (YAML) to FILE",
  },
  replay: {
    type: "string",
    value: "MODE",
    description:
      "With a replay --script: strict (default) fails on a changed prompt, lenient warns",
    parse: choiceFlag<ReplayMode>("--replay", REPLAY_MODES),
    complete: REPLAY_MODES,
  },
});

/** `--as-script` of `stepflow show`: a recorded run as a replay file. */
export const AS_SCRIPT_FLAG = defineFlags({
  asScript: {
    type: "boolean",
    description: "Print the run as a replay file (YAML) instead of a table",
  },
});

/** `--store URL`: where runs are recorded. */
export const STORE_FLAG = defineFlags({
  store: {
    type: "string",
    value: "URL",
    description: "Run store: file (default) or postgres://… (else STEPFLOW_STORE, logging.store)",
  },
});

/** `--submit`: queue the run for the workers. */
export const SUBMIT_FLAG = defineFlags({
  submit: {
    type: "boolean",
    description: "Queue the run for the workers (PostgreSQL store) and print its id",
  },
});

/** `--wait`: follow a run the workers drive. */
export const WAIT_FLAG = defineFlags({
  wait: {
    type: "boolean",
    description: "Follow the run live on the workers until it ends (or waits)",
  },
});

/** `--json`: one JSON object on stdout. */
export const JSON_FLAG = defineFlags({
  json: {
    type: "boolean",
    description: "Print exactly one JSON object (the result) on stdout",
  },
});

/** `--verbose`: every event as a line. */
export const VERBOSE_FLAG = defineFlags({
  verbose: {
    type: "boolean",
    description: "One line per event even on a terminal, plus answers, tool details, streamed text",
  },
});

/** `--help`, `-h`. */
export const HELP_FLAG = defineFlags({
  help: {
    type: "boolean",
    short: "h",
    description: "Show this help (with an agent: also its parameters)",
  },
});

/** The mode flags of the old `run-agent` form, each now a subcommand of `stepflow`. */
export const MODE_FLAGS = defineFlags({
  list: {
    type: "boolean",
    description: "List the agents under .agent/ with their descriptions (now: stepflow list)",
  },
  validate: {
    type: "boolean",
    description: "Check the agent's definition (now: stepflow validate AGENT)",
  },
  connect: {
    type: "boolean",
    description: "With validate: start each MCP server (behavior.mcpServers), list its tools",
  },
  init: {
    type: "string",
    value: "NAME",
    description: "Scaffold a working gate-routed agent in .agent/NAME (now: stepflow init NAME)",
  },
  graph: {
    type: "boolean",
    description: "Print the agent's flow as a Mermaid flowchart (now: stepflow graph AGENT)",
  },
  resume: {
    type: "string",
    value: "RUN_ID",
    description: "Continue an interrupted run (now: stepflow resume RUN_ID)",
  },
  redrive: {
    type: "string",
    value: "RUN_ID",
    description: "Restart a failed run from its failed step (now: stepflow redrive RUN_ID)",
  },
  answer: {
    type: "string",
    value: "RUN_ID",
    description: "Answer a run waiting at an input step (now: stepflow answer RUN_ID)",
  },
  runs: {
    type: "boolean",
    description: "List the agent's recorded runs (now: stepflow runs AGENT)",
  },
  show: {
    type: "string",
    value: "RUN_ID",
    description: "Print one recorded run's history (now: stepflow show RUN_ID)",
  },
});

/**
 * Every flag of the old `run-agent` form (`deno task run-agent --agent NAME …`), in `--help` order:
 * every group above. The type of its parsed flags ({@linkcode CliFlags}) follows from it. Any other
 * `--<key>` is one of the agent's declared parameters.
 */
export const RUN_AGENT_FLAGS = defineFlags({
  agent: {
    type: "string",
    value: "NAME",
    description: "Agent to run: a name under .agent/ or a folder path",
    complete: "agent",
  },
  ...MODE_FLAGS,
  ...RUN_BACKEND_FLAGS,
  ...RUN_OPTION_FLAGS,
  ...RERUN_FLAG,
  ...ANSWER_FLAGS,
  ...GROUP_FLAG,
  ...RECORD_FLAGS,
  ...AS_SCRIPT_FLAG,
  ...STORE_FLAG,
  ...SUBMIT_FLAG,
  ...WAIT_FLAG,
  ...JSON_FLAG,
  ...VERBOSE_FLAG,
  ...HELP_FLAG,
});

/** `--max-children N`: a whole number within the runner's bounds. */
function parseMaxChildren(raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n < 1 || n > MAX_CHILDREN_LIMIT) {
    throw new UsageError(
      `--max-children expects a whole number from 1 to ${MAX_CHILDREN_LIMIT} (children of fan-out steps in flight at once), got "${raw}".`,
    );
  }
  return n;
}

/** `run-agent`'s flags as rows (name, type, short alias): what an agent parameter may not be named. */
export const CLI_FLAGS: readonly FlagSpec[] = Object.freeze(declaredTable(RUN_AGENT_FLAGS));

/**
 * The CLI's own flags, parsed. Written out (not `FlagsOf<typeof RUN_AGENT_FLAGS>`) because it is
 * public API, which needs explicit types; the check below keeps it exactly the declaration's type.
 */
export interface CliFlags {
  /** `--agent NAME`. */
  agent?: string;
  /** `--list`. */
  list: boolean;
  /** `--validate`. */
  validate: boolean;
  /** `--connect` (with `--validate`): start each MCP server and list its tools. */
  connect: boolean;
  /** `--init NAME`. */
  init?: string;
  /** `--graph`. */
  graph: boolean;
  /** `--backend NAME`. */
  backend?: string;
  /** `--model MODEL`. */
  model?: string;
  /** `--base-url URL`. */
  baseUrl?: string;
  /** `--script FILE`. */
  script?: string;
  /** `--fallback-model NAME` (repeatable): models tried after each call's own model or chain. */
  fallbackModel: string[];
  /** `--max-attempts N`: attempts per backend call (retry.maxAttempts), a positive integer. */
  maxAttempts?: number;
  /** `--max-rate-limit-wait-ms MS`: the longest server-asked wait (retry.maxRateLimitWaitMs). */
  maxRateLimitWaitMs?: number;
  /** `--idle-timeout-ms MS`: the idle timeout of streamed answers (0: off). */
  idleTimeoutMs?: number;
  /** `--no-stream`: the chat backends ask for plain answers instead of streams. */
  noStream: boolean;
  /** `--max-iterations N`, checked to be a positive integer. */
  maxIterations?: number;
  /** `--max-children N`: children of fan-out steps in flight at once (`maxChildren`). */
  maxChildren?: number;
  /** `--budget-usd USD`: the run's budget in US dollars, a positive number. */
  budgetUsd?: number;
  /** `--budget-tokens N`: the run's budget in tokens (input plus output), a positive integer. */
  budgetTokens?: number;
  /** `--pricing FILE`: model prices over agent.json's and the built-in table. */
  pricing?: string;
  /** `--allow-fallback`. */
  allowFallback: boolean;
  /** `--allow-run`: command steps and validators may run agent.json `commands`. */
  allowRun: boolean;
  /** `--skip-validators`. */
  skipValidators: boolean;
  /** `--permission-asks refuse|wait` (else agent.json `behavior.permissionAsks`). */
  permissionAsks?: "refuse" | "wait";
  /** `--permission-mode MODE`: the permission mode of every step of the run (`RunOptions`). */
  permissionMode?: PermissionMode;
  /** `--resume RUN_ID`. */
  resume?: string;
  /** `--redrive RUN_ID`. */
  redrive?: string;
  /** `--rerun-unfinished-call` (with `--resume`): a non-idempotent call killed mid-way runs again. */
  rerunUnfinishedCall: boolean;
  /** `--answer RUN_ID`: answer a waiting run and continue it. */
  answer?: string;
  /** `--value JSON`: the answer of `--answer`. */
  value?: string;
  /** `--request-id ID`: the request `--answer` answers (a run that waits on several). */
  requestId?: string;
  /** `--answered-by WHO`: who the history says answered. */
  answeredBy?: string;
  /** `--runs`. */
  runs: boolean;
  /** `--show RUN_ID`. */
  show?: string;
  /** `--run-group NAME`: the group of a new run, or the group `--runs` lists. */
  group?: string;
  /** `--record FILE`: write the run's replay file there. */
  record?: string;
  /** `--replay strict|lenient`. */
  replay?: ReplayMode;
  /** `--as-script`. */
  asScript: boolean;
  /** `--store URL`: the run store (a folder or a PostgreSQL URL) instead of the agent's. */
  store?: string;
  /** `--submit`. */
  submit: boolean;
  /** `--wait`. */
  wait: boolean;
  /** `--json`. */
  json: boolean;
  /** `--verbose`. */
  verbose: boolean;
  /** `--help` / `-h`. */
  help: boolean;
}

// Compile-time proof that CliFlags is exactly what the declaration parses to.
const _cliFlagsMatchDeclaration: Exactly<FlagsOf<typeof RUN_AGENT_FLAGS>, CliFlags> = true;

/**
 * The whole {@linkcode CliFlags} of a subcommand's parsed flags: every flag it does not declare
 * takes its default (a switch off, a value absent), so the run engine reads one shape.
 */
export function toCliFlags(given: Partial<CliFlags>): CliFlags {
  const flags = readDeclaredFlags(RUN_AGENT_FLAGS, {});
  for (const [key, value] of Object.entries(given)) {
    if (value !== undefined) (flags as unknown as Record<string, unknown>)[key] = value;
  }
  return flags;
}

/** Parses a positive amount of dollars (`5`, `0.25`, `12.5`). */
function parsePositiveAmount(flag: string): (raw: string) => number {
  return (raw) => {
    const value = /^\s*\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isFinite(value) || value <= 0) {
      throw new UsageError(
        `${flag} expects a positive amount of US dollars such as 5 or 0.25, got "${raw}".`,
      );
    }
    return value;
  };
}
