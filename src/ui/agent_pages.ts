/**
 * The dashboard's agent pages: the index of agents (description, newest run, whether each loads)
 * and one agent's graph, steps and validation warnings. Every value goes through
 * {@linkcode h} (escaped), as on every page.
 *
 * @module
 */
import type { AgentDefinition } from "../definition/types.ts";
import { errorMessage } from "../errors.ts";
import { formatTime } from "./display_format.ts";
import { flowGraph } from "./flow_graph.ts";
import { graphSvg } from "./graph_svg.ts";
import { html as h } from "./html.ts";
import { agentHref, layout, runHref, statusBadge } from "./pages.ts";
import type { AgentOverview } from "./source.ts";

/** An agent: its graph, steps and validation warnings (or why it does not load). */
export function agentPage(name: string, definition?: AgentDefinition, error?: unknown): string {
  if (!definition) {
    const problems = (error as { problems?: unknown })?.problems;
    return layout(
      `Agent ${name}`,
      h`<h1>Agent ${name}</h1><p class="errors">The agent does not load: ${
        errorMessage(error)
      }</p>${
        Array.isArray(problems)
          ? h`<ul class="errors">${problems.map((p) => h`<li>${String(p)}</li>`)}</ul>`
          : ""
      }`,
    );
  }
  const { nodes, edges } = flowGraph(definition);
  const steps = Object.values(definition.steps);
  const body = h`
    <h1>Agent ${definition.name}</h1>
    <p
      class="note">${definition.dir} · entry step <code>${definition.entryStepId}</code> · <a href="/?agent=${
    encodeURIComponent(definition.name)
  }">runs</a></p>
    <h2>Validation warnings</h2>${
    definition.warnings.length
      ? h`<ul class="warn" id="warnings">${definition.warnings.map((w) => h`<li>${w}</li>`)}</ul>`
      : h`<p class="note" id="warnings">None.</p>`
  }
    <h2>Graph</h2><div class="graph-box">${
    graphSvg(
      nodes,
      edges,
      `Flow of ${definition.name}`,
    )
  }</div>
    <h2>Steps (${steps.length})</h2><table id="steps">
      <thead>
        <tr>
          <th>Id</th>
          <th>Name</th>
          <th>Kind</th>
          <th>Routes</th>
        </tr>
      </thead>
      <tbody>${
    steps.map((s) =>
      h`
          <tr id="step-${s.id}">
            <td><code>${s.id}</code></td>
            <td>${s.name}</td>
            <td>${s.kind}</td>
            <td>${
        edges.filter((e) => e.from === s.id).map((e) =>
          h`<div>${e.label ?? ""} → <code>${e.to.replace(/^#/, "")}</code></div>`
        )
      }</td>
          </tr>
        `
    )
  }</tbody>
    </table>
  `;
  return layout(`Agent ${definition.name}`, body);
}

/**
 * The agents index: each agent with its description, its newest run (status, start, end reason)
 * and whether it loads — the first problem and how many there are when it does not.
 */
export function agentsPage(agents: readonly AgentOverview[]): string {
  const rows = agents.map((a) => {
    const run = a.lastRun;
    const problem = a.problems[0];
    return h`
      <tr data-agent="${a.name}">
        <td><a href="${agentHref(a.name)}">${a.name}</a>${
      a.displayName && a.displayName !== a.name ? h`<div class="note">${a.displayName}</div>` : ""
    }</td>
        <td>${a.description ?? ""}</td>
        <td>${
      run
        ? h`<a href="${runHref(run.runId)}">${run.runId}</a> ${statusBadge(run)}<div class="note">${
          formatTime(run.startedAt)
        }${run.completionReason ? ` · ${run.completionReason}` : ""}</div>`
        : h`<span class="note">no runs yet</span>`
    }</td>
        <td class="load">${
      problem === undefined
        ? h`<span class="status completed">loads</span>${
          a.warnings
            ? h`<div class="note">${a.warnings} warning${a.warnings === 1 ? "" : "s"}</div>`
            : ""
        }`
        : h`<span class="status failed">${a.problems.length} problem${
          a.problems.length === 1 ? "" : "s"
        }</span><div class="note warn">${problem.split("\n", 1)[0]}</div>`
    }</td>
      </tr>
    `;
  });
  return layout(
    "Agents",
    h`<h1>Agents</h1>${
      agents.length
        ? h`<table id="agents"><thead><tr><th>Agent</th><th>Description</th><th>Last run</th><th>Definition</th></tr></thead><tbody>${rows}</tbody></table>`
        : h`<p class="note">No agents in .agent/.</p>`
    }`,
  );
}
