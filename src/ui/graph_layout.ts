/**
 * The layering behind the server-drawn graphs (`graph_svg.ts`), on node indexes only: a
 * depth-first search from the roots marks back edges (loops: retries, fallbacks); the rest is a DAG
 * whose nodes are placed on layers by longest path, ordered within a layer by the mean position of
 * their parents (one sweep). Linear in nodes + edges apart from the per-layer sort.
 *
 * @module
 */

/** Where each node goes: its layer (row) and its order (column) within the layer. */
export interface GraphLayers {
  /** Edges `"v>w"` that close a cycle: drawn as arcs on the side, ignored by the layering. */
  back: Set<string>;
  /** The nodes of each layer, in their order (a layer may be empty: `undefined`). */
  layers: number[][];
  /** The layer of each node. */
  layer: number[];
  /** The position of each node within its layer. */
  order: number[];
}

/**
 * Layers the graph whose node `v` has the successors `out[v]` (self loops and back edges allowed).
 * Nodes without a predecessor are the preferred roots, then every node in index order.
 */
export function layerGraph(out: readonly (readonly number[])[]): GraphLayers {
  const { back, postorder } = depthFirst(out);
  const forward = (v: number, w: number) => w !== v && !back.has(`${v}>${w}`);
  // Longest-path layers over the DAG of forward edges, in topological order.
  const layer = out.map(() => 0);
  for (let p = postorder.length - 1; p >= 0; p--) {
    const v = postorder[p];
    for (const w of out[v]) if (forward(v, w)) layer[w] = Math.max(layer[w], layer[v] + 1);
  }
  const layers: number[][] = [];
  for (const v of postorder.toReversed()) (layers[layer[v]] ??= []).push(v);
  const parents: number[][] = out.map(() => []);
  for (let v = 0; v < out.length; v++) {
    for (const w of out[v]) if (forward(v, w)) parents[w].push(v);
  }
  return { back, layers, layer, order: orderLayers(layers, parents) };
}

/**
 * Depth-first search (iterative: graphs from files can be deep) from the roots, then from every
 * node not reached yet: the back edges found and the nodes in postorder.
 */
function depthFirst(
  out: readonly (readonly number[])[],
): { back: Set<string>; postorder: number[] } {
  const indegree = out.map(() => 0);
  for (const targets of out) for (const w of targets) indegree[w]++;
  const back = new Set<string>();
  const state = out.map(() => 0); // 0 new, 1 on stack, 2 done
  const postorder: number[] = [];
  const visitFrom = (root: number) => {
    if (state[root] !== 0) return;
    const stack: [number, number][] = [[root, 0]];
    state[root] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      const [v, k] = top;
      if (k < out[v].length) {
        top[1]++;
        const w = out[v][k];
        if (state[w] === 0) {
          state[w] = 1;
          stack.push([w, 0]);
        } else if (state[w] === 1) back.add(`${v}>${w}`);
      } else {
        state[v] = 2;
        postorder.push(v);
        stack.pop();
      }
    }
  };
  const roots = [...out.keys()].filter((i) => indegree[i] === 0);
  for (const r of roots) visitFrom(r);
  for (let i = 0; i < out.length; i++) visitFrom(i);
  return { back, postorder };
}

/** Sorts each layer by the mean order of the nodes' parents (one sweep, top down). */
function orderLayers(layers: number[][], parents: readonly (readonly number[])[]): number[] {
  const order = parents.map(() => 0);
  for (const row of layers) {
    if (!row) continue;
    const weight = (v: number) =>
      parents[v].length === 0
        ? order[v]
        : parents[v].reduce((sum, p) => sum + order[p], 0) / parents[v].length;
    row.forEach((v, i) => (order[v] = i));
    row.sort((a, b) => weight(a) - weight(b) || a - b);
    row.forEach((v, i) => (order[v] = i));
  }
  return order;
}
