/**
 * The one place every model call of a run passes through on its way to the backend: a wrapper that
 * admits each call (a plain call, a check, a re-ask, each turn of the tool loop) into the run's
 * spend ledger, hands the backend the call's attempt meter (so each attempt and retry of a chat API
 * is checked against what is left), counts the answer's usage at the run's prices, and writes the
 * call's `model_call` line to the run log.
 *
 * A call with a model chain is walked inside the meter (`modelChainFor`): whichever entry answers,
 * the call is admitted once, each entry's attempts are checked against what is left, and the
 * answer is priced by the model that gave it.
 *
 * A call that already carries a meter (an outer run's wrapper has it: a child run's calls pass
 * through the parent's wrapper too) goes through unmetered, so a call is counted once — by the
 * innermost run, whose ledger adds it to every ancestor's.
 *
 * @module
 */
import type { LlmBackend, LlmCallOptions, LlmResponse } from "../llm/types.ts";
import { supportsToolTurns, type ToolTurnBackend } from "../llm/tool_turn.ts";
import { modelChainFor } from "../llm/factory.ts";
import type { ModelCallLine, SpendLedger } from "./spend_ledger.ts";

/** Writes a run-log line (the runner's journal), or nothing when the run is not recorded. */
export type SpendLogger = (fields: { type: string; [key: string]: unknown }) => Promise<void>;

/**
 * `backend` metered by `ledger`: same name, model, tools and flags, every call admitted, metered
 * and counted. `log` writes each call's `model_call` line.
 *
 * @example
 * ```ts
 * import { meterBackend } from "./metered_backend.ts";
 * import { SpendLedger } from "./spend_ledger.ts";
 * import { PriceTable } from "../llm/pricing.ts";
 * import { ScriptedBackend } from "../llm/scripted.ts";
 * const state = { runId: "r1", agent: "demo", usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 } };
 * const ledger = new SpendLedger({ state, prices: PriceTable.builtIn() });
 * const backend = meterBackend(
 *   new ScriptedBackend([{ text: "hi", usage: { inputTokens: 1000, outputTokens: 100 } }]),
 *   ledger,
 * );
 * await backend.complete({ kind: "step", agent: "demo", stepId: "a", iteration: 1, prompt: "Hi", cwd: ".", model: "gpt-4o" });
 * console.log(state.usage.costUsd); // 0.0035 (1000 × $2.50 + 100 × $10 per million)
 * ```
 */
export function meterBackend(
  backend: LlmBackend,
  ledger: SpendLedger,
  log?: SpendLogger,
): LlmBackend {
  const defaultModel = (backend as { model?: unknown }).model;
  const fallbackModel = typeof defaultModel === "string" ? defaultModel : undefined;
  const metered = async <R extends LlmResponse | Awaited<ReturnType<ToolTurnBackend["toolTurn"]>>>(
    request: { stepId: string; kind?: string; model?: string },
    options: LlmCallOptions,
    call: (options: LlmCallOptions) => Promise<R>,
  ): Promise<R> => {
    if (options.meter) return await call(options);
    const ticket = ledger.admit(
      request.stepId,
      request.kind ?? "step",
      request.model ?? fallbackModel,
    );
    let answer: R;
    try {
      answer = await call({ ...options, meter: ticket });
    } catch (error) {
      ticket.abandon();
      if (log && ticket.lines) await write(ticket.lines, log);
      throw error;
    }
    const line = ticket.settle(answer);
    if (line.costUsd !== undefined && answer.costUsd === undefined) answer.costUsd = line.costUsd;
    if (log) await write(ticket.lines!, log);
    return answer;
  };
  // The chain walker around `backend`, made once and only when a call has a chain.
  let chained: LlmBackend | undefined;
  const forRequest = (request: { modelChain?: unknown }): LlmBackend =>
    request.modelChain ? (chained ??= modelChainFor(backend)) : backend;
  const wrapped: LlmBackend & Partial<ToolTurnBackend> & { readonly model?: string } = {
    name: backend.name,
    ...(fallbackModel !== undefined ? { model: fallbackModel } : {}),
    complete: (request, options = {}) =>
      metered(request, options, (o) => forRequest(request).complete(request, o)),
    ...(backend.reportsToolCalls ? { reportsToolCalls: true } : {}),
    ...(backend.reportsCost ? { reportsCost: true } : {}),
    walksModelChains: true,
  };
  // A backend that runs tool turns keeps doing so through the wrapper (each turn metered).
  if (supportsToolTurns(backend)) {
    wrapped.toolTurn = (request, options = {}) =>
      metered(
        request,
        options,
        (o) => (forRequest(request) as LlmBackend & ToolTurnBackend).toolTurn(request, o),
      );
  }
  return wrapped;
}

async function write(lines: readonly ModelCallLine[], log: SpendLogger): Promise<void> {
  for (const line of lines) await log({ type: "model_call", ...line });
}
