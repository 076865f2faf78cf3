/**
 * The dashboard's runs list over 10,000 recorded runs (issue 14: ≤ 300 ms server time):
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
