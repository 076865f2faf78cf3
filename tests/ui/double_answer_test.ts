/**
 * An approval answered twice, the way a person does it: the real dashboard over HTTP, a real
 * `run-plan --approvals dashboard` process, Approve and then Deny (or the other way round) 0–400 ms
 * apart. The first answer must win and every later one get 409, whatever the timing; the step does
 * what the winning answer said, and nothing but the requests is left beside the plan.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { listApprovals } from "../../src/plan/file_approver.ts";
import type { Plan } from "../../src/plan/types.ts";
import { serveDashboard } from "../../src/ui/server.ts";
import { finish, spawnCli } from "../cli/helpers.ts";

const STEPS = 8;

async function planProject(): Promise<{ root: string; planFile: string }> {
  const root = await Deno.makeTempDir({ prefix: "stepflow-double-answer-" });
  const planFile = join(root, "plans", "release.json");
  await Deno.mkdir(join(root, "plans"));
  const steps = Array.from({ length: STEPS }, (_, i) => ({
    id: `s${i}`,
    description: `Write note ${i}`,
    tool: "write_file",
    args: { path: `note${i}.md`, content: `note ${i}` },
    requiresApproval: true,
  }));
  const plan = {
    id: "plan_release",
    taskId: "t",
    version: 1,
    createdAt: "2026-01-01T00:00:00Z",
    steps,
  };
  await Deno.writeTextFile(planFile, JSON.stringify(plan));
  return { root, planFile };
}

/** Waits until every step's request is waiting; returns their ids by step. */
async function allWaiting(planFile: string): Promise<Map<string, string>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { records } = await listApprovals(planFile);
    const waiting = [...records.values()].filter((r) => r.state === "waiting");
    if (waiting.length === STEPS) return new Map(waiting.map((r) => [r.stepId, r.requestId]));
    assert.ok(Date.now() < deadline, `only ${waiting.length} of ${STEPS} steps asked`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

for (const round of [1, 2]) {
  Deno.test(`approvals answered twice, 0-400 ms apart (round ${round}): the first answer wins, the second gets 409`, async () => {
    const { root, planFile } = await planProject();
    const ui = serveDashboard({ source: { cwd: root, stores: [] }, port: 0, actions: {} });
    const child = spawnCli(
      "run-plan",
      [planFile, "--approvals", "dashboard", "--concurrency", String(STEPS)],
      { userDir: root },
    );
    let finished: ReturnType<typeof finish> | undefined;
    try {
      const requests = await allWaiting(planFile);
      const page = await (await fetch(`${ui.url}plans/tool/release`)).text();
      const secret = page.match(/data-csrf="([0-9a-f]+)"/)![1];
      const answer = async (step: string, verb: "approve" | "deny") => {
        const res = await fetch(
          `${ui.url}plans/tool/release/approvals/${step}/${requests.get(step)}/${verb}`,
          { method: "POST", headers: { "x-stepflow-csrf": secret } },
        );
        return { verb, status: res.status, body: JSON.parse(await res.text()) };
      };
      // Delays spread over 0-400 ms, the ends included; half the steps answer Deny first.
      const trials = Array.from({ length: STEPS }, (_, i) => ({
        step: `s${i}`,
        delay: i === 0 ? 0 : i === 1 ? 400 : Math.floor(Math.random() * 401),
        first: (i + round) % 2 === 0 ? "approve" as const : "deny" as const,
      }));
      const outcomes = await Promise.all(trials.map(async (t) => {
        const second = t.first === "approve" ? "deny" : "approve";
        const a = answer(t.step, t.first);
        await new Promise((r) => setTimeout(r, t.delay));
        return { ...t, answers: [await a, await answer(t.step, second)] };
      }));
      const result = await (finished = finish(child));
      const saved: Plan = JSON.parse(await Deno.readTextFile(planFile));
      const { records } = await listApprovals(planFile);
      for (const o of outcomes) {
        const what = `${o.step}: ${o.first} then the other ${o.delay} ms later → ${
          o.answers.map((a) => `${a.verb} ${a.status}`).join(", ")
        }`;
        assert.deepEqual(o.answers.map((a) => a.status), [200, 409], what);
        assert.equal(o.answers[1].body.code, "APPROVAL_NOT_WAITING", what);
        assert.match(o.answers[1].body.message, /another answer was given first/, what);
        const approved = o.first === "approve";
        assert.equal(records.get(o.step)?.state, approved ? "approved" : "denied", what);
        const step = saved.steps.find((s) => s.id === o.step)!;
        assert.equal(step.status, approved ? "completed" : "skipped", what);
        const written = await Deno.stat(join(root, `note${o.step.slice(1)}.md`)).then(
          () => true,
          () => false,
        );
        assert.equal(written, approved, what);
      }
      assert.equal(result.code, 3, result.stderr);
      // Nothing but the requests outlives the run: no answer file, no lock, no temp file.
      const left = [...Deno.readDirSync(`${planFile}.approvals`)].map((e) => e.name).sort();
      assert.deepEqual(left, trials.map((t) => `${t.step}.json`).sort());
    } finally {
      if (!finished) {
        child.kill();
        await finish(child);
      }
      await ui.close();
    }
  });
}
