/**
 * The run page's link to a child run's parent: an agent step's child links the parent's page, a
 * fan-out child the row of its item there (whose child-run link leads back) — links both ways.
 *
 * @module
 */
import type { RunCheckpoint } from "../store/types.ts";
import { runHref } from "./display_format.ts";
import { itemAnchor } from "./fan_out_view.ts";
import { type Html, html as h } from "./html.ts";

/** Where a child run comes from: its parent run, the agent step, and a fan-out child's item. */
export interface ParentLink {
  /** The parent run. */
  runId: string;
  /** The parent's agent step. */
  stepId: string;
  /** A fan-out child's item (index from 0). */
  item?: number;
}

/** The parent run of a child run (agent steps), from its checkpoint's state. */
export function parentOf(
  cp: RunCheckpoint | undefined,
): ParentLink | undefined {
  const parent = cp?.state.parent as
    | { runId?: unknown; stepId?: unknown; item?: unknown }
    | undefined;
  if (typeof parent?.runId !== "string") return undefined;
  return {
    runId: parent.runId,
    stepId: String(parent.stepId ?? ""),
    ...(Number.isInteger(parent.item) ? { item: parent.item as number } : {}),
  };
}

/** The header's parent link: a fan-out child's leads to its item's row on the parent's page. */
export function parentLine(parent: ParentLink): Html {
  if (parent.item === undefined) {
    return h`<div><span>Parent run</span><a href="${
      runHref(parent.runId)
    }">${parent.runId}</a> (agent step <code>${parent.stepId}</code>)</div>`;
  }
  return h`<div id="parent-run"><span>Parent run</span><a href="${`${runHref(parent.runId)}#${
    itemAnchor(parent.stepId, parent.item)
  }`}">${parent.runId}</a> (item ${
    parent.item + 1
  } of fan-out step <code>${parent.stepId}</code>)</div>`;
}
