/**
 * HTML built only through escaping: every value interpolated into {@linkcode html} is escaped
 * unless it is itself {@linkcode Html} made here. Model answers, prompts, step ids and file
 * contents are untrusted; nothing reaches the page as markup except through this module.
 *
 * @module
 */

/** A fragment of markup known to be safe (built by {@linkcode html} or {@linkcode raw}). */
export class Html {
  /** The markup. */
  readonly text: string;
  /** Wraps markup; use {@linkcode html} instead outside this module. */
  constructor(text: string) {
    this.text = text;
  }
  /** The markup. */
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/**
 * Escapes text for HTML content and quoted attribute values.
 *
 * @example
 * ```ts
 * import { escapeHtml } from "./html.ts";
 * console.log(escapeHtml(`<script>alert("x")</script>`));
 * // &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;
 * ```
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** What may be interpolated: text (escaped), numbers, safe fragments, lists of them, nothing. */
export type HtmlValue = string | number | Html | undefined | null | false | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === undefined || value === null || value === false) return "";
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

/**
 * Tagged template: the literal parts are markup, every `${value}` is escaped.
 *
 * @example
 * ```ts
 * import { html } from "./html.ts";
 * const answer = "<img src=x onerror=alert(1)>";
 * console.log(html`<pre>${answer}</pre>`.text); // <pre>&lt;img src=x onerror=alert(1)&gt;</pre>
 * ```
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/** Marks trusted markup (constants of this module's callers only, never data). */
export function raw(markup: string): Html {
  return new Html(markup);
}
