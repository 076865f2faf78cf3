/**
 * Glob patterns as the agent tools and permission rules read them: `*` (any characters but `/`),
 * `?` (one such character), `**` (any depth: `src/**\/*.ts`, `docs/**` — the folder itself too),
 * `{a,b}` (either; not nested), `[abc]` / `[!abc]` (a character class). Names starting with a dot
 * match like any other.
 *
 * Matching simulates the pattern as a state machine over the path, so its time is linear in the
 * path's length times the pattern's: a pattern from a model cannot make it backtrack
 * exponentially, as a regular expression translated from `*a*a*a…b` would. (Our own matcher also
 * because `node:path`'s `matchesGlob` needs environment access in Deno.)
 *
 * @module
 */

/** One element of a compiled pattern. */
type Token =
  | { kind: "char"; char: string }
  | { kind: "one" }
  | { kind: "star" }
  | { kind: "any" }
  | { kind: "dirs" }
  | { kind: "class"; chars: string; negate: boolean };

/** Brace alternatives beyond this many are read literally. */
const MAX_ALTERNATIVES = 64;
const cache = new Map<string, Machine[]>();
const CACHE_LIMIT = 512;

/**
 * True when the `/`-separated relative `path` matches `pattern` as a whole.
 *
 * @example
 * ```ts
 * import { globMatches } from "./glob_pattern.ts";
 * globMatches("src/lib/a.ts", "src/**\/*.ts"); // true
 * globMatches("docs", "docs/**"); // true: the folder itself is inside
 * globMatches("src/a.js", "src/*.{ts,tsx}"); // false
 * ```
 */
export function globMatches(path: string, pattern: string): boolean {
  let compiled = cache.get(pattern);
  if (!compiled) {
    compiled = expand(pattern).map((alt) => new Machine(tokenize(alt)));
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(pattern, compiled);
  }
  for (const machine of compiled) if (machine.matches(path)) return true;
  return false;
}

/** The brace alternatives of `pattern`, plus `dir` for a pattern `dir/**`. */
function expand(pattern: string): string[] {
  let alternatives = [pattern];
  for (;;) {
    const next: string[] = [];
    let changed = false;
    for (const alt of alternatives) {
      const open = alt.indexOf("{");
      const close = open === -1 ? -1 : alt.indexOf("}", open + 1);
      if (close === -1) {
        next.push(alt);
        continue;
      }
      changed = true;
      for (const option of alt.slice(open + 1, close).split(",")) {
        next.push(`${alt.slice(0, open)}${option}${alt.slice(close + 1)}`);
      }
    }
    if (!changed) break;
    if (next.length > MAX_ALTERNATIVES) {
      alternatives = [pattern.replaceAll("{", "\u0000{")]; // read the braces literally
      break;
    }
    alternatives = next;
  }
  const withDirs: string[] = [];
  for (const alt of alternatives) {
    withDirs.push(alt);
    if (alt.endsWith("/**") && alt.length > 3) withDirs.push(alt.slice(0, -3));
  }
  return withDirs;
}

function tokenize(pattern: string): Token[] {
  const tokens: Token[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "\u0000") {
      tokens.push({ kind: "char", char: pattern[++i] });
    } else if (c === "*") {
      if (pattern[i + 1] === "*") {
        const atSegmentStart = i === 0 || pattern[i - 1] === "/";
        if (atSegmentStart && pattern[i + 2] === "/") {
          tokens.push({ kind: "dirs" });
          i += 2;
        } else {
          tokens.push({ kind: "any" });
          i += 1;
        }
      } else if (tokens.at(-1)?.kind !== "star") {
        tokens.push({ kind: "star" });
      }
    } else if (c === "?") {
      tokens.push({ kind: "one" });
    } else if (c === "[" && pattern.indexOf("]", i + 2) !== -1) {
      const end = pattern.indexOf("]", i + 2);
      let chars = pattern.slice(i + 1, end);
      const negate = chars[0] === "!" || chars[0] === "^";
      if (negate) chars = chars.slice(1);
      tokens.push({ kind: "class", chars, negate });
      i = end;
    } else {
      tokens.push({ kind: "char", char: c });
    }
  }
  return tokens;
}

/**
 * One alternative of a compiled pattern, simulated over a path. States are token positions (the
 * last one accepts) and, for a `**\/` token at `i`, `-i-1`: inside the folders it skips. The
 * state sets live in typed arrays reused from run to run, with a generation stamp against
 * duplicates: a search matches every file it walks (and each permission rule again), and a set
 * and arrays allocated per character cost more than the matching. Runs are synchronous, so one
 * scratch space per alternative is enough.
 */
class Machine {
  readonly #tokens: Token[];
  /** The state sets being read and written, as lists of states. */
  #current: Int32Array;
  #next: Int32Array;
  /** By state (offset by the token count): the generation that last added it. */
  readonly #stamp: Int32Array;
  #generation = 0;
  #count = 0;

  constructor(tokens: Token[]) {
    this.#tokens = tokens;
    const states = 2 * tokens.length + 1;
    this.#current = new Int32Array(states);
    this.#next = new Int32Array(states);
    this.#stamp = new Int32Array(states);
  }

  /** True when `path` matches as a whole. */
  matches(path: string): boolean {
    const tokens = this.#tokens;
    this.#begin();
    this.#add(0);
    for (const c of path) {
      // The set just written is read; the other one is written.
      const current = this.#next;
      this.#next = this.#current;
      this.#current = current;
      const count = this.#count;
      this.#begin();
      for (let k = 0; k < count; k++) {
        const state = current[k];
        if (state < 0) {
          this.#add(state);
          if (c === "/") this.#add(-state);
          continue;
        }
        const token = tokens[state];
        if (!token) continue;
        switch (token.kind) {
          case "char":
            if (token.char === c) this.#add(state + 1);
            break;
          case "one":
            if (c !== "/") this.#add(state + 1);
            break;
          case "class":
            if (c !== "/" && inClass(token, c)) this.#add(state + 1);
            break;
          case "star":
            if (c !== "/") this.#add(state);
            break;
          case "any":
            this.#add(state);
            break;
          case "dirs":
            this.#add(-state - 1);
            if (c === "/") this.#add(state + 1);
            break;
        }
      }
      if (this.#count === 0) return false;
    }
    return this.#stamp[2 * tokens.length] === this.#generation;
  }

  #begin(): void {
    this.#generation++;
    this.#count = 0;
  }

  /**
   * Adds `state` to the set being written, with every state reachable from it without consuming
   * a character (past `*`, `**`, `**\/`), once each.
   */
  #add(state: number): void {
    const tokens = this.#tokens;
    for (let s = state;; s++) {
      const slot = s + tokens.length;
      if (this.#stamp[slot] === this.#generation) return;
      this.#stamp[slot] = this.#generation;
      this.#next[this.#count++] = s;
      const kind = s >= 0 ? tokens[s]?.kind : undefined;
      if (kind !== "star" && kind !== "any" && kind !== "dirs") return;
    }
  }
}

function inClass(token: { chars: string; negate: boolean }, c: string): boolean {
  let found = false;
  const chars = token.chars;
  for (let i = 0; i < chars.length && !found; i++) {
    if (chars[i + 1] === "-" && i + 2 < chars.length) {
      found = c >= chars[i] && c <= chars[i + 2];
      i += 2;
    } else {
      found = chars[i] === c;
    }
  }
  return found !== token.negate;
}
