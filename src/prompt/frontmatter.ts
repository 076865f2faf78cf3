import { parse as parseYaml } from "yaml";
import { errorMessage, StepflowError } from "../errors.ts";

/** A prompt split into its YAML frontmatter and body. */
export interface FrontmatterSplit {
  /** Parsed frontmatter (empty object when there is none). */
  attributes: Record<string, unknown>;
  /** The text after the frontmatter. */
  body: string;
}

const FRONTMATTER = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

/**
 * Parses and removes a leading `---` YAML block.
 *
 * @param text the prompt text
 * @param file used in the error message when the YAML is invalid
 * @example
 * ```ts
 * import { splitFrontmatter } from "./frontmatter.ts";
 * const { attributes, body } = splitFrontmatter("---\ntitle: Hi\n---\nHello");
 * console.log(attributes.title, body); // "Hi" "Hello"
 * ```
 */
export function splitFrontmatter(text: string, file = "<prompt>"): FrontmatterSplit {
  const match = FRONTMATTER.exec(text);
  if (!match) return { attributes: {}, body: text.startsWith("\uFEFF") ? text.slice(1) : text };
  let parsed: unknown;
  try {
    parsed = match[1].trim() === "" ? {} : parseYaml(match[1]);
  } catch (error) {
    throw new StepflowError(
      "PROMPT_FRONTMATTER_INVALID",
      `Invalid YAML frontmatter in ${file}: ${
        errorMessage(error)
      }. Fix the block between the leading "---" lines.`,
      { details: { file } },
    );
  }
  const attributes = parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
    ? parsed as Record<string, unknown>
    : {};
  return { attributes, body: text.slice(match[0].length) };
}
