/**
 * The dashboard server over HTTP (no browser): security model, routes, escaping, pagination, and
 * the `deno task ui` command line.
 */
import { stepflowCommand } from "../../src/invocation.ts";
import assert from "node:assert/strict";
import { runTask } from "../cli/helpers.ts";
import { uiMain } from "../../src/cli/ui.ts";
import { StepflowError } from "../../src/errors.ts";
import { serveDashboard } from "../../src/ui/server.ts";
import { discoverStores } from "../../src/ui/source.ts";
import { startDashboard } from "./browser.ts";
import { demoProject, holdAt, runFlow, runUi } from "./fixtures.ts";

/** A run recorded through the store API in the run-log format with prompts, answers, re-asks. */
async function recordAnsweredRun(project: Awaited<ReturnType<typeof demoProject>>) {
  const store = project.store;
  const runId = "r-answers";
  const lock = await store.lock(runId);
  const ts = "2026-11-20T10:00:00.000Z";
  const entries = [
    { type: "run_start", stepId: "initial.issue", args: { topic: "<b>x</b>" } },
    {
      type: "step_start",
      stepId: "initial.issue",
      iteration: 1,
      prompt: { text: "Understand <b>the</b> issue", length: 26 },
    },
    {
      type: "step_reask",
      stepId: "initial.issue",
      iteration: 1,
      reason: "schema",
      errors: ["/next_action: <must> be object"],
      answer: { text: "<script>alert(1)</script>", length: 25 },
    },
    {
      type: "step_end",
      stepId: "initial.issue",
      iteration: 1,
      entry: {
        stepId: "initial.issue",
        iteration: 1,
        attempt: 1,
        intent: "next",
        transition: "next",
        nextStepId: "continuation.issue",
        startedAt: ts,
        durationMs: 1200,
      },
      answer: { text: '{"next_action":{"action":"next"}}', length: 90_000 },
      usage: { inputTokens: 10, outputTokens: 4 },
    },
  ];
  for (const e of entries) await store.append(runId, { ts, runId, ...e });
  await store.saveCheckpoint({
    version: 1,
    runId,
    agent: "issue-solver",
    status: "failed",
    startedAt: ts,
    updatedAt: ts,
    logEntries: entries.length,
    state: { iteration: 1, historyLength: 1 },
  });
  await lock.release();
  return runId;
}

/** The status line of a GET / sent with the given Host header. */
async function rawGet(port: number, host: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    new TextEncoder().encode(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
  );
  const buf = new Uint8Array(64);
  const n = await conn.read(buf);
  conn.close();
  return new TextDecoder().decode(buf.subarray(0, n ?? 0));
}

Deno.test("dashboard HTTP: security headers, Host check, read-only, 404s", async () => {
  const project = await demoProject();
  await runFlow(project, { runId: "r1" });
  await using ui = await startDashboard(project.root);
  const res = await fetch(ui.url);
  assert.equal(res.status, 200);
  assert.match(
    res.headers.get("content-security-policy")!,
    /default-src 'none'; script-src 'self'/,
  );
  assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  assert.match(await res.text(), /data-run="r1"/);
  // DNS rebinding: a page on another name that resolves to 127.0.0.1 gets nothing.
  // (fetch sets Host itself, so the request is written by hand.)
  assert.match(await rawGet(ui.port, `evil.example:${ui.port}`), /^HTTP\/1\.1 403/);
  assert.match(await rawGet(ui.port, `localhost:${ui.port}`), /^HTTP\/1\.1 200/);
  const post = await fetch(ui.url, { method: "POST", body: "x" });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get("allow"), "GET, HEAD");
  await post.body?.cancel();
  for (const path of ["runs/nope", "runs/..%2F..%2Fetc", "agents/..%2Fx", "agents/missing", "x"]) {
    const r = await fetch(ui.url + path);
    assert.equal(r.status, 404, path);
    assert.ok(r.headers.get("content-security-policy"), path);
    await r.body?.cancel();
  }
});

Deno.test("dashboard HTTP: prompts, answers and re-asks are shown escaped; full text as text/plain", async () => {
  const project = await demoProject();
  const runId = await recordAnsweredRun(project);
  await using ui = await startDashboard(project.root);
  const body = await (await fetch(`${ui.url}runs/${runId}`)).text();
  assert.ok(body.includes("/next_action: &lt;must&gt; be object"));
  assert.ok(!body.includes("<must>"));
  assert.match(body, /Prompt sent \(26 chars\)/);
  assert.match(body, /Raw answer \(90000 chars\)/);
  assert.match(body, /Rejected answer \(25 chars\)/);
  assert.match(body, /intent<\/span> next/);
  const prompt = await (await fetch(`${ui.url}runs/${runId}/rows/1/prompt`)).text();
  assert.equal(prompt, "<pre>Understand &lt;b&gt;the&lt;/b&gt; issue</pre>");
  const rejected = await (await fetch(`${ui.url}runs/${runId}/rows/1/reask0`)).text();
  assert.equal(rejected, "<pre>&lt;script&gt;alert(1)&lt;/script&gt;</pre>");
  const answer = await (await fetch(`${ui.url}runs/${runId}/rows/1/answer`)).text();
  assert.match(answer, /Showing 33 of 90000 characters \(the log recorded 33\)/);
  const full = await fetch(`${ui.url}runs/${runId}/rows/1/reask0/full`);
  assert.equal(full.headers.get("content-type"), "text/plain; charset=utf-8");
  assert.match(full.headers.get("content-security-policy")!, /sandbox/);
  assert.equal(await full.text(), "<script>alert(1)</script>");
  const missing = await fetch(`${ui.url}runs/${runId}/rows/1/handoff`);
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
});

Deno.test("dashboard HTTP: the runs list filters and pages on the server", async () => {
  const project = await demoProject();
  for (let i = 0; i < 7; i++) await runFlow(project, { runId: `r${i}`, continuations: 1 });
  await using ui = await startDashboard(project.root);
  const page = async (query: string) => await (await fetch(`${ui.url}api/runs?${query}`)).json();
  const first = await page("size=3");
  assert.deepEqual(first.runs.map((r: { runId: string }) => r.runId), ["r6", "r5", "r4"]);
  assert.equal(first.total, 7);
  const last = await page("size=3&page=3");
  assert.deepEqual(last.runs.map((r: { runId: string }) => r.runId), ["r0"]);
  assert.equal((await page("status=failed")).total, 0);
  assert.equal((await page("agent=issue-solver&status=completed")).total, 7);
  assert.equal((await page("agent=other")).total, 0);
  const html = await (await fetch(`${ui.url}?size=3&page=2`)).text();
  assert.match(html, /page 2 \/ 3/);
  assert.match(html, /href="\/\?size=3&amp;page=1" rel="prev"/);
});

Deno.test("dashboard HTTP: the status filter means the status the list shows (interrupted is not running)", async () => {
  const project = await demoProject();
  await runFlow(project, { runId: "done", continuations: 1 });
  // A run its process left behind: running in its checkpoint, nobody holds its lock.
  await runFlow(project, { runId: "killed", continuations: 3, failAt: 2 });
  const file = project.store.files("killed").checkpoint;
  const checkpoint = JSON.parse(await Deno.readTextFile(file));
  checkpoint.status = "running";
  delete checkpoint.state.end;
  await Deno.writeTextFile(file, JSON.stringify(checkpoint));
  // A run this process drives, held at its second model call.
  using hold = holdAt(2);
  const live = runFlow(project, {
    runId: "live",
    continuations: 3,
    beforeAnswer: hold.beforeAnswer,
  });
  await hold.reached;
  await using ui = await startDashboard(project.root);
  const ids = async (status: string) =>
    (await (await fetch(`${ui.url}api/runs?status=${status}`)).json()).runs
      .map((r: { runId: string }) => r.runId);
  assert.deepEqual(await ids("running"), ["live"]);
  assert.deepEqual(await ids("interrupted"), ["killed"]);
  assert.deepEqual(await ids("completed"), ["done"]);
  const html = await (await fetch(`${ui.url}?status=interrupted`)).text();
  assert.match(html, /<option selected>interrupted<\/option>/);
  assert.match(html, /data-run="killed"/);
  assert.doesNotMatch(html, /data-run="live"|data-run="done"/);
  assert.match(html, /1 of 3 runs/);
  hold.release();
  assert.equal((await live).success, true);
  assert.deepEqual(await ids("running"), []);
});

Deno.test("dashboard token: required on every request when set; cookie after ?token=", async () => {
  const project = await demoProject();
  const stores = await discoverStores(project.root);
  const token = "t0ken-for-test";
  const ui = serveDashboard({ source: { cwd: project.root, stores }, port: 0, token });
  try {
    for (const path of ["", "assets/app.js", "runs/x"]) {
      const r = await fetch(ui.url.replace(/\?.*$/, "") + path);
      assert.equal(r.status, 401, path);
      await r.body?.cancel();
    }
    const wrong = await fetch(`${ui.url.replace(/\?.*$/, "")}?token=nope`);
    assert.equal(wrong.status, 401);
    await wrong.body?.cancel();
    const login = await fetch(ui.url, { redirect: "manual" });
    assert.equal(login.status, 303);
    assert.equal(login.headers.get("location"), "/");
    const cookie = login.headers.get("set-cookie")!;
    assert.match(cookie, /HttpOnly; SameSite=Strict/);
    await login.body?.cancel();
    const withCookie = await fetch(ui.url.replace(/\?.*$/, ""), {
      headers: { cookie: cookie.split(";")[0] },
    });
    assert.equal(withCookie.status, 200);
    await withCookie.body?.cancel();
    const bearer = await fetch(ui.url.replace(/\?.*$/, ""), {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(bearer.status, 200);
    await bearer.body?.cancel();
  } finally {
    await ui.server.shutdown();
  }
  assert.throws(
    () => serveDashboard({ source: { cwd: project.root, stores }, hostname: "0.0.0.0", port: 0 }),
    (e: unknown) => e instanceof StepflowError && e.code === "UI_TOKEN_REQUIRED",
  );
});

Deno.test("deno task ui: prints the URL; --host widens with a warning and a token", async () => {
  const project = await demoProject();
  await runFlow(project, { runId: "r1" });
  let out = "";
  let err = "";
  const io = (stop: AbortController) => ({
    cwd: project.root,
    signal: stop.signal,
    stdout: { write: (t: string) => void (out += t) },
    stderr: { write: (t: string) => void (err += t) },
  });
  const stop = new AbortController();
  let url = "";
  const code = uiMain(["--port", "0"], {
    ...io(stop),
    onListen: (u) => {
      url = u;
      stop.abort();
    },
  });
  assert.equal(await code, 0);
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  assert.match(
    out,
    /stepflow dashboard: http:\/\/127\.0\.0\.1:\d+\/\n1 run store: .*issue-solver/,
  );
  assert.equal(err, "");

  out = "";
  const wide = new AbortController();
  const res = uiMain(["--port", "0", "--host", "0.0.0.0"], {
    ...io(wide),
    onListen: async (u) => {
      const denied = await fetch(u.replace(/\?.*$/, ""));
      assert.equal(denied.status, 401);
      await denied.body?.cancel();
      const ok = await fetch(u, { redirect: "manual" });
      assert.equal(ok.status, 303);
      await ok.body?.cancel();
      wide.abort();
    },
  });
  assert.equal(await res, 0);
  assert.match(err, /^warning: the dashboard listens on 0\.0\.0\.0/);
  assert.match(out, /\?token=[0-9a-f]{48}\n/);
});

Deno.test("deno task ui (the process): an unsupported store exits 2 with the fix", async () => {
  const userDir = await Deno.makeTempDir();
  const other = await runTask(["--store", "mysql://u:secret@db/x"], { userDir, task: "ui" });
  assert.equal(other.code, 2);
  assert.match(other.stderr, /UI_STORE_UNSUPPORTED.*mysql:\/\/…@db\/x.*postgres:\/\//);
  assert.ok(!other.stderr.includes("secret"));
});

Deno.test("deno task ui: usage errors and stores that cannot be read exit 2 with the fix", async () => {
  const userDir = await Deno.makeTempDir();
  const other = await runUi(["--store", "mysql://u:secret@db/x"], userDir);
  assert.equal(other.code, 2);
  assert.match(other.stderr, /UI_STORE_UNSUPPORTED.*mysql:\/\/…@db\/x.*postgres:\/\//);
  assert.ok(!other.stderr.includes("secret"));
  // A PostgreSQL store that cannot be reached is exit 2 at start, not an error on every page.
  const down = await runUi(["--store", "postgres://u:secret@127.0.0.1:1/x"], userDir);
  assert.equal(down.code, 2);
  assert.match(down.stderr, /RUN_STORE_UNAVAILABLE/);
  assert.ok(!down.stderr.includes("secret"));
  const missing = await runUi(["--store", "nowhere"], userDir);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /UI_STORE_NOT_FOUND/);
  const bad = await runUi(["--port", "99999"], userDir);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--port "99999": give a port number/);
  const unknown = await runUi(["--allow-everything"], userDir);
  assert.equal(unknown.code, 2);
  // The help as the command is typed from the user's folder (outside the checkout here).
  assert.match(unknown.stderr, /Unknown option --allow-everything\.[\s\S]*Usage: deno run /);
  assert.ok(unknown.stderr.includes(stepflowCommand("ui", userDir)), unknown.stderr);
  assert.equal(unknown.stdout + bad.stdout + missing.stdout + down.stdout + other.stdout, "");
});

Deno.test("dashboard plans: a PlanSpec tree with status icons and progress, a tool plan DAG", async () => {
  const project = await demoProject();
  await Deno.mkdir(`${project.root}/planspec`, { recursive: true });
  await Deno.writeTextFile(
    `${project.root}/planspec/release.md`,
    [
      "# Plan: Release <1.2>",
      "Goal: Ship version 1.2",
      "## Steps",
      "1. [x] [reason] List the changes → changes | 14 changes",
      "2. [>] [subtask] Prepare the release → notes | Progress: 1/2",
      "  2.1. [x] [act] Write the notes → notes | done",
      "  2.2. [act] Bump the version → tag",
      "",
    ].join("\n"),
  );
  await Deno.mkdir(`${project.root}/plans`, { recursive: true });
  const step = (id: string, status: string, dependsOn: string[] = []) => ({
    id,
    description: `Step ${id}`,
    tool: "read_file",
    args: { path: "x" },
    dependsOn,
    status,
    ...(status === "completed"
      ? { result: { ok: true, duration: 12, timestamp: "2026-01-01T00:00:00Z" } }
      : status === "failed"
      ? { result: { ok: false, error: "<boom>", duration: 3, timestamp: "2026-01-01T00:00:00Z" } }
      : {}),
  });
  await Deno.writeTextFile(
    `${project.root}/plans/bump.json`,
    JSON.stringify({
      id: "plan_1",
      taskId: "t1",
      task: "Bump the version",
      version: 2,
      createdAt: "2026-01-01T00:00:00Z",
      steps: [
        step("step_1", "completed"),
        step("step_2", "failed", ["step_1"]),
        step("step_3", "blocked", ["step_2"]),
      ],
    }),
  );
  await using ui = await startDashboard(project.root);
  const index = await (await fetch(`${ui.url}plans`)).text();
  assert.match(index, /href="\/plans\/spec\/release">release<\/a><\/td><td>Release &lt;1\.2&gt;/);
  assert.match(index, /href="\/plans\/tool\/bump">bump<\/a>/);
  assert.match(index, /1 completed · 1 failed · 1 blocked/);
  const spec = await (await fetch(`${ui.url}plans/spec/release`)).text();
  assert.match(
    spec,
    /data-step="2\.1" data-status="done"><span class="status completed" title="done">● done/,
  );
  assert.match(spec, /data-step="2\.2" data-status="pending">/);
  assert.match(spec, /<progress max="4" value="2"><\/progress> 2\/4 \(50%\) · 1 active/);
  const tool = await (await fetch(`${ui.url}plans/tool/bump`)).text();
  assert.match(tool, /<g class="node completed done" data-id="step_1">/);
  assert.match(tool, /<g class="node failed" data-id="step_2">/);
  assert.match(tool, /<g class="edge taken" data-from="step_1"\s+data-to="step_2">/);
  assert.match(tool, /&lt;boom&gt;/);
  for (
    const path of [
      "plans/spec/nope",
      "plans/tool/..%2F..%2Fetc%2Fpasswd",
      "plans/spec/..%2Frelease",
    ]
  ) {
    const r = await fetch(ui.url + path);
    assert.equal(r.status, 404, path);
    await r.body?.cancel();
  }
});

Deno.test("dashboard agents index: description, newest run with its status and end, load problems; runs list: end reason and error", async () => {
  const project = await demoProject();
  await Deno.mkdir(`${project.root}/.agent/broken`, { recursive: true });
  await Deno.writeTextFile(
    `${project.root}/.agent/broken/agent.json`,
    JSON.stringify({ name: "broken", description: "Half written", behavior: {} }),
  );
  const agentJson = `${project.root}/.agent/issue-solver/agent.json`;
  const agent = JSON.parse(await Deno.readTextFile(agentJson));
  await Deno.writeTextFile(agentJson, JSON.stringify({ ...agent, description: "Solves issues" }));
  await runFlow(project, { runId: "r-ok", continuations: 1 });
  await runFlow(project, { runId: "r-failed", continuations: 2, failAt: 1 });
  await using ui = await startDashboard(project.root);
  const index = await (await fetch(`${ui.url}agents`)).text();
  const row = (name: string) =>
    index.match(new RegExp(`<tr data-agent="${name}">([\\s\\S]*?)</tr>`))?.[1] ?? "";
  const solver = row("issue-solver");
  assert.match(solver, /<td>Solves issues<\/td>/);
  assert.match(
    solver,
    /href="\/runs\/r-failed">r-failed<\/a> <span class="status failed">failed<\/span><div class="note">[^<]* · step_failed<\/div>/,
  );
  assert.match(solver, /<span class="status completed">loads<\/span>/);
  const broken = row("broken");
  assert.match(broken, /<td>Half written<\/td>/);
  assert.match(broken, /no runs yet/);
  assert.match(
    broken,
    /<span class="status failed">\d+ problems?<\/span><div class="note warn">[^<]*agent\.json/,
  );
  // A project without runs is told how to start one, in the form that works in its folder.
  const empty = await demoProject();
  await using emptyUi = await startDashboard(empty.root);
  const none = await (await fetch(emptyUi.url)).text();
  assert.ok(
    none.includes(
      `No runs recorded yet. Run an agent (<code>${
        stepflowCommand("list", empty.root)
      }</code> lists them)`,
    ),
    none,
  );
  // The runs list says how each run ended, and with which error.
  const runs = await (await fetch(ui.url)).text();
  const runRow = (id: string) =>
    runs.match(new RegExp(`<tr data-run="${id}">([\\s\\S]*?)</tr>`))?.[1] ?? "";
  assert.match(runRow("r-ok"), /<td class="end">completed<\/td>/);
  assert.match(
    runRow("r-failed"),
    /<td class="end">step_failed<div class="note warn">BACKEND_ERROR: [^<]*529 overloaded/,
  );
});

Deno.test("dashboard agent page: graph, steps, warnings; a broken agent shows its problems", async () => {
  const project = await demoProject();
  await Deno.mkdir(`${project.root}/.agent/broken`, { recursive: true });
  await Deno.writeTextFile(`${project.root}/.agent/broken/agent.json`, '{"name": "broken"');
  await using ui = await startDashboard(project.root);
  const index = await (await fetch(`${ui.url}agents`)).text();
  assert.match(index, /href="\/agents\/broken"/);
  assert.match(index, /href="\/agents\/issue-solver"/);
  const agent = await (await fetch(`${ui.url}agents/issue-solver`)).text();
  assert.match(agent, /<svg class="graph"/);
  for (const id of ["initial.issue", "continuation.issue", "complete.issue"]) {
    assert.ok(agent.includes(`id="step-${id}"`), id);
  }
  assert.match(agent, /Validation warnings/);
  const broken = await fetch(`${ui.url}agents/broken`);
  assert.equal(broken.status, 404);
  assert.match(await broken.text(), /The agent does not load/);
});

Deno.test("dashboard live stream: new log entries arrive as events; a damaged log stops it", async () => {
  const project = await demoProject();
  const store = project.store;
  const runId = "r-stream";
  const lock = await store.lock(runId);
  const ts = new Date().toISOString();
  await store.append(runId, { ts, runId, type: "run_start", stepId: "initial.issue" });
  await store.saveCheckpoint({
    version: 1,
    runId,
    agent: "issue-solver",
    status: "running",
    startedAt: ts,
    updatedAt: ts,
    logEntries: 1,
    state: {},
  });
  await using ui = await startDashboard(project.root, { liveIntervalMs: 20 });
  const page = await (await fetch(`${ui.url}runs/${runId}`)).text();
  assert.match(page, /data-live="\/runs\/r-stream\/events\?from=1"/);
  const res = await fetch(`${ui.url}runs/${runId}/events?from=1`);
  assert.equal(res.headers.get("content-type"), "text/event-stream; charset=utf-8");
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let received = "";
  const until = async (pattern: RegExp) => {
    while (!pattern.test(received)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended before ${pattern}: ${received}`);
      received += value;
    }
  };
  await store.append(runId, {
    ts,
    runId,
    type: "step_start",
    stepId: "initial.issue",
    iteration: 1,
    prompt: { text: "<i>hi</i>", length: 9 },
  });
  await until(/event: rows\ndata: .*row-1/);
  await until(/event: graph\n/);
  // A second page following the same run: closing the dashboard must end its stream too.
  const second = await fetch(`${ui.url}runs/${runId}/events?from=1`);
  assert.ok(!received.includes("<i>hi</i>"), "prompt bodies are not pushed, and never raw");
  await lock.release();
  // Damage from outside: a line that is not JSON.
  await Deno.writeTextFile(store.files(runId).log, "not json\n", { append: true });
  await until(/event: problem\ndata: "Run log \S+ is corrupt at line 3/);
  await reader.cancel();
  await ui.close(); // returns although `second` is still open (it used to wait forever)
  await second.body?.cancel().catch(() => {});
});

Deno.test("a PostgreSQL store that is down does not hide the file store's runs; its error is shown", async () => {
  const project = await demoProject();
  await runFlow(project, { runId: "r-file" });
  const stores = await discoverStores(project.root, undefined, {
    env: { STEPFLOW_STORE: "postgres://u:secret@127.0.0.1:1/x" },
  });
  assert.equal(stores.length, 2);
  const ui = serveDashboard({ source: { cwd: project.root, stores }, port: 0 });
  try {
    // The file store's run is found first (its listing is read before the database is asked).
    const run = await fetch(`${ui.url}runs/r-file`);
    assert.equal(run.status, 200);
    await run.body?.cancel();
    const unknown = await fetch(`${ui.url}runs/r-elsewhere`);
    assert.equal(unknown.status, 500);
    const text = await unknown.text();
    assert.match(text, /PostgreSQL|127\.0\.0\.1:1/);
    assert.doesNotMatch(text, /secret/);
  } finally {
    await ui.close();
    for (const s of stores) await (s.store as { close?: () => Promise<void> }).close?.();
  }
});
