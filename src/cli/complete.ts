/**
 * Shell completion, computed from the declarations (`stepflow __complete WORD…`, which the scripts
 * of `stepflow completions SHELL` call on every Tab): the subcommands, each subcommand's flags and
 * their values (choices, files, folders), its operands — the agents under `.agent/` and the
 * recorded run ids, read when Tab is pressed, so they are never stale — and for `run` and `submit`
 * the parameters of the agent named.
 *
 * @module
 */
import { listAgents, loadAgentDefinition } from "../definition/load.ts";
import { STEPFLOW_SUBCOMMANDS } from "../invocation.ts";
import { shownStatus } from "../store/run_status.ts";
import { allRuns } from "./find_run.ts";
import { declaredName, type FlagDecl, type FlagDecls } from "./kit/flags.ts";
import type { Operand } from "./commands/command.ts";
import { commandEntry, type CommandShape } from "./commands/registry.ts";

/** What the shell completes: the given words, or its own file or folder names. */
export interface Completion {
  /** `words`: exactly `candidates`; `files` / `dirs`: the shell's file (folder) completion. */
  kind: "words" | "files" | "dirs";
  /** The words, for `words`. */
  candidates: string[];
}

/** Where completion looks (the agents and runs of the user's folder). */
export interface CompletionPlace {
  /** The user's folder. */
  cwd: string;
  /** Environment (`STEPFLOW_STORE`). */
  env: Record<string, string | undefined>;
}

/** The statuses of the runs each run subcommand can act on (every run for `show`). */
const RUNS_FOR: Readonly<Record<string, (status: string) => boolean>> = {
  answer: (s) => s === "waiting",
  resume: (s) => s === "interrupted" || s === "running" || s === "waiting",
  redrive: (s) => ["failed", "aborted", "cancelled", "timeout"].includes(s),
};

/**
 * The completion of the last of `words` (the words after `stepflow`, the last one being typed,
 * possibly empty).
 *
 * @example
 * ```ts ignore
 * await complete(["res"], { cwd: Deno.cwd(), env: {} }); // { kind: "words", candidates: ["resume"] }
 * ```
 */
export async function complete(
  words: readonly string[],
  place: CompletionPlace,
): Promise<Completion> {
  const current = words.at(-1) ?? "";
  const before = words.slice(0, -1);
  if (before.length === 0) {
    return matching([...STEPFLOW_SUBCOMMANDS, "--help"], current);
  }
  const entry = commandEntry(before[0]);
  if (!entry) return { kind: "words", candidates: [] };
  const shape: CommandShape = await entry.load();
  let { flags, operands } = shape;
  let rest = before.slice(1);
  if (shape.nested) {
    const nested = rest[0] !== undefined ? shape.nested[rest[0]] : undefined;
    if (nested) {
      ({ flags, operands } = nested);
      rest = rest.slice(1);
    } else if (rest.length === 0 && !current.startsWith("-")) {
      return matching(Object.keys(shape.nested), current);
    }
  }
  const byName = flagsByName(flags);
  // The value of the flag just before?
  const previous = rest.at(-1);
  if (previous?.startsWith("--") && !previous.includes("=")) {
    const decl = byName.get(previous.slice(2));
    if (decl?.type === "string") {
      return await valuesOf(completionOf(decl), current, entry.name, place);
    }
  }
  const given = operandsOf(rest, byName);
  if (current.startsWith("-")) {
    const names = [...byName].filter(([name, decl]) => decl.multiple || !rest.includes(`--${name}`))
      .map(([name]) => `--${name}`);
    if (shape.parameters && given[0] !== undefined) {
      for (const [flag, repeats] of await parameterFlags(given[0], place)) {
        if (repeats || !rest.includes(flag)) names.push(flag);
      }
    }
    return matching(names, current);
  }
  const operand: Operand | undefined = operands[given.length];
  if (!operand) return { kind: "words", candidates: [] };
  return await valuesOf(operand.complete, current, entry.name, place);
}

/** Each flag of `decls` by its name (without dashes). */
function flagsByName(decls: FlagDecls): Map<string, FlagDecl> {
  return new Map(Object.entries(decls).map(([key, decl]) => [declaredName(key, decl), decl]));
}

/** What a string flag's value completes to: its `complete`, else by its placeholder. */
function completionOf(decl: FlagDecl): FlagDecl["complete"] {
  if (decl.complete !== undefined) return decl.complete;
  if (/^(FILE|PATH)/.test(decl.value ?? "")) return "file";
  if (decl.value === "DIR") return "dir";
  return undefined;
}

/** The operands among `words`: neither flags nor the values of declared string flags. */
function operandsOf(words: readonly string[], byName: Map<string, FlagDecl>): string[] {
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i];
    if (word.startsWith("-")) {
      const decl = byName.get(word.replace(/^-+/, ""));
      if (decl?.type === "string" && !word.includes("=")) i++;
      continue;
    }
    out.push(word);
  }
  return out;
}

async function valuesOf(
  how: FlagDecl["complete"],
  current: string,
  subcommand: string,
  place: CompletionPlace,
): Promise<Completion> {
  if (how === "file") return { kind: "files", candidates: [] };
  if (how === "dir") return { kind: "dirs", candidates: [] };
  if (how === "agent") {
    return matching((await listAgents({ cwd: place.cwd })).map((a) => a.name), current);
  }
  if (how === "run") {
    const wanted = RUNS_FOR[subcommand] ?? (() => true);
    const runs = await allRuns({ userDir: place.cwd, env: place.env }).catch(() => []);
    return matching(runs.filter((r) => wanted(shownStatus(r))).map((r) => r.runId), current);
  }
  return matching(Array.isArray(how) ? how : [], current);
}

/**
 * `--<flag>` of each parameter of the agent `agent`, and whether it repeats (an `array`); none when
 * the agent does not load.
 */
async function parameterFlags(
  agent: string,
  place: CompletionPlace,
): Promise<[string, boolean][]> {
  try {
    const definition = await loadAgentDefinition(agent, { cwd: place.cwd });
    return Object.entries(definition.agent.parameters ?? {}).map(([key, p]) => [
      `--${p.flag ?? key}`,
      p.type === "array",
    ]);
  } catch {
    return [];
  }
}

function matching(words: readonly string[], prefix: string): Completion {
  return { kind: "words", candidates: [...new Set(words.filter((w) => w.startsWith(prefix)))] };
}
