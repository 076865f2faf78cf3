/**
 * Part of `deno task screenshots`: renders docs/images/live-view.png, the picture of the live view
 * on the README. It runs the real CLI (`main` of run-agent, as `deno task demo` does) with a
 * terminal on stderr, replays what the CLI wrote through a tiny terminal model, and has headless
 * Chromium (launched as the dashboard's browser tests launch it) take a picture of two moments:
 * mid-run and the end.
 *
 * @module
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { main } from "../src/cli/run_agent.ts";
import { launchBrowser } from "../tests/ui/browser.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const OUT = join(ROOT, "docs/images/live-view.png");
const COLUMNS = 100;

/** Keeps the summary and the history table; the JSON output below them adds nothing to a picture. */
function cutOutput(lines: string[]): string[] {
  const at = lines.findIndex((l) => l.startsWith("Output:"));
  return at === -1 ? lines : [...lines.slice(0, at + 1), "  { … }"];
}

/**
 * Enough of a terminal for the live view: `\r`, `\n`, erase line (`ESC[2K`, `ESC[K`) and SGR colour
 * codes, kept inline so that the page can colour them.
 */
function terminal() {
  const rows: string[] = [""];
  let column = 0;
  return {
    feed(text: string) {
      let i = 0;
      while (i < text.length) {
        const ch = text[i];
        if (ch === "\x1b") {
          // deno-lint-ignore no-control-regex
          const m = /^\x1b\[([0-9;]*)([A-Za-z])/.exec(text.slice(i, i + 16));
          if (m) {
            if (m[2] === "K") rows[rows.length - 1] = m[1] === "2" ? "" : rowUpTo(column);
            else if (m[2] === "m") write(m[0]);
            i += m[0].length;
            continue;
          }
        }
        if (ch === "\r") column = 0;
        else if (ch === "\n") {
          rows.push("");
          column = 0;
        } else write(ch);
        i++;
      }
      function write(s: string) {
        const row = rows[rows.length - 1];
        const head = rowUpTo(column);
        // Colour codes take no column; a character replaces the one under the cursor, if any.
        const rest = s.startsWith("\x1b") ? row.slice(head.length) : row.slice(head.length + 1);
        rows[rows.length - 1] = head + s + rest;
        if (!s.startsWith("\x1b")) column++;
      }
      function rowUpTo(col: number): string {
        const row = rows[rows.length - 1];
        let seen = 0;
        let j = 0;
        // Colour codes at the cursor stay before it: they belong to what was written so far.
        while (j < row.length && (seen < col || row[j] === "\x1b")) {
          if (row[j] === "\x1b") {
            // deno-lint-ignore no-control-regex
            const m = /^\x1b\[[0-9;]*m/.exec(row.slice(j));
            if (m) {
              j += m[0].length;
              continue;
            }
          }
          seen++;
          j++;
        }
        return row.slice(0, j);
      }
    },
    lines: () => [...rows],
  };
}

// deno-lint-ignore no-control-regex
const SGR = /\x1b\[([0-9;]*)m/g;

const COLOURS: Record<string, string> = {
  "1": "font-weight:bold",
  "2": "opacity:.65",
  "31": "color:#ff6b6b",
  "32": "color:#69db7c",
  "33": "color:#ffd43b",
  "34": "color:#74c0fc",
  "35": "color:#e599f7",
  "36": "color:#66d9e8",
  "90": "color:#868e96",
};

function toHtml(line: string): string {
  let out = "";
  let open = 0;
  let last = 0;
  for (const m of line.matchAll(SGR)) {
    out += escape(line.slice(last, m.index));
    last = m.index! + m[0].length;
    const codes = m[1].split(";").filter((c) => c !== "");
    if (codes.length === 0 || codes.some((c) => c === "0" || c === "39" || c === "22")) {
      out += "</span>".repeat(open);
      open = 0;
    }
    const style = codes.map((c) => COLOURS[c]).filter(Boolean).join(";");
    if (style) {
      out += `<span style="${style}">`;
      open++;
    }
  }
  return out + escape(line.slice(last)) + "</span>".repeat(open);
}

function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function page(panels: { title: string; lines: string[] }[]): string {
  const body = panels.map((p) =>
    `<div class="label">${escape(p.title)}</div><pre>${
      p.lines.map(toHtml).join("\n").trimEnd()
    }</pre>`
  ).join("");
  return `<!doctype html><meta charset="utf-8"><style>
body{margin:0;background:#1e1f24;color:#e9ecef;font:14px/1.35 "DejaVu Sans Mono",monospace;padding:14px 18px}
.bar{color:#adb5bd;margin-bottom:6px}.label{color:#868e96;margin:10px 0 2px;font-size:12px}
pre{margin:0;white-space:pre}</style>
<div class="bar">$ deno task demo</div>${body}`;
}

/** Runs the demo, then has Chromium take the picture. */
async function screenshot(): Promise<void> {
  const frames: string[][] = [];
  const screen = terminal();
  const writer = {
    write(text: string) {
      screen.feed(text);
      if (text.includes("waiting for the model")) frames.push(screen.lines());
    },
  };

  const code = await main([
    "--agent",
    "issue-solver",
    "--backend",
    "scripted",
    "--script",
    ".agent/issue-solver/demo.script.yaml",
    "--topic",
    "Fix the flaky login test",
  ], {
    stdout: writer,
    stderr: writer,
    stdin: null,
    cwd: ROOT,
    env: { TERM: "xterm-256color" },
    isTerminal: { stdin: false, stdout: true, stderr: true },
    columns: COLUMNS,
  });
  if (code !== 0) throw new Error(`the demo run exited ${code}`);
  // A frame where the run is on its third step: the status line shows step, attempt and history.
  const during = frames.find((f) => f.some((l) => l.includes("attempt 2"))) ?? frames.at(-1) ?? [];
  const after = screen.lines();

  const html = page([
    { title: "while it runs", lines: during },
    { title: "when it ends", lines: cutOutput(after) },
  ]);
  await Deno.mkdir(join(ROOT, "docs/images"), { recursive: true });
  // The same Chromium launch as the dashboard's browser tests and screenshots.
  await using browser = await launchBrowser();
  const tab = await browser.newPage();
  await tab.setViewportSize({ width: 980, height: 380 });
  await tab.setContent(html);
  await tab.screenshot({ path: OUT });
  console.log(`wrote ${OUT}`);
}

await screenshot();
