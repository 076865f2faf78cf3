/**
 * `stepflow`: one command with a subcommand for everything — `stepflow run AGENT`, `validate`,
 * `graph`, `list`, `init`, `runs`, `show`, `resume`, `redrive`, `answer`, `submit`, `worker`, `ui`,
 * `mcp`, `eval`, `migrate`, `plan`, `run-plan`, `qplan`, `completions` (the registry,
 * `commands/registry.ts`). `stepflow --help` lists them, `stepflow <subcommand> --help` shows one
 * with examples, and a mistyped subcommand gets a did-you-mean. The old form of `run-agent`
 * (`stepflow --agent NAME …`, `stepflow run-agent …`) still works, with a hint to its new form.
 *
 * Installed with `deno task install` (or `deno install -g -A -n stepflow jsr:@stepflow/core/cli`);
 * `deno task stepflow …` in the checkout.
 *
 * @module
 */
import { closestMatch } from "../definition/suggest.ts";
import { localizeCommands, STEPFLOW_SUBCOMMANDS, stepflowPrefix } from "../invocation.ts";
import { commandEntry, COMMANDS } from "./commands/registry.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import { type CliIo, fullIo, processIo, userDirOf } from "./kit/io.ts";

/** The subcommands `stepflow` dispatches to, with one line each for its help. */
export const STEPFLOW_COMMANDS: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries(COMMANDS.map((c) => [c.name, c.summary])),
);

/** The text `stepflow --help` prints, its commands written as they work from `userDir`. */
export function stepflowHelp(userDir: string = Deno.cwd()): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 2;
  return localizeCommands(
    [
      "Usage: stepflow <subcommand> [options]     (stepflow <subcommand> --help: its options)",
      "",
      "Subcommands:",
      ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
      "",
      "Relative paths resolve against the folder you run it from; agents are looked up in",
      ".agent/ there. Run ids are found among the agents' stores by the id alone.",
      "",
      "Examples:",
      "  stepflow init my-agent",
      "  stepflow run my-agent --script .agent/my-agent/demo.script.yaml --topic autumn",
      "  stepflow runs",
      "  stepflow completions bash > ~/.local/share/bash-completion/completions/stepflow",
    ].join("\n"),
    userDir,
  );
}

/**
 * What the first word of a command line asks for: help, the hidden completion call, the old
 * `run-agent` form, a subcommand, or an unknown word.
 */
type Dispatch =
  | { kind: "help"; topic?: string }
  | { kind: "complete"; words: string[] }
  | { kind: "legacy"; argv: readonly string[] }
  | { kind: "subcommand"; name: string; argv: readonly string[] }
  | { kind: "unknown"; word: string };

function dispatchOf(argv: readonly string[]): Dispatch {
  const [first, ...rest] = argv;
  if (first === undefined || first === "--help" || first === "-h") return { kind: "help" };
  if (first === "help") {
    return rest[0] === undefined ? { kind: "help" } : { kind: "help", topic: rest[0] };
  }
  if (first === "__complete") return { kind: "complete", words: rest };
  // `stepflow --agent NAME …`, `stepflow --list`: the old run-agent form.
  if (first.startsWith("-")) return { kind: "legacy", argv };
  if (first === "run-agent") return { kind: "legacy", argv: rest };
  if (commandEntry(first)) return { kind: "subcommand", name: first, argv: rest };
  return { kind: "unknown", word: first };
}

/** `Unknown subcommand "run-plna". Did you mean run-plan?` and where the subcommands are listed. */
function unknownText(word: string, userDir: string): string {
  const guess = closestMatch(word, STEPFLOW_SUBCOMMANDS);
  return `error: Unknown subcommand "${word}".${guess ? ` Did you mean ${guess}?` : ""}\nRun \`${
    stepflowPrefix(userDir)
  } --help\` for the subcommands.\n`;
}

/**
 * Runs `stepflow` in-process with `argv` (without the program name) and returns the exit code:
 * help, the did-you-mean of an unknown subcommand, and every subcommand that runs in-process (the
 * agent subcommands, `eval`, `plan`, `run-plan`, `qplan`); `worker`, `ui` and `mcp` serve until
 * stopped and run on the process only ({@linkcode stepflowCli}).
 *
 * @example
 * ```ts ignore
 * import { stepflowMain } from "jsr:@stepflow/core/cli";
 * let out = "";
 * const code = await stepflowMain(["list", "--json"], { stdout: { write: (t) => void (out += t) } });
 * ```
 */
export async function stepflowMain(
  argv: readonly string[],
  io: Partial<CliIo> = {},
): Promise<number> {
  const full = fullIo(io);
  const d = dispatchOf(argv);
  switch (d.kind) {
    case "help": {
      if (d.topic !== undefined && commandEntry(d.topic)) {
        return await stepflowMain([d.topic, "--help"], io);
      }
      full.stdout.write(`${stepflowHelp(userDirOf(full))}\n`);
      return EXIT_CODES.success;
    }
    case "complete": {
      // Loaded only for completion: it reads the agents and their stores.
      const { complete } = await import("./complete.ts");
      const result = await complete(d.words, { cwd: userDirOf(full), env: full.env });
      full.stdout.write([result.kind, ...result.candidates].join("\n") + "\n");
      return EXIT_CODES.success;
    }
    case "legacy":
      return await (await import("./run_agent.ts")).main(d.argv, io);
    case "unknown":
      full.stderr.write(unknownText(d.word, userDirOf(full)));
      return EXIT_CODES.usage;
    case "subcommand": {
      const loaded = await commandEntry(d.name)!.load();
      if (!loaded.main) {
        full.stderr.write(
          `error: stepflow ${d.name} runs as a process of its own (it serves until stopped).\n`,
        );
        return EXIT_CODES.usage;
      }
      return await loaded.main(d.argv, io);
    }
  }
}

/**
 * Runs `stepflow` on the real process (signals, stdio) and exits with its code: each subcommand's
 * own process entry (Ctrl-C, SIGTERM for the servers and the worker).
 *
 * @example
 * ```ts ignore
 * import { stepflowCli } from "./stepflow.ts";
 * await stepflowCli(["qplan", "validate", "plan.qplan"]); // exits like `stepflow qplan validate …`
 * ```
 */
export async function stepflowCli(argv: readonly string[] = Deno.args): Promise<never> {
  const d = dispatchOf(argv);
  if (d.kind === "subcommand") return await (await commandEntry(d.name)!.load()).cli(d.argv);
  if (d.kind === "legacy") return await (await import("./run_agent.ts")).runCli(d.argv);
  Deno.exit(await stepflowMain(argv, processIo()));
}
