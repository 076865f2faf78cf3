/**
 * How soon an idle worker takes a run put on the queue (a `--submit`, or an answered run sent back
 * to the workers), against the server in `STEPFLOW_BENCH_PG_URL` (or `STEPFLOW_TEST_PG_URL`);
 * without one this file skips with a note.
 *
 * One worker slot (`openRunQueue(…).work(1, …)`, as `deno task worker` runs it) waits idle; the
 * bench puts a job on the queue from another connection, as `run-agent --submit` does, and measures
 * from the send until the slot's handler has the run. The send lands at a random moment of the
 * slot's 2 s poll, as a user's submission does. Two ways: the default (the send notifies, the slot
 * holds a `LISTEN` connection and wakes at once) and polling only (`listen: false`, how every
 * worker took runs before notifications: on average half a poll).
 */
import { openRunQueue } from "../src/worker/queue.ts";

const url = Deno.env.get("STEPFLOW_BENCH_PG_URL") || Deno.env.get("STEPFLOW_TEST_PG_URL");
const POLL_MS = 2_000;

if (!url) {
  console.log(
    "bench/queue_pickup_bench.ts: skipped — set STEPFLOW_BENCH_PG_URL=postgres://… to measure how soon a worker takes a queued run.",
  );
} else {
  for (const listen of [true, false]) {
    const schema = `bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
    Deno.bench({
      name: listen
        ? "an idle worker takes a queued run: notified (LISTEN/NOTIFY)"
        : `an idle worker takes a queued run: polling only (every ${POLL_MS} ms)`,
      group: "queue-pickup",
      baseline: listen,
      n: 12,
      warmup: 2,
      async fn(b) {
        // Fresh queues each time (opened outside the measure): nothing outlives the bench.
        const sender = await openRunQueue(url, { schema, onWarning: () => {} });
        const worker = await openRunQueue(url, {
          schema,
          pollMs: POLL_MS,
          listen,
          onWarning: () => {},
        });
        const runId = crypto.randomUUID();
        const pickedUp = Promise.withResolvers<void>();
        await worker.work(1, (taken) => {
          if (taken === runId) pickedUp.resolve();
          return Promise.resolve();
        });
        try {
          // The slot is idle, at a random moment of its poll.
          await new Promise((r) => setTimeout(r, 100 + Math.random() * POLL_MS));
          b.start();
          await sender.send(runId);
          await pickedUp.promise;
          b.end();
        } finally {
          await worker.stop({ graceful: false });
          await sender.stop({ graceful: false });
        }
      },
    });
  }
}
