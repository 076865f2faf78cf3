/**
 * The dashboard's actions over HTTP (`--allow-actions`): the CSRF secret and Origin check, cancel
 * of a run driven elsewhere through the store's cancel request, and resume/redrive by the real
 * `run-agent` CLI started as a child process with a scripted backend.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { uiMain } from "../../src/cli/ui.ts";
import { serveDashboard } from "../../src/ui/server.ts";
import { discoverStores } from "../../src/ui/source.ts";
import { demoProject, FINISH, reachingCall, runFlow, runUi } from "./fixtures.ts";
import { runCli } from "../cli/helpers.ts";

async function start(root: string, children: Deno.ChildProcess[]) {
  await Deno.writeTextFile(join(root, "finish.json"), JSON.stringify(FINISH));
  const ui = serveDashboard({
    source: { cwd: root, stores: await discoverStores(root) },
    port: 0,
    actions: { runAgentArgs: ["--script", "finish.json"], onSpawn: (c) => void children.push(c) },
  });
  const csrf = async (runId: string) => {
    const page = await (await fetch(`${ui.url}runs/${runId}`)).text();
    return page.match(/data-csrf="([0-9a-f]+)"/)?.[1];
  };
  const post = async (runId: string, action: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${ui.url}runs/${runId}/${action}`, { method: "POST", headers });
    const body = await res.text();
    return { status: res.status, body, json: res.ok || res.status === 409 ? JSON.parse(body) : {} };
  };
  return { ui, csrf, post };
}

async function waitFor(what: string, test: () => Promise<boolean>, ms = 15_000) {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

Deno.test("actions: the secret and a same-origin Origin are required; refusals use the runner's words", async () => {
  const project = await demoProject();
  await runFlow(project, { runId: "done" });
  const children: Deno.ChildProcess[] = [];
  const { ui, csrf, post } = await start(project.root, children);
  try {
    const page = await (await fetch(`${ui.url}runs/done`)).text();
    // A completed run offers no action.
    assert.doesNotMatch(page, /data-action=/);
    const secret = await csrf("done");
    assert.ok(secret && secret.length === 48, "the run page embeds the secret");
    assert.equal((await post("done", "resume")).status, 403);
    assert.match(
      (await post("done", "resume", { "x-stepflow-csrf": "0".repeat(48) })).body,
      /x-stepflow-csrf/,
    );
    const foreign = await post("done", "resume", {
      "x-stepflow-csrf": secret,
      origin: "http://evil.example",
    });
    assert.equal(foreign.status, 403);
    const ok = { "x-stepflow-csrf": secret, origin: new URL(ui.url).origin };
    const resume = await post("done", "resume", ok);
    assert.equal(resume.status, 409);
    assert.equal(resume.json.code, "RUN_NOT_RESUMABLE");
    assert.match(resume.json.message, /Run done already ended \(completed\); nothing to resume\./);
    const redrive = await post("done", "redrive", ok);
    assert.equal(redrive.json.code, "RUN_NOT_REDRIVABLE");
    const cancel = await post("done", "cancel", ok);
    assert.match(cancel.json.message, /already ended \(completed\); nothing to cancel/);
    assert.equal((await post("nope", "cancel", ok)).status, 404);
    assert.equal((await post("done", "delete", ok)).status, 404);
    assert.equal(children.length, 0);
  } finally {
    await ui.close();
  }
  // Without actions: no buttons, no secret, and POST stays 405.
  const readOnly = serveDashboard({
    source: { cwd: project.root, stores: await discoverStores(project.root) },
    port: 0,
  });
  try {
    await runFlow(project, { runId: "failed", continuations: 3, failAt: 1 });
    const page = await (await fetch(`${readOnly.url}runs/failed`)).text();
    assert.doesNotMatch(page, /data-csrf|data-action=/);
    const res = await fetch(`${readOnly.url}runs/failed/redrive`, { method: "POST" });
    assert.equal(res.status, 405);
    assert.match(await res.text(), /--allow-actions/);
  } finally {
    await readOnly.close();
  }
});

Deno.test("actions: Cancel ends a run driven elsewhere (cancelled); Redrive finishes it via run-agent", async () => {
  const project = await demoProject();
  const children: Deno.ChildProcess[] = [];
  const { ui, csrf, post } = await start(project.root, children);
  try {
    // The run is driven by the real runner over the agent's file store; its first call hangs
    // (until cancelled: the runner looks for a cancel request every 25 ms).
    const started = reachingCall(1);
    const running = runFlow(project, {
      runId: "long",
      continuations: 3,
      delayMs: 30_000,
      cancelPollMs: 25,
      beforeAnswer: started.beforeAnswer,
    });
    await started.reached;
    const listed = (await project.store.list()).find((r) => r.runId === "long");
    assert.equal(listed?.live, true, "the run is listed as driven by a live process");
    const page = await (await fetch(`${ui.url}runs/long`)).text();
    assert.match(page, /data-action="cancel"/);
    assert.doesNotMatch(page, /data-action="resume"/);
    const ok = { "x-stepflow-csrf": (await csrf("long"))!, origin: new URL(ui.url).origin };
    const cancel = await post("long", "cancel", ok);
    assert.equal(cancel.status, 202, cancel.body);
    const result = await running;
    assert.equal(result.completionReason, "cancelled");
    assert.equal((await project.store.loadCheckpoint("long"))?.status, "cancelled");

    // Resume is refused with the runner's message; Redrive runs `run-agent --redrive`.
    const resume = await post("long", "resume", ok);
    assert.match(resume.json.message, /Redrive it to restart it from its failed step/);
    assert.match(await (await fetch(`${ui.url}runs/long`)).text(), /data-action="redrive"/);
    const redrive = await post("long", "redrive", ok);
    assert.ok(redrive.status === 202 || redrive.status === 200, redrive.body);
    assert.equal(children.length, 1);
    const status = await children[0].status;
    assert.equal(status.code, 0);
    const checkpoint = await project.store.loadCheckpoint("long");
    assert.equal(checkpoint?.status, "completed");
    const log = await project.store.readLog("long");
    assert.ok(log.some((e) => e.type === "run_redrive"));
  } finally {
    await ui.close();
  }
});

Deno.test("actions: a live run page whose run ends gets the buttons of the end (Redrive, no Cancel)", async () => {
  const project = await demoProject();
  const children: Deno.ChildProcess[] = [];
  const { ui, csrf, post } = await start(project.root, children);
  try {
    const started = reachingCall(1);
    const running = runFlow(project, {
      runId: "live-end",
      continuations: 3,
      delayMs: 30_000,
      cancelPollMs: 25,
      beforeAnswer: started.beforeAnswer,
    });
    await started.reached;
    // The page opened while the run runs: live, with Cancel.
    const page = await (await fetch(`${ui.url}runs/live-end`)).text();
    assert.match(page, /data-action="cancel"/);
    const live = page.match(/data-live="([^"]+)"/)![1].replaceAll("&amp;", "&");
    const stream = await fetch(new URL(live, ui.url));
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    const ok = { "x-stepflow-csrf": (await csrf("live-end"))!, origin: new URL(ui.url).origin };
    assert.equal((await post("live-end", "cancel", ok)).status, 202);
    assert.equal((await running).completionReason, "cancelled");
    // The stream ends with the run; before its end it sends the actions the ended run has, so the
    // page never keeps a Cancel button for a run that is over (nor misses Redrive).
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    const actions = text.match(/event: actions\ndata: (.*)\n/)?.[1];
    assert.ok(actions, `no actions event in:\n${text.slice(-2_000)}`);
    const box = JSON.parse(actions) as string;
    assert.match(box, /id="run-actions"/);
    assert.match(box, /data-action="redrive"/);
    assert.doesNotMatch(box, /data-action="cancel"/);
    assert.ok(text.indexOf("event: actions") < text.indexOf("event: end"));
    assert.equal(children.length, 0);
  } finally {
    await ui.close();
  }
});

Deno.test("actions: Resume continues an interrupted run through run-agent --resume", async () => {
  const project = await demoProject();
  const children: Deno.ChildProcess[] = [];
  // A run that stopped mid-way with no process left: its checkpoint still says running.
  const failed = await runFlow(project, { runId: "crashed", continuations: 3, failAt: 2 });
  assert.equal(failed.completionReason, "step_failed");
  const file = project.store.files("crashed").checkpoint;
  const checkpoint = JSON.parse(await Deno.readTextFile(file));
  checkpoint.status = "running";
  delete checkpoint.state.end;
  await Deno.writeTextFile(file, JSON.stringify(checkpoint));
  const { ui, csrf, post } = await start(project.root, children);
  try {
    const page = await (await fetch(`${ui.url}runs/crashed`)).text();
    assert.match(page, /data-action="resume"/);
    assert.doesNotMatch(page, /data-action="cancel"/);
    const ok = { "x-stepflow-csrf": (await csrf("crashed"))!, origin: new URL(ui.url).origin };
    // Nothing drives it, so there is nothing to cancel.
    assert.match((await post("crashed", "cancel", ok)).json.message, /not driven by any process/);
    const resume = await post("crashed", "resume", ok);
    assert.ok(resume.status === 202 || resume.status === 200, resume.body);
    assert.equal((await children[0].status).code, 0);
    assert.equal((await project.store.loadCheckpoint("crashed"))?.status, "completed");
    assert.ok((await project.store.readLog("crashed")).some((e) => e.type === "run_resume"));
  } finally {
    await ui.close();
  }
});

Deno.test("actions: a run-agent that fails to start reports its error", async () => {
  const project = await demoProject();
  await runFlow(project, { runId: "f", continuations: 3, failAt: 1 });
  const children: Deno.ChildProcess[] = [];
  const ui = serveDashboard({
    source: { cwd: project.root, stores: await discoverStores(project.root) },
    port: 0,
    actions: { runAgentArgs: ["--script", "missing.json"], onSpawn: (c) => void children.push(c) },
  });
  try {
    const page = await (await fetch(`${ui.url}runs/f`)).text();
    const secret = page.match(/data-csrf="([0-9a-f]+)"/)![1];
    const res = await fetch(`${ui.url}runs/f/redrive`, {
      method: "POST",
      headers: { "x-stepflow-csrf": secret },
    });
    const body = await res.json();
    assert.equal(res.status, 409);
    assert.equal(body.code, "UI_ACTION_FAILED");
    assert.match(body.message, /stepflow redrive f exited with code 2: .*missing\.json/);
    await children[0].status;
  } finally {
    await ui.close();
  }
});

Deno.test("actions: Redrive with no backend flags continues on the backend the run recorded", async () => {
  const project = await demoProject();
  const script = join(project.root, "answers.json");
  // run-agent --script: the model endpoint fails the second step, so the run ends failed.
  await Deno.writeTextFile(
    script,
    JSON.stringify({
      ...FINISH,
      "continuation.issue": [{ error: "the model endpoint answered 529 overloaded" }],
    }),
  );
  const failed = await runCli(
    ["--agent", "issue-solver", "--script", script, "--topic", "x", "--json"],
    { userDir: project.root },
  );
  assert.equal(failed.code, 1, failed.stderr);
  const runId = JSON.parse(failed.stdout).runId;
  await Deno.writeTextFile(script, JSON.stringify(FINISH));
  const children: Deno.ChildProcess[] = [];
  // No runAgentArgs: the agent's own backend (claude-code) would not run here.
  const ui = serveDashboard({
    source: { cwd: project.root, stores: await discoverStores(project.root) },
    port: 0,
    actions: { onSpawn: (c) => void children.push(c) },
  });
  try {
    const page = await (await fetch(`${ui.url}runs/${runId}`)).text();
    const secret = page.match(/data-csrf="([0-9a-f]+)"/)![1];
    const res = await fetch(`${ui.url}runs/${runId}/redrive`, {
      method: "POST",
      headers: { "x-stepflow-csrf": secret },
    });
    assert.ok(res.status === 202 || res.status === 200, await res.text());
    assert.equal((await children[0].status).code, 0);
    assert.equal((await project.store.loadCheckpoint(runId))?.status, "completed");
  } finally {
    await ui.close();
  }
});

Deno.test("deno task ui --allow-actions: POST needs the token with --host; backend flags need the flag", async () => {
  const project = await demoProject();
  await runFlow(project, { runId: "r1" });
  let out = "";
  const stop = new AbortController();
  const code = uiMain(["--port", "0", "--host", "0.0.0.0", "--allow-actions"], {
    cwd: project.root,
    signal: stop.signal,
    stdout: { write: (t: string) => void (out += t) },
    stderr: { write: () => {} },
    onListen: async (u) => {
      try {
        const base = u.replace(/\?.*$/, "");
        // Without the token even the page (and so the secret) is out of reach, and POST is 401.
        const denied = await fetch(`${base}runs/r1/redrive`, { method: "POST" });
        assert.equal(denied.status, 401);
        await denied.body?.cancel();
        const token = u.match(/token=([0-9a-f]+)/)![1];
        const auth = { authorization: `Bearer ${token}` };
        const page = await (await fetch(`${base}runs/r1`, { headers: auth })).text();
        const secret = page.match(/data-csrf="([0-9a-f]+)"/)![1];
        const res = await fetch(`${base}runs/r1/redrive`, {
          method: "POST",
          headers: { ...auth, "x-stepflow-csrf": secret },
        });
        assert.equal(res.status, 409);
        assert.equal((await res.json()).code, "RUN_NOT_REDRIVABLE");
      } finally {
        stop.abort();
      }
    },
  });
  assert.equal(await code, 0);
  assert.match(out, /actions allowed \(cancel, resume, redrive, tool-plan approvals\)/);

  const lone = await runUi(["--script", "x.json"], project.root);
  assert.equal(lone.code, 2);
  assert.match(lone.stderr, /they need --allow-actions/);
});

Deno.test("actions: Cancel reaches a run-agent process driving the run in another process", async () => {
  const project = await demoProject();
  const slow = {
    ...FINISH,
    "initial.issue": [{ ...FINISH["initial.issue"][0], delayMs: 60_000 }],
  };
  await Deno.writeTextFile(join(project.root, "slow.json"), JSON.stringify(slow));
  const runAgent = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../../src/cli/run_agent.ts", import.meta.url).pathname,
      "--agent",
      "issue-solver",
      "--script",
      "slow.json",
      "--topic",
      "t",
    ],
    cwd: project.root,
    env: { INIT_CWD: project.root, NO_COLOR: "1" },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const children: Deno.ChildProcess[] = [];
  const { ui, csrf, post } = await start(project.root, children);
  try {
    let runId = "";
    // Started = live and checkpointed: between its run_start line and its first checkpoint a run
    // is listed live but has nothing to act on yet (the action would be refused).
    await waitFor("run-agent to start its run", async () => {
      const run = (await project.store.list()).find((r) => r.live && !r.problem);
      runId = run?.runId ?? "";
      return run !== undefined;
    });
    const ok = { "x-stepflow-csrf": (await csrf(runId))!, origin: new URL(ui.url).origin };
    assert.equal((await post(runId, "cancel", ok)).status, 202);
    const [status, stderr] = await Promise.all([
      runAgent.status,
      new Response(runAgent.stderr).text(),
    ]);
    assert.equal(status.code, 1, stderr);
    assert.equal((await project.store.loadCheckpoint(runId))?.status, "cancelled");
    assert.match(stderr, /cancelled/);
  } finally {
    await ui.close();
  }
});
