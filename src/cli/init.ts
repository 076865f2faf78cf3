/**
 * `stepflow init NAME`: scaffolds a new agent from a template in `agents/templates/`.
 *
 * @module
 */
import { stepflowPrefix } from "../invocation.ts";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { errorMessage, StepflowError, UsageError } from "../errors.ts";
import { TEMPLATE_FILES } from "./template_files.ts";
import { pathExists } from "../path_exists.ts";

export { displayPath } from "./kit/display_path.ts";

/** The placeholder replaced by the agent's name in template file contents and file names. */
export const AGENT_NAME_PLACEHOLDER = "__AGENT_NAME__";

/**
 * The placeholder replaced, in template file contents, by the command that starts `stepflow` from
 * the folder the agent was created in (`stepflow` once installed, `deno task stepflow` in the
 * checkout, …): a command written into a file must work where the user stands too.
 */
export const STEPFLOW_PLACEHOLDER = "__STEPFLOW__";

/** The template `stepflow init` uses. */
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
      `Invalid agent name "${name}": use letters, digits, "_" and "-", starting with a letter or digit (e.g. my-agent).`,
    );
  }
  const template = options.template ?? DEFAULT_TEMPLATE;
  const templates = options.templatesDir ?? TEMPLATES_URL;
  const source = await readTemplate(templates, template);
  const root = resolve(options.cwd, options.agentRoot ?? ".agent");
  const target = join(root, name);
  if (await pathExists(target)) {
    throw new UsageError(
      `Cannot create agent "${name}": ${target} already exists. init never overwrites; choose another name or remove that folder first.`,
    );
  }
  await Deno.mkdir(root, { recursive: true });
  const staging = join(root, `.${name}.init-${crypto.randomUUID().slice(0, 8)}`);
  const files: string[] = [];
  try {
    await Deno.mkdir(staging);
    await writeTemplate(
      source,
      staging,
      { name, finalDir: target, stepflow: stepflowPrefix(options.cwd) },
      files,
    );
    if (await pathExists(target)) {
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

/** A template read into memory: its files, and how to re-point a relative `$schema`. */
interface TemplateSource {
  /** Files by path relative to the template, in walk order. */
  files: Array<{ path: string; bytes: Uint8Array }>;
  /** Maps a template file's `$schema` value to the schema's absolute path or URL, if it exists. */
  locateSchema(fromFile: string, ref: string): Promise<string | undefined>;
}

/**
 * Reads a template from a folder on disk (walked, symlinks skipped) or, when the package runs from a
 * URL such as JSR, by fetching the files listed in {@linkcode TEMPLATE_FILES}.
 */
async function readTemplate(templates: string | URL, template: string): Promise<TemplateSource> {
  const notFound = (where: string) =>
    new StepflowError(
      "TEMPLATE_NOT_FOUND",
      `Agent template "${template}" not found at ${where}. Known templates: ${
        Object.keys(TEMPLATE_FILES).join(", ")
      }.`,
      { details: { template, path: where } },
    );
  if (typeof templates === "string" || templates.protocol === "file:") {
    const dir = typeof templates === "string" ? templates : fileURLToPath(templates);
    const source = join(dir, template);
    if (!(await Deno.stat(source).catch(() => undefined))?.isDirectory) throw notFound(source);
    const files: TemplateSource["files"] = [];
    const walk = async (folder: string, rel: string) => {
      for await (const entry of Deno.readDir(folder)) {
        const path = rel ? `${rel}/${entry.name}` : entry.name;
        // Templates are plain files and folders; a symlink could point anywhere, so it is not copied.
        if (entry.isSymlink) continue;
        if (entry.isDirectory) await walk(join(folder, entry.name), path);
        else files.push({ path, bytes: await Deno.readFile(join(folder, entry.name)) });
      }
    };
    await walk(source, "");
    const schemasDir = resolve(dir, "..", "schemas");
    const isFile = (p: string) => Deno.stat(p).then((i) => i.isFile, () => false);
    return {
      files,
      async locateSchema(fromFile, ref) {
        const direct = resolve(source, dirname(fromFile), ref);
        if (await isFile(direct)) return direct;
        const byName = join(schemasDir, basename(ref));
        return (await isFile(byName)) ? byName : undefined;
      },
    };
  }
  const list = TEMPLATE_FILES[template];
  if (!list) throw notFound(new URL(`${template}/`, templates).href);
  const base = new URL(`${template}/`, templates);
  const files = await Promise.all(list.map(async (path) => {
    const url = new URL(path, base);
    const res = await fetch(url);
    if (!res.ok) {
      await res.body?.cancel();
      throw new StepflowError(
        "TEMPLATE_NOT_FOUND",
        `Could not fetch template file ${url.href}: HTTP ${res.status}.`,
        { details: { template, url: url.href } },
      );
    }
    return { path, bytes: new Uint8Array(await res.arrayBuffer()) };
  }));
  return {
    files,
    locateSchema: (_fromFile, ref) =>
      Promise.resolve(new URL(`../schemas/${basename(ref)}`, templates).href),
  };
}

/** Writes a template into `to`, replacing the name placeholder and re-pointing `$schema`. */
async function writeTemplate(
  source: TemplateSource,
  to: string,
  { name, finalDir, stepflow }: { name: string; finalDir: string; stepflow: string },
  files: string[],
): Promise<void> {
  for (const file of source.files) {
    const relPath = file.path.replaceAll(AGENT_NAME_PLACEHOLDER, name);
    const targetPath = join(to, ...relPath.split("/"));
    await Deno.mkdir(dirname(targetPath), { recursive: true });
    const text = decodeText(file.bytes);
    if (text === undefined) {
      await Deno.writeFile(targetPath, file.bytes);
    } else {
      let content = text.replaceAll(AGENT_NAME_PLACEHOLDER, name)
        .replaceAll(STEPFLOW_PLACEHOLDER, stepflow);
      if (/\.jsonc?$/.test(relPath)) {
        content = await repointSchema(content, file.path, dirname(join(finalDir, relPath)), source);
      }
      await Deno.writeTextFile(targetPath, content);
    }
    files.push(relPath);
  }
}

/**
 * A template's relative `"$schema"` (`../../agents/schemas/agent.schema.json`) is right only for an
 * agent in this repository's `.agent/`. Re-point it from the new agent's folder to the same file —
 * relative to the template, else by name in the package's `agents/schemas/`; when the package runs
 * from a URL, the schema's absolute URL — so editors keep finding it wherever the agent is created.
 * Anything that cannot be found is left as written.
 */
async function repointSchema(
  json: string,
  fromFile: string,
  targetDir: string,
  source: TemplateSource,
): Promise<string> {
  const match = /("\$schema"\s*:\s*")([^"]+)(")/.exec(json);
  if (!match || /^[a-z][a-z0-9+.-]*:/i.test(match[2]) || isAbsolute(match[2])) return json;
  const schema = await source.locateSchema(fromFile, match[2]);
  if (schema === undefined) return json;
  const ref = /^[a-z][a-z0-9+.-]*:/i.test(schema)
    ? schema
    : relative(targetDir, schema).split(sep).join("/");
  return json.slice(0, match.index) + match[1] + ref + match[3] +
    json.slice(match.index + match[0].length);
}

function decodeText(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
