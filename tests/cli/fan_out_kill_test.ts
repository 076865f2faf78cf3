/**
 * SIGKILL campaign of a fan-out step (tests/kill_campaign.ts): a real `run-agent` of the fleet
 * agent fans the reviewer out over 20 files, 4 at once; each child runs a non-idempotent Bash
 * command (it appends a line to its file's ledger) and then answers. The run is killed — while the
 * first children are being linked, in the middle of the fan-out, right as a child's Bash command
 * runs, and at random moments — and resumed (`--resume`) until it completes. Then every item has
 * exactly one completed child, every Bash command ran once (a resume that found one killed in the
 * middle reruns it only with `--rerun-unfinished-call`, counted), and the results equal an
 * uninterrupted run's.
 *
 * Default: one round with the three event-timed kills and 3 random ones; with
 * `STEPFLOW_FULL_CAMPAIGN=1`, rounds until at least 30 kills landed.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FULL_CAMPAIGN, jitter, killAtMoment, pause } from "../kill_campaign.ts";
import { writeFleetAgents } from "../flow/fan_out_fixtures.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { fanOutsOf } from "../../src/store/fan_out_lines.ts";
import { runCli, spawnCli } from "./helpers.ts";
import { fileList, reviewScript } from "./fan_out_cli_fixtures.ts";

const FILES = fileList(20);
const ARGS = ["--agent", "fleet", "--script", "fleet.script.json"];

/** A moment of a drive to kill it at. */
type Moment = "links" | "mid" | "bash" | "random";

/** One run of the fleet, killed and resumed until it completes. */
class Round {
  readonly dir: string;
  runId?: string;
  kills = 0;
  /** Resumes given `--rerun-unfinished-call` (a drive that stopped at an unfinished Bash call). */
  reruns = 0;
  #rerunNext = false;

  constructor(dir: string) {
    this.dir = dir;
  }

  get runs(): FileRunStore {
    return new FileRunStore(join(this.dir, "tmp", "logs", "agents", "fleet"));
  }

  get children(): FileRunStore {
    return new FileRunStore(join(this.dir, "tmp", "logs", "agents", "reviewer"));
  }

  async status(): Promise<string | undefined> {
    if (!this.runId) this.runId = (await this.runs.list())[0]?.runId;
    return this.runId ? (await this.runs.loadCheckpoint(this.runId))?.status : undefined;
  }

  /** Text of the run log (empty before it exists). */
  async log(): Promise<string> {
    const id = this.runId ?? (await this.runs.list().catch(() => []))[0]?.runId;
    if (!id) return "";
    return await Deno.readTextFile(this.runs.files(id).log).catch(() => "");
  }

  async ledgerLines(): Promise<number> {
    let n = 0;
    for await (const entry of Deno.readDir(join(this.dir, "ledger"))) {
      n += (await Deno.readTextFile(join(this.dir, "ledger", entry.name))).split("\n").length - 1;
    }
    return n;
  }

  /** One drive, killed at `moment` (or ended before it); true when it was killed. */
  async drive(moment: Moment): Promise<boolean> {
    const args = this.runId === undefined
      ? ARGS
      : [...ARGS, "--resume", this.runId, ...(this.#rerunNext ? ["--rerun-unfinished-call"] : [])];
    if (this.#rerunNext) this.reruns++;
    this.#rerunNext = false;
    const killed = await killAtMoment({
      describe: moment,
      tries: 1,
      atEnd: true,
      spawn: () =>
        spawnCli("run-agent", args, { userDir: this.dir, stdout: "null", stderr: "null" }),
      arm: () => (_child, ended) => this.#moment(moment, ended),
      afterRun: () => {},
    });
    if (killed) this.kills++;
    else if (await this.status() !== "completed") {
      // It stopped by itself: a resume found a Bash call killed in the middle (TOOL_CALL_UNFINISHED).
      this.#rerunNext = true;
    }
    await this.status();
    return killed;
  }

  async #moment(moment: Moment, ended: AbortSignal): Promise<void> {
    const before = await this.log();
    const ledger = await this.ledgerLines();
    const count = (text: string, type: string) => text.split(`"type":"${type}"`).length - 1;
    const until = async (done: () => Promise<boolean>) => {
      while (!ended.aborted && !await done()) await pause(5);
    };
    if (moment === "links") {
      await until(async () =>
        count(await this.log(), "fanout_child") >= count(before, "fanout_child") + 4
      );
    } else if (moment === "mid") {
      const ends = count(before, "fanout_child_end");
      await until(async () => count(await this.log(), "fanout_child_end") >= ends + 3);
    } else if (moment === "bash") {
      await until(async () => await this.ledgerLines() > ledger);
    } else {
      await until(async () => (await this.log()).length > before.length);
      await pause(jitter(1200));
    }
  }
}

async function newRound(): Promise<Round> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-fanout-kill-" });
  await writeFleetAgents(dir, { concurrency: 4, onItemError: "fail" }, "tools");
  await Deno.mkdir(join(dir, "ledger"));
  await Deno.writeTextFile(
    join(dir, "fleet.script.json"),
    reviewScript({
      files: FILES,
      delayMs: 120,
      before: (path) => [{
        toolCalls: [{
          name: "Bash",
          arguments: { command: `echo ran >> ledger/${path.replaceAll("/", "_")}` },
        }],
      }],
    }),
  );
  return new Round(dir);
}

/** What the fleet hands off, without the run ids (they differ from run to run). */
async function results(round: Round): Promise<unknown> {
  const checkpoint = (await round.runs.loadCheckpoint(round.runId!))!;
  const handoff = (checkpoint.state.handoff as Record<string, { results: { runId: string }[] }>)[
    "review.each"
  ];
  return handoff.results.map(({ runId: _, ...rest }) => rest);
}

async function verify(round: Round, expected: unknown): Promise<void> {
  const what = `round with ${round.kills} kills (${round.dir})`;
  assert.equal(await round.status(), "completed", what);
  const log = await round.runs.readLog(round.runId!);
  const [fanOut] = fanOutsOf(log);
  assert.equal(fanOut.items.size, FILES.length, what);
  const children = await round.children.list();
  assert.equal(children.length, FILES.length, `${what}: one child run per item, no second one`);
  let extraStarts = 0;
  for (const item of fanOut.items.values()) {
    assert.equal(item.children.length, 1, `${what}: item ${item.index} has one child`);
    const childId = item.children[0].childRunId;
    assert.equal((await round.children.loadCheckpoint(childId))?.status, "completed", what);
    const starts = (await round.children.readLog(childId)).filter((e) =>
      e.type === "tool_call_start" && e.tool === "Bash"
    ).length;
    const lines = (await Deno.readTextFile(
      join(round.dir, "ledger", FILES[item.index].replaceAll("/", "_")),
    )).split("\n").length - 1;
    // A Bash command runs only after its start is durable, and again only when allowed.
    assert.ok(
      lines >= 1 && lines <= starts,
      `${what}: item ${item.index} ran ${lines}, started ${starts}`,
    );
    extraStarts += starts - 1;
  }
  assert.ok(
    extraStarts <= round.reruns * 4,
    `${what}: ${extraStarts} Bash commands ran again with only ${round.reruns} permitted resumes`,
  );
  assert.deepEqual(await results(round), expected, `${what}: results as uninterrupted`);
}

Deno.test("run-agent killed (SIGKILL) at any moment of a 20-item fan-out: after resume every item has one completed child, no Bash ran twice, results as uninterrupted", async () => {
  // The uninterrupted run's results.
  const clean = await newRound();
  const out = await runCli(ARGS, { userDir: clean.dir });
  assert.equal(out.code, 0, out.stderr);
  await clean.status();
  const expected = await results(clean);
  assert.equal((expected as unknown[]).length, FILES.length);

  const queue: Moment[] = ["links", "mid", "bash", "random", "random", "random"];
  const target = FULL_CAMPAIGN ? 30 : 0;
  let kills = 0;
  let reruns = 0;
  let rounds = 0;
  for (;;) {
    const round = await newRound();
    rounds++;
    // At most 12 kills a round; then it runs to its end uninterrupted.
    while (await round.status() !== "completed" && round.kills < 12) {
      await round.drive(queue.shift() ?? "random");
    }
    while (await round.status() !== "completed") {
      const out = await runCli(
        [...ARGS, "--resume", round.runId!, "--rerun-unfinished-call"],
        { userDir: round.dir },
      );
      round.reruns++;
      assert.ok(out.code === 0 || out.code === 1, out.stderr);
    }
    await verify(round, expected);
    kills += round.kills;
    reruns += round.reruns;
    if (!FULL_CAMPAIGN || kills >= target) break;
  }
  console.log(
    `${kills} kills in ${rounds} round(s), ${reruns} resume(s) with --rerun-unfinished-call`,
  );
  assert.ok(kills >= 3, `${kills} kills landed`);
});
