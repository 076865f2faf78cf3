/**
 * Contained processes (src/process_containment.ts) with real processes: what a command leaves —
 * background jobs, `nohup`, double forks, `setsid -f`, `setsid … &` — is gone once the call
 * returns and when its parent process is killed with SIGKILL; the modes, exit codes and tags.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { containmentMode, liveRunProcesses, spawnContained } from "../src/process_containment.ts";
import { createBashTool } from "../src/tools/agent_bash.ts";
import { ToolRegistry } from "../src/tools/registry.ts";
import { StepflowError } from "../src/errors.ts";
import { escapePids, escapingCommand, stillAlive } from "./process_escapes.ts";

const LINUX = Deno.build.os === "linux";

Deno.test({
  name: "containment: the supervisor is the default on Linux",
  ignore: !LINUX,
  fn: async () => {
    assert.equal(await containmentMode(), "supervisor");
  },
});

Deno.test({
  name:
    "Bash: setsid -f, setsid … &, nohup … &, a double fork and a background job are all gone when the call returns",
  ignore: !LINUX,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "stepflow-contain-" });
    try {
      const tools = new ToolRegistry().register(createBashTool());
      const out = await tools.invoke("Bash", { command: escapingCommand("echo done") }, {
        workspaceRoot: dir,
      });
      assert.match(String(out), /done\n$/);
      const pids = await escapePids(dir);
      // Killed before the call returned: at most zombies being reaped are left.
      assert.deepEqual(await stillAlive(pids.values(), 5_000), [], JSON.stringify([...pids]));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "a contained process's tree dies with its parent process killed by SIGKILL, setsid escapes included",
  ignore: !LINUX,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "stepflow-contain-" });
    const parent = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `import { spawnContained } from ${
          JSON.stringify(new URL("../src/process_containment.ts", import.meta.url).href)
        };
         const p = await spawnContained("bash", {
           args: ["-c", ${JSON.stringify(escapingCommand("echo $$ > bash.pid; sleep 4706"))}],
           cwd: ${JSON.stringify(dir)}, stdin: "null", stdout: "null", stderr: "null",
         });
         await p.status;`,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    try {
      const controller = new AbortController();
      void parent.status.then(() => controller.abort(new Error("the parent ended first")));
      const pids = await escapePids(dir, controller.signal);
      let bash = "";
      while (!/^\d+\n$/.test(bash)) {
        controller.signal.throwIfAborted();
        bash = await Deno.readTextFile(join(dir, "bash.pid")).catch(() => "");
        await new Promise((r) => setTimeout(r, 20));
      }
      pids.set("bash", Number(bash));
      assert.deepEqual(await stillAlive(pids.values(), 0), [...pids.values()]);
      parent.kill("SIGKILL");
      await parent.status;
      assert.deepEqual(await stillAlive(pids.values()), [], JSON.stringify([...pids]));
    } finally {
      await parent.stderr.cancel().catch(() => {});
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "a contained process: its exit code, a signal that ended it, kill(), a program not found, its tags",
  ignore: !LINUX,
  fn: async () => {
    const run = async (script: string, runId?: string) => {
      const p = await spawnContained("bash", {
        args: ["-c", script],
        stdin: "null",
        stdout: "piped",
        stderr: "null",
        ...(runId ? { runId } : {}),
      });
      const out = new Response(p.child.stdout).text();
      return { status: await p.status, out: await out, tag: p.tag };
    };
    const three = await run("exit 3");
    assert.equal(three.status.code, 3);
    const killed = await run("kill -TERM $$");
    assert.equal(killed.status.signal, "SIGTERM");
    const tagged = await run('echo "$STEPFLOW_RUN_ID $STEPFLOW_PROCESS_TAG"', "run-1");
    assert.equal(tagged.out, `run-1 ${tagged.tag}\n`);

    const sleeper = await spawnContained("sleep", {
      args: ["4707"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    });
    sleeper.kill();
    assert.equal((await sleeper.status).signal, "SIGKILL");

    await assert.rejects(
      spawnContained("stepflow-no-such-program", { stdin: "null", stdout: "null", stderr: "null" }),
      Deno.errors.NotFound,
    );
  },
});

Deno.test({
  name: "liveRunProcesses finds the processes working for a run, by the run id they carry",
  ignore: !LINUX,
  fn: async () => {
    const runId = `test-${crypto.randomUUID()}`;
    const p = await spawnContained("sleep", {
      args: ["4708"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
      runId,
    });
    try {
      // The supervisor starts the command: it is found once it runs.
      let found = await liveRunProcesses(runId);
      while (found.length === 0) {
        await new Promise((r) => setTimeout(r, 20));
        found = await liveRunProcesses(runId);
      }
      assert.equal(found.length, 1);
      assert.match(found[0].command, /^(\/usr)?\/bin\/sleep 4708$/);
    } finally {
      p.kill();
      await p.status;
    }
    assert.deepEqual(await liveRunProcesses(runId), []);
  },
});

Deno.test({
  name: "session containment (chosen): what left the group is still killed when the command ends",
  ignore: !LINUX,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "stepflow-contain-" });
    Deno.env.set("STEPFLOW_PROCESS_CONTAINMENT", "session");
    try {
      assert.equal(await containmentMode(), "session");
      const p = await spawnContained("bash", {
        args: ["-c", escapingCommand("true")],
        cwd: dir,
        stdin: "null",
        stdout: "null",
        stderr: "null",
      });
      assert.equal(p.mode, "session");
      assert.equal((await p.status).code, 0);
      const pids = await escapePids(dir);
      assert.deepEqual(await stillAlive(pids.values(), 5_000), []);
    } finally {
      Deno.env.delete("STEPFLOW_PROCESS_CONTAINMENT");
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("STEPFLOW_PROCESS_CONTAINMENT: an unknown mode is PROCESS_CONTAINMENT_UNAVAILABLE", async () => {
  Deno.env.set("STEPFLOW_PROCESS_CONTAINMENT", "jail");
  try {
    const error = await containmentMode().then(() => undefined, (e) => e);
    assert.ok(error instanceof StepflowError);
    assert.equal(error.code, "PROCESS_CONTAINMENT_UNAVAILABLE");
    assert.match(error.message, /"jail" is not a containment mode\. Use supervisor or session/);
  } finally {
    Deno.env.delete("STEPFLOW_PROCESS_CONTAINMENT");
  }
});

Deno.test({
  name: "Bash: a command that kills its own supervisor (kill -9 $PPID) still leaves nothing behind",
  ignore: !LINUX,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "stepflow-contain-" });
    try {
      const tools = new ToolRegistry().register(createBashTool());
      await tools.invoke("Bash", {
        command: escapingCommand("kill -9 $PPID; sleep 4710"),
      }, { workspaceRoot: dir });
      const pids = await escapePids(dir);
      assert.deepEqual(await stillAlive(pids.values(), 5_000), [], JSON.stringify([...pids]));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "a contained process leads a group of its own in the run's session, without the terminal: /dev/tty is refused, Ctrl-C's group is the run's",
  ignore: !LINUX,
  fn: async () => {
    // The run gets a terminal of its own (`script` gives it a pseudo-terminal), so that what the
    // contained command may do with it is checked, not assumed.
    const probe = `import { spawnContained } from ${
      JSON.stringify(new URL("../src/process_containment.ts", import.meta.url).href)
    };
      const fields = (stat) => stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const me = fields(Deno.readTextFileSync("/proc/self/stat"));
      const p = await spawnContained("sh", {
        args: ["-c", "cat /proc/self/stat; if (exec 3</dev/tty) 2>/dev/null; then echo tty-opened; else echo tty-refused; fi"],
        stdin: "null", stdout: "piped", stderr: "null",
      });
      const out = await new Response(p.child.stdout).text();
      await p.status;
      const [stat, tty] = out.trim().split("\\n");
      const child = fields(stat);
      console.log(JSON.stringify({
        runGroup: Number(me[2]), runSession: Number(me[3]), runTty: Number(me[4]),
        group: Number(child[2]), session: Number(child[3]), tty: Number(child[4]),
        supervisor: p.pid, ttyOpen: tty,
      }));`;
    const { stdout, code } = await new Deno.Command("script", {
      args: ["-qec", `${Deno.execPath()} eval ${shellQuote(probe)}`, "/dev/null"],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(stdout);
    assert.equal(code, 0, text);
    const seen = JSON.parse(text.slice(text.indexOf("{"), text.lastIndexOf("}") + 1));
    assert.notEqual(seen.runTty, 0, "the run has a terminal");
    assert.equal(seen.session, seen.runSession, "same session as the run");
    assert.equal(seen.group, seen.supervisor, "the supervisor's group");
    assert.notEqual(seen.group, seen.runGroup, "not the run's group (Ctrl-C reaches the run only)");
    assert.equal(seen.tty, 0, "no controlling terminal");
    assert.equal(seen.ttyOpen, "tty-refused");
  },
});

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

Deno.test({
  name:
    "a call cancelled while its process is being started (the first start of a process probes the supervisor) is killed, not left to run",
  ignore: !LINUX,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "stepflow-contain-" });
    const runId = `contain-start-${crypto.randomUUID()}`;
    // A process of its own, so that its first contained start probes the supervisor (a Deno
    // start): the cancel lands while that start is under way.
    const tool = (name: string) =>
      JSON.stringify(new URL(`../src/tools/${name}`, import.meta.url).href);
    const program = `import { createRunCommandTool } from ${tool("builtin_command.ts")};
      import { createBashTool } from ${tool("agent_bash.ts")};
      import { ToolRegistry } from ${tool("registry.ts")};
      const tools = new ToolRegistry().register(createRunCommandTool()).register(createBashTool());
      const calls = [
        ["run_command", { command: "sleep", args: ["4707"] }],
        ["Bash", { command: "sleep 4707" }],
      ];
      const ended = await Promise.all(calls.map(async ([name, args]) => {
        const cancel = new AbortController();
        setTimeout(() => cancel.abort(new Error("cancelled")), 1);
        try {
          await tools.invoke(name, args, {
            workspaceRoot: ${JSON.stringify(dir)}, signal: cancel.signal, runId: ${
      JSON.stringify(runId)
    },
          });
          return name + ": ran to its end";
        } catch (error) {
          return name + ": " + error.message;
        }
      }));
      console.log(JSON.stringify(ended));`;
    try {
      const child = new Deno.Command(Deno.execPath(), {
        args: ["eval", program],
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const output = child.output();
      const verdict = await Promise.race([
        output.then((out) => new TextDecoder().decode(out.stdout)),
        new Promise<string>((resolve) => setTimeout(() => resolve("still running"), 60_000)),
      ]);
      if (verdict === "still running") child.kill("SIGKILL");
      await output;
      assert.deepEqual(JSON.parse(verdict.trim()), [
        "run_command: cancelled",
        "Bash: cancelled",
      ]);
      assert.deepEqual(await liveRunProcesses(runId), []);
    } finally {
      for (const { pid } of await liveRunProcesses(runId)) Deno.kill(pid, "SIGKILL");
      await Deno.remove(dir, { recursive: true });
    }
  },
});
