import { extname } from "node:path";
import { parse as parseYaml } from "yaml";
import { StepflowError } from "../errors.ts";
import { readTextFileOr } from "../read_text_file.ts";
import { ScriptedBackend, type ScriptedScript } from "./scripted.ts";
import { REPLAY_ENTRY_KEYS, REPLAY_HEADER_KEY, ReplayBackend, type ReplayMode } from "./replay.ts";

/**
 * The largest script or recording read (16 MiB): far above any recorded run, and a YAML file that
 * size still parses in seconds (a 60 MB one took a minute and 4 GB before its run started).
 */
export const MAX_SCRIPT_FILE_BYTES = 16 * 1024 * 1024;

/** Options of {@linkcode loadScriptFile} for replay files. */
export interface ScriptFileOptions {
  /** How drift is treated when the file is a recording (default `strict`). */
  replay?: ReplayMode;
  /** The environment whose credentials are redacted before fingerprints are compared. */
  env?: Record<string, string | undefined>;
  /** Receives lenient-replay warnings. */
  onWarning?: (message: string) => void;
}

/**
 * Loads a scripted-backend script: a YAML or JSON map from step id (or `<stepId>#check`) to a list
 * of responses. Used by `--backend scripted --script FILE`. A replay file (a recording: entries
 * with `fingerprint`, `prompt`, `model`, …, or an `_replay` header) gives a {@linkcode ReplayBackend}
 * that checks each prompt against its recording. Only a regular file of at most
 * {@linkcode MAX_SCRIPT_FILE_BYTES} is read (`SCRIPT_NOT_FOUND` otherwise: a device or a pipe could
 * be read forever).
 *
 * @example
 * ```ts ignore
 * import { loadScriptFile } from "./script_file.ts";
 * const backend = await loadScriptFile(".agent/issue-solver/demo.script.yaml");
 * ```
 */
export async function loadScriptFile(
  file: string,
  options: ScriptFileOptions = {},
): Promise<ScriptedBackend | ReplayBackend> {
  const text = await readTextFileOr(
    file,
    "SCRIPT_NOT_FOUND",
    "script file",
    ". Pass --script with a YAML or JSON file mapping step ids to responses.",
    { maxBytes: MAX_SCRIPT_FILE_BYTES },
  );
  let data: unknown;
  try {
    data = extname(file).toLowerCase() === ".json" ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new StepflowError(
      "SCRIPT_INVALID",
      `Script file ${file} does not parse: ${(error as Error).message}`,
      { details: { file } },
    );
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new StepflowError(
      "SCRIPT_INVALID",
      `Script file ${file} must be a map from step id to a list of responses (e.g. "initial.issue: [ {output: {...}} ]").`,
      { details: { file } },
    );
  }
  try {
    if (isReplay(data as Record<string, unknown>)) {
      return new ReplayBackend(data as Record<string, unknown>, {
        source: file,
        ...(options.replay ? { mode: options.replay } : {}),
        ...(options.env ? { env: options.env } : {}),
        ...(options.onWarning ? { onWarning: options.onWarning } : {}),
      });
    }
    return new ScriptedBackend(data as ScriptedScript);
  } catch (error) {
    throw new StepflowError("SCRIPT_INVALID", `${file}: ${(error as Error).message}`, {
      details: { file },
    });
  }
}

/** A replay file has the `_replay` header or an entry with a replay key (`fingerprint`, …). */
function isReplay(data: Record<string, unknown>): boolean {
  if (Object.hasOwn(data, REPLAY_HEADER_KEY)) return true;
  return Object.values(data).some((entries) =>
    Array.isArray(entries) &&
    entries.some((e) =>
      e !== null && typeof e === "object" && Object.keys(e).some((k) => REPLAY_ENTRY_KEYS.has(k))
    )
  );
}
