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
const cache = new Map<string, Token[][]>();
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
    compiled = expand(pattern).map(tokenize);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(pattern, compiled);
  }
  return compiled.some((tokens) => run(tokens, path));
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
 * Runs the pattern's state machine over `path`. State `i` waits at token `i`; state `-(i+1)` is
 * inside a `**\/` that has consumed characters (it may only leave after a `/`).
 */
function run(tokens: Token[], path: string): boolean {
  let states = closure(tokens, [0]);
  for (const c of path) {
    const next: number[] = [];
    for (const state of states) {
      if (state < 0) {
        const i = -state - 1;
        next.push(state);
        if (c === "/") next.push(i + 1);
        continue;
      }
      const token = tokens[state];
      if (!token) continue;
      switch (token.kind) {
        case "char":
          if (token.char === c) next.push(state + 1);
          break;
        case "one":
          if (c !== "/") next.push(state + 1);
          break;
        case "class":
          if (c !== "/" && inClass(token, c)) next.push(state + 1);
          break;
        case "star":
          if (c !== "/") next.push(state);
          break;
        case "any":
          next.push(state);
          break;
        case "dirs":
          next.push(-state - 1);
          if (c === "/") next.push(state + 1);
          break;
      }
    }
    if (next.length === 0) return false;
    states = closure(tokens, next);
  }
  return states.includes(tokens.length);
}

/** `states` plus every state reachable without consuming a character, without duplicates. */
function closure(tokens: Token[], states: number[]): number[] {
  const seen = new Set<number>();
  const stack = [...states];
  while (stack.length) {
    const state = stack.pop()!;
    if (seen.has(state)) continue;
    seen.add(state);
    const kind = state >= 0 ? tokens[state]?.kind : undefined;
    if (kind === "star" || kind === "any" || kind === "dirs") stack.push(state + 1);
  }
  return [...seen];
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
