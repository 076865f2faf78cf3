/**
 * The flow graph of an agent as {@linkcode graphSvg} nodes and edges, with a run's path on it.
 *
 * @module
 */
import { stepEdges } from "../definition/edges.ts";
import type { FlowGraphSource } from "../definition/graph.ts";
import type { GraphEdge, GraphNode } from "./graph_svg.ts";

/** What of a run is drawn on the graph. */
export interface RunPath {
  /** Executions per step. */
  counts: ReadonlyMap<string, number>;
  /** Transitions taken, as `from>to` (`done`/`aborted` for the end). */
  taken: ReadonlySet<string>;
  /** The step entered first. */
  firstStep?: string;
  /** The step the run is at now (a running run). */
  current?: string;
}

/**
 * Every step and every route of the agent (closing steps, end nodes, missing targets), with the
 * steps the run executed marked `visited` and counted, and the transitions it took marked `taken`.
 */
export function flowGraph(
  definition: FlowGraphSource,
  path?: RunPath,
  agentHref?: (stepId: string) => string,
): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const steps = Object.values(definition.steps).filter((s) => s.kind !== "section");
  const ids = new Set(steps.map((s) => s.id));
  const nodes: GraphNode[] = [{ id: "#start", label: "start", classes: ["terminal"] }];
  for (const step of steps) {
    const n = path?.counts.get(step.id) ?? 0;
    const classes: string[] = [step.kind];
    if (n > 0) classes.push("visited");
    if (path?.current === step.id) classes.push("current");
    nodes.push({
      id: step.id,
      label: step.name,
      ...(step.name !== step.id ? { sublabel: step.id } : {}),
      classes,
      ...(n > 0 ? { badge: String(n) } : {}),
      ...(agentHref ? { href: agentHref(step.id) } : {}),
    });
  }
  const edges: GraphEdge[] = [];
  const taken = (from: string, to: string) => path?.taken.has(`${from}>${to}`) ?? false;
  edges.push({
    from: "#start",
    to: definition.entryStepId,
    classes: path?.firstStep === definition.entryStepId ? ["taken"] : [],
  });
  const ends = new Set<string>();
  const missing = new Set<string>();
  for (const step of steps) {
    for (const edge of stepEdges(step)) {
      let to: string;
      if ("step" in edge.to) {
        to = edge.to.step;
        if (!ids.has(to)) missing.add(to);
      } else if ("end" in edge.to) {
        to = edge.to.end === "complete" ? "#done" : "#aborted";
        ends.add(to);
      } else {
        continue; // a gate `jump` may lead anywhere: drawn as the label of the taken edges only
      }
      const key = to === "#done" ? "done" : to === "#aborted" ? "aborted" : to;
      edges.push({
        from: step.id,
        to,
        label: edge.label,
        classes: [edge.kind, ...(taken(step.id, key) ? ["taken"] : [])],
      });
    }
  }
  // Jumps and other moves the declared routes do not show (gate `jump`): drawn as taken edges.
  for (const move of path?.taken ?? []) {
    const [from, to] = move.split(">");
    const target = to === "done" ? "#done" : to === "aborted" ? "#aborted" : to;
    if (!edges.some((e) => e.from === from && e.to === target)) {
      if (target.startsWith("#")) ends.add(target);
      edges.push({ from, to: target, label: "jump", classes: ["taken", "jump"] });
    }
  }
  for (const id of missing) nodes.push({ id, label: `${id} (missing)`, classes: ["missing"] });
  if (ends.has("#done")) nodes.push({ id: "#done", label: "complete", classes: ["terminal"] });
  if (ends.has("#aborted")) {
    nodes.push({ id: "#aborted", label: "aborted", classes: ["terminal", "abort"] });
  }
  return { nodes, edges };
}
