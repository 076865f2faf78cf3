/**
 * Scripts and measures for the fan-out CLI tests: the fleet agent fans the reviewer out over
 * files (tests/flow/fan_out_fixtures.ts); a script answers each child by its file
 * (`promptIncludes`), so children asking at once each get their own answers.
 *
 * @module
 */

/** `src/f0.ts` … */
export const fileList = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => `src/f${i}.ts`);

/** How each file's review answers. */
export interface ReviewScript {
  /** Files list.files hands off. */
  files: string[];
  /** ms each review takes. */
  delayMs?: number;
  /** Files whose review fails (a backend error), and how often (default: always once per child). */
  failing?: Record<string, number>;
  /** Extra entries per file, before its answer (tool calls). */
  before?: (path: string) => Record<string, unknown>[];
  /** The reviewer's step that answers (default complete.review). */
  step?: string;
}

/** The prompt text that names a file's review (unique per file). */
export const reviewOf = (path: string): string => `Review the file ${path}.`;

/** A scripted-backend script (JSON) for the fleet and its reviewers. */
export function reviewScript(script: ReviewScript): string {
  const usage = { inputTokens: 10, outputTokens: 5 };
  const reviews: Record<string, unknown>[] = [];
  for (const path of script.files) {
    const promptIncludes = reviewOf(path);
    for (let i = 0; i < (script.failing?.[path] ?? 0); i++) {
      reviews.push({ promptIncludes, error: `cannot review ${path}`, delayMs: 20 });
    }
    for (const entry of script.before?.(path) ?? []) reviews.push({ promptIncludes, ...entry });
    reviews.push({
      promptIncludes,
      delayMs: script.delayMs ?? 0,
      usage,
      output: { verdict: `ok ${path}`, next_action: { action: "complete" } },
    });
  }
  return JSON.stringify({
    "list.files": [{ output: { files: script.files, next_action: { action: "next" } }, usage }],
    [script.step ?? "complete.review"]: reviews,
    "complete.fleet": [{
      output: { summary: "reported", next_action: { action: "complete" } },
      usage,
    }],
  });
}

/** One item row of `--show --json`'s `fanOuts`. */
export interface ItemRow {
  index: number;
  item: string;
  status: string;
  runId?: string;
  children: number;
  startedAt?: string;
  endedAt?: string;
  durationMs?: number;
  usage?: { inputTokens: number; outputTokens: number };
}

/** The most children in flight at once, from their recorded start and end times. */
export function mostInFlight(rows: readonly ItemRow[]): number {
  const moments: [number, number][] = [];
  for (const row of rows) {
    if (!row.startedAt || !row.endedAt) continue;
    moments.push([Date.parse(row.startedAt), 1], [Date.parse(row.endedAt), -1]);
  }
  // An end and a start at the same millisecond: the end first (the place was given back).
  moments.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, delta] of moments) most = Math.max(most, now += delta);
  return most;
}
