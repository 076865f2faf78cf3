/**
 * Just enough Markdown structure for the docs tooling: fenced blocks, headings and their GitHub
 * anchors, tables, links. Used by `deno task docs` (tables of contents) and by the docs tests.
 *
 * @module
 */

/** A fenced code block. */
export interface FencedBlock {
  /** The info string after the fence (`ts`, `console`, `json ignore`, …). */
  info: string;
  /** The block's lines, without the fences. */
  lines: string[];
  /** 1-based line number of the opening fence. */
  line: number;
  /** The `<!-- file: PATH -->` marker right above the block, when there is one. */
  file?: string;
}

/** A heading outside code blocks. */
export interface Heading {
  /** 1 for `#`, 2 for `##`, … */
  level: number;
  /** The heading text as written. */
  text: string;
  /** The GitHub anchor of the heading (unique in the page). */
  slug: string;
  /** 1-based line number. */
  line: number;
}

/** What {@linkcode parseMarkdown} finds in one page. */
export interface MarkdownPage {
  /** Every fenced block, in order. */
  blocks: FencedBlock[];
  /** Every heading outside fenced blocks, in order. */
  headings: Heading[];
  /** 1-based numbers of the lines that lie inside fenced blocks (fences included). */
  codeLines: Set<number>;
}

const FENCE = /^(`{3,}|~{3,})(.*)$/;
const FILE_MARKER = /^<!--\s*file:\s*(\S+)\s*-->$/;

/**
 * Parses the page's fenced blocks and headings in one pass.
 *
 * @example
 * ```ts
 * import { parseMarkdown } from "./markdown.ts";
 * const fence = "`".repeat(3); // a fence inside this example would end it
 * const page = parseMarkdown(`# Title\n\n${fence}ts\nconst x = 1;\n${fence}\n`);
 * console.log(page.headings[0].slug, page.blocks[0].info); // title ts
 * ```
 */
export function parseMarkdown(text: string): MarkdownPage {
  const lines = text.split("\n");
  const blocks: FencedBlock[] = [];
  const headings: Heading[] = [];
  const codeLines = new Set<number>();
  const seen = new Map<string, number>();
  let open: { fence: string; block: FencedBlock } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (open) {
      codeLines.add(i + 1);
      if (line.trim() === open.fence) {
        blocks.push(open.block);
        open = undefined;
      } else {
        open.block.lines.push(line);
      }
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      codeLines.add(i + 1);
      // The marker sits right above the fence, or above the blank line `deno fmt` puts between.
      const above = i > 1 && lines[i - 1].trim() === "" ? lines[i - 2] : lines[i - 1] ?? "";
      const marker = i > 0 ? FILE_MARKER.exec(above.trim()) : null;
      const block: FencedBlock = { info: fence[2].trim(), lines: [], line: i + 1 };
      if (marker) block.file = marker[1];
      open = { fence: fence[1], block };
      continue;
    }
    const heading = /^(#{1,6}) (.+)$/.exec(line);
    if (heading) {
      const base = githubSlug(heading[2]);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      headings.push({
        level: heading[1].length,
        text: heading[2].trim(),
        slug: count === 0 ? base : `${base}-${count}`,
        line: i + 1,
      });
    }
  }
  return { blocks, headings, codeLines };
}

/**
 * The anchor GitHub gives a heading: lower case, punctuation dropped (letters, digits, `_`, `-` and
 * spaces kept), spaces turned into `-`.
 *
 * @example
 * ```ts
 * import { githubSlug } from "./markdown.ts";
 * console.log(githubSlug("CLI: `deno task run-agent`")); // cli-deno-task-run-agent
 * ```
 */
export function githubSlug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "").replace(
    / /g,
    "-",
  );
}

/** True for a table row (a line that starts with `|`). */
export function isTableRow(line: string): boolean {
  return line.trimStart().startsWith("|");
}

/** The start and end markers of a generated table of contents. */
export const TOC_START = "<!-- contents -->";
/** @see TOC_START */
export const TOC_END = "<!-- /contents -->";

/**
 * The table of contents of a page: one link per `##` heading, with its `###` headings indented
 * below, between {@linkcode TOC_START} and {@linkcode TOC_END}.
 */
export function tableOfContents(page: MarkdownPage): string {
  const items: string[] = [];
  for (const heading of page.headings) {
    if (heading.text === "Contents") continue;
    if (heading.level === 2) items.push(`- [${plain(heading.text)}](#${heading.slug})`);
    if (heading.level === 3) items.push(`  - [${plain(heading.text)}](#${heading.slug})`);
  }
  return [TOC_START, "", ...items, "", TOC_END].join("\n");
}

/** Heading text as link text: brackets would end the link early. */
function plain(text: string): string {
  return text.replace(/[[\]]/g, "");
}

/**
 * Puts the current table of contents into `text` (after the first heading's paragraph when the
 * page has none yet, else in place of the old one) and returns the new text.
 */
export function withTableOfContents(text: string): string {
  const toc = tableOfContents(parseMarkdown(text));
  const start = text.indexOf(TOC_START);
  const end = text.indexOf(TOC_END);
  if (start !== -1 && end > start) {
    return text.slice(0, start) + toc + text.slice(end + TOC_END.length);
  }
  // No contents yet: put them before the first `##` heading.
  const match = /^## /m.exec(text);
  if (!match) return text;
  return text.slice(0, match.index) + "## Contents\n\n" + toc + "\n\n" + text.slice(match.index);
}
