/**
 * The plan pages: PlanSpec plans (`planspec/*.md`, `planspec/archive/*.md`) as a tree with status
 * icons and progress, and tool plans (`*.json` in the tool-plan folder, `plans/` by default) as a
 * DAG with step states. Read from their files on every request; nothing is written.
 *
 * @module
 */
import { basename, join } from "node:path";
import { errorMessage } from "../errors.ts";
import { readPlanFile as readToolPlan } from "../plan/plan_file.ts";
import type { Plan } from "../plan/types.ts";
import { listPlans, type PlanListing, planspecDir } from "../planspec/store.ts";
import { planProgress } from "../planspec/tree.ts";
import type { PlanProgress, PlanSpec, PlanStep } from "../planspec/types.ts";
import { graphSvg } from "./graph_svg.ts";
import { type Html, html as h } from "./html.ts";
import { formatDuration, layout } from "./pages.ts";

/** Where plans are read from. */
export interface PlanFolders {
  /** The project folder: PlanSpec plans are in `<cwd>/planspec/`. */
  cwd: string;
  /** Folder of tool plans (`*.json`). */
  toolPlans: string;
}

const SPEC_ICONS: Record<string, string> = {
  pending: "○",
  active: "◐",
  done: "●",
  blocked: "⊘",
  skipped: "⊖",
};

/** Both kinds of plans, by file. */
export async function plansPage(folders: PlanFolders): Promise<string> {
  const specs = [
    ...await listPlans(planspecDir(folders.cwd)),
    ...(await listPlans(join(planspecDir(folders.cwd), "archive"))).map((p) => ({
      ...p,
      name: `archive/${p.name}`,
    })),
  ];
  const tools = await listToolPlans(folders.toolPlans);
  const body = h`<h1>Plans</h1>
<h2>PlanSpec plans <span class="note">(${planspecDir(folders.cwd)})</span></h2>${
    specs.length
      ? h`<table id="planspec-plans"><thead><tr><th>Plan</th><th>Title</th><th>Progress</th></tr></thead><tbody>${
        specs.map((p: PlanListing) =>
          h`<tr><td><a href="/plans/spec/${encodeURIComponent(p.name)}">${p.name}</a></td><td>${
            p.plan?.title ?? ""
          }${p.error ? h`<div class="errors">${p.error}</div>` : ""}</td><td>${
            p.progress ? progressBar(p.progress) : ""
          }</td></tr>`
        )
      }</tbody></table>`
      : h`<p class="note">No PlanSpec plans.</p>`
  }
<h2>Tool plans <span class="note">(${folders.toolPlans})</span></h2>${
    tools.length
      ? h`<table id="tool-plans"><thead><tr><th>File</th><th>Task</th><th>Steps</th></tr></thead><tbody>${
        tools.map((t) =>
          h`<tr><td><a href="/plans/tool/${encodeURIComponent(t.name)}">${t.name}</a></td><td>${
            t.plan?.task ?? t.plan?.taskId ?? ""
          }${t.error ? h`<div class="errors">${t.error}</div>` : ""}</td><td>${
            t.plan ? stateCounts(t.plan) : ""
          }</td></tr>`
        )
      }</tbody></table>`
      : h`<p class="note">No tool plans (*.json) in this folder.</p>`
  }`;
  return layout("Plans", body);
}

/** One PlanSpec plan: the tree with status icons and progress; undefined when unknown. */
export async function planSpecPage(
  folders: PlanFolders,
  name: string,
): Promise<string | undefined> {
  const listed = name.startsWith("archive/")
    ? await listPlans(join(planspecDir(folders.cwd), "archive"))
    : await listPlans(planspecDir(folders.cwd));
  const found = listed.find((p) => p.name === name.replace(/^archive\//, ""));
  if (!found) return undefined;
  if (!found.plan) {
    return layout(
      `Plan ${name}`,
      h`<h1>Plan ${name}</h1><p class="errors">${found.error ?? ""}</p>`,
    );
  }
  const plan: PlanSpec = found.plan;
  const progress = planProgress(plan);
  const body = h`<h1>${plan.title || name}</h1><p class="note">${found.file}</p>
<p><b>Goal:</b> ${plan.goal}</p>${progressBar(progress)}
<ul class="tree" id="plan-tree">${plan.steps.map(specStep)}</ul>`;
  return layout(`Plan ${name}`, body);
}

function specStep(step: PlanStep): Html {
  const counted = step.totalCount !== null ? ` (${step.doneCount}/${step.totalCount})` : "";
  return h`<li data-step="${step.stepId}" data-status="${step.status}"><span class="status ${
    specClass(step.status)
  }" title="${step.status}">${
    SPEC_ICONS[step.status] ?? "?"
  } ${step.status}</span> <b>${step.stepId}</b> <span class="k">${step.stepType}</span> ${step.description}${counted}${
    step.result ? h`<div class="note">| ${step.result}</div>` : ""
  }${step.children.length ? h`<ul class="tree">${step.children.map(specStep)}</ul>` : ""}</li>`;
}

function specClass(status: string): string {
  return status === "done"
    ? "completed"
    : status === "active"
    ? "running"
    : status === "blocked"
    ? "failed"
    : status === "skipped"
    ? "paused"
    : "";
}

function progressBar(p: PlanProgress): Html {
  const settled = p.done + p.skipped;
  const pct = p.total ? Math.round((settled / p.total) * 100) : 0;
  return h`<div class="progress-line"><progress max="${
    p.total || 1
  }" value="${settled}"></progress> ${settled}/${p.total} (${pct}%) · ${p.active} active · ${p.blocked} blocked · ${p.pending} pending</div>`;
}

/** One tool plan: its DAG with step states and a table of steps; undefined when unknown. */
export async function toolPlanPage(
  folders: PlanFolders,
  name: string,
): Promise<string | undefined> {
  const found = (await listToolPlans(folders.toolPlans)).find((t) => t.name === name);
  if (!found) return undefined;
  if (!found.plan) {
    return layout(
      `Tool plan ${name}`,
      h`<h1>Tool plan ${name}</h1><p class="errors">${found.error ?? ""}</p>`,
    );
  }
  const plan = found.plan;
  const nodes = plan.steps.map((s) => ({
    id: s.id,
    label: `${s.tool}: ${s.description}`,
    sublabel: `${s.id} · ${s.status}`,
    classes: [toolClass(s.status)],
  }));
  const edges = plan.steps.flatMap((s) =>
    s.dependsOn.map((d) => ({
      from: d,
      to: s.id,
      classes: plan.steps.find((x) => x.id === d)?.status === "completed" ? ["taken"] : [],
    }))
  );
  const body =
    h`<h1>Tool plan ${name}</h1><p class="note">${found.file} · version ${plan.version}</p>${
      plan.task ? h`<p><b>Task:</b> ${plan.task}</p>` : ""
    }<p>${stateCounts(plan)}</p>
<div class="graph-box">${graphSvg(nodes, edges, `Plan ${plan.id}`)}</div>
<h2>Steps</h2><table id="tool-steps"><thead><tr><th>#</th><th>Id</th><th>Tool</th><th>Status</th>
<th>Depends on</th><th>Result</th></tr></thead><tbody>${
      plan.steps.map((s) =>
        h`<tr data-step="${s.id}" data-status="${s.status}"><td>${s.order}</td><td><code>${s.id}</code></td><td>${s.tool}</td><td><span class="status ${
          toolClass(s.status)
        }">${s.status}</span>${
          s.requiresApproval ? h` <span class="note">needs approval</span>` : ""
        }</td><td>${s.dependsOn.join(", ")}</td><td>${
          s.result
            ? h`${
              s.result.ok ? "ok" : h`<span class="errors">${s.result.error ?? "failed"}</span>`
            } · ${formatDuration(s.result.duration)}${
              s.result.attempts && s.result.attempts > 1 ? ` · ${s.result.attempts} attempts` : ""
            }`
            : ""
        }</td></tr>`
      )
    }</tbody></table>`;
  return layout(`Tool plan ${name}`, body);
}

function toolClass(status: string): string {
  return status === "completed"
    ? "completed done"
    : status === "failed"
    ? "failed"
    : status === "running"
    ? "running"
    : status === "skipped"
    ? "paused waiting"
    : status;
}

function stateCounts(plan: Plan): string {
  const counts = new Map<string, number>();
  for (const s of plan.steps) counts.set(s.status, (counts.get(s.status) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${n} ${status}`).join(" · ");
}

interface ToolPlanListing {
  name: string;
  file: string;
  plan?: Plan;
  error?: string;
}

async function listToolPlans(dir: string): Promise<ToolPlanListing[]> {
  const out: ToolPlanListing[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile || !entry.name.endsWith(".json") || entry.name.startsWith(".")) continue;
      const file = join(dir, entry.name);
      const row: ToolPlanListing = { name: basename(entry.name, ".json"), file };
      try {
        row.plan = await readToolPlan(file);
      } catch (error) {
        row.error = errorMessage(error);
      }
      out.push(row);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
