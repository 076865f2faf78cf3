/**
 * The flow graph of an agent as {@linkcode graphSvg} nodes and edges, with a run's path on it.
 *
 * @module
 */
import { stepEdges } from "../definition/edges.ts";
import type { FlowGraphSource } from "../definition/graph.ts";
import type { GraphEdge, GraphNode, NodeProgress } from "./graph_svg.ts";

/** What of a run is drawn on the graph. */
export interface RunPath {
  /** Executions per step. */
  counts: ReadonlyMap<string, number>;
  /**
   * Transitions taken, as `from>to` (a step, or an end: `done`, `aborted`, `failed`, `cancelled`,
   * `timeout`) → how (intent or transition).
   */
  taken: ReadonlyMap<string, ReadonlySet<string>>;
  /** The step entered first. */
  firstStep?: string;
  /** The step the run is at now (a running run). */
  current?: string;
  /** A progress bar per step: a fan-out step's children (done, failed, running, waiting of all). */
  progress?: ReadonlyMap<string, NodeProgress>;
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
    const progress = path?.progress?.get(step.id);
    if (progress) classes.push("fanout");
    nodes.push({
      id: step.id,
      label: step.name,
      ...(step.name !== step.id ? { sublabel: step.id } : {}),
      classes,
      ...(n > 0 ? { badge: String(n) } : {}),
      ...(agentHref ? { href: agentHref(step.id) } : {}),
      ...(progress ? { progress } : {}),
    });
  }
  const edges: GraphEdge[] = [];
  edges.push({
    from: "#start",
    to: definition.entryStepId,
    classes: path?.firstStep === definition.entryStepId ? ["taken"] : [],
  });
  const ends = new Set<string>();
  const missing = new Set<string>();
  const declared: { edge: GraphEdge; label: string }[] = [];
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
        continue; // a gate `jump` may lead anywhere: drawn only where the run jumped
      }
      const drawn: GraphEdge = { from: step.id, to, label: edge.label, classes: [edge.kind] };
      declared.push({ edge: drawn, label: edge.label });
      edges.push(drawn);
    }
  }
  // Highlight the taken moves. Where several routes join the same two steps (a gate's `next`
  // and `repeat` both looping), the one named by the intent/transition is highlighted.
  for (const [move, hows] of path?.taken ?? []) {
    const [from, rawTo] = move.split(">");
    const to = Object.hasOwn(END_LABELS, rawTo) ? `#${rawTo}` : rawTo;
    const parallel = declared.filter((d) => d.edge.from === from && d.edge.to === to);
    const named = parallel.filter((d) => [...hows].some((how) => routeMatches(d.label, how)));
    const lit = named.length > 0 ? named : parallel;
    for (const d of lit) d.edge.classes!.push("taken");
    if (lit.length === 0) {
      // A move no declared route shows (a gate `jump`): drawn as a taken edge of its own.
      if (to.startsWith("#")) ends.add(to);
      edges.push({ from, to, label: [...hows].join(", ") || "jump", classes: ["taken", "jump"] });
    }
  }
  for (const id of missing) nodes.push({ id, label: `${id} (missing)`, classes: ["missing"] });
  if (ends.has("#done")) nodes.push({ id: "#done", label: "complete", classes: ["terminal"] });
  // A run that did not complete ends on a node named by its status (a failed run is not aborted).
  for (const [name, label] of Object.entries(END_LABELS)) {
    if (name !== "done" && ends.has(`#${name}`)) {
      nodes.push({ id: `#${name}`, label, classes: ["terminal", "abort"] });
    }
  }
  return { nodes, edges };
}

/** The end nodes of a run (`taken` moves end on them) and their labels. */
const END_LABELS: Readonly<Record<string, string>> = Object.freeze({
  done: "complete",
  aborted: "aborted",
  declined: "declined",
  failed: "failed",
  cancelled: "cancelled",
  timeout: "timeout",
});

/** Whether a route's label is the one an intent or transition took. */
function routeMatches(label: string, how: string): boolean {
  if (!how) return false;
  if (label === how) return true;
  if (how === "next" && label === "onPass") return true;
  return label.startsWith("on") && label.includes(how);
}
