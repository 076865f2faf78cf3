/**
 * A spent budget: the error that stops a model call or a tool call (`BUDGET_EXCEEDED`), the limit
 * it names, and how the messages write limits and amounts.
 *
 * @module
 */
import type { RunBudget } from "../definition/schema.ts";
import { StepflowError } from "../errors.ts";
import type { FoundPrice, PriceTable } from "../llm/pricing.ts";
import type { AttemptBound } from "../llm/types.ts";

/** The smallest answer a call whose output limit the budget lowers may still ask for, in tokens. */
export const MIN_CAPPED_OUTPUT_TOKENS = 1024;

/** A budget's dimensions. */
export type BudgetDimension = keyof RunBudget;

/** A limit a run reached, or would pass. */
export interface LimitHit {
  /** The run whose budget it is. */
  runId: string;
  /** That run's agent. */
  agent: string;
  /** Whether it is the budget of the run the call belongs to (else an ancestor's). */
  own: boolean;
  /** Which limit. */
  dimension: BudgetDimension;
  /** The limit. */
  limit: number;
  /** What was spent (and held by calls in flight). */
  spent: number;
  /** What the next call needed at most, when it was refused for that (not for a spent budget). */
  need?: string;
}

/**
 * A spent budget (or one the next call could overrun): the call or tool call is not made. The run
 * ends `budget_exceeded` and stays resumable (docs/budgets.md).
 */
export class BudgetExceeded extends StepflowError {
  /** The limit, when known (a child run's own budget is known to the child only). */
  readonly hit?: LimitHit;
  /** The kind of the refused model call (`step`, `check`, `reask`), when a model call was refused. */
  readonly callKind?: string;

  /**
   * @param hit the limit, when known
   * @param message what was refused and why
   * @param callKind the kind of the refused model call
   */
  constructor(hit: LimitHit | undefined, message: string, callKind?: string) {
    super("BUDGET_EXCEEDED", message, {
      details: hit
        ? {
          runId: hit.runId,
          dimension: hit.dimension,
          limit: hit.limit,
          spent: hit.spent,
          ...(hit.own ? {} : { ancestor: true }),
        }
        : {},
    });
    if (hit) this.hit = hit;
    if (callKind !== undefined) this.callKind = callKind;
  }
}

/** How a limit is written: `$5.00`, `12,000 tokens`, `40 model calls`. */
export function limitText(dimension: BudgetDimension, value: number): string {
  switch (dimension) {
    case "usd":
      return usd(value);
    case "tokens":
      return `${count(value)} tokens`;
    case "modelCalls":
      return `${count(value)} model call${value === 1 ? "" : "s"}`;
    case "toolCalls":
      return `${count(value)} tool call${value === 1 ? "" : "s"}`;
  }
}

/** `$0.1234` (four decimals under a dollar, two above). */
export function usd(value: number): string {
  return `$${value < 1 ? value.toFixed(4) : value.toFixed(2)}`;
}

export function count(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

function whose(hit: LimitHit): string {
  return hit.own
    ? `Run ${hit.runId}'s budget`
    : `The budget of run ${hit.runId} (agent ${hit.agent}), which this run counts against,`;
}

export function spentMessage(hit: LimitHit, what: string): string {
  if (hit.need !== undefined && hit.limit === 0) {
    return `${
      whose(hit)
    } can no longer be kept: ${hit.need}, so what the run spent is unknown; ${what} was not made.`;
  }
  return `${whose(hit)} is spent: ${limitText(hit.dimension, hit.spent)} of ${
    limitText(hit.dimension, hit.limit)
  }; ${what} was not made.`;
}

export function noPriceMessage(
  hit: LimitHit,
  model: string,
  what: string,
  prices: PriceTable,
): string {
  return `${whose(hit)} is in US dollars, but model ${model} has no price (prices from ${
    prices.sources.join(", ")
  }); ${what} was not made. Add the model to a pricing file (agent.json pricing, --pricing FILE, STEPFLOW_PRICING).`;
}

export function tooDearMessage(
  hit: LimitHit,
  what: string,
  bound: AttemptBound,
  prompt: number,
  found: FoundPrice | undefined,
  left: string,
): string {
  const output = bound.maxOutputTokens !== undefined
    ? `${count(bound.maxOutputTokens)} output tokens`
    : "an answer";
  return `${whose(hit)} (${
    limitText(hit.dimension, hit.limit)
  }) has ${left} left, less than ${what} could cost: up to ${hit.need} (a prompt of at most ${
    count(prompt)
  } tokens and ${output}${
    found ? ` at the prices of ${found.model}` : ""
  }, not even ${MIN_CAPPED_OUTPUT_TOKENS} output tokens fit); it was not sent.`;
}
