/**
 * Every command stepflow prints can be pasted where the user stands. From a project folder outside
 * the checkout, with the installed `stepflow`, the CLI scenarios that print next steps are played —
 * a scaffold and its script file, a list, a failed run, the runs list and a run's history, a run
 * waiting for an answer (and the read-only dashboard's card and the MCP server's answers about it),
 * an answer refused, a run killed inside a tool call that is not idempotent, an unknown agent, an
 * unknown run, a usage error, a migration's MIGRATION.md — and every command they print is
 * collected and run there as a shell would run it, and so are the commands those print in turn. A
 * command must not be missing (exit 127) nor be a usage error (exit 2 with the usage hint); and no
 * output may name a mode flag bare (`--show ID`), which a user cannot run.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { STEPFLOW_SUBCOMMANDS, stepflowPrefix } from "../../src/invocation.ts";
import { callAgentTool } from "../../src/mcp_server/agent_tools.ts";
import { discoverStores, serveDashboard } from "../../src/ui/mod.ts";
import { seed001Files, seed001Script, writeAgent } from "../flow/fixtures.ts";
import { releaseFiles } from "../flow/input_fixtures.ts";
import { pause } from "../kill_campaign.ts";
import { stepflowMain } from "../../src/cli/stepflow.ts";
import { REPO_ROOT, work, writeTinyAgent } from "./helpers.ts";

const SUBCOMMAND = new RegExp(
  `^(?:${[...STEPFLOW_SUBCOMMANDS].sort((a, b) => b.length - a.length).join("|")})\\b`,
);

/** Whether `command` (one of `prefixes`, then a subcommand) runs `subcommand`. */
function isSubcommand(command: string, prefixes: readonly string[], subcommand: string): boolean {
  return prefixes.some((p) => command.startsWith(`${p} ${subcommand} `));
}

/** Decodes the entities the dashboard's escaping writes. */
function decodeHtml(text: string): string {
  return text.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'").replaceAll("&amp;", "&");
}

/**
 * The commands in `text` that start with one of `prefixes`: in backticks, up to the closing one;
 * else to the end of the line (or an HTML tag). `rest` is the text without them.
 */
export function commandsIn(
  text: string,
  prefixes: readonly string[],
): { commands: string[]; rest: string } {
  const commands: string[] = [];
  const rest: string[] = [];
  for (const raw of decodeHtml(text).split("\n")) {
    let line = raw;
    for (const prefix of prefixes) {
      for (
        let at = line.indexOf(`${prefix} `);
        at !== -1;
        at = line.indexOf(`${prefix} `, at + 1)
      ) {
        const before = at === 0 ? " " : line[at - 1];
        if (!/[\s`>(:]/.test(before)) continue;
        const tail = line.slice(at);
        if (!SUBCOMMAND.test(tail.slice(prefix.length + 1))) continue;
        const end = before === "`" ? tail.indexOf("`") : tail.search(/<|$/);
        const command = tail.slice(0, end === -1 ? undefined : end).trimEnd();
        commands.push(command);
        line = line.slice(0, at) + line.slice(at + command.length);
      }
    }
    rest.push(line);
  }
  return { commands, rest: rest.join("\n") };
}

/** A mode flag or an old `run-agent` form left in text: a command the user cannot paste. */
const BARE =
  /(?:^|[\s(`'"])(?:--(?:show|resume|redrive|answer|runs|list|init|validate|graph|submit)(?![\w-])|run-agent --)/m;

/** The usage hint every usage error ends with (or its unknown-flag and unknown-subcommand lines). */
const USAGE = /for its options|for the subcommands|^error: Unknown (?:option|subcommand)/m;

interface Printed {
  scenario: string;
  command: string;
}

/** What a command left behind, stdout and stderr together in `out`. */
interface Result {
  code: number;
  stdout: string;
  stderr: string;
  out: string;
}

/**
 * Plays scenarios and runs the commands they print. A printed command is taken as a shell takes
 * it: the shell splits its words (quotes and all), its start must be a command found in the
 * project folder (checked once per start, by the shell), and the words after it run the
 * subcommand for real — in this process (`stepflowMain`, from the project folder), which keeps
 * dozens of runs fast.
 */
class Collector {
  readonly ran: Printed[] = [];
  readonly problems: string[] = [];
  readonly #found = new Map<string, boolean>();
  readonly #done = new Set<string>();
  /** The runs started on the default backend (see {@linkcode stepflow}). */
  readonly #modelless = new Set<string>();
  constructor(readonly project: string, readonly prefixes: string[]) {}

  /** Collects the commands of `text` (checking it names no bare mode flag), returns them. */
  collect(scenario: string, text: string): string[] {
    const { commands, rest } = commandsIn(text, this.prefixes);
    const bare = BARE.exec(rest);
    if (bare) {
      this.problems.push(
        `${scenario}: a command that cannot be pasted: ${bare[0].trim()}\n${text}`,
      );
    }
    return commands;
  }

  /**
   * Runs `stepflow <argv>` from the project folder, in-process. With `modelless`, a run on the
   * default backend — `run` without `--script` or `--backend`, and a resume or redrive of such a
   * run — is cancelled (as by Ctrl-C) once its first step starts: the default backend is Claude
   * Code, which nobody is logged in to here and which takes 10 s or more to say so. By then the
   * command was found, parsed, and its agent loaded and its run started, which is what pasting it
   * has to show.
   */
  async stepflow(
    argv: readonly string[],
    options: { stdin?: string; modelless?: boolean } = {},
  ): Promise<Result> {
    let stdout = "";
    let stderr = "";
    const cancel = new AbortController();
    const onDefault = options.modelless && (
      (argv[0] === "run" && !argv.includes("--script") && !argv.includes("--backend")) ||
      ((argv[0] === "resume" || argv[0] === "redrive") && this.#modelless.has(argv[1]))
    );
    const code = await stepflowMain(argv, {
      stdout: { write: (t) => void (stdout += t) },
      stderr: {
        write: (t) => {
          stderr += t;
          if (!onDefault) return;
          const started = /^\[[\d:.]+\] run (\S+) started/m.exec(t);
          if (started) this.#modelless.add(started[1]);
          if (/^\[[\d:.]+\] step \S+ #\d+ started/m.test(t)) cancel.abort();
        },
      },
      stdin: options.stdin === undefined ? null : new Blob([options.stdin]).stream(),
      env: { NO_COLOR: "1" },
      cwd: this.project,
      isTerminal: { stdin: false, stdout: false, stderr: false },
      signal: cancel.signal,
    });
    return { code, stdout, stderr, out: stdout + stderr };
  }

  /** Runs a scenario (`stepflow <argv>`); collects what it prints. */
  async scenario(argv: readonly string[]): Promise<Result> {
    const result = await this.stepflow(argv);
    this.collect(`$ stepflow ${argv.join(" ")}`, result.out);
    return result;
  }

  /** As pasted: the start found by the shell in the project folder, the words split by it. */
  async #pasted(command: string): Promise<Result> {
    const prefix = this.prefixes.find((p) => command.startsWith(`${p} `))!;
    if (!this.#found.has(prefix)) {
      const help = await sh(`${prefix} --help`, this.project);
      this.#found.set(prefix, help.code === 0);
      if (help.code !== 0) this.problems.push(`"${prefix}" does not run here: ${help.out}`);
    }
    if (!this.#found.get(prefix)) return { code: 127, stdout: "", stderr: "", out: "" };
    const words = await sh(`printf '%s\\0' ${command.slice(prefix.length + 1)}`, this.project);
    return await this.stepflow(words.stdout.split("\0").slice(0, -1), { modelless: true });
  }

  /**
   * Runs each printed command as pasted in the project folder; then the commands it prints, once
   * (`depth`).
   */
  async runAll(scenario: string, commands: readonly string[], depth = 1): Promise<void> {
    for (const command of commands) {
      this.ran.push({ scenario, command });
      // A command printed again (the list and the scaffold both say how to run an agent) is run
      // once; an answer every time it is printed: the second is refused, and says where to look.
      if (this.#done.has(command) && !isSubcommand(command, this.prefixes, "answer")) continue;
      this.#done.add(command);
      const result = await this.#pasted(command);
      const what = `${scenario}\n  printed: ${command}\n  exit ${result.code}\n${result.out}`;
      if (result.code === 127) this.problems.push(`not found when pasted: ${what}`);
      if (result.code === 2 && USAGE.test(result.stderr)) {
        this.problems.push(`a usage error when pasted: ${what}`);
      }
      const next = this.collect(`${scenario} → ${command}`, result.out);
      if (depth > 0) await this.runAll(`${scenario} → ${command}`, next, depth - 1);
    }
  }
}

/** Runs `command` with `sh -c` in `cwd`, as typed there (no `INIT_CWD`). */
async function sh(command: string, cwd: string): Promise<Result> {
  const result = await new Deno.Command("env", {
    args: ["-u", "INIT_CWD", "sh", "-c", command],
    cwd,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  const stdout = decoder.decode(result.stdout);
  const stderr = decoder.decode(result.stderr);
  return { code: result.code, stdout, stderr, out: stdout + stderr };
}

/** The run id a scenario's output names first (`Run <id>`, `run <id>`, or an id alone). */
function runIdIn(text: string): string {
  const id = text.match(/\b\d{8}T\d{6}Z-[0-9a-f]{6}\b/)?.[0];
  assert.ok(id, text);
  return id;
}

Deno.test("printed commands: every command the CLI scenarios print runs where it was printed", async () => {
  const project = await Deno.makeTempDir({ prefix: "stepflow-printed-" });
  // What the commands start with here (`stepflow` once installed); a bare `stepflow …` printed
  // where it is not installed is caught as not found.
  const c = new Collector(project, [...new Set([stepflowPrefix(project), "stepflow"])]);
  try {
    // -- a scaffold, its script file, the agents list --
    const init = await c.scenario(["init", "demo"]);
    assert.equal(init.code, 0, init.out);
    const initCommands = c.collect("init", init.out);
    assert.equal(initCommands.length, 3, init.out);
    await c.runAll("stepflow init demo", initCommands);
    const script = await Deno.readTextFile(join(project, ".agent/demo/demo.script.yaml"));
    const fromFile = script.split("\n").filter((l) => l.startsWith("#   ")).map((l) => l.slice(4))
      .join(" ").replaceAll("\\ ", "").replace(/\s+/g, " ");
    const scripted = c.collect("demo.script.yaml", fromFile);
    assert.equal(scripted.length, 1, script);
    await c.runAll("demo.script.yaml", scripted);
    const list = await c.scenario(["list"]);
    await c.runAll("stepflow list", c.collect("list", list.out));

    // -- a failed run, the runs list, its history --
    await writeTinyAgent(project, "tiny");
    await Deno.writeTextFile(
      join(project, "abort.json"),
      JSON.stringify({ "work.task": [work("abort")] }),
    );
    const failed = await c.scenario(["run", "tiny", "--script", "abort.json", "--topic", "x"]);
    assert.equal(failed.code, 1, failed.out);
    const failedId = runIdIn(failed.out);
    await c.runAll("a failed run", c.collect("failed", failed.out));
    const runs = await c.scenario(["runs"]);
    await c.runAll("stepflow runs", c.collect("runs", runs.out));
    const shown = await c.scenario(["show", failedId]);
    await c.runAll("stepflow show (failed)", c.collect("show", shown.out));

    // -- a run that waits for an answer: the CLI, its history, the dashboard, the MCP server --
    await writeAgent(project, "release", releaseFiles());
    await Deno.writeTextFile(
      join(project, "release.script.json"),
      JSON.stringify({
        "draft.release": [{ output: { plan: "tag", next_action: { action: "next" } } }],
        "complete.release": [{
          output: { summary: "shipped", next_action: { action: "complete" } },
        }],
      }),
    );
    const waiting = await c.scenario([
      "run",
      "release",
      "--script",
      "release.script.json",
      "--version",
      "1.2.0",
    ]);
    assert.equal(waiting.code, 4, waiting.out);
    const waitingId = runIdIn(waiting.out);
    const answers = c.collect("waiting", waiting.out);
    assert.equal(answers.length, 1, waiting.out);
    const show = await c.scenario(["show", waitingId]);
    const card = await page(project, waitingId);
    const mcpOptions = { cwd: project, env: {}, backend: {} };
    const signal = new AbortController().signal;
    const mcpList = await callAgentTool("list_runs", {}, mcpOptions, { signal });
    const mcpShow = await callAgentTool(
      "show_run",
      { agent: "release", runId: waitingId },
      mcpOptions,
      { signal },
    );
    const fromCard = c.collect("the read-only dashboard's waiting card", card);
    assert.equal(fromCard.length, 1, "the card prints the command that answers");
    // The first answer continues the run; the others are refused, and say where to look.
    await c.runAll("a waiting run", answers);
    await c.runAll("stepflow show (waiting)", c.collect("show waiting", show.out));
    await c.runAll("the dashboard's card", fromCard);
    await c.runAll("MCP list_runs", c.collect("MCP list_runs", mcpList.text));
    await c.runAll("MCP show_run", c.collect("MCP show_run", mcpShow.text));
    assert.ok(
      c.ran.some((p) => p.command.endsWith(`show ${waitingId}`)),
      "a refused answer printed the command that shows the run",
    );

    // -- a run killed inside a tool call that is not idempotent --
    const files = seed001Files();
    Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
      allowedTools: ["Bash"],
      permissionMode: "bypassPermissions",
    });
    await writeAgent(project, "code-improver", files);
    await Deno.writeTextFile(
      join(project, "tool.script.json"),
      JSON.stringify(seed001Script({
        s_a8f3: ["Plan."],
        s_b2c1: [
          {
            toolCalls: [{ name: "Bash", arguments: { command: "echo done >> out.txt; sleep 1" } }],
          },
          "Appended one line.",
        ],
      })),
    );
    const killed = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        join(REPO_ROOT, "src/cli/mod.ts"),
        ...["run", "code-improver", "--script", "tool.script.json", "--topic", "t"],
      ],
      cwd: project,
      env: { NO_COLOR: "1", INIT_CWD: project },
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const out = join(project, "out.txt");
    while (!(await Deno.readTextFile(out).catch(() => "")).includes("done")) await pause(20);
    killed.kill("SIGKILL");
    await killed.status;
    const interrupted = await c.scenario(["runs", "code-improver"]);
    const killedId = runIdIn(interrupted.out);
    const notice = await page(project, killedId);
    const fromNotice = c.collect("the dashboard's unfinished-call notice", notice);
    assert.equal(fromNotice.length, 1, "the notice prints the command that re-runs the call");
    // The list says to resume; the resume stops at the call and prints how to re-run it.
    await c.runAll("an interrupted run", c.collect("runs code-improver", interrupted.out));
    assert.ok(
      c.ran.some((p) => p.command.endsWith(`resume ${killedId} --rerun-unfinished-call`)),
      "the resume's refusal printed the command that re-runs the call",
    );
    assert.equal((await Deno.readTextFile(out)).split("\n").filter(Boolean).length, 2);

    // -- an unknown agent, an unknown run, a usage error --
    for (
      const argv of [
        ["run", "nope"],
        ["show", "20200101T000000Z-000000"],
        ["run", "tiny", "--topc", "x"],
      ]
    ) {
      const result = await c.scenario(argv);
      assert.equal(result.code, 2, result.out);
      const printed = c.collect(argv.join(" "), result.out);
      assert.ok(printed.length > 0, `${argv.join(" ")} prints its next step:\n${result.out}`);
      await c.runAll(argv.join(" "), printed);
    }

    // -- a migration: the commands written into MIGRATION.md --
    const migrated = await c.scenario([
      "migrate",
      "climpt",
      join(REPO_ROOT, "tests/migrate/fixtures/climpt"),
      "--out",
      ".agent",
    ]);
    assert.equal(migrated.code, 0, migrated.out);
    const report = await Deno.readTextFile(join(project, ".agent/probe/MIGRATION.md"));
    const fromReport = c.collect("MIGRATION.md", report);
    assert.equal(fromReport.length, 2, report);
    await c.runAll("MIGRATION.md", fromReport);

    // Each problem with the start of the output it is about (a MIGRATION.md is long).
    const brief = c.problems.map((p) => p.length > 1200 ? `${p.slice(0, 1200)}…` : p);
    assert.ok(c.problems.length === 0, `${c.problems.length} problems:\n\n${brief.join("\n\n")}`);
    assert.ok(c.ran.length >= 20, `ran ${c.ran.length} printed commands`);
  } finally {
    await Deno.remove(project, { recursive: true });
  }
});

/** The dashboard's page of a run (read-only), served over the project's stores. */
async function page(project: string, runId: string): Promise<string> {
  const ui = serveDashboard({
    source: { cwd: project, stores: await discoverStores(project) },
    port: 0,
  });
  try {
    return await (await fetch(`${ui.url}runs/${runId}`)).text();
  } finally {
    await ui.close();
  }
}
