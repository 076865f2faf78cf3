/**
 * `migrateClimpt`: converts climpt agents into stepflow agents on disk — the agent files, a
 * `smoke.script.yaml` walking the main path with schema-valid answers, and a `MIGRATION.md` report —
 * then loads each result with stepflow's own loader so the report says whether it validates.
 *
 * @module
 */
import { agentOperand, commandLine } from "../invocation.ts";
import { dirname, join, relative, resolve, sep } from "node:path";
import { stringify as stringifyYaml } from "yaml";
import { writeFileAtomic } from "../atomic_write.ts";
import { loadAgentDefinition } from "../definition/load.ts";
import { AgentDefinitionError } from "../definition/errors.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { fileAccessError } from "../fs_error.ts";
import { formatValidationErrors, OutputSchemaCache } from "../flow/output_validator.ts";
import { findClimptAgents } from "./climpt_source.ts";
import { convertClimptAgent, type ConvertedAgent } from "./convert.ts";
import { renderMigrationReport } from "./notes.ts";
import { mainPath, reachableFrom, sampleFor, setPath } from "./smoke.ts";

/** Options of {@linkcode migrateClimpt}. */
export interface MigrateOptions {
  /** Output folder; each agent is written to `<out>/<name>/` (default `.agent`). */
  out?: string;
  /** Convert and check, but write nothing. */
  dryRun?: boolean;
  /** Replace agent folders that already exist in `out`. */
  force?: boolean;
  /** Base for relative paths (default `Deno.cwd()`). */
  cwd?: string;
}

/** The outcome for one agent. */
export interface MigratedAgent {
  /** Agent name. */
  name: string;
  /** Absolute output folder (not written under `dryRun`). */
  dir: string;
  /** Files written (relative to `dir`). */
  files: string[];
  /** Counts of the report's notes. */
  counts: { mapped: number; dropped: number; person: number; defect: number };
  /** Load errors of the converted agent (empty when it validates). */
  loadErrors: string[];
  /** Load warnings of the converted agent. */
  loadWarnings: string[];
  /** Steps the smoke script answers, in order. */
  smokePath: string[];
  /** Smoke answers that did not validate against their schema (they need a person). */
  smokeProblems: string[];
  /** The command that runs the smoke script. */
  smokeCommand: string;
}

/**
 * Converts every climpt agent under `path` (a climpt repository, its `.agent` folder, or one agent
 * folder). Refuses to overwrite an existing agent folder unless `force`; never writes outside `out`.
 *
 * @example
 * ```ts ignore
 * import { migrateClimpt } from "jsr:@stepflow/core/cli";
 * const results = await migrateClimpt("../climpt", { out: "migrated" });
 * for (const r of results) console.log(r.name, r.loadErrors.length === 0 ? "ok" : r.loadErrors);
 * ```
 */
export async function migrateClimpt(
  path: string,
  options: MigrateOptions = {},
): Promise<MigratedAgent[]> {
  const cwd = resolve(options.cwd ?? Deno.cwd());
  const out = resolve(cwd, options.out ?? ".agent");
  // Before any work: an --out that can never take the agents is refused with nothing written.
  if (!options.dryRun) {
    await assertWritableFolder(out, options.out === undefined ? ".agent" : "--out");
  }
  const sources = await findClimptAgents(resolve(cwd, path));
  const converted: ConvertedAgent[] = [];
  for (const source of sources) converted.push(await convertClimptAgent(source));

  if (!options.dryRun && !options.force) {
    const existing: string[] = [];
    for (const agent of converted) {
      try {
        await Deno.stat(join(out, agent.name));
        existing.push(join(out, agent.name));
      } catch {
        // Free.
      }
    }
    if (existing.length > 0) {
      throw new StepflowError(
        "MIGRATE_TARGET_EXISTS",
        `Refusing to overwrite existing agent folder(s): ${
          existing.map((d) => relative(cwd, d) || d).join(", ")
        }. Pass --force to replace them, or --out DIR to write elsewhere.`,
        { details: { existing } },
      );
    }
  }

  const results: MigratedAgent[] = [];
  for (const agent of converted) {
    // Stage in a temporary folder: the loader and the schema validator read real files, and a
    // half-converted agent must never appear in `out`.
    const stage = await Deno.makeTempDir({ prefix: "stepflow-migrate-" });
    try {
      const stageDir = join(stage, agent.name);
      const result = await finishAgent(agent, stageDir, join(out, agent.name), cwd);
      if (!options.dryRun) {
        await publish(agent, stageDir, join(out, agent.name), out, options.force);
      }
      results.push(result);
    } finally {
      await Deno.remove(stage, { recursive: true }).catch(() => {});
    }
  }
  return results;
}

/**
 * Refuses (`MIGRATE_OUT_UNUSABLE`) an output folder that is a file, a device, a dangling link, or a
 * folder this user cannot create entries in (read-only, unreadable); a folder that does not exist
 * yet is judged by the nearest folder that does (where it would be created). Probes by creating and
 * removing an empty hidden folder, so the verdict is the file system's own.
 */
export async function assertWritableFolder(out: string, flag: string): Promise<void> {
  const refuse = (why: string, cause?: unknown) =>
    new StepflowError("MIGRATE_OUT_UNUSABLE", `${flag} ${out}: ${why}`, {
      details: { out },
      ...(cause === undefined ? {} : { cause }),
    });
  let probeIn = out;
  for (;;) {
    let link: Deno.FileInfo | undefined;
    try {
      link = await Deno.lstat(probeIn);
      const info = await Deno.stat(probeIn);
      if (!info.isDirectory) {
        throw refuse(
          `${probeIn === out ? "is" : `lies under ${probeIn}, which is`} a ${
            info.isFile ? "file" : "special file (a device, socket or pipe)"
          }, not a folder. Name a folder (it is created when missing).`,
        );
      }
      break;
    } catch (error) {
      if (error instanceof StepflowError) throw error;
      if (error instanceof Deno.errors.NotFound) {
        if (link?.isSymlink) {
          throw refuse(
            `${probeIn} is a symbolic link to ${await Deno.readLink(probeIn).catch(() =>
              "?"
            )}, which does not exist. Point it at a folder, or name another --out.`,
          );
        }
        const parent = dirname(probeIn);
        if (parent === probeIn) throw refuse("no folder on its path exists.");
        probeIn = parent;
        continue;
      }
      const access = fileAccessError(error, { action: "use", path: probeIn });
      throw access ? refuse(access.message, error) : error;
    }
  }
  try {
    await Deno.remove(await Deno.makeTempDir({ dir: probeIn, prefix: ".stepflow-migrate-probe-" }));
  } catch (error) {
    const access = fileAccessError(error, { action: "create folders in", path: probeIn });
    throw access ? refuse(access.message, error) : error;
  }
}

async function writeStage(stageDir: string, files: Map<string, string>): Promise<void> {
  for (const [rel, text] of files) {
    const target = resolve(stageDir, rel);
    if (!isInside(target, stageDir)) {
      throw new StepflowError(
        "MIGRATE_PATH_ESCAPES",
        `Refusing to write ${rel}: it leaves the agent folder.`,
      );
    }
    await Deno.mkdir(resolve(target, ".."), { recursive: true });
    await Deno.writeTextFile(target, text);
  }
}

function isInside(path: string, dir: string): boolean {
  const r = relative(dir, path);
  return r !== "" && !r.startsWith("..") && !r.startsWith(sep) && !/^[A-Za-z]:/.test(r);
}

async function finishAgent(
  agent: ConvertedAgent,
  stageDir: string,
  finalDir: string,
  cwd: string,
): Promise<MigratedAgent> {
  await writeStage(stageDir, agent.files);

  // The smoke script: one schema-valid answer per step of the main path.
  const completionType = (agent.agent.behavior as { completionType: string }).completionType;
  const entry = agent.registry.entryStepMapping?.[completionType] ?? agent.registry.entryStep;
  const path = entry ? mainPath(agent.registry, entry) : [];
  const script: Record<string, unknown[]> = {};
  const smokeProblems: string[] = [];
  const cache = new OutputSchemaCache(stageDir);
  for (const { stepId, intent } of path) {
    const step = agent.registry.steps[stepId];
    if ((step as { kind?: string }).kind === "command") continue;
    const ref = step.outputSchemaRef;
    if (!ref) continue;
    const doc = agent.schemas.get(ref.file) ?? {};
    const definitions = (doc.definitions ?? {}) as Record<string, unknown>;
    const answer = sampleFor(definitions[stepId], doc);
    const output = answer !== null && typeof answer === "object"
      ? answer as Record<string, unknown>
      : {};
    if (intent && step.structuredGate) setPath(output, step.structuredGate.intentField, intent);
    try {
      const compiled = await cache.resolve(ref, stepId);
      if (!compiled.validate(output)) {
        smokeProblems.push(
          `${stepId}: the generated answer does not match its schema (${
            formatValidationErrors(compiled.validate.errors).slice(0, 3).join("; ")
          }); edit smoke.script.yaml`,
        );
      }
    } catch (error) {
      smokeProblems.push(`${stepId}: ${errorMessage(error)}`);
    }
    script[stepId] = [{ output }];
  }
  // A detect:keyword agent completes when an answer holds the keyword: the last answer says it.
  const keyword = ((agent.agent.completion ?? []) as { type: string; keyword?: string }[])
    .find((c) => c.type === "detect:keyword")?.keyword;
  const last = path.length > 0 ? script[path[path.length - 1].stepId] : undefined;
  if (keyword && last) (last[0] as Record<string, unknown>).text = keyword;
  for (const p of smokeProblems) agent.notes.add("person", "smoke.script.yaml", p);
  const header = [
    `# Smoke run of the migrated agent "${agent.name}": the main path with schema-valid answers.`,
    `# Path: ${path.map((p) => p.intent ? `${p.stepId} (${p.intent})` : p.stepId).join(" → ")}`,
    "",
  ].join("\n");
  agent.files.set("smoke.script.yaml", `${header}${stringifyYaml(script, { lineWidth: 0 })}`);

  // Commands written into MIGRATION.md must work where the user ran the migration.
  const agentArg = agentOperand(finalDir, cwd);
  const smokeCommand = commandLine({
    action: "run",
    agent: agentArg,
    args: [
      "--script",
      join(relative(cwd, finalDir) || ".", "smoke.script.yaml"),
      ...(agent.needsAllowRun ? ["--allow-run"] : []),
      ...(agent.hasValidators ? ["--skip-validators"] : []),
      ...agent.smokeArgs,
    ],
  }, { cwd });
  const validateCommand = commandLine({ action: "validate", agent: agentArg }, { cwd });

  // Load the staged agent with stepflow's own loader: its problems go into the report.
  await writeStage(
    stageDir,
    new Map([["smoke.script.yaml", agent.files.get("smoke.script.yaml")!]]),
  );
  let loadErrors: string[] = [];
  let loadWarnings: string[] = [];
  try {
    const def = await loadAgentDefinition(stageDir);
    loadWarnings = [...def.warnings];
  } catch (error) {
    if (error instanceof AgentDefinitionError) {
      loadErrors = [...error.problems];
      loadWarnings = [...error.warnings];
    } else {
      loadErrors = [errorMessage(error)];
    }
  }
  // A step unreachable from this completionType's entry but reached from another mapped entry is
  // live under that completionType (as in climpt); only steps no entry reaches are dead code.
  const otherEntries = Object.entries(agent.registry.entryStepMapping ?? {}).filter(([, id]) =>
    id !== entry
  );
  for (const w of loadWarnings) {
    const unreachable = /step "([^"]+)" is unreachable from the entry step/.exec(w);
    const via = unreachable
      ? otherEntries.find(([, id]) => reachableFrom(agent.registry, [id]).has(unreachable[1]))
      : undefined;
    if (via) {
      agent.notes.add(
        "dropped",
        `steps.${unreachable![1]}`,
        `not reached under completionType "${completionType}"; it runs when completionType is "${
          via[0]
        }" (entry ${via[1]})`,
      );
    } else if (unreachable && unreachable[1].startsWith("continuation.")) {
      // climpt's verdict handlers address `continuation.*` prompts by name on later iterations;
      // stepflow routes only through transitions.
      agent.notes.add(
        "person",
        `steps.${unreachable[1]}`,
        `no transition leads to it; climpt's verdict handler may have picked it by name on later iterations — add a transition to it if the agent relied on that (stepflow: ${w})`,
      );
    } else agent.notes.add("defect", "validate: warning", w);
  }
  for (const e of loadErrors) agent.notes.add("person", "validate: error", e);

  const report = renderMigrationReport({
    agent: agent.name,
    source: agent.sourceDir,
    notes: agent.notes.notes,
    smokeCommand: `${validateCommand}\n${smokeCommand}`,
    smokeNote: agent.needsAllowRun
      ? `The agent runs commands (command steps or validators): they run only with \`--allow-run\`, and only the argv listed in agent.json \`commands\`.${
        agent.hasValidators
          ? " The smoke run skips the step validators (\`--skip-validators\`): the scripted answers change no files; drop the flag in the project the agent works on."
          : ""
      }`
      : undefined,
  });
  agent.files.set("MIGRATION.md", report);
  const count = (k: "mapped" | "dropped" | "person" | "defect") => agent.notes.of(k).length;
  return {
    name: agent.name,
    dir: finalDir,
    files: [...agent.files.keys()].sort(),
    counts: {
      mapped: count("mapped"),
      dropped: count("dropped"),
      person: count("person"),
      defect: count("defect"),
    },
    loadErrors,
    loadWarnings,
    smokePath: path.map((p) => p.stepId),
    smokeProblems,
    smokeCommand,
  };
}

async function publish(
  agent: ConvertedAgent,
  _stageDir: string,
  finalDir: string,
  out: string,
  force?: boolean,
): Promise<void> {
  if (!isInside(finalDir, out)) {
    throw new StepflowError("MIGRATE_PATH_ESCAPES", `Agent name "${agent.name}" leaves ${out}.`);
  }
  // Written whole into a hidden folder beside the target, then renamed into place: a failure
  // (disk full, a folder made read-only meanwhile) leaves no half-written agent in `out`.
  const staging = join(out, `.${agent.name}.${Deno.pid}-${crypto.randomUUID().slice(0, 8)}.tmp`);
  try {
    for (const [rel, text] of agent.files) {
      const target = resolve(staging, rel);
      if (!isInside(target, staging)) {
        throw new StepflowError(
          "MIGRATE_PATH_ESCAPES",
          `Refusing to write ${rel}: it leaves ${finalDir}.`,
        );
      }
      await writeFileAtomic(target, text);
    }
    if (force) await Deno.remove(finalDir, { recursive: true }).catch(() => {});
    await Deno.rename(staging, finalDir);
  } catch (error) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    throw fileAccessError(error, { action: `write the agent ${agent.name} into`, path: out }) ??
      error;
  }
}
