/**
 * Permission rules as Claude Code writes them in `allowedTools` / `disallowedTools`, and permission
 * modes, parsed once at load time (the loader reports a problem per bad rule; the tool loop parses
 * them for its policy): `Bash`, `Bash(npm test)`, `Bash(git diff:*)`, `Read(./docs/**)`,
 * `Edit(src/**)`, `mcp__server`, `mcp__server__tool`. A typo is a problem with a did-you-mean.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import { closestMatch } from "./suggest.ts";

/**
 * The names of the agent tools stepflow runs on every backend, in the order they are registered
 * (`src/tools/agent_tools.ts` makes them). Here, at the bottom layer, because the loader checks
 * rules against them.
 */
export const AGENT_TOOL_NAMES: readonly string[] = Object.freeze([
  "Read",
  "Write",
  "Edit",
  "Glob",
  "Grep",
  "Bash",
]);

/** One of Claude Code's permission modes (see {@linkcode PERMISSION_MODES}). */
export type PermissionMode = "default" | "acceptEdits" | "plan" | "bypassPermissions" | "dontAsk";

/** Claude Code's permission modes, as stepflow's tool loop applies them (docs/tools.md). */
export const PERMISSION_MODES: readonly PermissionMode[] = Object.freeze([
  "default",
  "acceptEdits",
  "plan",
  "bypassPermissions",
  "dontAsk",
]);

/**
 * Permission modes only Claude Code has (`auto`): accepted at load time for the `claude-code`
 * backend; a step with tools on another backend refuses them (`PERMISSION_MODE_INVALID`).
 */
export const CLAUDE_CODE_ONLY_MODES: readonly string[] = Object.freeze(["auto"]);

/**
 * Claude Code tools stepflow does not run itself: valid in a rule (the `claude-code` backend uses
 * them), never offered on the chat backends.
 */
export const CLAUDE_CODE_ONLY_TOOLS: readonly string[] = Object.freeze([
  "Task",
  "Agent",
  "LS",
  "MultiEdit",
  "NotebookEdit",
  "NotebookRead",
  "WebFetch",
  "WebSearch",
  "TodoWrite",
  "BashOutput",
  "KillShell",
  "ExitPlanMode",
  "SlashCommand",
  "Skill",
  "AskUserQuestion",
]);

/** A parsed permission rule. `text` is the rule as written. */
export type PermissionRule =
  | { kind: "tool"; text: string; tool: string }
  | { kind: "bash"; text: string; command: string; prefix: boolean }
  | { kind: "path"; text: string; tool: "Read" | "Edit"; pattern: string }
  | { kind: "mcp"; text: string; server: string; tool?: string }
  | { kind: "other"; text: string; tool: string; specifier: string };

/** What parsing one rule gave: the rule, or a problem that says how to fix it. */
export type ParsedRule = { ok: true; rule: PermissionRule } | { ok: false; problem: string };

/** Names an MCP server or tool may use in a rule. */
const MCP_NAME = /^[A-Za-z0-9_-]+$/;
/** MCP tool names may also hold dots. */
const MCP_TOOL_NAME = /^[A-Za-z0-9_.-]+$/;
const MAX_RULE_CHARS = 4_096;

/**
 * Parses one rule.
 *
 * @example
 * ```ts
 * import { parsePermissionRule } from "./permission_rule.ts";
 * parsePermissionRule("Bash(git diff:*)");
 * // { ok: true, rule: { kind: "bash", text: "Bash(git diff:*)", command: "git diff", prefix: true } }
 * parsePermissionRule("Bahs"); // { ok: false, problem: 'unknown tool "Bahs" (did you mean "Bash"?) …' }
 * ```
 */
export function parsePermissionRule(text: unknown): ParsedRule {
  if (typeof text !== "string" || text.trim() === "") {
    return { ok: false, problem: `a rule must be a non-empty string, got ${describe(text)}` };
  }
  if (text.length > MAX_RULE_CHARS) {
    return { ok: false, problem: `a rule is at most ${MAX_RULE_CHARS} characters` };
  }
  const trimmed = text.trim();
  if (trimmed.startsWith("mcp__")) return parseMcp(trimmed);
  const open = trimmed.indexOf("(");
  const name = open === -1 ? trimmed : trimmed.slice(0, open);
  if (!isKnownTool(name)) {
    const guess = closestMatch(name, [...AGENT_TOOL_NAMES, ...CLAUDE_CODE_ONLY_TOOLS]);
    return {
      ok: false,
      problem: `unknown tool "${name}"${guess ? ` (did you mean "${guess}"?)` : ""}; use one of ${
        AGENT_TOOL_NAMES.join(", ")
      }, a Claude Code tool, or mcp__<server>__<tool>`,
    };
  }
  if (open === -1) return { ok: true, rule: { kind: "tool", text: trimmed, tool: name } };
  if (!trimmed.endsWith(")")) {
    return { ok: false, problem: `it opens "(" but does not end with ")"` };
  }
  const specifier = trimmed.slice(open + 1, -1).trim();
  if (specifier === "") {
    return { ok: false, problem: `it has empty parentheses; write ${name} alone` };
  }
  if (name === "Bash") return parseBash(trimmed, specifier);
  if (name === "Read" || name === "Edit") {
    return { ok: true, rule: { kind: "path", text: trimmed, tool: name, pattern: specifier } };
  }
  if (name === "Write" || name === "Glob" || name === "Grep") {
    const family = name === "Write" ? "Edit" : "Read";
    return {
      ok: false,
      problem: `path rules are written ${family}(${specifier}) — they cover ${
        family === "Edit" ? "Edit and Write" : "Read, Glob and Grep"
      }; ${name} alone allows every ${name} call`,
    };
  }
  return { ok: true, rule: { kind: "other", text: trimmed, tool: name, specifier } };
}

/**
 * Parses a list of rules (`allowedTools` or `disallowedTools`), collecting every problem.
 *
 * @example
 * ```ts
 * import { parsePermissionRules } from "./permission_rule.ts";
 * const { rules, problems } = parsePermissionRules(["Read", "Bash(npm test)", "Edt"]);
 * console.log(rules.length, problems); // 2 [ '"Edt": unknown tool "Edt" (did you mean "Edit"?) …' ]
 * ```
 */
export function parsePermissionRules(
  list: readonly unknown[],
): { rules: PermissionRule[]; problems: string[] } {
  const rules: PermissionRule[] = [];
  const problems: string[] = [];
  for (const item of list) {
    const parsed = parsePermissionRule(item);
    if (parsed.ok) rules.push(parsed.rule);
    else problems.push(`${describe(item)}: ${parsed.problem}`);
  }
  return { rules, problems };
}

/**
 * The permission mode named `text`, or a problem with a did-you-mean.
 *
 * @example
 * ```ts
 * import { parsePermissionMode } from "./permission_rule.ts";
 * parsePermissionMode("acceptEdits"); // { ok: true, mode: "acceptEdits" }
 * parsePermissionMode("acceptEdit"); // { ok: false, problem: 'unknown permissionMode "acceptEdit" (did you mean "acceptEdits"?) …' }
 * ```
 */
export function parsePermissionMode(
  text: unknown,
): { ok: true; mode: PermissionMode } | { ok: false; problem: string } {
  if (typeof text === "string" && (PERMISSION_MODES as readonly string[]).includes(text)) {
    return { ok: true, mode: text as PermissionMode };
  }
  const guess = typeof text === "string" ? closestMatch(text, PERMISSION_MODES) : undefined;
  return {
    ok: false,
    problem: `unknown permissionMode ${describe(text)}${
      guess ? ` (did you mean "${guess}"?)` : ""
    }; use one of ${PERMISSION_MODES.join(", ")}`,
  };
}

/**
 * Parses rules and throws `PERMISSION_RULE_INVALID` listing every problem — for options given in
 * code, where there is no loader to collect them.
 *
 * @param field names the option in the message (`allowedTools`, `disallowedTools`)
 */
export function parsePermissionRulesOrThrow(
  list: readonly unknown[],
  field: string,
): PermissionRule[] {
  const { rules, problems } = parsePermissionRules(list);
  if (problems.length) {
    throw new StepflowError(
      "PERMISSION_RULE_INVALID",
      `Invalid ${field}: ${problems.join("; ")}.`,
      { details: { field, problems } },
    );
  }
  return rules;
}

function parseBash(text: string, specifier: string): ParsedRule {
  const prefix = specifier.endsWith(":*");
  const command = (prefix ? specifier.slice(0, -2) : specifier).trim();
  if (command === "") {
    return {
      ok: false,
      problem: `it names no command; write Bash alone to allow every command`,
    };
  }
  if (command.includes(":*")) {
    return {
      ok: false,
      problem:
        `":*" may only end the rule (Bash(git diff:*) allows every command starting with "git diff")`,
    };
  }
  return { ok: true, rule: { kind: "bash", text, command, prefix } };
}

function parseMcp(text: string): ParsedRule {
  const rest = text.slice("mcp__".length);
  const split = rest.indexOf("__");
  const server = split === -1 ? rest : rest.slice(0, split);
  const tool = split === -1 ? undefined : rest.slice(split + 2);
  if (!MCP_NAME.test(server)) {
    return {
      ok: false,
      problem:
        `the server name must be letters, digits, "-" or "_" (mcp__<server> or mcp__<server>__<tool>)`,
    };
  }
  if (tool === undefined || tool === "*") {
    return { ok: true, rule: { kind: "mcp", text, server } };
  }
  if (!MCP_TOOL_NAME.test(tool)) {
    return {
      ok: false,
      problem: `the tool name must be letters, digits, ".", "-" or "_" (mcp__<server>__<tool>)`,
    };
  }
  return { ok: true, rule: { kind: "mcp", text, server, tool } };
}

function isKnownTool(name: string): boolean {
  return AGENT_TOOL_NAMES.includes(name) || CLAUDE_CODE_ONLY_TOOLS.includes(name);
}

function describe(value: unknown): string {
  if (typeof value === "string") {
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  }
  if (value === null) return "null";
  return Array.isArray(value) ? "an array" : typeof value;
}
