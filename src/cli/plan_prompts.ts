/**
 * The questions `run-plan` asks on a terminal: re-run an interrupted step? start execution (or
 * revise the plan first)? approve this step? Each reads one answer line from the terminal.
 *
 * @module
 */
import { interruptedError, interruptedSteps } from "../plan/executor.ts";
import { isAnsweredElsewhere } from "../plan/file_approver.ts";
import { formatArgs } from "../plan/review.ts";
import type { ApprovalRequest, Approver, Plan } from "../plan/types.ts";
import type { ToolRegistry } from "../tools/registry.ts";
import type { CliIo } from "./kit/io.ts";
import type { LineReader } from "./kit/line_reader.ts";

/**
 * Steps an earlier run left `running` whose tools are not idempotent: `--yes` re-runs them (the
 * executor logs that it does), a terminal asks about each, otherwise the run stops before
 * anything runs with `PLAN_STEP_INTERRUPTED` (exit 2). Idempotent ones are re-run by the executor.
 */
export async function decideInterrupted(
  plan: Plan,
  tools: ToolRegistry,
  yes: boolean,
  lines: LineReader | undefined,
  io: CliIo,
): Promise<boolean | string[]> {
  const unsafe = interruptedSteps(plan).filter((s) =>
    tools.descriptor(s.tool)?.idempotent !== true
  );
  if (unsafe.length === 0) return false;
  if (yes) {
    io.stderr.write(
      `Re-running ${unsafe.map((s) => `"${s.id}" (${s.tool})`).join(", ")}: ${
        unsafe.length === 1 ? "it was" : "they were"
      } running when an earlier run stopped, and --yes re-runs steps whose tools are not idempotent (their effect may happen twice).\n`,
    );
    return true;
  }
  if (!lines) throw interruptedError(unsafe);
  const allowed: string[] = [];
  for (const step of unsafe) {
    io.stderr.write(
      `\nStep "${step.id}" (${step.tool}) was running when an earlier run stopped; its outcome was not saved, so ${step.tool} may have done its work already.\nRun it again? [y/N] `,
    );
    const answer = (await lines.next(io.signal))?.trim().toLowerCase();
    if (answer === "y" || answer === "yes") allowed.push(step.id);
  }
  if (allowed.length < unsafe.length) {
    throw interruptedError(unsafe.filter((s) => !allowed.includes(s.id)));
  }
  return allowed;
}

/**
 * Asks "Start execution?" until the answer is yes (true) or anything but yes or revise (false,
 * after saying nothing ran). "r" asks for feedback and hands it to `revise`, which revises the
 * plan and shows the new review; then the question comes again.
 */
export async function askToStart(
  lines: LineReader,
  io: CliIo,
  revise: (feedback: string) => Promise<void>,
): Promise<boolean> {
  for (;;) {
    io.stderr.write("Start execution? [y]es / [N]o / [r]evise the plan with feedback: ");
    const answer = (await lines.next(io.signal))?.trim().toLowerCase();
    if (answer === "r" || answer === "revise") {
      io.stderr.write("What should change? ");
      const feedback = (await lines.next(io.signal))?.trim() ?? "";
      if (feedback === "") {
        io.stderr.write("No feedback given; the plan is unchanged.\n");
        continue;
      }
      await revise(feedback);
      continue;
    }
    if (answer !== "y" && answer !== "yes") {
      io.stderr.write("Not started; nothing ran.\n");
      return false;
    }
    return true;
  }
}

/**
 * The terminal's approver: asks about each step ([y]es / [n]o / [a]lways for the tool), one
 * question at a time. Tools in `alwaysApproved` (and those answered "always") pass without asking.
 */
export function terminalApprover(
  lines: LineReader,
  io: CliIo,
  alwaysApproved: Set<string>,
): Approver {
  return oneQuestionAtATime(async (req: ApprovalRequest, signal: AbortSignal) => {
    if (alwaysApproved.has(req.tool)) return true;
    signal.throwIfAborted(); // answered from the dashboard while queued here
    io.stderr.write(
      `\nApprove step "${req.stepId}" (${req.description})?\n  ${req.tool} ${
        formatArgs(req.args)
      }\n  Reason: ${req.reason}\n[y]es / [n]o / [a]lways for ${req.tool}: `,
    );
    const answer = (await lines.next(signal).catch((error) => {
      if (isAnsweredElsewhere(signal)) io.stderr.write("(answered from the dashboard)\n");
      throw error;
    }))?.trim().toLowerCase() ?? "";
    if (answer === "a" || answer === "always") {
      alwaysApproved.add(req.tool);
      return true;
    }
    return answer === "y" || answer === "yes"
      ? true
      : { approved: false, reason: "denied at the prompt" };
  });
}

/**
 * The executor asks for approvals concurrently; a terminal has one person, so the questions queue
 * here (an "always" answer then approves the queued questions of that tool without asking).
 */
export function oneQuestionAtATime<A extends unknown[], R>(
  ask: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  let last: Promise<unknown> = Promise.resolve();
  return (...args: A) => {
    const next = last.then(() => ask(...args));
    last = next.catch(() => {});
    return next;
  };
}
