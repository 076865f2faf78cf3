import { join, resolve } from "node:path";
import { realpath } from "node:fs/promises";
import { StepflowError } from "../errors.ts";
import {
  type C3lRef,
  c3lRelativePath,
  isPathRef,
  isWithin,
  type PathRef,
  PromptPathError,
  type PromptReference,
  promptRoot,
  resolvePromptPath,
  SEGMENT_PATTERN,
} from "./c3l_path.ts";
import { outsideLinkMessage, realLocation, realpathOr } from "./confine.ts";
import { splitFrontmatter } from "./frontmatter.ts";
import { type PromptVariables, substituteVariables } from "./variables.ts";

/** Options of a {@linkcode PromptResolver}. */
export interface PromptResolverOptions {
  /** Absolute agent folder. */
  agentDir: string;
  /** Prompt root relative to the agent folder (registry `basePath`, default `prompts`). */
  basePath?: string;
  /** agent.json `prompts.fallbackDir`, used only when `allowFallback` is on. */
  fallbackDir?: string;
  /** Opt in to fallbacks (`--allow-fallback`). Off by default: a missing prompt is an error. */
  allowFallback?: boolean;
  /** Receives a warning for every fallback used. Defaults to `console.warn`. */
  onWarning?: (message: string) => void;
}

/** A prompt file read and split, before variable substitution. */
export interface PromptTemplate {
  /** Absolute path of the file actually read. */
  file: string;
  /** Frontmatter attributes. */
  attributes: Record<string, unknown>;
  /** Body after the frontmatter. */
  body: string;
  /** True when the file came from a fallback. */
  fromFallback: boolean;
}

/** A reference's resolved path, with the fields it was resolved from and its cache key. */
interface KnownReference {
  ref: PromptReference;
  file: string;
  /** The fallback key `key` was made with. */
  fallbackKey?: string;
  /** `file` and `fallbackKey`: the key of the template cache. */
  key?: string;
}

/** A prompt ready to send. */
export interface ResolvedPrompt extends PromptTemplate {
  /** The body with variables substituted. */
  text: string;
}

/** Thrown when a prompt file does not exist (and no fallback was allowed or found). */
export class PromptNotFoundError extends StepflowError {
  /**
   * Creates the error.
   *
   * @param file the full path looked for
   * @param stepId the step, when known
   * @param tried fallbacks that were tried
   */
  constructor(
    file: string,
    stepId?: string,
    tried: string[] = [],
    fallback: { allowed: boolean; invalidKey?: string } = { allowed: false },
  ) {
    const why = !fallback.allowed
      ? "Create the file, or fix the step's prompt reference. There is no fallback unless --allow-fallback is given."
      : fallback.invalidKey !== undefined
      ? `The step's fallbackKey ${
        JSON.stringify(fallback.invalidKey)
      } is invalid (${FALLBACK_KEY_RULE}), so no built-in fallback applies: fix the fallbackKey, or create the file.`
      : "No fallback has it either: create the file, or fix the step's prompt reference.";
    super(
      "PROMPT_NOT_FOUND",
      `Prompt file not found: ${file}${stepId ? ` (step "${stepId}")` : ""}.${
        tried.length ? ` Fallbacks tried: ${tried.join(", ")}.` : ""
      } ${why}`,
      { details: { file, stepId, tried } },
    );
  }
}

/** What a `fallbackKey` may be: one file name segment (letters, digits, `_`, `-`). */
export const FALLBACK_KEY_RULE = 'use letters, digits, "_" and "-", e.g. "issue_initial_default"';

/** True when `key` can name a fallback prompt (`<key>.md`): a single safe segment. */
export function isValidFallbackKey(key: string): boolean {
  return SEGMENT_PATTERN.test(key);
}

const BUILTIN_FALLBACKS = new URL("../../prompts/fallback/", import.meta.url);

/**
 * Resolves prompt references to text: C3L path → file → frontmatter removed → variables substituted.
 * No fallback unless `allowFallback`. File contents are cached per resolver, so create one per run
 * (edits between runs are picked up; edits during a run are not).
 *
 * @example
 * ```ts
 * import { PromptResolver } from "./resolver.ts";
 * const resolver = new PromptResolver({ agentDir: "/work/.agent/code-improver" });
 * const prompt = await resolver.resolve(
 *   { c1: "steps", c2: "phase", c3: "analyze" },
 *   { uv: { topic: "auth" }, iteration: 1, stepId: "s_a8f3" },
 * );
 * console.log(prompt.text);
 * ```
 */
export class PromptResolver {
  readonly #agentDir: string;
  readonly #basePath: string;
  readonly #options: PromptResolverOptions;
  readonly #cache = new Map<string, Promise<PromptTemplate>>();
  /** Resolved paths by reference object, with the fields they were resolved from. */
  readonly #paths = new WeakMap<PromptReference, KnownReference>();
  #realRoot?: Promise<string>;

  /**
   * Creates a resolver.
   *
   * @param options where prompts live and whether fallbacks are allowed
   */
  constructor(options: PromptResolverOptions) {
    this.#options = options;
    this.#agentDir = resolve(options.agentDir);
    this.#basePath = options.basePath ?? "prompts";
  }

  /** The absolute file a reference points at (no I/O). */
  pathOf(ref: PromptReference): string {
    return this.#known(ref).file;
  }

  /**
   * A step's reference is the same object every iteration: its path is resolved once (the
   * resolution and its checks were ~8 % of a fast loop's iteration). The fields are compared
   * too, so a reference changed in place is resolved again.
   */
  #known(ref: PromptReference): KnownReference {
    const known = this.#paths.get(ref);
    if (known !== undefined && sameReference(known.ref, ref)) return known;
    const file = resolvePromptPath(this.#agentDir, this.#basePath, ref);
    const entry: KnownReference = { ref: { ...ref }, file };
    this.#paths.set(ref, entry);
    return entry;
  }

  /** Reads (once) and splits the prompt file of `ref`. */
  template(
    ref: PromptReference,
    where: { stepId?: string; fallbackKey?: string } = {},
  ): Promise<PromptTemplate> {
    const known = this.#known(ref);
    const file = known.file;
    // The key of the last fallback key asked for is kept (a step asks with the same one each time).
    const fallbackKey = where.fallbackKey ?? "";
    if (known.key === undefined || known.fallbackKey !== fallbackKey) {
      known.fallbackKey = fallbackKey;
      known.key = `${file}\0${fallbackKey}`;
    }
    const key = known.key;
    let cached = this.#cache.get(key);
    if (!cached) {
      cached = this.#load(file, ref, where);
      this.#cache.set(key, cached);
      // A failed read is not cached: the caller may fix the file and try again.
      cached.catch(() => this.#cache.delete(key));
    }
    return cached;
  }

  /** Resolves `ref` and substitutes `vars`. */
  async resolve(
    ref: PromptReference,
    vars: PromptVariables,
    where: { stepId?: string; fallbackKey?: string } = {},
  ): Promise<ResolvedPrompt> {
    const t = await this.template(ref, where);
    const text = substituteVariables(t.body, vars, { file: t.file, stepId: where.stepId });
    return { ...t, text };
  }

  async #load(
    file: string,
    ref: PromptReference,
    where: { stepId?: string; fallbackKey?: string },
  ): Promise<PromptTemplate> {
    const text = await this.#readConfined(file, this.#root());
    if (text !== undefined) return { file, ...splitFrontmatter(text, file), fromFallback: false };
    if (!this.#options.allowFallback) throw new PromptNotFoundError(file, where.stepId);

    const tried: string[] = [];
    for (const candidate of this.#fallbackCandidates(ref, where.fallbackKey)) {
      tried.push(candidate.label);
      const body = await candidate.read();
      if (body === undefined) continue;
      (this.#options.onWarning ?? console.warn)(
        `[stepflow] warning: prompt ${file}${
          where.stepId ? ` (step "${where.stepId}")` : ""
        } is missing; using fallback ${candidate.label}. Fallbacks are for development only.`,
      );
      return {
        file: candidate.label,
        ...splitFrontmatter(body, candidate.label),
        fromFallback: true,
      };
    }
    const key = where.fallbackKey;
    throw new PromptNotFoundError(file, where.stepId, tried, {
      allowed: true,
      ...(key !== undefined && !isValidFallbackKey(key) ? { invalidKey: key } : {}),
    });
  }

  *#fallbackCandidates(
    ref: PromptReference,
    fallbackKey: string | undefined,
  ): Generator<{ label: string; read: () => Promise<string | undefined> }> {
    const keyOk = fallbackKey !== undefined && isValidFallbackKey(fallbackKey);
    if (this.#options.fallbackDir) {
      const root = promptRoot(this.#agentDir, this.#options.fallbackDir);
      const rel = keyOk ? `${fallbackKey}.md` : isPathRef(ref) ? ref.path : c3lRelativePath(ref);
      const file = resolve(root, rel);
      if (isWithin(root, file)) {
        yield { label: file, read: () => this.#readConfined(file, this.#confinedRoot(root)) };
      }
    }
    if (keyOk) {
      const url = new URL(`${fallbackKey}.md`, BUILTIN_FALLBACKS);
      yield { label: `builtin:${fallbackKey}`, read: () => readUrl(url) };
    }
  }

  #root(): Promise<string> {
    return this.#realRoot ??= this.#confinedRoot(promptRoot(this.#agentDir, this.#basePath));
  }

  /** The real path of a prompt root, refused when it is a link out of the agent folder. */
  async #confinedRoot(root: string): Promise<string> {
    const base = await realpathOr(this.#agentDir);
    const where = await realLocation(root, base);
    if (!where.inside) {
      throw new PromptPathError(outsideLinkMessage("prompt folder", root, where.real, base), {
        root,
        real: where.real,
      });
    }
    return where.real;
  }

  /** Reads `file` when it exists and its real path stays inside `root`; undefined when missing. */
  async #readConfined(file: string, realRoot: Promise<string>): Promise<string | undefined> {
    // The root first: a prompt folder that links out is refused even when the file is missing.
    const root = await realRoot;
    let real: string;
    try {
      real = await realpath(file);
    } catch (error) {
      // node:fs reports a missing file as a plain error with code ENOENT (ENOTDIR when a parent is
      // a file), not as Deno.errors.NotFound.
      if (isMissingFileError(error)) return undefined;
      throw error;
    }
    if (!isWithin(root, real)) {
      throw new PromptPathError(
        `Refused prompt file ${file}: it is a symbolic link to ${real}, outside the prompt folder ${root}.`,
        { file, real },
      );
    }
    const info = await Deno.stat(real);
    if (!info.isFile) {
      throw new PromptPathError(`Prompt path ${file} is not a file.`, { file });
    }
    return await Deno.readTextFile(real);
  }
}

/** True for the errors that mean "no such file" (Deno's and node:fs's forms). */
export function isMissingFileError(error: unknown): boolean {
  if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
    return true;
  }
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

async function readUrl(url: URL): Promise<string | undefined> {
  try {
    if (url.protocol === "file:") return await Deno.readTextFile(url);
    const res = await fetch(url);
    if (!res.ok) {
      await res.body?.cancel();
      return undefined;
    }
    return await res.text();
  } catch {
    return undefined;
  }
}

/** Joins a built-in prompt path (under this package's `prompts/`) into a URL. */
export function builtinPromptUrl(relativePath: string): URL {
  return new URL(join("../../prompts/", relativePath), import.meta.url);
}

/** True when two references name the same prompt, field by field. */
function sameReference(a: PromptReference, b: PromptReference): boolean {
  const x = a as Partial<C3lRef & PathRef>;
  const y = b as Partial<C3lRef & PathRef>;
  return x.path === y.path && x.c1 === y.c1 && x.c2 === y.c2 && x.c3 === y.c3 &&
    x.edition === y.edition && x.adaptation === y.adaptation;
}
