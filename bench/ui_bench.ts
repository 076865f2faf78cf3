/**
 * The dashboard's runs list over 10,000 recorded runs (budget: ≤ 300 ms server time):
 * - the first page, warm (the file store's summaries cached by checkpoint inode/mtime/size);
 * - a filtered deep page (status + page 40), warm;
 * - the first page of a freshly started dashboard (cold: every checkpoint parsed once; the server
 *   does this at start-up in the background);
 * - the first page while one run replaces its checkpoint between requests.
 *
 * The runs are written as the file store writes them (checkpoint with a 12-entry history and
 * handoff, and a run log), directly to disk so the setup takes seconds, not minutes.
 */
import { join } from "node:path";
import { formatLogLine } from "../src/store/log_format.ts";
import { FileRunStore } from "../src/store/file.ts";
import { dashboardHandler } from "../src/ui/server.ts";

const RUNS = 10_000;
const root = await Deno.makeTempDir({ prefix: "stepflow-ui-bench-" });
const dir = join(root, "tmp/logs/agents/bench-agent");
await Deno.mkdir(dir, { recursive: true });
const statuses = ["completed", "completed", "completed", "failed", "aborted"] as const;
for (let i = 0; i < RUNS; i++) {
  const runId = `20260101T${String(i).padStart(6, "0")}Z-bench`;
  const startedAt = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();
  const history = Array.from({ length: 12 }, (_, k) => ({
    stepId: `step.${k % 4}`,
    iteration: k + 1,
    attempt: 1,
    intent: "next",
    transition: "next",
    nextStepId: `step.${(k + 1) % 4}`,
    startedAt,
    durationMs: 900,
  }));
  const checkpoint = {
    version: 1,
    runId,
    agent: i % 3 === 0 ? "other-agent" : "bench-agent",
    status: statuses[i % statuses.length],
    startedAt,
    updatedAt: new Date(Date.parse(startedAt) + 11_000).toISOString(),
    logEntries: 14,
    state: {
      iteration: 12,
      historyLength: 12,
      history,
      handoff: { "step.0": { summary: "x".repeat(400) } },
      usage: { inputTokens: 12_000, outputTokens: 3_100, costUsd: 0.05 },
      end: { reason: "completed", stepId: "step.3" },
    },
  };
  Deno.writeTextFileSync(join(dir, `${runId}.checkpoint.json`), JSON.stringify(checkpoint) + "\n");
  Deno.writeTextFileSync(
    join(dir, `${runId}.jsonl`),
    formatLogLine({ ts: startedAt, runId, type: "run_start", agent: checkpoint.agent }),
  );
}

const source = () => ({
  cwd: root,
  stores: [{
    name: dir,
    store: new FileRunStore(dir, { onWarning: () => {}, listSettledFromCache: true }),
  }],
});
const warm = dashboardHandler({ source: source() });
const request = (query: string) => new Request(`http://127.0.0.1/${query}`);
await (await warm(request(""))).text();

Deno.bench("runs list, 10,000 runs: first page (warm)", async () => {
  const res = await warm(request(""));
  if (!(await res.text()).includes("10000 of 10000 runs")) throw new Error("wrong page");
});

Deno.bench("runs list, 10,000 runs: status filter, page 40 (warm)", async () => {
  const res = await warm(request("?status=completed&page=40"));
  if (!(await res.text()).includes("page 40 / 120")) throw new Error("wrong page");
});

Deno.bench(
  "runs list, 10,000 runs: first page of a new dashboard (cold)",
  { n: 3, warmup: 0 },
  async () => {
    const res = await dashboardHandler({ source: source() })(request(""));
    await res.text();
  },
);

// A running run in the same directory: its checkpoint is replaced (renamed) between requests, so
// the listing cannot be reused as a whole; only the changed and the locked runs are re-read.
const live = join(dir, "20260101T009999Z-bench.checkpoint.json");
Deno.bench("runs list, 10,000 runs: first page while a run writes checkpoints", async () => {
  const text = Deno.readTextFileSync(live);
  Deno.writeTextFileSync(`${live}.tmp`, text);
  Deno.renameSync(`${live}.tmp`, live);
  const res = await warm(request(""));
  await res.text();
});

// A run of 1,000 iterations (the browser target is ≤ 1 s to open; this is the server's
// share): its page folds the whole log and renders every row.
const longId = "20260102T000000Z-long";
const longLog: string[] = [
  formatLogLine({
    ts: "2026-01-02T00:00:00.000Z",
    runId: longId,
    type: "run_start",
    stepId: "step.0",
  }),
];
for (let i = 1; i <= 1000; i++) {
  const ts = new Date(Date.UTC(2026, 0, 2) + i * 1000).toISOString();
  longLog.push(
    formatLogLine({ ts, runId: longId, type: "step_start", stepId: "step.1", iteration: i }),
    formatLogLine({
      ts,
      runId: longId,
      type: "step_end",
      stepId: "step.1",
      iteration: i,
      entry: {
        stepId: "step.1",
        iteration: i,
        attempt: i,
        intent: "next",
        transition: "next",
        nextStepId: "step.1",
        startedAt: ts,
        durationMs: 900,
      },
      usage: { inputTokens: i * 1200, outputTokens: i * 300 },
      handoff: { completed_files: [`src/file_${i}.ts`] },
    }),
  );
}
const longDir = join(root, "long");
Deno.mkdirSync(longDir);
Deno.writeTextFileSync(join(longDir, `${longId}.jsonl`), longLog.join(""));
Deno.writeTextFileSync(
  join(longDir, `${longId}.checkpoint.json`),
  JSON.stringify({
    version: 1,
    runId: longId,
    agent: "bench-agent",
    status: "completed",
    startedAt: "2026-01-02T00:00:00.000Z",
    updatedAt: "2026-01-02T00:17:00.000Z",
    logEntries: longLog.length,
    state: { iteration: 1000, historyLength: 1000 },
  }) + "\n",
);
const longRun = dashboardHandler({
  source: { cwd: root, stores: [{ name: longDir, store: new FileRunStore(longDir) }] },
});
await (await longRun(request(`runs/${longId}`))).text();

Deno.bench("run page, 1,000 iterations (server time)", async () => {
  const res = await longRun(request(`runs/${longId}`));
  if (!(await res.text()).includes('id="row-1000"')) throw new Error("rows missing");
});
