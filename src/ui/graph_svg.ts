/**
 * A small layered layout of a directed graph, drawn as SVG on the server: the flow graph of an
 * agent and the DAG of a tool plan. No mermaid, nothing fetched: the page gets finished markup.
 *
 * Layout: `graph_layout.ts` puts the nodes on layers (back edges, the loops of retries and
 * fallbacks, set aside); this file gives them coordinates and draws boxes and edges. Back edges and
 * self loops are drawn as arcs on the side.
 *
 * @module
 */
import { layerGraph } from "./graph_layout.ts";
import { type Html, html as h } from "./html.ts";

/** A node to draw. */
export interface GraphNode {
  /** Unique id. */
  id: string;
  /** Text on the box (shortened when long; the full text is the tooltip). */
  label: string;
  /** Second, smaller line (e.g. the step id). */
  sublabel?: string;
  /** CSS classes (`start`, `end`, `closing`, `missing`, `visited`, a step state…). */
  classes?: string[];
  /** A badge in the corner (e.g. how many times the run executed the step). */
  badge?: string;
  /** A link target for the box. */
  href?: string;
  /** A progress bar along the box's bottom edge (a fan-out step's children). */
  progress?: NodeProgress;
}

/** A bar of parts of a whole, e.g. a fan-out's items: done, failed, running, waiting of total. */
export interface NodeProgress {
  /** The whole (the bar's full width); parts past it are cut. */
  total: number;
  /** The parts, left to right: their colour class (`ok`, `bad`, `run`, `wait`, `warn`) and size. */
  parts: { kind: string; count: number }[];
  /** The bar in words (its tooltip and accessible name). */
  text: string;
}

/**
 * The parts of `progress` as rectangles within `x, y, width, height` (the rest of the whole is the
 * track, drawn first) — shared by a graph node's bar and a fan-out section's.
 */
export function progressRects(
  progress: NodeProgress,
  x: number,
  y: number,
  width: number,
  height: number,
): Html {
  const total = Math.max(1, progress.total);
  let at = 0;
  const parts = progress.parts.flatMap((part) => {
    const count = Math.max(0, Math.min(part.count, total - at));
    if (count === 0) return [];
    const left = x + (at / total) * width;
    at += count;
    const right = x + (at / total) * width;
    return [
      h`<rect class="seg ${part.kind}" x="${n2(left)}" y="${y}" width="${
        n2(right - left)
      }" height="${height}"/>`,
    ];
  });
  return h`<g class="progress-bar" role="img" aria-label="${progress.text}"><title>${progress.text}</title><rect class="track" x="${x}" y="${y}" width="${width}" height="${height}"/>${parts}</g>`;
}

function n2(value: number): number {
  return Math.round(value * 100) / 100;
}

/** An edge to draw. */
export interface GraphEdge {
  /** Source node id. */
  from: string;
  /** Target node id. */
  to: string;
  /** Label at the edge's middle. */
  label?: string;
  /** CSS classes (`retry`, `fallback`, `error` draw dashed; `taken` highlights the run's path). */
  classes?: string[];
}

const NODE_W = 180;
const NODE_H = 46;
const GAP_X = 40;
const GAP_Y = 64;
const MARGIN = 24;
/** Room on the left for edges that skip layers. */
const LEFT_LANE = 90;
const MAX_LABEL = 24;
const MAX_EDGE_LABEL = 28;
/** Vertical distance between the stacked labels of one step's self loops (10 px text). */
const LOOP_LABEL_GAP = 16;

interface Placed {
  node: GraphNode;
  layer: number;
  order: number;
  x: number;
  y: number;
}

/**
 * Lays out and draws a graph as an inline SVG element.
 *
 * @param nodes the nodes (the first ones are preferred as roots)
 * @param edges edges between node ids (edges naming unknown nodes are skipped)
 * @param title accessible title of the drawing
 *
 * @example
 * ```ts
 * import { graphSvg } from "./graph_svg.ts";
 * const svg = graphSvg(
 *   [{ id: "a", label: "A" }, { id: "b", label: "B" }],
 *   [{ from: "a", to: "b", label: "next", classes: ["taken"] }],
 *   "demo",
 * );
 * console.log(svg.text.startsWith("<svg")); // true
 * ```
 */
export function graphSvg(
  nodes: readonly GraphNode[],
  edges: readonly GraphEdge[],
  title: string,
): Html {
  const byId = new Map<string, number>();
  nodes.forEach((n, i) => byId.set(n.id, i));
  const usable = edges.filter((e) => byId.has(e.from) && byId.has(e.to));
  const out: number[][] = nodes.map(() => []);
  for (const e of usable) out[byId.get(e.from)!].push(byId.get(e.to)!);
  const { back, layers, layer, order } = layerGraph(out);

  const widest = Math.max(1, ...layers.map((row) => row?.length ?? 0));
  const width = MARGIN * 2 + LEFT_LANE + widest * NODE_W + (widest - 1) * GAP_X + 200;
  const height = MARGIN * 2 + layers.length * NODE_H + Math.max(0, layers.length - 1) * GAP_Y;
  const placed: Placed[] = nodes.map((node, v) => {
    const row = layers[layer[v]];
    const rowWidth = row.length * NODE_W + (row.length - 1) * GAP_X;
    const x0 = MARGIN + LEFT_LANE + (widest * NODE_W + (widest - 1) * GAP_X - rowWidth) / 2;
    return {
      node,
      layer: layer[v],
      order: order[v],
      x: x0 + order[v] * (NODE_W + GAP_X),
      y: MARGIN + layer[v] * (NODE_H + GAP_Y),
    };
  });

  const loops = new Map<string, number>();
  const loopCount = new Map<string, number>();
  for (const e of usable) {
    if (e.from === e.to) loopCount.set(e.from, (loopCount.get(e.from) ?? 0) + 1);
  }
  const edgeMarkup = usable.map((e, i) => {
    const a = placed[byId.get(e.from)!];
    const b = placed[byId.get(e.to)!];
    const isBack = back.has(`${byId.get(e.from)}>${byId.get(e.to)}`);
    let route: EdgeRoute;
    if (a === b) {
      const k = loops.get(e.from) ?? 0;
      loops.set(e.from, k + 1);
      route = selfLoopRoute(a, k, loopCount.get(e.from) ?? 1);
    } else route = edgeRoute(a, b, isBack, i);
    return edgeSvg(e, route);
  });
  return h`
    <svg class="graph" xmlns="http://www.w3.org/2000/svg" role="img" width="${width}"
      height="${height}"
      viewBox="0 0 ${width} ${height}"><title>${title}</title><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>${edgeMarkup}${
    placed.map(nodeSvg)
  }</svg>
  `;
}

/** How an edge is drawn: its path, where its label stands, and its side class (if any). */
interface EdgeRoute {
  d: string;
  lx: number;
  ly: number;
  side: string;
}

/**
 * The `k`-th of a step's `n` self loops. Several loops on one step (next and repeat to itself,
 * onError retry) nest outwards; their labels stand in one column right of the outermost loop, a
 * line apart (edge labels are left-aligned), so that no label overlaps another or a loop.
 */
function selfLoopRoute(a: Placed, k: number, n: number): EdgeRoute {
  const x = a.x + NODE_W;
  const y = a.y + NODE_H / 2;
  const r = 40 + k * 26;
  return {
    d: `M${x},${y - 8} C${x + r},${y - 30 - k * 6} ${x + r},${y + 30 + k * 6} ${x},${y + 8}`,
    lx: x + (40 + (n - 1) * 26) * 0.75 + 8,
    ly: y + 4 + (k - (n - 1) / 2) * LOOP_LABEL_GAP,
    side: "loop",
  };
}

/**
 * The route of the `i`-th edge, from `a` to another node `b`: back edges (and edges to the same or
 * an earlier layer) arc on the right, edges skipping a layer arc on the left, the rest go straight
 * down.
 */
function edgeRoute(a: Placed, b: Placed, isBack: boolean, i: number): EdgeRoute {
  if (isBack || b.layer <= a.layer) {
    const x1 = a.x + NODE_W;
    const y1 = a.y + NODE_H / 2;
    const x2 = b.x + NODE_W;
    const y2 = b.y + NODE_H / 2;
    const bend = Math.max(x1, x2) + 50 + (i % 3) * 14;
    const d = `M${x1},${y1} C${bend},${y1} ${bend},${y2} ${x2},${y2}`;
    return { d, lx: bend - 8, ly: (y1 + y2) / 2, side: "" };
  }
  if (b.layer - a.layer > 1) {
    // Skips a layer: around the left side, so it does not run under the boxes in between.
    const x1 = a.x;
    const y1 = a.y + NODE_H / 2;
    const x2 = b.x;
    const y2 = b.y + NODE_H / 2;
    const bend = Math.min(x1, x2) - 40 - (i % 3) * 12;
    const d = `M${x1},${y1} C${bend},${y1} ${bend},${y2} ${x2},${y2}`;
    return { d, lx: bend + 8, ly: (y1 + y2) / 2, side: "left" };
  }
  const x1 = a.x + NODE_W / 2;
  const y1 = a.y + NODE_H;
  const x2 = b.x + NODE_W / 2;
  const y2 = b.y;
  const mid = (y1 + y2) / 2;
  const d = `M${x1},${y1} C${x1},${mid} ${x2},${mid} ${x2},${y2}`;
  return { d, lx: (x1 + x2) / 2 + 4, ly: mid, side: "" };
}

/** One edge: its path with an arrow head, and its label. */
function edgeSvg(e: GraphEdge, { d, lx, ly, side }: EdgeRoute): Html {
  const cls = ["edge", ...(side ? [side] : []), ...(e.classes ?? [])].join(" ");
  return h`
      <g class="${cls}" data-from="${e.from}"
        data-to="${e.to}"><path d="${d}" marker-end="url(#arrow)"/>${
    e.label ? edgeLabel(e.label, lx, ly) : ""
  }</g>
    `;
}

/** One node: its box, label, sublabel and badge, with the full text as its tooltip. */
function nodeSvg({ node, x, y }: Placed): Html {
  const cls = ["node", ...(node.classes ?? [])].join(" ");
  const box = h`
      <rect x="${x}" y="${y}" width="${NODE_W}" height="${NODE_H}" rx="8" />
      <text x="${x + NODE_W / 2}" y="${y + (node.sublabel ? 19 : 28)}" class="label">${
    shorten(
      node.label,
      MAX_LABEL,
    )
  }</text>${
    node.sublabel
      ? h`<text x="${x + NODE_W / 2}" y="${y + 36}" class="sub">${
        shorten(node.sublabel, MAX_LABEL + 4)
      }</text>`
      : ""
  }${
    node.badge !== undefined
      ? h`
          <g class="badge">
            <circle cx="${x + NODE_W - 4}" cy="${y + 4}" r="12" />
            <text x="${x + NODE_W - 4}" y="${y + 8}">${node.badge}</text>
          </g>
        `
      : ""
  }${node.progress ? progressRects(node.progress, x + 16, y + NODE_H - 8, NODE_W - 32, 4) : ""}
    `;
  const inner = h`<title>${node.label}${node.sublabel ? ` (${node.sublabel})` : ""}${
    node.progress ? ` — ${node.progress.text}` : ""
  }</title>${box}`;
  return node.href
    ? h`<a href="${node.href}"><g class="${cls}" data-id="${node.id}">${inner}</g></a>`
    : h`<g class="${cls}" data-id="${node.id}">${inner}</g>`;
}

/** An edge's label; a shortened one keeps the full text as its tooltip. */
function edgeLabel(label: string, x: number, y: number): Html {
  const shown = shorten(label, MAX_EDGE_LABEL);
  return h`<text x="${round(x)}" y="${round(y)}">${
    shown === label ? "" : h`<title>${label}</title>`
  }${shown}</text>`;
}

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function round(n: number): number {
  return Math.round(n);
}
