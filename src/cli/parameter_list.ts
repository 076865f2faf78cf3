/**
 * The "Parameters of agent …" block of `run-agent`: each parameter the agent declares, as the flag
 * that sets it, its type, description, default and whether it is required. It ends `--help` and
 * every usage error about a parameter, so the fix is on screen.
 *
 * @module
 */
import type { ParameterDefinition } from "../definition/schema.ts";
import { parameterFlag } from "../definition/parameters.ts";

/** The "Parameters of agent …" block listing each declared parameter. */
export function parameterList(
  parameters: Readonly<Record<string, ParameterDefinition>>,
  agentName?: string,
): string {
  const entries = Object.entries(parameters);
  const title = `Parameters of agent ${agentName ? `"${agentName}"` : ""}`.trimEnd();
  if (entries.length === 0) return `${title}: none (the agent declares no parameters).`;
  const labels = entries.map(([key, def]) => {
    const flag = parameterFlag(key, def);
    if (def.type === "boolean") return `--${flag} [true|false]`;
    const element = def.type === "array" ? def.items ?? "string" : def.type;
    const shown = def.enum ? def.enum.map(String).join("|") : element;
    return def.type === "array" ? `--${flag} <${shown}>...` : `--${flag} <${shown}>`;
  });
  const width = Math.max(...labels.map((l) => l.length)) + 2;
  const lines = [`${title}:`];
  entries.forEach(([, def], i) => {
    const notes = [
      def.required && def.default === undefined ? "required" : undefined,
      def.default !== undefined ? `default ${JSON.stringify(def.default)}` : undefined,
      def.type === "array" ? "repeat the flag or give a comma list" : undefined,
    ].filter(Boolean);
    const description = [def.description, notes.length > 0 ? `(${notes.join(", ")})` : undefined]
      .filter(Boolean).join(" ");
    lines.push(`  ${labels[i].padEnd(width)}${description}`.trimEnd());
  });
  return lines.join("\n");
}
