/**
 * Tool-plan approvals on the dashboard over HTTP: the plan page shows waiting requests (buttons
 * only with actions), answers need the secret, stale or repeated answers are refused, and a
 * request whose run-plan is gone is shown as abandoned and cannot be answered.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  approvalFiles,
  decideApproval,
  fileApprover,
  listApprovals,
} from "../../src/plan/file_approver.ts";
import { writePlanFile } from "../../src/plan/plan_file.ts";
import type { Plan } from "../../src/plan/types.ts";
import { serveDashboard } from "../../src/ui/server.ts";

async function planProject() {
  const root = await Deno.makeTempDir({ prefix: "stepflow-ui-approvals-http-" });
  const planFile = join(root, "plans", "deploy.json");
  await Deno.mkdir(join(root, "plans"));
  await Deno.writeTextFile(
    planFile,
    JSON.stringify({
      id: "plan_deploy",
      taskId: "t",
      version: 1,
      createdAt: "2025-01-01T00:00:00Z",
      steps: [{
        id: "push",
        description: "Push the tag",
        tool: "run_command",
        args: { command: "git", args: ["push", "--tags"] },
      }],
    }),
  );
  return { root, planFile };
}

async function waiting(planFile: string, stepId: string): Promise<string> {
  for (let i = 0; i < 500; i++) {
    const record = (await listApprovals(planFile)).records.get(stepId);
    if (record?.state === "waiting") return record.requestId;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("no waiting request");
}

Deno.test("approvals over HTTP: read-only shows no buttons; answers need the secret and a waiting request", async () => {
  const { root, planFile } = await planProject();
  const controller = new AbortController();
  const answer = Promise.resolve(
    fileApprover(planFile, { pollMs: 10 })({
      planId: "plan_deploy",
      stepId: "push",
      description: "Push the tag",
      tool: "run_command",
      args: { command: "git", args: ["push", "--tags"] },
      reason: "run_command always needs approval",
    }, controller.signal),
  );
  const requestId = await waiting(planFile, "push");
  const readOnly = serveDashboard({ source: { cwd: root, stores: [] }, port: 0 });
  const ui = serveDashboard({ source: { cwd: root, stores: [] }, port: 0, actions: {} });
  try {
    const plain = await (await fetch(`${readOnly.url}plans/tool/deploy`)).text();
    assert.match(plain, /<tr data-approval="push" data-state="waiting">/);
    assert.match(plain, /start the dashboard with --allow-actions to answer here/);
    assert.doesNotMatch(plain, /data-action=|data-csrf/);
    const denied = await fetch(
      `${readOnly.url}plans/tool/deploy/approvals/push/${requestId}/deny`,
      {
        method: "POST",
      },
    );
    assert.equal(denied.status, 405);
    await denied.body?.cancel();

    const page = await (await fetch(`${ui.url}plans/tool/deploy`)).text();
    const secret = page.match(/data-csrf="([0-9a-f]+)"/)?.[1];
    assert.ok(secret);
    assert.match(page, /data-action="approve"/);
    const post = async (path: string) => {
      const res = await fetch(`${ui.url}plans/tool/${path}`, {
        method: "POST",
        headers: { "x-stepflow-csrf": secret, origin: new URL(ui.url).origin },
      });
      const body = await res.text();
      return { status: res.status, body };
    };
    assert.equal((await post(`nope/approvals/push/${requestId}/approve`)).status, 404);
    assert.equal((await post(`deploy/approvals/%E0%A4%A/${requestId}/approve`)).status, 400);
    const stale = await post("deploy/approvals/push/some-older-request/approve");
    assert.equal(stale.status, 409);
    assert.match(JSON.parse(stale.body).message, /replaced by a newer one/);
    const other = await post(`deploy/approvals/constructor/${requestId}/approve`);
    assert.equal(other.status, 409);
    assert.match(JSON.parse(other.body).message, /no approval request is recorded/);
    const ok = await post(`deploy/approvals/push/${requestId}/deny`);
    assert.equal(ok.status, 200, ok.body);
    assert.deepEqual(await answer, { approved: false, reason: "denied by dashboard" });
    const after = await (await fetch(`${ui.url}plans/tool/deploy`)).text();
    assert.match(after, /data-state="denied"/);
    assert.doesNotMatch(after, /data-action="approve"/);
  } finally {
    controller.abort();
    await readOnly.close();
    await ui.close();
  }
});

Deno.test("approvals over HTTP: a request whose run-plan is gone is abandoned, not answerable", async () => {
  const { root, planFile } = await planProject();
  // A request left by a run-plan that was killed: its pid no longer runs.
  const gone = new Deno.Command(Deno.execPath(), { args: ["eval", ""] }).spawn();
  await gone.status;
  const files = approvalFiles(planFile, "push");
  await Deno.mkdir(join(root, "plans", "deploy.json.approvals"));
  await Deno.writeTextFile(
    files.request,
    JSON.stringify({
      requestId: "r-1",
      planId: "plan_deploy",
      stepId: "push",
      description: "Push the tag",
      tool: "run_command",
      args: {},
      reason: "run_command always needs approval",
      requestedAt: "2026-01-01T00:00:00.000Z",
      pid: gone.pid,
      state: "waiting",
    }),
  );
  const ui = serveDashboard({ source: { cwd: root, stores: [] }, port: 0, actions: {} });
  try {
    const page = await (await fetch(`${ui.url}plans/tool/deploy`)).text();
    assert.match(page, /data-state="abandoned"/);
    assert.match(page, new RegExp(`pid ${gone.pid}\\) is gone`));
    assert.doesNotMatch(page, /data-action="approve"/);
    const secret = page.match(/data-csrf="([0-9a-f]+)"/)?.[1];
    assert.equal(secret, undefined, "no waiting request, no form");
    await assert.rejects(
      decideApproval(planFile, "push", "r-1", { approved: true, by: "dashboard" }),
      /the run-plan process that asked \(pid \d+\) is gone/,
    );
  } finally {
    await ui.close();
  }
});

Deno.test("the tool plan page's event stream says when the plan or its requests change", async () => {
  const { root, planFile } = await planProject();
  const ui = serveDashboard({ source: { cwd: root, stores: [] }, port: 0, liveIntervalMs: 20 });
  const controller = new AbortController();
  try {
    const page = await (await fetch(`${ui.url}plans/tool/deploy`)).text();
    const watch = page.match(/data-watch="([^"]+)"/)?.[1]?.replaceAll("&amp;", "&");
    assert.ok(watch);
    const stream = await fetch(new URL(watch, ui.url));
    assert.equal(stream.headers.get("content-type"), "text/event-stream; charset=utf-8");
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    assert.match((await reader.read()).value ?? "", /^: following the plan/);
    // Nothing changed yet: no event. Then run-plan asks for approval: `changed`.
    const answer = fileApprover(planFile, { pollMs: 10 })({
      planId: "plan_deploy",
      stepId: "push",
      description: "Push the tag",
      tool: "run_command",
      args: {},
      reason: "run_command always needs approval",
    }, controller.signal);
    let text = "";
    while (!text.includes("event: changed")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    assert.match(text, /event: changed/);
    await reader.cancel();
    controller.abort();
    await Promise.resolve(answer).catch(() => {});
    assert.equal((await fetch(`${ui.url}plans/tool/nope/events`)).status, 404);
  } finally {
    controller.abort();
    await ui.close();
  }
});

Deno.test("the tool plan page's watch is taken before it reads the plan: a plan written meanwhile reloads the page", async () => {
  const { root, planFile } = await planProject();
  const ui = serveDashboard({ source: { cwd: root, stores: [] }, port: 0, liveIntervalMs: 20 });
  // run-plan finishes the step just after the page read the plan (on a busy machine, the moment
  // between reading the plan and answering the page is long): the read is wrapped to write then.
  const read = Deno.readTextFile;
  let written = false;
  Deno.readTextFile = async (path, options) => {
    const text = await read(path, options);
    if (!written && String(path) === planFile) {
      written = true;
      const plan = JSON.parse(text) as Plan;
      plan.steps[0].status = "completed";
      await writePlanFile(planFile, plan);
    }
    return text;
  };
  let page: string;
  try {
    page = await (await fetch(`${ui.url}plans/tool/deploy`)).text();
  } finally {
    Deno.readTextFile = read;
  }
  try {
    assert.ok(written);
    // The page shows the plan it read, so its watch must tell it that the plan changed since.
    assert.match(page, /<tr data-step="push" data-status="pending">/);
    const watch = page.match(/data-watch="([^"]+)"/)![1].replaceAll("&amp;", "&");
    const stream = await fetch(new URL(watch, ui.url));
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    // The server compares at once: the event is the first thing after the opening comment. (A
    // stale page's stream would only send keep-alives: bounded, so that fails instead of hanging.)
    const timer = setTimeout(() => reader.cancel(), 30_000);
    while (!text.includes("event: changed")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    clearTimeout(timer);
    await reader.cancel().catch(() => {});
    assert.match(text, /event: changed/);
  } finally {
    await ui.close();
  }
});
