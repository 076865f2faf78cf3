/**
 * The bars of a page's timing chart, read from its markup (for the HTTP tests).
 *
 * @module
 */
import assert from "node:assert/strict";

/** A bar of the page's chart, as drawn. */
export interface DrawnBar {
  link?: string;
  title: string;
  classes: string;
  x: number;
  width: number;
  row: number;
}

/** The bars of the chart `id` in a page. */
export function chartBars(page: string, id = "run-chart"): DrawnBar[] {
  const start = page.indexOf(`<figure class="chart" id="${id}"`);
  assert.ok(start >= 0, `the page has the chart ${id}`);
  const figure = page.slice(start, page.indexOf("</figure>", start));
  const bar =
    /(?:<a href="([^"]*)"><title>([^<]*)<\/title>)?<rect class="bar ([^"]*)" x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="[\d.]+" data-row="(\d+)"[^>]*>(?:<title>([^<]*)<\/title>)?/g;
  return [...figure.matchAll(bar)].map((m) => ({
    ...(m[1] !== undefined ? { link: m[1] } : {}),
    title: m[2] ?? m[7] ?? "",
    classes: m[3],
    x: Number(m[4]),
    width: Number(m[5]),
    row: Number(m[6]),
  }));
}
