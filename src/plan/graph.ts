/**
 * The dependency graph of a plan, as integer adjacency lists: linear-time construction, cycle
 * reporting (Tarjan's strongly connected components, iterative) and ancestor queries.
 *
 * @module
 */

/** A plan's dependency graph over step positions. */
export interface PlanGraph {
  /** Step id → position of its first occurrence. */
  index: Map<string, number>;
  /** For each step, the positions of its known dependencies (duplicates removed). */
  deps: number[][];
  /** For each step, the positions of the steps that depend on it. */
  dependents: number[][];
}

/** The minimum a graph needs from a step. */
export interface GraphStep {
  /** Step id. */
  id: string;
  /** Dependency ids. */
  dependsOn: readonly string[];
}

/** Builds the graph in O(V+E). Unknown dependency ids are left out (validation reports them). */
export function buildGraph(steps: readonly GraphStep[]): PlanGraph {
  const n = steps.length;
  const index = new Map<string, number>();
  for (let i = 0; i < n; i++) if (!index.has(steps[i].id)) index.set(steps[i].id, i);
  const deps: number[][] = new Array(n);
  const dependents: number[][] = new Array(n);
  for (let i = 0; i < n; i++) dependents[i] = [];
  for (let i = 0; i < n; i++) {
    const list: number[] = [];
    const ids = steps[i].dependsOn;
    for (let k = 0; k < ids.length; k++) {
      const j = index.get(ids[k]);
      if (j === undefined) continue;
      if (ids.length > 1 && list.includes(j)) continue;
      list.push(j);
      dependents[j].push(i);
    }
    deps[i] = list;
  }
  return { index, deps, dependents };
}

/**
 * One cycle per group of mutually dependent steps, each as positions along "depends on" edges with
 * the first position repeated at the end (`[a, b, a]`: a depends on b, b depends on a).
 */
export function findCycles(graph: PlanGraph): number[][] {
  const { deps } = graph;
  const n = deps.length;
  const order = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const stack: number[] = [];
  const cycles: number[][] = [];
  let counter = 0;
  const frames: number[] = []; // pairs: node, next edge index
  for (let root = 0; root < n; root++) {
    if (order[root] !== -1) continue;
    frames.push(root, 0);
    order[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = 1;
    while (frames.length > 0) {
      const top = frames.length - 2;
      const v = frames[top];
      const edge = frames[top + 1];
      if (edge < deps[v].length) {
        frames[top + 1] = edge + 1;
        const w = deps[v][edge];
        if (order[w] === -1) {
          order[w] = low[w] = counter++;
          stack.push(w);
          onStack[w] = 1;
          frames.push(w, 0);
        } else if (onStack[w]) {
          if (order[w] < low[v]) low[v] = order[w];
        }
        continue;
      }
      frames.length = top;
      if (frames.length > 0) {
        const parent = frames[frames.length - 2];
        if (low[v] < low[parent]) low[parent] = low[v];
      }
      if (low[v] !== order[v]) continue;
      const component: number[] = [];
      let w: number;
      do {
        w = stack.pop()!;
        onStack[w] = 0;
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || deps[v].includes(v)) cycles.push(cycleIn(component, deps));
    }
  }
  return cycles.sort((a, b) => a[0] - b[0]);
}

/** A cycle through the smallest position of a strongly connected component (BFS inside it). */
function cycleIn(component: number[], deps: number[][]): number[] {
  const members = new Set(component);
  const start = Math.min(...component);
  if (deps[start].includes(start)) return [start, start];
  const parent = new Map<number, number>([[start, -1]]);
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    const v = queue[head];
    for (const w of deps[v]) {
      if (w === start) {
        const path: number[] = [];
        for (let x = v; x !== -1; x = parent.get(x)!) path.push(x);
        path.reverse(); // start … v
        path.push(start);
        return path;
      }
      if (members.has(w) && !parent.has(w)) {
        parent.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

/**
 * True when `ancestor` is reached from `step` by following dependencies. `seen` is scratch space of
 * the graph's size (reused between calls to avoid allocation); `epoch` must differ on every call.
 */
export function dependsTransitively(
  graph: PlanGraph,
  step: number,
  ancestor: number,
  seen: Uint32Array,
  epoch: number,
): boolean {
  const { deps } = graph;
  if (deps[step].includes(ancestor)) return true;
  const stack = [step];
  seen[step] = epoch;
  while (stack.length > 0) {
    const v = stack.pop()!;
    for (const w of deps[v]) {
      if (w === ancestor) return true;
      if (seen[w] !== epoch) {
        seen[w] = epoch;
        stack.push(w);
      }
    }
  }
  return false;
}
