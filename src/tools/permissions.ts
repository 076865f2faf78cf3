/**
 * Whether a tool call may run: allow, ask or deny, with the reason and — when the answer is not
 * "allow" — the rule that would allow it. Pure: no I/O, no clock; the tool loop asks it before every
 * call, and whoever can answer an "ask" (a terminal, the dashboard, code) is the caller's business.
 *
 * The order is Claude Code's: a matching `disallowedTools` rule denies; `plan` mode refuses anything
 * that is not read-only; `bypassPermissions` allows; a matching `allowedTools` rule allows;
 * read-only tools run in every mode; `acceptEdits` runs Write/Edit inside the working folder; what
 * remains asks — and `dontAsk` turns that "ask" into a refusal.
 *
 * Path rules judge every path a call reaches ({@linkcode ReachedPath}): a `disallowedTools` rule
 * that matches the path as written **or** the file it really reaches refuses; an `allowedTools`
 * rule allows only when it matches the file reached. So a symbolic link `src/x -> ../.git/config`
 * is judged as `.git/config` too.
 *
 * @module
 */
import { isAbsolute, relative, resolve, sep } from "node:path";
import { globMatches } from "./glob_pattern.ts";
import type { PermissionMode, PermissionRule } from "../definition/permission_rule.ts";
import type { ReachedPath } from "./types.ts";

/** The rules and mode a step runs under. */
export interface PermissionPolicy {
  /** The permission mode. */
  mode: PermissionMode;
  /** Parsed `allowedTools`: calls they match run without asking. */
  allow: readonly PermissionRule[];
  /** Parsed `disallowedTools`: calls they match never run. */
  deny: readonly PermissionRule[];
}

/** One tool call to decide on. */
export interface PermissionRequest {
  /** The tool's name (`Bash`, `mcp__github__create_issue`). */
  tool: string;
  /** Its validated arguments. */
  args: Readonly<Record<string, unknown>>;
  /** The run's working folder (absolute): path rules and `acceptEdits` are relative to it. */
  cwd: string;
  /** The tool declares it changes nothing (an MCP tool's `readOnlyHint`); the agent tools are known. */
  readOnly?: boolean;
  /**
   * The paths the call reaches, resolved (`reachPath`, src/tools/workspace.ts): path rules judge
   * each as written and as it really is. Without them the paths are read from the arguments as
   * text, as written only — the tool loop always resolves them.
   */
  paths?: readonly ReachedPath[];
}

/** The answer. */
export interface PermissionDecision {
  /** Run it, ask someone, or refuse. */
  behavior: "allow" | "ask" | "deny";
  /** Why, in a sentence a model and a user can act on. */
  reason: string;
  /** The rule that decided, when one did. */
  rule?: string;
  /** For "ask" and refusals a rule could lift: the `allowedTools` entry that would allow the call. */
  suggestion?: string;
}

/** The agent tools that change nothing. */
const READ_ONLY_TOOLS = new Set(["Read", "Glob", "Grep"]);
/** The agent tools that edit files. */
const EDIT_TOOLS = new Set(["Write", "Edit"]);
/** Characters that chain, pipe, substitute or redirect: a prefix rule never covers them. */
const SHELL_OPERATORS = /[;&|`<>\n\r]|\$\(/;

/**
 * Decides one call.
 *
 * @example
 * ```ts
 * import { decidePermission } from "./permissions.ts";
 * import { parsePermissionRules } from "../definition/permission_rule.ts";
 * const policy = {
 *   mode: "acceptEdits" as const,
 *   allow: parsePermissionRules(["Read", "Edit", "Bash(npm test)"]).rules,
 *   deny: parsePermissionRules(["Read(./.env)"]).rules,
 * };
 * decidePermission(policy, { tool: "Bash", args: { command: "npm test" }, cwd: "/repo" }).behavior;
 * // "allow"
 * decidePermission(policy, { tool: "Bash", args: { command: "rm -rf dist" }, cwd: "/repo" });
 * // { behavior: "ask", reason: "…", suggestion: "Bash(rm -rf:*)" }
 * ```
 */
export function decidePermission(
  policy: PermissionPolicy,
  request: PermissionRequest,
): PermissionDecision {
  const paths = request.paths ?? writtenPaths(request);
  const refused = refusalByRules(policy, request, paths);
  if (refused) return refused;
  const readOnly = isReadOnly(request);
  if (policy.mode === "plan" && !readOnly) {
    return {
      behavior: "deny",
      reason:
        `${request.tool} is refused in plan mode: only read-only tools run (Read, Glob, Grep and read-only MCP tools).`,
    };
  }
  if (policy.mode === "bypassPermissions") {
    return { behavior: "allow", reason: "bypassPermissions mode runs every allowed tool." };
  }
  const allowed = policy.allow.find((rule) => ruleMatches(rule, request, paths, "allow"));
  if (allowed) {
    return {
      behavior: "allow",
      reason: `allowed by the rule "${allowed.text}" in allowedTools.`,
      rule: allowed.text,
    };
  }
  if (readOnly) return { behavior: "allow", reason: `${request.tool} is read-only.` };
  if (
    policy.mode === "acceptEdits" && EDIT_TOOLS.has(request.tool) && paths.length > 0 &&
    paths.every((p) => !escapes(reachedFile(p)))
  ) {
    return {
      behavior: "allow",
      reason: "acceptEdits mode runs edits inside the working folder.",
    };
  }
  const suggestion = suggestRule(request, paths);
  const why = `${askReason(policy.mode, request)}${linkNote(paths)}`;
  if (policy.mode === "dontAsk") {
    return {
      behavior: "deny",
      reason: `${why} dontAsk mode refuses whatever would ask.`,
      suggestion,
    };
  }
  return { behavior: "ask", reason: why, suggestion };
}

/**
 * The refusal `disallowedTools` makes of a call in every mode — a rule matching the call (for a
 * path rule: a path it reaches, as written or as it really is), or a file with several names (hard
 * links) read while `Read(…)` rules refuse paths — or `undefined`. The first step of
 * {@linkcode decidePermission}; a call resumed under its recorded decision is checked by it again.
 *
 * @example
 * ```ts
 * import { refusalByRules } from "./permissions.ts";
 * import { parsePermissionRules } from "../definition/permission_rule.ts";
 * const policy = { mode: "default" as const, allow: [], deny: parsePermissionRules(["Read(.env)"]).rules };
 * refusalByRules(policy, { tool: "Read", args: { file_path: ".env" }, cwd: "/repo" })?.behavior; // "deny"
 * ```
 */
export function refusalByRules(
  policy: PermissionPolicy,
  request: PermissionRequest,
  paths: readonly ReachedPath[] = request.paths ?? writtenPaths(request),
): PermissionDecision | undefined {
  const denied = policy.deny.find((rule) => ruleMatches(rule, request, paths, "deny"));
  if (denied) {
    return {
      behavior: "deny",
      reason: `${request.tool} is refused by the rule "${denied.text}" in disallowedTools.${
        linkNote(paths)
      }${denied.kind === "path" ? " Only removing the rule from disallowedTools allows it." : ""}`,
      rule: denied.text,
    };
  }
  const linked = READ_ONLY_TOOLS.has(request.tool)
    ? paths.find((p) => hardLinkRefusal(policy, p) !== undefined)
    : undefined;
  if (linked) {
    return { behavior: "deny", reason: `${request.tool}: ${hardLinkRefusal(policy, linked)}` };
  }
  return undefined;
}

/**
 * Why `tool` must not read a file a search came across (`Glob` lists, `Grep` opens): a
 * `disallowedTools` rule for `tool` matches its path or the file it leads to, or it has several
 * names (hard links) while `Read(…)` rules refuse paths. `undefined` when it may be read.
 *
 * @example
 * ```ts
 * import { searchRefusal } from "./permissions.ts";
 * import { parsePermissionRules } from "../definition/permission_rule.ts";
 * const policy = { mode: "default" as const, allow: [], deny: parsePermissionRules(["Read(.env)"]).rules };
 * searchRefusal(policy, "Grep", "/repo", {
 *   written: "src/envlink", real: ".env", abs: "/repo/.env", exists: true, hardLinks: 1,
 * }); // 'the rule "Read(.env)" in disallowedTools covers it'
 * ```
 */
export function searchRefusal(
  policy: PermissionPolicy,
  tool: string,
  cwd: string,
  file: ReachedPath,
): string | undefined {
  const request = { tool, args: {}, cwd };
  const denied = policy.deny.find((rule) => ruleMatches(rule, request, [file], "deny"));
  if (denied) return `the rule "${denied.text}" in disallowedTools covers it`;
  return hardLinkRefusal(policy, file);
}

/**
 * A file with several names (hard links) cannot be judged by its path: another name may be one a
 * `Read(…)` rule in disallowedTools refuses, and nothing shows which. Refused while such rules
 * exist; writes are never affected (they replace the name, leaving the other names alone).
 */
function hardLinkRefusal(policy: PermissionPolicy, file: ReachedPath): string | undefined {
  if ((file.hardLinks ?? 1) <= 1) return undefined;
  const rules = policy.deny.filter((r) => r.kind === "path" && r.tool === "Read");
  if (rules.length === 0) return undefined;
  return `"${file.written}" is a file with ${file.hardLinks} names (hard links), and disallowedTools refuses paths (${
    rules.map((r) => `"${r.text}"`).join(", ")
  }): another name of this file may be one of them, and nothing shows which. Make it a file of its own (cp "${file.written}" copy && mv copy "${file.written}"), or remove those rules, to allow it.`;
}

/**
 * The tools a step offers the model: those of `available` that an `allowedTools` rule names (a
 * rule with a specifier offers its tool — a path rule the tools it covers: `Edit(src/**)` offers
 * `Edit` and `Write`; `mcp__server` offers each of the server's tools), minus those a bare
 * `disallowedTools` rule removes altogether.
 *
 * @example
 * ```ts
 * import { offeredTools } from "./permissions.ts";
 * import { parsePermissionRules } from "../definition/permission_rule.ts";
 * const allow = parsePermissionRules(["Read", "Bash(npm test)", "mcp__gh"]).rules;
 * offeredTools(allow, [], ["Read", "Write", "Bash", "mcp__gh__list", "mcp__db__query"]);
 * // ["Read", "Bash", "mcp__gh__list"]
 * ```
 */
export function offeredTools(
  allow: readonly PermissionRule[],
  deny: readonly PermissionRule[],
  available: readonly string[],
): string[] {
  return available.filter((name) =>
    allow.some((rule) => namesTool(rule, name)) &&
    !deny.some((rule) => (rule.kind === "tool" || rule.kind === "mcp") && namesTool(rule, name))
  );
}

/** True when `rule` is about the tool called `name` at all (whatever its specifier). */
function namesTool(rule: PermissionRule, name: string): boolean {
  switch (rule.kind) {
    case "tool":
    case "other":
      return rule.tool === name;
    case "bash":
      return name === "Bash";
    case "path":
      // A path rule covers its family: Edit(…) offers Write too, Read(…) Glob and Grep.
      return (rule.tool === "Read" ? READ_ONLY_TOOLS : EDIT_TOOLS).has(name);
    case "mcp":
      return rule.tool === undefined
        ? name.startsWith(`mcp__${rule.server}__`)
        : name === `mcp__${rule.server}__${rule.tool}`;
  }
}

function ruleMatches(
  rule: PermissionRule,
  request: PermissionRequest,
  paths: readonly ReachedPath[],
  side: "allow" | "deny",
): boolean {
  switch (rule.kind) {
    case "tool":
    case "mcp":
      return namesTool(rule, request.tool);
    case "other":
      return false; // Claude Code's own tools with a specifier: never run here.
    case "bash":
      return request.tool === "Bash" && bashMatches(rule, String(request.args.command ?? ""), side);
    case "path": {
      const family = rule.tool === "Read" ? READ_ONLY_TOOLS : EDIT_TOOLS;
      if (!family.has(request.tool) || paths.length === 0) return false;
      const matches = (rel: string) =>
        !escapes(rel) && pathPatternMatches(rule.pattern, rel, request);
      // Deny: any path the call reaches, as written or really. Allow: every file it reaches.
      return side === "deny"
        ? paths.some((p) => judgedPaths(p).some(matches))
        : paths.every((p) => matches(reachedFile(p)));
    }
  }
}

/** The paths a deny rule is matched against: as written, as it really is, what a write creates. */
function judgedPaths(path: ReachedPath): string[] {
  const all = [path.written, path.real];
  if (path.dangling) all.push(path.dangling.target);
  return all;
}

/** The file a call really reaches (for a write through a dangling link: the file it would create). */
function reachedFile(path: ReachedPath): string {
  return path.dangling?.target ?? path.real;
}

/** What a reason adds when a path does not lead where it reads: the link and where it leads. */
function linkNote(paths: readonly ReachedPath[]): string {
  const notes = paths.flatMap((p) => {
    if (p.dangling) {
      const d = p.dangling;
      return [
        `"${d.path}" is a symbolic link to "${d.to}", which does not exist: writing "${p.written}" would create "${d.target}".`,
      ];
    }
    if (p.real === p.written) return [];
    const link = p.link ? `"${p.link.path}" is a symbolic link to "${p.link.to}", so ` : "";
    const how = p.link?.path === p.written
      ? `${link}the call reaches "${p.real}".`
      : `${link}"${p.written}" is "${p.real}".`;
    return [how];
  });
  return notes.length
    ? ` ${notes.join(" ")} Rules judge the path as written and the file it reaches.`
    : "";
}

/**
 * An allow rule covers the whole command only: exact, or its prefix followed by a space and no
 * shell operator (so `Bash(git diff:*)` never allows `git diff; rm -rf ~`). A deny rule matches
 * any part of a chained command, so `Bash(rm:*)` also refuses `ls && rm -rf x`.
 */
function bashMatches(
  rule: { command: string; prefix: boolean },
  command: string,
  side: "allow" | "deny",
): boolean {
  const parts = side === "allow"
    ? [command.trim()]
    : command.split(/&&|\|\||[;&|\n\r]|\$\(|`/).map((p) => p.trim());
  return parts.some((part) => {
    if (part === rule.command) return true;
    if (!rule.prefix || !part.startsWith(`${rule.command} `)) return false;
    return side === "deny" || !SHELL_OPERATORS.test(part);
  });
}

/**
 * Matches a path rule's pattern (gitignore-like, as Claude Code reads it): `./x` and `x` are
 * relative to the working folder, `/x` too (the project root is the working folder), `//x` is an
 * absolute path; a pattern without `/` matches a name at any depth.
 */
function pathPatternMatches(pattern: string, rel: string, request: PermissionRequest): boolean {
  let p = pattern;
  if (p.startsWith("//")) {
    const fromCwd = relative(request.cwd, p.slice(1)).split(sep).join("/");
    if (escapes(fromCwd)) return false;
    p = fromCwd || ".";
  } else if (p.startsWith("./")) p = p.slice(2);
  else if (p.startsWith("/")) p = p.slice(1);
  if (p === "" || p === ".") p = "**";
  if (p.endsWith("/")) p = `${p}**`;
  if (!p.includes("/")) p = `**/${p}`;
  return globMatches(rel, p);
}

/** The call's paths as written (read as text, not resolved), for a request without `paths`. */
function writtenPaths(request: PermissionRequest): ReachedPath[] {
  const raw = request.tool === "Glob" || request.tool === "Grep"
    ? (request.args.path ?? ".")
    : request.args.file_path;
  if (typeof raw !== "string" || raw === "") return [];
  const abs = resolve(request.cwd, raw);
  const rel = relative(request.cwd, abs).split(sep).join("/") || ".";
  return [{ written: rel, real: rel, abs, exists: false }];
}

function escapes(rel: string): boolean {
  return rel === ".." || rel.startsWith("../") || isAbsolute(rel);
}

function isReadOnly(request: PermissionRequest): boolean {
  if (READ_ONLY_TOOLS.has(request.tool)) return true;
  if (EDIT_TOOLS.has(request.tool) || request.tool === "Bash") return false;
  return request.readOnly === true;
}

function askReason(mode: PermissionMode, request: PermissionRequest): string {
  if (request.tool === "Bash") {
    return `Bash needs permission in ${mode} mode: no allowedTools rule covers this command.`;
  }
  if (EDIT_TOOLS.has(request.tool)) {
    return mode === "acceptEdits"
      ? `${request.tool} outside the working folder needs permission.`
      : `${request.tool} needs permission in ${mode} mode (acceptEdits runs edits inside the working folder).`;
  }
  return `${request.tool} needs permission in ${mode} mode: no allowedTools rule covers it.`;
}

/** The narrowest sensible `allowedTools` entry that would allow this call. */
function suggestRule(request: PermissionRequest, paths: readonly ReachedPath[]): string {
  if (request.tool === "Bash") {
    const command = String(request.args.command ?? "").trim();
    if (SHELL_OPERATORS.test(command) || command.length > 200) return `Bash(${command})`;
    const words = command.split(/\s+/);
    if (words.length === 1) return `Bash(${command})`;
    return `Bash(${words.slice(0, words.length > 2 ? 2 : 1).join(" ")}:*)`;
  }
  if (EDIT_TOOLS.has(request.tool)) {
    const files = paths.map(reachedFile);
    return files.length === 1 && !escapes(files[0]) ? `Edit(${files[0]})` : "Edit";
  }
  return request.tool;
}
