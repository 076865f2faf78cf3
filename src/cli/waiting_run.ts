/**
 * What `run-agent` does about a run that waits at an input step: the text that tells a person
 * without a terminal what the run asks and the exact command that answers it, the question asked
 * at a terminal (`answer_prompt.ts`), and the answer of `--answer RUN_ID` read from `--value` or
 * stdin (docs/cli.md, "Answering a waiting run").
 *
 * @module
 */
import type { AnswerForm } from "../definition/answer_form.ts";
import { errorMessage, UsageError } from "../errors.ts";
import type { PendingInput } from "../flow/input_request.ts";
export { answerFormOf as formOf } from "../flow/input_request.ts";
import { exampleAnswer } from "../definition/answer_form.ts";
export { exampleAnswer };
import type { RunStore } from "../store/types.ts";
import type { CliFlags } from "./args.ts";
import { askAnswer } from "./answer_prompt.ts";
import type { LineReader } from "./kit/line_reader.ts";

/**
 * The lines printed when a run waits and nobody is at a terminal: the question, the run id, when
 * the wait passes, and the command that answers it (with an example value from the form).
 */
export function waitingText(
  waiting: PendingInput,
  runId: string,
  answerCommand: (value: string) => string,
  form: AnswerForm | undefined,
): string {
  const lines = [
    waiting.child
      ? `Run ${runId} waits for an answer at agent step "${waiting.stepId}" (its child run ${waiting.child.runId} waits at input step "${waiting.child.stepId}"; answer this run, and the child goes on with it):`
      : waiting.permission
      ? `Run ${runId} waits for permission to run ${waiting.permission.tool} in step "${waiting.stepId}":`
      : `Run ${runId} waits for an answer at input step "${waiting.stepId}":`,
    ...waiting.prompt.trimEnd().split("\n").map((line) => `  ${line}`),
  ];
  if (waiting.expiresAt) {
    lines.push(
      `The wait passes at ${waiting.expiresAt}; after that, resuming the run takes the intent "${waiting.timeoutIntent}".`,
    );
  }
  // Without a readable schema only a permission's answer is known; else the JSON is to be filled.
  const example = form
    ? JSON.stringify(exampleAnswer(form))
    : waiting.permission
    ? JSON.stringify({ decision: "allow" })
    : "<json>";
  lines.push("Answer it with:", `  ${answerCommand(example)}`);
  return `${lines.join("\n")}\n`;
}

/**
 * The lines printed when a run waits on several requests (a fan-out step's children wait): each
 * child's question and the command that answers it (`--request-id`); each is answered on its own.
 */
export function waitsText(
  waits: readonly PendingInput[],
  runId: string,
  answerCommand: (value: string, requestId: string) => string,
  forms: readonly (AnswerForm | undefined)[],
): string {
  const lines = [
    `Run ${runId} waits for ${waits.length} answers at fan-out step "${
      waits[0].stepId
    }" (each child run waits on its own; answer them in any order, from any process):`,
  ];
  waits.forEach((wait, i) => {
    const item = wait.child?.item !== undefined ? `item ${wait.child.item + 1}, ` : "";
    lines.push(
      "",
      `${i + 1}. ${item}child run ${wait.child?.runId ?? "?"} at "${
        wait.child?.stepId ?? wait.stepId
      }":`,
      ...wait.prompt.trimEnd().split("\n").map((line) => `  ${line}`),
    );
    const form = forms[i];
    const example = form ? JSON.stringify(exampleAnswer(form)) : "<json>";
    lines.push(`  Answer it with: ${answerCommand(example, wait.requestId ?? "")}`);
  });
  return `${lines.join("\n")}\n`;
}

/** Where a terminal answer is asked. */
export interface TerminalAsk {
  /** The terminal's lines. */
  lines: LineReader;
  /** Writes the question (stderr). */
  write(text: string): void;
  /** Ctrl-C. */
  signal?: AbortSignal;
}

/** Shows a waiting run's question at the terminal and asks its answer field by field. */
export async function askAtTerminal(
  waiting: PendingInput,
  runId: string,
  form: AnswerForm,
  ask: TerminalAsk,
): Promise<Record<string, unknown>> {
  ask.write(
    `\nRun ${runId} waits for your answer at step "${waiting.stepId}":\n${
      waiting.prompt.trimEnd().split("\n").map((line) => `  ${line}`).join("\n")
    }\n`,
  );
  return await askAnswer(form, ask);
}

/**
 * The request a run waits on, read from its checkpoint (`undefined` when it does not wait): the
 * one named `requestId` of a run that waits on several, else the first.
 */
export async function pendingOf(
  store: RunStore,
  runId: string,
  requestId?: string,
): Promise<PendingInput | undefined> {
  const checkpoint = await store.loadCheckpoint(runId);
  if (checkpoint?.status !== "waiting") return undefined;
  const waits = (checkpoint.state.waits ?? [checkpoint.state.waiting]) as (
    | PendingInput
    | undefined
  )[];
  const waiting = requestId === undefined
    ? waits[0]
    : waits.find((w) => w?.requestId === requestId);
  return waiting && typeof waiting.stepId === "string" ? waiting : undefined;
}

/** The answer of `--answer`: `--value`, else piped stdin, parsed as JSON. */
export function parseAnswerValue(text: string | undefined, source: string): unknown {
  if (text === undefined || text.trim() === "") {
    throw new UsageError(
      "--answer needs the answer: give it as --value '<json>', or pipe the JSON on stdin (at a terminal, run without --value to be asked field by field).",
    );
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(
      `The answer (${source}) is not JSON: ${
        errorMessage(error)
      }. Quote it for the shell, e.g. --value '{"decision":"next"}'.`,
    );
  }
}

/**
 * The flags a continuation of this run needs again — what may run — so the printed `--answer`
 * command continues the run the way it started. The backend needs none: the run recorded how it
 * was chosen; the store is part of the command (`commandLine`, its password hidden).
 */
export function continuationFlags(flags: CliFlags): string[] {
  const out: string[] = [];
  if (flags.allowRun) out.push("--allow-run");
  if (flags.allowFallback) out.push("--allow-fallback");
  if (flags.skipValidators) out.push("--skip-validators");
  if (flags.permissionAsks) out.push("--permission-asks", flags.permissionAsks);
  return out;
}
