/**
 * The QPlan modules as tools: each module's behaviour and its error messages, file confinement
 * to the workspace, ai on a scripted backend, http against a local server, html extraction.
 */
import assert from "node:assert/strict";
import { createAiTool } from "../../src/qplan/modules/ai.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { ToolRegistry } from "../../src/tools/registry.ts";
import { CORE_MODULES, createQPlanRegistry, runScript } from "../../src/qplan/mod.ts";
import { workspace } from "./helpers.ts";

async function vars(source: string, options: Parameters<typeof runScript>[1] = {}) {
  const printed: string[] = [];
  const result = await runScript(source, {
    registry: createQPlanRegistry({ print: (l) => printed.push(l), http: true, html: true }),
    ...options,
  });
  return { result, vars: result.vars, printed };
}

Deno.test("registry: the core modules, optional ai/http/html, one registry shared, no duplicates", () => {
  const r = createQPlanRegistry();
  assert.deepEqual(r.list().map((t) => t.name), [...CORE_MODULES]);
  const extended = createQPlanRegistry({ http: true, html: true, ai: true });
  assert.deepEqual(extended.list().map((t) => t.name).slice(-3), ["ai", "http", "html"]);
  const shared = new ToolRegistry();
  assert.equal(createQPlanRegistry({ registry: shared }), shared);
  assert.throws(() => createQPlanRegistry({ registry: shared }), /already registered/);
  for (const d of r.describe()) assert.ok(d.description.length > 10, d.name);
});

Deno.test("var, echo, print, sleep", async () => {
  const { result, vars: v, printed } = await vars(`
var [1, 2] -> list
echo msg="hi" n=2 -> echoed
print "list:", list, total=3, {"a": 1}
print -> nothing
sleep ms=2 -> slept
sleep ms="3" -> sleptText`);
  assert.equal(result.status, "completed", result.error?.message);
  assert.deepEqual(v.echoed, { msg: "hi", n: 2 });
  assert.deepEqual(printed, ['list: [1,2] total=3 {"a":1}', ""]);
  assert.deepEqual([v.slept, v.sleptText], [2, 3]);
  const bad = await vars(`sleep ms=-1`);
  assert.match(bad.result.error!.message, /sleep: ms must not be negative, got -1/);
});

Deno.test("math: add/sub/mul/div, sum/avg from lists, JSON text and spaced text; errors name the operand", async () => {
  const { result, vars: v } = await vars(`
math add a=1 b=2 -> add
math sub a="10" b=4 -> sub
math mul a=2.5 b=4 -> mul
math div a=9 b=3 -> div
math sum arr=[1, 2, 3] -> sum1
math sum arr="[4, 5]" -> sum2
math avg arr="1 2, 3 6" -> avg
math avg arr="" -> avgEmpty`);
  assert.equal(result.status, "completed", result.error?.message);
  assert.deepEqual(
    [v.add, v.sub, v.mul, v.div, v.sum1, v.sum2, v.avg, v.avgEmpty],
    [3, 6, 10, 3, 6, 9, 3, 0],
  );
  const cases: [string, RegExp][] = [
    ["math add a=1 b=x", /math add: b must be a number, got "x"/],
    ["math add a=1", /math add: b= is required/],
    ['math sum arr="1 two 3"', /math sum: arr\[1\] must be a number, got "two"/],
    ["math avg arr=[1, [2]]", /math avg: arr\[1\] must be a number, got a list of 1/],
    ["math div a=1 b=0", /math div: division by zero \(b is 0\)/],
    ['math avg arr="[1,"', /math avg: arr is not a valid JSON list/],
  ];
  for (const [source, message] of cases) {
    const r = await vars(source);
    assert.equal(r.result.status, "error", source);
    assert.match(r.result.error!.message, message, source);
  }
});

Deno.test("json: parse, stringify, get, set (a copy), keys, values, entries", async () => {
  const { result, vars: v } = await vars(`
json parse data="{\\"a\\": {\\"b\\": [1, 2]}}" -> obj
json get data=obj path="a.b.1" -> two
json get data="{\\"x\\": 5}" path="x" -> five
json set data=obj path="a.c" value=3 -> updated
json stringify data=updated -> text
json stringify data=[1] space=2 -> pretty
json keys data=updated.a -> keys
json values data={"k": 1} -> values
json entries data={"k": 1} -> entries`);
  assert.equal(result.status, "completed", result.error?.message);
  assert.deepEqual(v.obj, { a: { b: [1, 2] } }, "set did not change the original");
  assert.equal(v.two, 2);
  assert.equal(v.five, 5);
  assert.deepEqual(v.updated, { a: { b: [1, 2], c: 3 } });
  assert.equal(v.text, '{"a":{"b":[1,2],"c":3}}');
  assert.equal(v.pretty, "[\n  1\n]");
  assert.deepEqual([v.keys, v.values, v.entries], [["b", "c"], [1], [["k", 1]]]);
  const bad = await vars(`json parse data="{oops" -> x`);
  assert.match(bad.result.error!.message, /json parse: invalid JSON/);
  const notText = await vars(`json parse data=[1] -> x`);
  assert.match(notText.result.error!.message, /json parse: data must be text, got a list of 1/);
  const noPath = await vars(`json get data={"a": 1} -> x`);
  assert.match(noPath.result.error!.message, /json get: path= is required/);
});

Deno.test("time and date: formats and defaults; unknown formats are errors", async () => {
  const { result, vars: v } = await vars(`
time -> clock
time format="iso" -> iso
time format="ms" -> ms
time format="epochSec" -> sec
date -> today
date format="datetime" -> dt
date format="object" -> obj`);
  assert.equal(result.status, "completed", result.error?.message);
  assert.match(v.clock as string, /^\d\d:\d\d:\d\d$/);
  assert.ok(!Number.isNaN(Date.parse(v.iso as string)));
  assert.ok(Math.abs((v.ms as number) - Date.now()) < 10_000);
  assert.equal(
    v.sec,
    Math.floor((v.ms as number) / 1000) + ((v.sec as number) - Math.floor((v.ms as number) / 1000)),
  );
  assert.match(v.today as string, /^\d{4}-\d\d-\d\d$/);
  assert.match(v.dt as string, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  assert.deepEqual(Object.keys(v.obj as object).slice(0, 3), ["year", "month", "day"]);
  const bad = await vars(`time format="fortnight" -> x`);
  assert.match(
    bad.result.error!.message,
    /time: unknown format "fortnight"; use one of iso, ms, sec/,
  );
});

Deno.test("string: every op", async () => {
  const { result, vars: v } = await vars(`
var "  Hello, World  " -> raw
string trim text=raw -> t
string lower text=t -> lo
string upper text=t -> up
string replace text="a-b-c" search="-" replace=":" -> one
string replace text="a-b-c" search="-" replace=":" all=true -> every
string split text="a,b,c" -> parts
string split text="a b" sep=" " -> words
string join arr=parts sep="+" -> joined
string join arr="[1,2]" -> joinedJson
string includes text=t search="World" -> has
string length text=t -> len
string substring text=t start=7 -> tail
string substring text=t start=0 end=5 -> head`);
  assert.equal(result.status, "completed", result.error?.message);
  assert.deepEqual(
    [
      v.t,
      v.lo,
      v.up,
      v.one,
      v.every,
      v.parts,
      v.words,
      v.joined,
      v.joinedJson,
      v.has,
      v.len,
      v.tail,
      v.head,
    ],
    [
      "Hello, World",
      "hello, world",
      "HELLO, WORLD",
      "a:b-c",
      "a:b:c",
      ["a", "b", "c"],
      ["a", "b"],
      "a+b+c",
      "1,2",
      true,
      12,
      "World",
      "Hello",
    ],
  );
  const bad = await vars(`string join arr=5 -> x`);
  assert.match(bad.result.error!.message, /string join: arr must be a list, got 5/);
});

Deno.test("file: read and write inside the workspace; JSON for objects; folders created; atomic", async () => {
  const root = await workspace({ "in/notes.txt": "hello" });
  const { result, vars: v } = await vars(
    `
file read path="in/notes.txt" -> text
file write path="out/deep/copy.txt" data=text -> ok
file write path="out/data.json" data={"n": [1, 2]}
file read path="./out/data.json" -> json`,
    { workspaceRoot: root },
  );
  assert.equal(result.status, "completed", result.error?.message);
  assert.equal(v.text, "hello");
  assert.equal(v.ok, "ok");
  assert.equal(await Deno.readTextFile(`${root}/out/deep/copy.txt`), "hello");
  assert.deepEqual(JSON.parse(v.json as string), { n: [1, 2] });
  const leftovers = [...Deno.readDirSync(`${root}/out`)].map((e) => e.name).filter((n) =>
    n.endsWith(".tmp")
  );
  assert.deepEqual(leftovers, []);
});

Deno.test("file: paths that leave the workspace are refused; missing files are named", async () => {
  const root = await workspace({ "a.txt": "x" });
  const outside = await workspace({ "secret.txt": "s" });
  await Deno.symlink(outside, `${root}/link`);
  const cases: [string, RegExp][] = [
    [`file read path="../secret.txt"`, /Refused path "\.\.\/secret\.txt": it leaves the workspace/],
    [`file read path="${outside}/secret.txt"`, /it leaves the workspace/],
    [`file read path="link/secret.txt"`, /a symbolic link leads outside the workspace/],
    [`file write path="../evil.txt" data="x"`, /it leaves the workspace/],
    [`file read path="nope.txt"`, /file read: no such file "nope.txt" in the workspace/],
    [`file write path="b.txt"`, /file write: data= is required/],
  ];
  for (const [source, message] of cases) {
    const r = await vars(source, { workspaceRoot: root });
    assert.equal(r.result.status, "error", source);
    assert.match(r.result.error!.message, message, source);
  }
  await assert.rejects(Deno.stat(`${outside}/../evil.txt`));
});

Deno.test("ai: prompt, USING context, system/model, the step id as key; format=json parses", async () => {
  const backend = new ScriptedBackend({
    summarize: ["A short summary."],
    classify: ['Sure:\n```json\n{"label": "bug"}\n```'],
  });
  const r = await runScript(
    `
step id="summarize" {
  var "long text" -> text
  ai "Summarize" USING text system="Be brief" model="m1" -> summary
}
step id="classify" {
  ai prompt="Classify" format="json" -> label
}`,
    { registry: createQPlanRegistry({ backend }) },
  );
  assert.equal(r.status, "completed", r.error?.message);
  assert.equal(r.vars.summary, "A short summary.");
  assert.deepEqual(r.vars.label, { label: "bug" });
  assert.deepEqual(
    backend.calls.map((c) => [c.kind, c.agent, c.stepId, c.systemPrompt, c.model]),
    [["step", "qplan", "summarize", "Be brief", "m1"], [
      "step",
      "qplan",
      "classify",
      undefined,
      undefined,
    ]],
  );
  assert.equal(
    backend.calls[0].prompt,
    'Summarize\n\nContext:\n```json\n{\n  "text": "long text"\n}\n```',
  );
});

Deno.test("ai: backend failures and missing backends are clear errors", async () => {
  const failing = new ScriptedBackend({ s: [{ error: "rate limited" }] });
  const r = await runScript(`step id="s" { ai "x" -> y }`, {
    registry: createQPlanRegistry({ backend: failing }),
  });
  assert.match(r.error!.message, /Module 'ai' failed: scripted backend error: rate limited/);
  // Without a backend the script does not start: validation names the ai line.
  const none = await runScript(`step id="s" { ai "x" -> y }`, {
    registry: createQPlanRegistry({ ai: true }),
  });
  assert.equal(none.error!.code, "QPLAN_INVALID");
  assert.equal(none.issues[0].code, "module-unavailable");
  assert.match(none.issues[0].message, /module 'ai' cannot run: no LLM backend is configured/);
  const noJson = new ScriptedBackend({ s: ["no json here", "{oops"] });
  const notJson = await runScript(`step id="s" { ai "x" format="json" -> y }`, {
    registry: createQPlanRegistry({ backend: noJson }),
  });
  // One re-ask saying what was wrong, then the step fails with the last reason and the answer.
  assert.equal(noJson.calls[1].kind, "reask");
  assert.match(noJson.calls[1].prompt, /rejected: your answer contained no JSON object\./);
  assert.match(notJson.error!.message, /ai \(step "s"\): the answer does not match format="json"/);
  assert.match(notJson.error!.message, /your answer is not valid JSON: .*began: "\{oops"/);
});

Deno.test("ai schema=: the answer is validated, re-asked once with the errors, then fails", async () => {
  const schema =
    `{"type": "object", "required": ["greeting"], "properties": {"greeting": {"type": "string"}}}`;
  const fixed = new ScriptedBackend({ s: ['{"greeting": 5}', '{"greeting": "hi"}'] });
  const ok = await runScript(`step id="s" { ai "Greet" schema=${schema} -> g }`, {
    registry: createQPlanRegistry({ backend: fixed }),
  });
  assert.equal(ok.status, "completed", ok.error?.message);
  assert.deepEqual(ok.vars.g, { greeting: "hi" });
  assert.deepEqual(fixed.calls.map((c) => c.kind), ["step", "reask"]);
  assert.deepEqual(fixed.calls[0].outputSchema, JSON.parse(schema));
  assert.match(
    fixed.calls[1].prompt,
    /^Greet\n[\s\S]*did not match[\s\S]*\/greeting: must be string/,
  );

  const wrong = new ScriptedBackend({ s: ['{"greeting": 5}', '{"greeting": 6}'] });
  const bad = await runScript(`step id="s" { ai "Greet" schema=${schema} -> g }`, {
    registry: createQPlanRegistry({ backend: wrong }),
  });
  assert.equal(bad.status, "error");
  assert.match(bad.error!.message, /after 1 re-ask\(s\): .*\/greeting: must be string/);

  const uncompilable = await runScript(
    `step id="s" { ai "Greet" schema={"type": "object", "properties": {"tags": {"type": "arary"}}} -> g }`,
    {
      registry: createQPlanRegistry({ backend: new ScriptedBackend({ s: ["{}"] }) }),
    },
  );
  assert.match(
    uncompilable.error!.message,
    /ai: schema does not compile as a JSON Schema: schema is invalid: \/properties\/tags\/type must be equal to one of the allowed values; "arary" is not a JSON Schema type \(did you mean "array"\?\)/,
  );
});

Deno.test('ai format="json": sends an outputSchema (any JSON) and re-asks once', async () => {
  const backend = new ScriptedBackend({ s: ["Here you go!", "[1, 2, 3]"] });
  const r = await runScript(`step id="s" { ai "List" format="json" -> xs }`, {
    registry: createQPlanRegistry({ backend }),
  });
  assert.equal(r.status, "completed", r.error?.message);
  assert.deepEqual(r.vars.xs, [1, 2, 3]);
  assert.deepEqual(backend.calls[0].outputSchema, {});
  assert.equal(backend.calls[1].kind, "reask");
});

Deno.test("http: GET text, POST JSON, status errors, invalid URLs — against a local server", async () => {
  const seen: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    seen.push(`${req.method} ${url.pathname} ${req.headers.get("content-type") ?? ""}`);
    if (url.pathname === "/missing") return new Response("gone", { status: 404 });
    if (req.method === "POST") return Response.json({ got: await req.json() });
    return new Response("<html><body><h1>Title</h1><li>a</li><li>b</li></body></html>");
  });
  try {
    const base = `http://127.0.0.1:${server.addr.port}`;
    const { result, vars: v } = await vars(`
http get url="${base}/page" -> page
http post url="${base}/api" body={"x": 1} format="json" -> reply
html tag html=page tag="h1" -> title
html tags html=page tag="li" -> items
html text html=page -> text
html body html=page -> body`);
    assert.equal(result.status, "completed", result.error?.message);
    assert.match(v.page as string, /<h1>Title<\/h1>/);
    assert.deepEqual(v.reply, { got: { x: 1 } });
    assert.deepEqual([v.title, v.items, v.text], ["Title", ["a", "b"], "Titleab"]);
    assert.equal(v.body, "<h1>Title</h1><li>a</li><li>b</li>");
    assert.deepEqual(seen, ["GET /page ", "POST /api application/json"]);
    const missing = await vars(`http get url="${base}/missing" -> x`);
    assert.match(
      missing.result.error!.message,
      /http: GET .*\/missing answered 404 Not Found: gone/,
    );
    const bad = await vars(`http get url="ftp://example.com/x" -> x`);
    assert.match(bad.result.error!.message, /only http and https URLs are allowed, got ftp:/);
  } finally {
    await server.shutdown();
  }
});

Deno.test("html: tag names are checked", async () => {
  const r = await vars(`html tag html="<p>x</p>" tag="p><script" -> x`);
  assert.match(r.result.error!.message, /html tag: tag= must be a tag name/);
});

Deno.test("ai: a re-ask is reported through the tool context's log", async () => {
  const tool = createAiTool(new ScriptedBackend({ s: ["nope", '{"ok": true}'] }));
  const logged: string[] = [];
  const value = await tool.execute({ prompt: "Go", format: "json" }, {
    workspaceRoot: ".",
    stepId: "s",
    log: (m) => void logged.push(m),
  });
  assert.deepEqual(value, { ok: true });
  assert.deepEqual(logged, ["ai: re-asking (1) because your answer contained no JSON object"]);
});
