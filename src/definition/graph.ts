/**
 * `flowToMermaid`: the step graph of an agent as a Mermaid flowchart (`run-agent --graph`).
 *
 * @module
 */
import { type FlowEdge, stepEdges } from "./edges.ts";
import type { AgentDefinition, FlowStep } from "./types.ts";

/** The parts of an agent definition the graph needs. */
export type FlowGraphSource = Pick<AgentDefinition, "name" | "steps" | "entryStepId">;

/**
 * Renders the flow as a Mermaid `flowchart TD`: one node per step (its name and id; closing steps
 * as subroutine boxes), a start node into the entry step, edges labelled by intent / `onPass` /
 * `onFail retry` / `onFail fallback` / `onError …` (solid for routes, dotted for retries, fallbacks
 * and error policies), and end nodes for completion and abort. Template sections are not drawn.
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition } from "@stepflow/core";
 * import { flowToMermaid } from "@stepflow/core/definition";
 * console.log(flowToMermaid(await loadAgentDefinition("code-improver")));
 * // flowchart TD
 * //   start(("start")) --> s_a8f3
 * //   s_a8f3["Code Analysis<br/><small>s_a8f3</small>"]
 * //   …
 * //   s_a8f3 -->|"onPass"| s_b2c1
 * ```
 */
export function flowToMermaid(definition: FlowGraphSource): string {
  const steps = Object.values(definition.steps).filter((s) => s.kind !== "section");
  const ids = nodeIds(steps);
  const nodeOf = (id: string) => ids.get(id) ?? `missing_${sanitize(id)}`;
  const edges = steps.flatMap((step) => stepEdges(step));
  const lines = ["flowchart TD", `  %% agent ${label(definition.name)}`];

  lines.push(`  start(("start"))`);
  for (const step of steps) {
    const text = step.name === step.id
      ? label(step.id)
      : `${label(step.name)}<br/><small>${label(step.id)}</small>`;
    // Shapes say the kind: a closing step is a subroutine box, an input step (a person answers)
    // a parallelogram, an agent step (a child run) a hexagon naming its agent, every other step a box.
    lines.push(
      step.kind === "closing"
        ? `  ${nodeOf(step.id)}[["${text}"]]`
        : step.kind === "input"
        ? `  ${nodeOf(step.id)}[/"${text}"/]`
        : step.kind === "agent"
        ? `  ${nodeOf(step.id)}{{"${text}<br/><small>agent ${label(step.agent ?? "?")}</small>"}}`
        : `  ${nodeOf(step.id)}["${text}"]`,
    );
  }
  const used = new Set(
    edges.map((e) => ("end" in e.to ? e.to.end : "anyStep" in e.to ? "any" : "")),
  );
  if (used.has("complete")) lines.push(`  done((("complete")))`);
  if (used.has("abort")) lines.push(`  aborted((("aborted")))`);
  if (used.has("any")) lines.push(`  anyStep{{"any flow step"}}`);
  const missing = new Set(
    edges.flatMap((e) => ("step" in e.to && !ids.has(e.to.step) ? [e.to.step] : [])),
  );
  for (const id of missing) lines.push(`  ${nodeOf(id)}["${label(id)} (missing)"]:::missing`);

  lines.push(`  start --> ${nodeOf(definition.entryStepId)}`);
  for (const edge of edges) {
    lines.push(
      `  ${nodeOf(edge.from)} ${arrow(edge)}|"${label(edgeLabel(edge))}"| ${target(edge, nodeOf)}`,
    );
  }
  const closing = steps.filter((s) => s.kind === "closing").map((s) => nodeOf(s.id));
  if (closing.length > 0) {
    lines.push("  classDef closing stroke-width:3px");
    lines.push(`  class ${closing.join(",")} closing`);
  }
  const inputs = steps.filter((s) => s.kind === "input").map((s) => nodeOf(s.id));
  if (inputs.length > 0) {
    lines.push("  classDef input fill:#ede9fe,stroke:#5b21b6");
    lines.push(`  class ${inputs.join(",")} input`);
  }
  const agents = steps.filter((s) => s.kind === "agent").map((s) => nodeOf(s.id));
  if (agents.length > 0) {
    lines.push("  classDef agent fill:#e0f2fe,stroke:#0369a1");
    lines.push(`  class ${agents.join(",")} agent`);
  }
  if (missing.size > 0) lines.push("  classDef missing stroke-dasharray:4 4,color:#b00");
  return `${lines.join("\n")}\n`;
}

function arrow(edge: FlowEdge): string {
  return edge.kind === "route" ? "-->" : "-.->";
}

function edgeLabel(edge: FlowEdge): string {
  return "anyStep" in edge.to && edge.to.anyStep ? `jump (${edge.to.anyStep})` : edge.label;
}

function target(edge: FlowEdge, nodeOf: (id: string) => string): string {
  if ("step" in edge.to) return nodeOf(edge.to.step);
  if ("end" in edge.to) return edge.to.end === "complete" ? "done" : "aborted";
  return "anyStep";
}

/** Unique Mermaid-safe node ids (Mermaid chokes on dots and on ids like `end`). */
function nodeIds(steps: readonly FlowStep[]): Map<string, string> {
  const out = new Map<string, string>();
  const taken = new Set(["start", "done", "aborted", "anyStep"]);
  for (const step of steps) {
    let id = sanitize(step.id);
    if (/^(end|graph|subgraph|flowchart|class|classDef|style|click)$/i.test(id)) id = `step_${id}`;
    let unique = id;
    for (let n = 2; taken.has(unique); n++) unique = `${id}_${n}`;
    taken.add(unique);
    out.set(step.id, unique);
  }
  return out;
}

function sanitize(id: string): string {
  return id.replace(/[^A-Za-z0-9_]/g, "_");
}

/** Text safe inside a quoted Mermaid label. */
function label(text: string): string {
  return text.replace(/[&<>"#|]/g, (c) => `#${c.charCodeAt(0)};`);
}
