/**
 * The `html` module (registered only on request): pull the body, tags or text out of HTML.
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";
import { ModuleArgumentError } from "./values.ts";

/** The arguments of `html`. */
export interface HtmlArgs {
  /** `body`, `tag` (first), `tags` (all) or `text` (markup removed). */
  op: "body" | "tag" | "tags" | "text";
  /** The HTML. */
  html: string;
  /** tag/tags: the tag name, e.g. `h1`. */
  tag?: string;
}

/** `html tag html=page tag="h1" -> title`, `html text html=page -> plain`. Simple, regex based. */
export const htmlTool: Tool<HtmlArgs, unknown> = {
  name: "html",
  description:
    'Extracts from HTML: html body html=page -> body; html tag html=page tag="h1" -> title; html tags html=page tag="li" -> items; html text html=page -> text.',
  inputSchema: z.strictObject({
    op: z.enum(["body", "tag", "tags", "text"]).describe("The operation."),
    html: z.string().describe("The HTML text."),
    tag: z.string().optional().describe('tag/tags: the tag name, e.g. "h1".'),
  }),
  execute({ op, html, tag }) {
    if (op === "body") return /<body[^>]*>([\s\S]*?)<\/body>/i.exec(html)?.[1].trim() ?? "";
    if (op === "text") {
      return html.replace(/<(script|style)[^>]*>[\s\S]*?<\/\1>/gi, "").replace(/<[^>]*>/g, "")
        .replace(/\s+/g, " ").trim();
    }
    if (!tag || !/^[a-zA-Z][a-zA-Z0-9-]*$/.test(tag)) {
      throw new ModuleArgumentError(`html ${op}`, 'tag= must be a tag name such as "h1"');
    }
    const re = new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`, "gi");
    const found = [...html.matchAll(re)].map((m) => m[1].trim());
    return op === "tag" ? found[0] ?? "" : found;
  },
};
