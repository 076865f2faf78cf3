/**
 * `run-agent --init NAME`: scaffolds a new agent from a template in `agents/templates/`.
 *
 * @module
 */
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { errorMessage, StepflowError, UsageError } from "../errors.ts";

/** The placeholder replaced by the agent's name in template file contents and file names. */
export const AGENT_NAME_PLACEHOLDER = "__AGENT_NAME__";

/** The template `--init` uses. */
export const DEFAULT_TEMPLATE = "gate-routed";

/** The folder holding this package's agent templates. */
export const TEMPLATES_URL: URL = new URL("../../agents/templates/", import.meta.url);

const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;

/** Options of {@linkcode initAgent}. */
export interface InitAgentOptions {
  /** The user's directory; the agent goes to `<cwd>/<agentRoot>/<name>`. */
  cwd: string;
  /** Folder of agents relative to `cwd` (default `.agent`). */
  agentRoot?: string;
  /** Template name under the templates folder (default {@linkcode DEFAULT_TEMPLATE}). */
  template?: string;
  /** Templates folder (default {@linkcode TEMPLATES_URL}, this package's `agents/templates/`). */
  templatesDir?: string | URL;
}

/** What {@linkcode initAgent} created. */
export interface InitAgentResult {
  /** Absolute folder of the new agent. */
  dir: string;
  /** Files written, relative to `dir`, sorted. */
  files: string[];
  /** The template used. */
  template: string;
}

/**
 * Copies a template into `<cwd>/.agent/<name>`, replacing {@linkcode AGENT_NAME_PLACEHOLDER} in file
 * contents and names. The copy is built in a hidden sibling folder and renamed into place, so a
 * failure never leaves a half-written agent; an existing folder is never overwritten.
 *
 * @throws {UsageError} for an invalid name or an existing target folder.
 * @throws {StepflowError} `TEMPLATE_NOT_FOUND` when the template folder is missing.
 *
 * @example
 * ```ts ignore
 * import { initAgent } from "./init.ts";
 * const { dir, files } = await initAgent("my-agent", { cwd: Deno.cwd() });
 * console.log(dir, files); // …/.agent/my-agent [ "agent.json", "demo.script.yaml", … ]
 * ```
 */
export async function initAgent(name: string, options: InitAgentOptions): Promise<InitAgentResult> {
  if (!AGENT_NAME.test(name)) {
    throw new UsageError(
      `Invalid agent name "${name}" for --init: use letters, digits, "_" and "-", starting with a letter or digit (e.g. --init my-agent).`,
    );
  }
  const template = options.template ?? DEFAULT_TEMPLATE;
  const templatesDir = toPath(options.templatesDir ?? TEMPLATES_URL);
  const source = join(templatesDir, template);
  const sourceInfo = await Deno.stat(source).catch(() => undefined);
  if (!sourceInfo?.isDirectory) {
    throw new StepflowError(
      "TEMPLATE_NOT_FOUND",
      `Agent template "${template}" not found at ${source}. Reinstall @stepflow/core or run from a checkout that has agents/templates/${template}/.`,
      { details: { template, path: source } },
    );
  }
  const root = resolve(options.cwd, options.agentRoot ?? ".agent");
  const target = join(root, name);
  if (await exists(target)) {
    throw new UsageError(
      `Cannot create agent "${name}": ${target} already exists. --init never overwrites; choose another name or remove that folder first.`,
    );
  }
  await Deno.mkdir(root, { recursive: true });
  const staging = join(root, `.${name}.init-${crypto.randomUUID().slice(0, 8)}`);
  const files: string[] = [];
  try {
    await Deno.mkdir(staging);
    const schemasDir = resolve(templatesDir, "..", "schemas");
    await copyTree(source, staging, { name, finalDir: target, schemasDir }, files);
    if (await exists(target)) {
      throw new UsageError(`Cannot create agent "${name}": ${target} appeared while copying.`);
    }
    await Deno.rename(staging, target);
  } catch (error) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    if (error instanceof StepflowError) throw error;
    throw new StepflowError(
      "INIT_FAILED",
      `Could not create agent "${name}" in ${target}: ${errorMessage(error)}`,
      { cause: error, details: { target } },
    );
  }
  return { dir: target, files: files.sort(), template };
}

async function copyTree(
  from: string,
  to: string,
  { name, finalDir, schemasDir }: { name: string; finalDir: string; schemasDir: string },
  files: string[],
): Promise<void> {
  const walk = async (dir: string, rel: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const targetName = entry.name.replaceAll(AGENT_NAME_PLACEHOLDER, name);
      const sourcePath = join(dir, entry.name);
      const relPath = rel ? `${rel}/${targetName}` : targetName;
      const targetPath = join(to, relPath);
      // Templates are plain files and folders; a symlink could point anywhere, so it is not copied.
      if (entry.isSymlink) continue;
      if (entry.isDirectory) {
        await Deno.mkdir(targetPath, { recursive: true });
        await walk(sourcePath, relPath);
        continue;
      }
      await Deno.mkdir(dirname(targetPath), { recursive: true });
      const bytes = await Deno.readFile(sourcePath);
      const text = decodeText(bytes);
      if (text === undefined) {
        await Deno.writeFile(targetPath, bytes);
      } else {
        let content = text.replaceAll(AGENT_NAME_PLACEHOLDER, name);
        if (/\.jsonc?$/.test(targetName)) {
          content = await repointSchema(
            content,
            dirname(sourcePath),
            dirname(join(finalDir, relPath)),
            schemasDir,
          );
        }
        await Deno.writeTextFile(targetPath, content);
      }
      files.push(relPath);
    }
  };
  await walk(from, "");
}

/**
 * A template's relative `"$schema"` (`../../agents/schemas/agent.schema.json`) is right only for an
 * agent in this repository's `.agent/`. Re-point it from the new agent's folder to the same file —
 * relative to the template, else by name in the package's `agents/schemas/` — so editors keep
 * finding it wherever the agent is created. Anything that cannot be found is left as written.
 */
async function repointSchema(
  json: string,
  sourceDir: string,
  targetDir: string,
  schemasDir: string,
): Promise<string> {
  const match = /("\$schema"\s*:\s*")([^"]+)(")/.exec(json);
  if (!match || /^[a-z][a-z0-9+.-]*:/i.test(match[2]) || isAbsolute(match[2])) return json;
  const isFile = (path: string) => Deno.stat(path).then((i) => i.isFile, () => false);
  let schemaFile = resolve(sourceDir, match[2]);
  if (!(await isFile(schemaFile))) {
    schemaFile = join(schemasDir, basename(match[2]));
    if (!(await isFile(schemaFile))) return json;
  }
  const rel = relative(targetDir, schemaFile).split(sep).join("/");
  return json.slice(0, match.index) + match[1] + rel + match[3] +
    json.slice(match.index + match[0].length);
}

function decodeText(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

function toPath(dir: string | URL): string {
  if (typeof dir === "string") return dir;
  if (dir.protocol !== "file:") {
    throw new StepflowError(
      "TEMPLATE_NOT_FOUND",
      `--init needs the agent templates on disk, but this copy of @stepflow/core was loaded from ${dir.origin}. Run --init from a local checkout (git clone, then deno task run-agent --init NAME), or copy agents/templates/${DEFAULT_TEMPLATE}/ by hand.`,
    );
  }
  return fileURLToPath(dir);
}

/** `path` relative to `cwd` when it is inside it, else absolute (for messages). */
export function displayPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel && !rel.startsWith("..") && !rel.startsWith("/") ? rel : path;
}
