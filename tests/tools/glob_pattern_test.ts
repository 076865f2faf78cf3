import assert from "node:assert/strict";
import { globMatches } from "../../src/tools/glob_pattern.ts";

Deno.test("glob patterns: *, ?, **, braces, classes, dotfiles, literal specials", () => {
  const cases: [string, string, boolean][] = [
    ["a.ts", "*.ts", true],
    ["src/a.ts", "*.ts", false],
    ["src/a.ts", "**/*.ts", true],
    ["a.ts", "**/*.ts", true],
    [".github/ci.ts", "**/*.ts", true],
    ["src/lib/deep/a.ts", "src/**/*.ts", true],
    ["src/a.ts", "src/**/*.ts", true],
    ["docs", "docs/**", true],
    ["docs/a/b.md", "docs/**", true],
    ["docsx/a.md", "docs/**", false],
    ["src/a.tsx", "src/*.{ts,tsx}", true],
    ["src/a.js", "src/*.{ts,tsx}", false],
    ["a1.txt", "a?.txt", true],
    ["a/.txt", "a?.txt", false],
    ["b.txt", "[abc].txt", true],
    ["d.txt", "[!abc].txt", true],
    ["a.txt", "[!abc].txt", false],
    ["a+b(1).txt", "a+b(1).txt", true],
    ["aab(1).txt", "a+b(1).txt", false],
    ["x$y^z", "x$y^z", true],
    ["[x", "[x", true],
    ["{x", "{x", true],
    ["anything/at/all", "**", true],
  ];
  for (const [path, pattern, expected] of cases) {
    assert.equal(globMatches(path, pattern), expected, `${path} ~ ${pattern}`);
  }
});

Deno.test("glob patterns: hostile patterns answer in linear time (no backtracking blow-up)", () => {
  // As a regular expression, 8 repetitions already take a minute on a 60-character path.
  assert.equal(globMatches("a".repeat(400), `${"*a".repeat(200)}b`), false);
  assert.equal(globMatches("a".repeat(400), "**a".repeat(200)), true);
  assert.equal(globMatches("x", "{".repeat(1_000)), false);
  assert.equal(globMatches("{".repeat(3), "{".repeat(3)), true);
  // A brace bomb (1,024 alternatives) is read literally instead of expanded.
  const bomb = "{a,b}".repeat(10);
  assert.equal(globMatches("a".repeat(10), bomb), false);
  assert.equal(globMatches(bomb, bomb), true);
  assert.equal(globMatches("src/ab", "src/{a,b}{a,b}"), true);
});
