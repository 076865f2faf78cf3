import { extname } from "node:path";
import { parse as parseYaml } from "yaml";
import { StepflowError } from "../errors.ts";
import { readTextFileOr } from "../read_text_file.ts";
import { ScriptedBackend, type ScriptedScript } from "./scripted.ts";

/**
 * Loads a scripted-backend script: a YAML or JSON map from step id (or `<stepId>#check`) to a list
 * of responses. Used by `--backend scripted --script FILE`.
 *
 * @example
 * ```ts ignore
 * import { loadScriptFile } from "./script_file.ts";
 * const backend = await loadScriptFile(".agent/issue-solver/demo.script.yaml");
 * ```
 */
export async function loadScriptFile(file: string): Promise<ScriptedBackend> {
  const text = await readTextFileOr(
    file,
    "SCRIPT_NOT_FOUND",
    "script file",
    ". Pass --script with a YAML or JSON file mapping step ids to responses.",
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
    return new ScriptedBackend(data as ScriptedScript);
  } catch (error) {
    throw new StepflowError("SCRIPT_INVALID", `${file}: ${(error as Error).message}`, {
      details: { file },
    });
  }
}
