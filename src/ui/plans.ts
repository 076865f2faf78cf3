/**
 * The plan pages: PlanSpec plans (`planspec/*.md`, `planspec/archive/*.md`) as a tree with status
 * icons and progress, and tool plans (`*.json` in the tool-plan folder, `plans/` by default) as a
 * DAG with step states and the approval requests of its waiting steps (`<plan>.approvals/`, see
 * `src/plan/file_approver.ts`), with Approve / Deny buttons when actions are allowed. Read from
 * their files on every request; only an answer to an approval request is ever written.
 *
 * @module
 */
import { basename, join } from "node:path";
import { errorMessage } from "../errors.ts";
import {
  type ApprovalRecord,
  approvalsDir,
  listApprovals,
  waiterAlive,
} from "../plan/file_approver.ts";
import { readPlanFile as readToolPlan } from "../plan/plan_file.ts";
import type { Plan } from "../plan/types.ts";
import { listPlans, type PlanListing, planspecDir } from "../planspec/store.ts";
import { planProgress, progressText } from "../planspec/tree.ts";
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
  return h`<div class="progress-line"><progress max="${p.total || 1}" value="${
    p.done + p.skipped
  }"></progress> ${progressText(p)}${
    p.skipped > 0 ? ` · ${p.skipped} skipped` : ""
  } · ${p.active} active · ${p.blocked} blocked · ${p.pending} pending</div>`;
}

/**
 * What a tool plan's page shows changes with: the plan file and its approval requests (modified
 * time and size of each). The page's event stream compares it to tell the page to reload.
 */
export async function toolPlanKey(file: string): Promise<string> {
  const parts: string[] = [];
  // The inode too: files are replaced by a rename on each write, and two writes of one size in the
  // same clock tick of the file system have the same time and size.
  const stamp = async (path: string) => {
    const info = await Deno.stat(path).catch(() => undefined);
    parts.push(`${info?.mtime?.getTime() ?? 0}:${info?.size ?? -1}:${info?.ino ?? 0}`);
  };
  await stamp(file);
  const dir = approvalsDir(file);
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      // Requests only: a decision file lives for a moment, until run-plan records it.
      const request = entry.name.endsWith(".json") && !entry.name.endsWith(".decision.json");
      if (entry.isFile && request) names.push(entry.name);
    }
  } catch { /* no requests yet */ }
  for (const name of names.sort()) {
    parts.push(name);
    await stamp(join(dir, name));
  }
  return parts.join("|");
}

/** The file of the tool plan shown as `name`, or undefined when there is none. */
export async function toolPlanFile(
  folders: PlanFolders,
  name: string,
): Promise<string | undefined> {
  return (await toolPlanFiles(folders.toolPlans)).find((t) => t.name === name)?.file;
}

/**
 * One tool plan: its DAG with step states, its approval requests and a table of steps; undefined
 * when unknown. With `csrf` (actions allowed) a waiting request has Approve and Deny buttons.
 */
export async function toolPlanPage(
  folders: PlanFolders,
  name: string,
  csrf?: string,
): Promise<string | undefined> {
  const file = await toolPlanFile(folders, name);
  if (file === undefined) return undefined;
  // The page reloads when the plan or its requests change from what it shows: their state is
  // taken before they are read, so a change landing while the page is built still reloads it
  // (taken after, it would look like the page's own state, and the page would wait forever).
  const since = await toolPlanKey(file);
  const found: ToolPlanListing = { name, file };
  try {
    found.plan = await readToolPlan(file);
  } catch (error) {
    found.error = errorMessage(error);
  }
  if (!found.plan) {
    return layout(
      `Tool plan ${name}`,
      h`<h1>Tool plan ${name}</h1><p class="errors">${found.error ?? ""}</p>`,
    );
  }
  const plan = found.plan;
  const approvals = await listApprovals(found.file);
  const waiting = (id: string) => {
    const record = approvals.records.get(id);
    return record?.state === "waiting" && waiterAlive(record);
  };
  const nodes = plan.steps.map((s) => ({
    id: s.id,
    label: `${s.tool}: ${s.description}`,
    sublabel: `${s.id} · ${waiting(s.id) ? "waiting for approval" : s.status}`,
    classes: [waiting(s.id) ? "paused waiting" : toolClass(s.status)],
  }));
  const edges = plan.steps.flatMap((s) =>
    s.dependsOn.map((d) => ({
      from: d,
      to: s.id,
      classes: plan.steps.find((x) => x.id === d)?.status === "completed" ? ["taken"] : [],
    }))
  );
  // A server-sent event tells the page (no polling here).
  const watch = `/plans/tool/${encodeURIComponent(name)}/events?since=${encodeURIComponent(since)}`;
  const body =
    h`<h1>Tool plan ${name}</h1><div id="plan-watch" hidden data-watch="${watch}"></div><p class="note">${found.file} · version ${plan.version}</p>${
      plan.task ? h`<p><b>Task:</b> ${plan.task}</p>` : ""
    }<p>${stateCounts(plan)}</p>
<div class="graph-box">${graphSvg(nodes, edges, `Plan ${plan.id}`)}</div>
${approvalsSection(name, approvals.records, approvals.problems, csrf)}
<h2>Steps</h2><table id="tool-steps"><thead><tr><th>#</th><th>Id</th><th>Tool</th><th>Status</th>
<th>Depends on</th><th>Result</th></tr></thead><tbody>${
      plan.steps.map((s) =>
        h`<tr data-step="${s.id}" data-status="${s.status}"><td>${s.order}</td><td><code>${s.id}</code></td><td>${s.tool}</td><td><span class="status ${
          toolClass(s.status)
        }">${s.status}</span>${
          waiting(s.id)
            ? h` <span class="status paused">waiting for approval</span>`
            : s.requiresApproval
            ? h` <span class="note">needs approval</span>`
            : ""
        }</td><td>${s.dependsOn.join(", ")}</td><td>${
          s.result
            ? h`${
              s.result.ok ? "ok" : h`<span class="errors">${s.result.error ?? "failed"}</span>`
            } · ${formatDuration(s.result.duration)}${
              s.result.approvalWaitMs
                ? ` · waited ${formatDuration(s.result.approvalWaitMs)} for approval`
                : ""
            }${
              s.result.attempts && s.result.attempts > 1 ? ` · ${s.result.attempts} attempts` : ""
            }`
            : ""
        }</td></tr>`
      )
    }</tbody></table>`;
  return layout(`Tool plan ${name}`, body);
}

/** Longest argument text shown in an approval row (the request file holds all of it). */
const MAX_ARGS_SHOWN = 4000;

/**
 * The approval requests of a plan, waiting ones first: what the step would run and why it asks,
 * and the buttons (actions allowed) or the answer once given.
 */
function approvalsSection(
  plan: string,
  records: Map<string, ApprovalRecord>,
  problems: string[],
  csrf: string | undefined,
): Html | string {
  if (records.size === 0 && problems.length === 0) return "";
  const rank = (r: ApprovalRecord) => r.state === "waiting" && waiterAlive(r) ? 0 : 1;
  const rows = [...records.values()].sort((a, b) =>
    rank(a) - rank(b) ||
    (a.requestedAt < b.requestedAt ? 1 : a.requestedAt > b.requestedAt ? -1 : 0)
  );
  return h`<h2>Approvals</h2>${
    problems.map((p) => h`<p class="errors">${p}</p>`)
  }<table id="approvals"><thead><tr><th>Step</th><th>Tool and arguments</th><th>Reason</th>
<th>Asked</th><th>Answer</th></tr></thead><tbody>${
    rows.map((r) => {
      let args = JSON.stringify(r.args ?? {}, null, 2) ?? "";
      if (args.length > MAX_ARGS_SHOWN) {
        args = `${args.slice(0, MAX_ARGS_SHOWN)}
… (${args.length} characters in all)`;
      }
      const alive = waiterAlive(r);
      const state = r.state === "waiting" && !alive ? "abandoned" : r.state;
      return h`<tr data-approval="${r.stepId}" data-state="${state}"><td><code>${r.stepId}</code><div class="note">${
        r.description ?? ""
      }</div></td><td><b>${r.tool}</b><pre>${args}</pre></td><td>${r.reason ?? ""}</td><td>${
        String(r.requestedAt ?? "").replace("T", " ").slice(0, 19)
      }</td><td>${answerCell(plan, r, state, csrf)}</td></tr>`;
    })
  }</tbody></table>`;
}

function answerCell(
  plan: string,
  r: ApprovalRecord,
  state: string,
  csrf: string | undefined,
): Html | string {
  const when = (r.decidedAt ?? "").replace("T", " ").slice(0, 19);
  switch (state) {
    case "waiting":
      return csrf
        ? h`<div class="actions" data-csrf="${csrf}" data-run="${`/plans/tool/${
          encodeURIComponent(plan)
        }/approvals/${encodeURIComponent(r.stepId)}/${
          encodeURIComponent(r.requestId)
        }`}"><span class="status paused">waiting</span>
<button type="button" data-action="approve">Approve</button><button type="button" data-action="deny">Deny</button>
<span class="action-result" role="status"></span></div>`
        : h`<span class="status paused">waiting</span> <span class="note">start the dashboard with --allow-actions to answer here</span>`;
    case "abandoned":
      return h`<span class="status">abandoned</span> <span class="note">the run-plan process that asked (pid ${r.pid}) is gone; run the plan again</span>`;
    case "approved":
      return h`<span class="status completed">approved</span> <span class="note">by ${
        r.decidedBy ?? "?"
      } at ${when}</span>`;
    case "denied":
      return h`<span class="status failed">denied</span> <span class="note">by ${
        r.decidedBy ?? "?"
      } at ${when}${r.denyReason ? `: ${r.denyReason}` : ""}</span>`;
    default:
      return h`<span class="status">withdrawn</span> <span class="note">answered at the terminal, or the run stopped</span>`;
  }
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
  for (const row of await toolPlanFiles(dir)) {
    try {
      row.plan = await readToolPlan(row.file);
    } catch (error) {
      row.error = errorMessage(error);
    }
    out.push(row);
  }
  return out;
}

/** The tool plans' names and files, by name, none of them read. */
async function toolPlanFiles(dir: string): Promise<ToolPlanListing[]> {
  const out: ToolPlanListing[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile || !entry.name.endsWith(".json") || entry.name.startsWith(".")) continue;
      out.push({ name: basename(entry.name, ".json"), file: join(dir, entry.name) });
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
