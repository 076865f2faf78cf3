/** The tool-plan scheduler: one routine adds nodes at the start of a run and on recovery. */
import assert from "node:assert/strict";
import { BLOCK, NO_POISON, SKIP, StepScheduler } from "../../src/plan/scheduler.ts";
import type { Step, StepStatus } from "../../src/plan/types.ts";

function step(id: string, dependsOn: string[] = [], status: StepStatus = "pending"): Step {
  return { id, order: 1, description: id, tool: "t", args: {}, dependsOn, status };
}

function recording() {
  const events: string[] = [];
  const scheduler: StepScheduler = new StepScheduler({
    ready: (i) => events.push(`ready ${scheduler.nodes[i].id}`),
    blocked: (i) => events.push(`blocked ${scheduler.nodes[i].id}`),
    passedOn: (i, status, culprit) =>
      events.push(`${status} ${scheduler.nodes[i].id} by ${culprit}`),
  });
  return { scheduler, events };
}

function drain(scheduler: StepScheduler): string[] {
  const ids: string[] = [];
  for (let i = scheduler.next(); i !== undefined; i = scheduler.next()) {
    ids.push(scheduler.nodes[i].id);
  }
  return ids;
}

Deno.test("a run's start: settled steps count as done, skips pass on, the rest waits", () => {
  const { scheduler, events } = recording();
  const first = scheduler.add([
    step("a", [], "completed"),
    step("s", [], "skipped"),
    step("b", ["a"]),
    step("c", ["b", "a"]),
    step("d", ["s", "a"]),
  ]);
  assert.equal(first, 0);
  assert.deepEqual(events, []);
  scheduler.admit(first);
  assert.deepEqual(events, ["ready b", "blocked c", "skipped d by s"]);
  assert.deepEqual(drain(scheduler), ["b"]);
  scheduler.settle(scheduler.byId.get("b")!, NO_POISON);
  assert.deepEqual(drain(scheduler), ["c"]);
});

Deno.test("recovery's insertion: new nodes wire to settled and running ones; the failed step waits", () => {
  const { scheduler, events } = recording();
  scheduler.admit(scheduler.add([step("a"), step("skip_me"), step("x", ["a"])]));
  assert.deepEqual(drain(scheduler), ["a", "skip_me"]);
  const a = scheduler.byId.get("a")!;
  const skipMe = scheduler.byId.get("skip_me")!;
  scheduler.nodes[skipMe].status = "skipped";
  scheduler.settle(skipMe, SKIP);
  // "a" failed and recovery inserts two steps before it: one free, one after the skipped step.
  events.length = 0;
  const first = scheduler.add([step("fix"), step("later", ["skip_me"])]);
  scheduler.waitFor(a, first);
  scheduler.admit(first);
  assert.deepEqual(events, ["ready fix", "skipped later by skip_me"]);
  assert.deepEqual(drain(scheduler), ["fix"]);
  events.length = 0;
  scheduler.settle(scheduler.byId.get("fix")!, NO_POISON);
  assert.equal(scheduler.next(), undefined);
  assert.deepEqual(
    events,
    ["skipped a by later", "skipped x by a"],
    "a's new dependency was skipped",
  );
  // A failure blocks dependents, also after a stop.
  const { scheduler: other } = recording();
  other.admit(other.add([step("p"), step("q", ["p"]), step("r", ["q"])]));
  const p = other.next()!;
  other.nodes[p].status = "failed";
  other.settle(p, BLOCK);
  assert.deepEqual([...other.blockedAfterStop()], [0, 0, 0]);
  assert.equal(other.culprit(other.byId.get("r")!), "q");
});
