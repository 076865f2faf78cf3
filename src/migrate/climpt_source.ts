/**
 * Finds climpt agents on disk: `<path>` is a climpt repository (agents in `.agent/`), its `.agent`
 * folder, or one agent folder (holding `agent.json`).
 *
 * @module
 */
import { basename, join, relative, resolve } from "node:path";
import { StepflowError } from "../errors.ts";

/** One climpt agent folder found by {@linkcode findClimptAgents}. */
export interface ClimptAgentDir {
  /** Folder name. */
  name: string;
  /** Absolute folder. */
  dir: string;
  /** Base that `file:line` references in the report are relative to. */
  base: string;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch {
    return false;
  }
}

async function isDir(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch {
    return false;
  }
}

/**
 * The climpt agents under `path`, sorted by name. A folder under `.agent/` is an agent when it holds
 * both `agent.json` and `steps_registry.json` (climpt keeps other folders there, such as `climpt/`).
 *
 * @throws StepflowError `MIGRATE_SOURCE_NOT_FOUND` when `path` holds no climpt agent
 */
export async function findClimptAgents(path: string): Promise<ClimptAgentDir[]> {
  const root = resolve(path);
  if (!(await isDir(root))) {
    throw new StepflowError(
      "MIGRATE_SOURCE_NOT_FOUND",
      `${path} is not a folder. Pass a climpt repository, its .agent folder, or one agent folder.`,
      { details: { path: root } },
    );
  }
  if (await isFile(join(root, "agent.json"))) {
    const base = resolve(root, "..", "..");
    return [{ name: basename(root), dir: root, base }];
  }
  const agentRoot = (await isDir(join(root, ".agent"))) ? join(root, ".agent") : root;
  const base = resolve(agentRoot, "..");
  const found: ClimptAgentDir[] = [];
  for await (const entry of Deno.readDir(agentRoot)) {
    if (!entry.isDirectory) continue;
    const dir = join(agentRoot, entry.name);
    if (
      (await isFile(join(dir, "agent.json"))) && (await isFile(join(dir, "steps_registry.json")))
    ) {
      found.push({ name: entry.name, dir, base });
    }
  }
  if (found.length === 0) {
    throw new StepflowError(
      "MIGRATE_SOURCE_NOT_FOUND",
      `No climpt agent found in ${path}: expected agent folders (agent.json + steps_registry.json) in ${
        relative(Deno.cwd(), agentRoot) || "."
      }.`,
      { details: { path: root } },
    );
  }
  return found.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** A source text file with `file:line` lookups for the report. */
export interface SourceText {
  /** Path shown in the report (relative to the agent's base). */
  label: string;
  /** The text. */
  text: string;
  /** The 1-based line of the first occurrence of `needle` at or after `fromLine`, as `label:line`. */
  at(needle: string, fromLine?: number): string;
  /** The 1-based line number of `needle` (0 when absent). */
  line(needle: string, fromLine?: number): number;
}

/** Wraps a file's text for `file:line` lookups. */
export function sourceText(label: string, text: string): SourceText {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === "\n") starts.push(i + 1);
  const line = (needle: string, fromLine = 1): number => {
    const from = starts[Math.max(0, Math.min(fromLine, starts.length) - 1)];
    const index = text.indexOf(needle, from);
    if (index < 0) return fromLine > 1 ? line(needle, 1) : 0;
    let lo = 0, hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= index) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  return {
    label,
    text,
    line,
    at: (needle, fromLine) => {
      const n = line(needle, fromLine);
      return n > 0 ? `${label}:${n}` : label;
    },
  };
}

/** Reads a JSON source file; a syntax error names the file. */
export function parseSourceJson(source: SourceText): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(source.text);
  } catch (error) {
    throw new StepflowError(
      "MIGRATE_SOURCE_INVALID",
      `${source.label} is not valid JSON: ${(error as Error).message}`,
      { details: { file: source.label } },
    );
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new StepflowError(
      "MIGRATE_SOURCE_INVALID",
      `${source.label} must hold a JSON object.`,
      { details: { file: source.label } },
    );
  }
  return value as Record<string, unknown>;
}
