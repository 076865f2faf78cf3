/**
 * The run page of a waiting run: the question its input step asks and, under `--allow-actions`,
 * the form generated from the step's answer schema (`src/definition/answer_form.ts`) — a select
 * for a choice, yes/no for a boolean, a text or number input, a JSON text area for the rest. The
 * page script (`assets.ts`) builds the answer from the fields and POSTs it to /runs/ID/answer with
 * the server's secret; the server records it through `run-agent --answer`, so the first answer
 * wins and the schema is checked there. A tool call waiting for permission gets its approval card
 * instead (`approval_card.ts`), answered through the same form script and action.
 *
 * @module
 */
import { type AnswerField, type AnswerForm, exampleAnswer } from "../definition/answer_form.ts";
import { type CommandRenderer, plainCommandLine } from "../invocation.ts";
import type { PendingInput } from "../flow/input_request.ts";
import { type Html, html as h } from "./html.ts";
import { runHref } from "./display_format.ts";
import { type ApprovalArgs, approvalCard, isPermissionPending } from "./approval_card.ts";

/** A waiting run's request and its form (or why there is none). */
export interface WaitingView {
  /** The request the run waits on. */
  request: PendingInput;
  /** The answer form, when the step's schema could be read. */
  form?: AnswerForm;
  /** Why there is no form. */
  problem?: string;
  /** How the commands the page prints are written, as they work where the user stands. */
  commandFor?: CommandRenderer;
  /** A tool call's arguments, for a run waiting for its permission (the approval card). */
  args?: ApprovalArgs;
  /**
   * Set when the request is a fan-out child's, answered through this run (its parent): the item,
   * the child run and the child's own step that asks. Such a block's ids end with `-item-N`, so a
   * page holds one per waiting child.
   */
  child?: { index: number; item: string; runId: string; stepId: string };
}

/**
 * The waiting section of a run's page: the one request's block, or — for a fan-out whose children
 * wait — one block per child, each answered on its own (the request's id goes with the answer).
 */
export function waitingSection(
  runId: string,
  waits: readonly WaitingView[],
  csrf?: string,
): Html | "" {
  if (waits.length === 0) return "";
  if (waits.length === 1 && !waits[0].child) return waitingBlock(runId, waits[0], csrf);
  return h`<section class="waits" id="waits"><h2>${waits.length} child run${
    waits.length === 1 ? " waits" : "s wait"
  } for an answer</h2><p class="note">Each is answered on its own: an answer continues its child while the others go on waiting.</p>${
    waits.map((w) => waitingBlock(runId, w, csrf))
  }</section>`;
}

/** The `id` of a waiting block's element: `name`, or `name-item-N` for a fan-out child's. */
export function waitingId(name: string, waiting: Pick<WaitingView, "child">): string {
  return waiting.child ? `${name}-item-${waiting.child.index}` : name;
}

/** The question block, with the form when actions are allowed (`csrf`). */
export function waitingBlock(runId: string, waiting: WaitingView, csrf?: string): Html {
  const request = waiting.request;
  const child = waiting.child;
  const id = (name: string) => waitingId(name, waiting);
  if (isPermissionPending(request)) {
    return approvalCard(runId, request, {
      commandFor: waiting.commandFor ?? plainCommandLine,
      ...(csrf ? { csrf } : {}),
      ...(waiting.args ? { args: waiting.args } : {}),
      ...(child ? { child } : {}),
    });
  }
  const question = h`<div class="question" id="${id("waiting-question")}">
    <h2>${
    child
      ? h`Item ${child.index + 1} (<span class="item">${child.item}</span>): child run <a href="${
        runHref(child.runId)
      }">${child.runId}</a> waits for an answer at <code>${child.stepId}</code>`
      : h`Waiting for an answer at <code>${request.stepId}</code>`
  }</h2>
    <pre class="prompt">${request.prompt}</pre>${
    request.expiresAt
      ? h`<p class="note">The wait passes at ${request.expiresAt}; then a resume takes the intent "${
        request.timeoutIntent ?? ""
      }".</p>`
      : ""
  }</div>`;
  const section = child ? h` id="${id("wait")}" data-child="${child.runId}"` : "";
  if (!csrf) {
    const value = waiting.form ? JSON.stringify(exampleAnswer(waiting.form)) : "<json>";
    const command = (waiting.commandFor ?? plainCommandLine)({
      action: "answer",
      runId,
      args: [...(child ? ["--request-id", request.requestId] : []), "--value", value],
    });
    return h`<section class="waiting"${section}>${question}<p class="note">Answer it from a terminal (or start the dashboard with --allow-actions to answer here):</p><pre class="command" id="${
      id("answer-command")
    }">${command}</pre></section>`;
  }
  if (!waiting.form) {
    return h`<section class="waiting"${section}>${question}<p class="warn">No form: ${
      waiting.problem ?? "the schema could not be read"
    }</p></section>`;
  }
  return h`<section class="waiting"${section}>${question}
    <form id="${id("answer-form")}" class="answer actions" data-csrf="${csrf}"
      data-run="${`/runs/${encodeURIComponent(runId)}`}" data-request="${request.requestId}">
      ${waiting.form.fields.map((field, i) => fieldRow(field, i, id("answer-field")))}
      <button type="submit" data-answer="send">Send answer</button>
      <span id="${id("answer-result")}" class="answer-result" role="status"></span>
    </form></section>`;
}

function fieldRow(field: AnswerField, index: number, prefix: string): Html {
  const id = `${prefix}-${index}`;
  const label = h`<label for="${id}">${field.title ?? field.name}${
    field.required ? " *" : ""
  }</label>`;
  const common = {
    path: JSON.stringify(field.path),
    kind: field.kind,
    required: field.required ? "true" : "false",
  };
  let control: Html;
  switch (field.kind) {
    case "choice":
      control =
        h`<select id="${id}" data-path="${common.path}" data-kind="choice" data-required="${common.required}">${
          field.required ? "" : h`<option value="">—</option>`
        }${
          field.choices!.map((c) =>
            h`<option value="${JSON.stringify(c)}"${
              field.default !== undefined && JSON.stringify(field.default) === JSON.stringify(c)
                ? h` selected`
                : ""
            }>${typeof c === "string" ? c : JSON.stringify(c)}</option>`
          )
        }</select>`;
      break;
    case "boolean":
      control =
        h`<select id="${id}" data-path="${common.path}" data-kind="boolean" data-required="${common.required}"><option value="">—</option><option value="true">yes</option><option value="false">no</option></select>`;
      break;
    case "string":
      control =
        h`<input id="${id}" type="text" data-path="${common.path}" data-kind="string" data-required="${common.required}" value="${
          typeof field.default === "string" ? field.default : ""
        }">`;
      break;
    case "number":
    case "integer":
      control = h`<input id="${id}" type="number" step="${
        field.kind === "integer" ? "1" : "any"
      }" data-path="${common.path}" data-kind="number" data-required="${common.required}" value="${
        typeof field.default === "number" ? String(field.default) : ""
      }">`;
      break;
    default:
      control =
        h`<textarea id="${id}" rows="3" data-path="${common.path}" data-kind="json" data-required="${common.required}" placeholder="JSON">${
          field.default !== undefined ? JSON.stringify(field.default) : ""
        }</textarea>`;
  }
  return h`<div class="field">${label}${control}${
    field.description ? h`<span class="note">${field.description}</span>` : ""
  }</div>`;
}
