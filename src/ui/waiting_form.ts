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
}

/** The question block, with the form when actions are allowed (`csrf`). */
export function waitingBlock(runId: string, waiting: WaitingView, csrf?: string): Html {
  const request = waiting.request;
  if (isPermissionPending(request)) {
    return approvalCard(runId, request, {
      commandFor: waiting.commandFor ?? plainCommandLine,
      ...(csrf ? { csrf } : {}),
      ...(waiting.args ? { args: waiting.args } : {}),
    });
  }
  const question = h`<div class="question" id="waiting-question">
    <h2>Waiting for an answer at <code>${request.stepId}</code></h2>
    <pre class="prompt">${request.prompt}</pre>${
    request.expiresAt
      ? h`<p class="note">The wait passes at ${request.expiresAt}; then a resume takes the intent "${
        request.timeoutIntent ?? ""
      }".</p>`
      : ""
  }</div>`;
  if (!csrf) {
    const value = waiting.form ? JSON.stringify(exampleAnswer(waiting.form)) : "<json>";
    const command = (waiting.commandFor ?? plainCommandLine)({
      action: "answer",
      runId,
      args: ["--value", value],
    });
    return h`<section class="waiting">${question}<p class="note">Answer it from a terminal (or start the dashboard with --allow-actions to answer here):</p><pre class="command" id="answer-command">${command}</pre></section>`;
  }
  if (!waiting.form) {
    return h`<section class="waiting">${question}<p class="warn">No form: ${
      waiting.problem ?? "the schema could not be read"
    }</p></section>`;
  }
  return h`<section class="waiting">${question}
    <form id="answer-form" class="answer actions" data-csrf="${csrf}"
      data-run="${`/runs/${encodeURIComponent(runId)}`}" data-request="${request.requestId}">
      ${waiting.form.fields.map((field, i) => fieldRow(field, i))}
      <button type="submit" data-answer="send">Send answer</button>
      <span id="answer-result" role="status"></span>
    </form></section>`;
}

function fieldRow(field: AnswerField, index: number): Html {
  const id = `answer-field-${index}`;
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
