/**
 * What a waiting run waits for, as a note after its status badge (runs list and run page).
 *
 * @module
 */
import type { RunSummary } from "../store/types.ts";
import { type Html, html as h } from "./html.ts";

/**
 * What a waiting run waits for, after its badge: ` · approve Bash` for a tool call waiting for
 * permission, ` · answer STEP` for an input step (nothing for other runs). Never broken inside: on
 * the run page it follows the badge; the runs list puts it on a line of its own under the badge,
 * without its `·` (the `sep` span).
 */
export function waitingForNote(run: Pick<RunSummary, "status" | "waitingFor">): Html | string {
  const waitingFor = run.status === "waiting" ? run.waitingFor : undefined;
  if (!waitingFor) return "";
  if ((waitingFor.answers ?? 1) > 1) {
    return h` <span class="waiting-for input" title="children of fan-out step ${waitingFor.stepId} wait for answers"><span class="sep">· </span>${
      String(waitingFor.answers)
    } answers</span>`;
  }
  return waitingFor.tool !== undefined
    ? h` <span class="waiting-for approval" title="a tool call (${waitingFor.tool}) of step ${waitingFor.stepId} waits for Approve/Deny"><span class="sep">· </span>approve <code>${waitingFor.tool}</code></span>`
    : h` <span class="waiting-for input" title="the input step ${waitingFor.stepId} waits for an answer"><span class="sep">· </span>answer <code>${waitingFor.stepId}</code></span>`;
}
