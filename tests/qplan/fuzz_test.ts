/**
 * Fuzzing with a fixed seed: random token soups, random characters, truncated and mutated valid
 * scripts. Every case must end in a clean result — a syntax error, validation issues or a run
 * status — never another exception, a crash or a hang (each run has a time limit).
 *
 * `STEPFLOW_FULL_CAMPAIGN=1` runs 400 random well-formed programs instead of 150 (the same seed: the
 * default is the full campaign's first 150).
 */
import assert from "node:assert/strict";
import {
  createQPlanRegistry,
  parseScript,
  QPlanSyntaxError,
  runScript,
  validateScript,
} from "../../src/qplan/mod.ts";
import { workspace } from "./helpers.ts";
import { mulberry32 } from "../prng.ts";

/** The full size of the sized loops (CONTRIBUTING.md "Run one test"). */
const FULL_CAMPAIGN = Deno.env.get("STEPFLOW_FULL_CAMPAIGN") === "1";

const VOCAB = [
  "step",
  "jump",
  "to=",
  "if",
  "else",
  "while",
  "each",
  "in",
  "parallel",
  "break",
  "continue",
  "stop",
  "skip",
  "return",
  "set",
  "var",
  "and",
  "or",
  "not",
  "EXISTS",
  "NOT_EXISTS",
  "true",
  "false",
  "null",
  "USING",
  "plan",
  "@title",
  "@params",
  "print",
  "math",
  "add",
  "sum",
  "echo",
  "json",
  "string",
  "future",
  "join",
  "sleep",
  "file",
  "read",
  "time",
  "x",
  "y",
  "n",
  "list",
  "a.b",
  "items[0]",
  "id=",
  'id="s1"',
  'id="s2"',
  'desc="d"',
  'onError="retry=1"',
  'onError="continue"',
  "onError=\"jump='s1'\"",
  "concurrency=2",
  "ignoreErrors=true",
  "ms=1",
  "a=1",
  "b=x",
  "arr=[1,2]",
  "-> x",
  "-> y",
  "->",
  "=",
  "==",
  "!=",
  "<",
  ">",
  "<=",
  ">=",
  "+",
  "-",
  "*",
  "/",
  "(",
  ")",
  "[",
  "]",
  "{",
  "}",
  ",",
  ".",
  ":",
  "...",
  '"text"',
  "'t'",
  "0",
  "1",
  "2.5",
  "-3",
  "# c\n",
  "// c\n",
  "/* c */",
  "\n",
  "\n",
  "\n",
  " ",
  "합계",
  '"unterminated',
  "/* open",
];

const VALID = [
  `step id="a" desc="A" onError="retry=1" {\n  var [1, 2, 3] -> list\n  var 0 -> total\n  each (v, i) in list {\n    if v == 2 { continue }\n    math add a=total b=v -> total\n  }\n  return total list\n}\nstep id="b" {\n  if a.total > 3 { jump to="c" }\n  print "no"\n}\nstep id="c" -> cc {\n  parallel concurrency=2 ignoreErrors=true {\n    echo m=1 -> e1\n    math div a=1 b=0 -> e2\n  }\n  future delay=1 value=5 -> f\n  join futures="f" -> got\n  return got=got\n}`,
  `@title "T"\n@params "p"\nvar 0 -> n\nwhile n < 3 {\n  set n = n + 1\n  if n EXISTS and not false { break }\n}\nstep "Basic" {\n  step id="inner" onError="jump='after'" { math div a=1 b=0 -> z }\n}\nstep id="after" { skip }\nstop`,
  `plan {\n  @summary quick test\n  step id="s" {\n    json parse data="{\\"k\\": [1]}" -> o\n    string upper text="x" -> u\n    var o.k.count + 1 -> c\n    return c u\n  }\n}`,
];

const SILENT = createQPlanRegistry({ print: () => {} });
const STATUSES = new Set(["completed", "stopped", "aborted", "error"]);
const CASE_LIMIT_MS = 2000;

/** What happened to each case, so the tests can show the fuzz reached every stage. */
type Outcome = "syntax" | "invalid" | "completed" | "stopped" | "aborted" | "error";

async function check(source: string, root: string): Promise<Outcome> {
  try {
    parseScript(source);
  } catch (error) {
    if (!(error instanceof QPlanSyntaxError)) {
      throw new Error(
        `parse threw ${(error as Error)?.name}: ${(error as Error)?.message}\n---\n${source}`,
      );
    }
    assert.ok(error.line >= 1 && error.column >= 1, source);
    assert.ok(error.render().includes("^"), source);
    assert.equal(validateScript(source).issues[0].code, "syntax");
    return "syntax";
  }
  const v = validateScript(source, { registry: SILENT, params: ["p"] });
  for (const issue of v.issues) assert.equal(typeof issue.message, "string");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`hang (> ${CASE_LIMIT_MS} ms)\n---\n${source}`)),
      CASE_LIMIT_MS,
    );
  });
  try {
    const result = await Promise.race([
      runScript(source, { registry: SILENT, params: { p: 1 }, timeoutMs: 25, workspaceRoot: root }),
      hang,
    ]);
    assert.ok(STATUSES.has(result.status), `${result.status}\n---\n${source}`);
    if (result.status === "error" || result.status === "aborted") {
      assert.ok(result.error && result.error.message.length > 0, source);
    }
    if (result.error?.code === "QPLAN_INVALID") {
      assert.equal(v.ok, false, source);
      return "invalid";
    }
    return result.status;
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("fuzz: random token soups end in a clean result", async () => {
  const rand = mulberry32(0xc0ffee);
  const root = await workspace();
  const seen = new Map<Outcome, number>();
  for (let n = 0; n < 1500; n++) {
    const length = 1 + Math.floor(rand() * 30);
    const parts: string[] = [];
    for (let k = 0; k < length; k++) parts.push(VOCAB[Math.floor(rand() * VOCAB.length)]);
    const outcome = await check(parts.join(rand() < 0.5 ? " " : ""), root);
    seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
  }
  for (const outcome of ["syntax", "invalid", "completed"] as const) {
    assert.ok((seen.get(outcome) ?? 0) > 0, `no ${outcome} case: ${JSON.stringify([...seen])}`);
  }
});

Deno.test("fuzz: random characters never crash the tokenizer or the parser", () => {
  const rand = mulberry32(42);
  const alphabet = `abcxyz_09 \n\t"'{}[]()<>=!+-*/.,:@#$%^&\\|~\`?;ü한😀\u0000\u200b`;
  const chars = [...alphabet];
  for (let n = 0; n < 1500; n++) {
    let s = "";
    const length = Math.floor(rand() * 60);
    for (let k = 0; k < length; k++) s += chars[Math.floor(rand() * chars.length)];
    try {
      parseScript(s);
    } catch (error) {
      if (!(error instanceof QPlanSyntaxError)) {
        throw new Error(`unexpected ${error} for ${JSON.stringify(s)}`);
      }
    }
  }
});

Deno.test("fuzz: every truncation of valid scripts ends in a clean result", async () => {
  const root = await workspace();
  const seen = new Map<Outcome, number>();
  for (const source of VALID) {
    assert.notEqual(await check(source, root), "syntax");
    for (let cut = 0; cut < source.length; cut += 3) {
      const outcome = await check(source.slice(0, cut), root);
      seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
    }
  }
  for (const outcome of ["syntax", "completed"] as const) {
    assert.ok((seen.get(outcome) ?? 0) > 0, `no ${outcome} case: ${JSON.stringify([...seen])}`);
  }
});

Deno.test("fuzz: random mutations of valid scripts end in a clean result", async () => {
  const rand = mulberry32(7);
  const root = await workspace();
  const seen = new Map<Outcome, number>();
  const pieces = [
    "{",
    "}",
    "(",
    ")",
    '"',
    "\n",
    " ",
    "->",
    "=",
    "x",
    "step",
    "jump",
    "1",
    "#",
    "/*",
  ];
  for (let n = 0; n < 600; n++) {
    let s = VALID[n % VALID.length];
    const edits = 1 + Math.floor(rand() * 3);
    for (let e = 0; e < edits; e++) {
      const at = Math.floor(rand() * (s.length + 1));
      const kind = rand();
      if (kind < 0.4) s = s.slice(0, at) + s.slice(at + 1 + Math.floor(rand() * 4));
      else if (kind < 0.8) {
        s = s.slice(0, at) + pieces[Math.floor(rand() * pieces.length)] + s.slice(at);
      } else s = s.slice(0, at) + s.slice(at, at + 8) + s.slice(at);
    }
    const outcome = await check(s, root);
    seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
  }
  for (const outcome of ["syntax", "invalid", "completed", "error"] as const) {
    assert.ok((seen.get(outcome) ?? 0) > 0, `no ${outcome} case: ${JSON.stringify([...seen])}`);
  }
});

/** Builds a random but well-formed script: steps, loops, jumps, policies, parallel blocks. */
function randomProgram(rand: () => number): string {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  let steps = 0;
  const ids: string[] = [];
  const lines: string[] = ["var 0 -> n", "var [1, 2, 3] -> list"];
  const block = (depth: number, inLoop: boolean, inStep: boolean): string[] => {
    const out: string[] = [];
    const count = 1 + Math.floor(rand() * 4);
    for (let k = 0; k < count; k++) {
      const r = rand();
      const pad = "  ".repeat(depth);
      if (depth < 3 && r < 0.18) {
        const id = `s${++steps}`;
        ids.push(id);
        const policy = pick([
          "",
          ' onError="continue"',
          ' onError="retry=1"',
          ` onError="jump='s1'"`,
        ]);
        out.push(`${pad}step id="${id}"${policy} {`, ...block(depth + 1, false, true), `${pad}}`);
      } else if (depth < 3 && r < 0.28) {
        out.push(`${pad}each (x, i) in list {`, ...block(depth + 1, true, inStep), `${pad}}`);
      } else if (depth < 3 && r < 0.34) {
        out.push(
          `${pad}while n < ${Math.floor(rand() * 5)} {`,
          `${pad}  set n = n + 1`,
          ...block(depth + 1, true, inStep),
          `${pad}}`,
        );
      } else if (depth < 3 && r < 0.42) {
        out.push(
          `${pad}if n > ${Math.floor(rand() * 3)} and list.count EXISTS {`,
          ...block(depth + 1, inLoop, inStep),
          `${pad}} else {`,
          ...block(depth + 1, inLoop, inStep),
          `${pad}}`,
        );
      } else if (depth < 3 && r < 0.47) {
        out.push(
          `${pad}parallel concurrency=${1 + Math.floor(rand() * 3)} ignoreErrors=${rand() < 0.5} {`,
          `${pad}  sleep ms=${Math.floor(rand() * 3)}`,
          `${pad}  math div a=1 b=${Math.floor(rand() * 2)} -> q`,
          `${pad}}`,
        );
      } else if (r < 0.55 && ids.length > 0) {
        out.push(`${pad}if n > ${Math.floor(rand() * 4)} { jump to="${pick(ids)}" }`);
      } else if (r < 0.6 && inLoop) {
        out.push(`${pad}${pick(["break", "continue"])}`);
      } else if (r < 0.64 && inStep) {
        out.push(`${pad}${pick(["skip", "return n list", "return total=(n * 2)"])}`);
      } else if (r < 0.66) {
        out.push(`${pad}stop`);
      } else {
        out.push(`${pad}${
          pick([
            "set n = n + 1",
            "math add a=n b=1 -> n",
            "math div a=1 b=0 -> bad",
            "future delay=1 value=n -> f",
            "echo v=n -> e",
            'print "n", n',
            "var list.count + n -> c",
            'json get data={"a": 1} path="a" -> j',
          ])
        }`);
      }
    }
    return out;
  };
  lines.push(...block(0, false, false));
  return lines.join("\n");
}

Deno.test("fuzz: random well-formed programs (steps, loops, jumps, policies) end in a clean result", async () => {
  const rand = mulberry32(2024);
  const root = await workspace();
  const seen = new Map<Outcome, number>();
  for (let n = 0; n < (FULL_CAMPAIGN ? 400 : 150); n++) {
    const outcome = await check(randomProgram(rand), root);
    seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
  }
  for (const outcome of ["completed", "error", "stopped", "aborted"] as const) {
    assert.ok((seen.get(outcome) ?? 0) > 0, `no ${outcome} case: ${JSON.stringify([...seen])}`);
  }
  assert.equal(seen.get("syntax") ?? 0, 0, "the generator writes valid syntax");
});
