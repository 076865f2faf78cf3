/**
 * A run's spend, as the runner uses it: the ledger set up when a drive starts (its budget, its
 * prices, its parent's account, refused before anything runs when a dollar budget meets a model
 * without a price), and how a spent budget stops the run — resumably, with what was spent on what
 * and how to go on. The ledger itself is `spend_ledger.ts`; every call is metered by
 * `metered_backend.ts`.
 *
 * @module
 */
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import type { ModelPricing, RunBudget } from "../definition/schema.ts";
import { RunBudgetSchema } from "../definition/schema.ts";
import { StepflowError } from "../errors.ts";
import { parsePrices, PriceTable } from "../llm/pricing.ts";
import type { LlmBackend } from "../llm/types.ts";
import type { StepError } from "./decisions.ts";
import type { NextStep } from "../invocation.ts";
import type { BudgetDimension } from "./budget_exceeded.ts";
import type { RunnerState } from "./run_state.ts";
import {
  BudgetExceeded,
  type ChildAccount,
  type LimitHit,
  limitText,
  SpendLedger,
  type StepSpend,
  usd,
} from "./spend_ledger.ts";
import type { StepCallJournal } from "./step_call_journal.ts";
import type { RunOptions, StepFlowRunnerOptions } from "./types.ts";

/**
 * The parent's account of a child run, by the options its parent's agent step runs it with (kept
 * off the public `RunOptions`: only an agent step sets it).
 */
const childAccounts = new WeakMap<RunOptions, ChildAccount>();

/** Gives the child run driven with `options` the parent's account (the agent step calls this). */
export function attachChildAccount(options: RunOptions, account: ChildAccount): RunOptions {
  childAccounts.set(options, account);
  return options;
}

/**
 * The ledger of a drive: the budget given now (`runner.budget`, checked) over the one the run
 * recorded over agent.json's, the run's prices (`runner.pricing`), the parent's account for a
 * child run. A dollar budget (this run's or an ancestor's) with a model the run may call and the
 * table cannot price is refused before anything runs.
 *
 * @throws {StepflowError} `BUDGET_INVALID` (a budget value out of range), `BUDGET_PRICE_MISSING`
 */
export function startRunSpend(
  definition: AgentDefinition,
  runner: Pick<StepFlowRunnerOptions, "budget" | "pricing" | "model" | "store">,
  runOptions: RunOptions,
  state: RunnerState,
  backend: LlmBackend,
): SpendLedger {
  const account = childAccounts.get(runOptions);
  // A child driven by its parent counts against the parent's budget through its account; the
  // runner's budget option is the parent's, not the child's own.
  const given = account ? undefined : checkBudget(runner.budget);
  if (given) state.budget = { ...state.budget, ...given };
  const budget = { ...definition.limits.budget, ...state.budget };
  const prices = runPriceTable(definition, runner.pricing);
  const ledger = new SpendLedger({
    state,
    budget,
    prices,
    recording: runner.store !== undefined,
    ...(account ? { parent: account } : {}),
  });
  if (dollarBudgeted(ledger) && !backend.reportsCost) {
    const missing = unpricedModels(definition, runner.model, backend, prices);
    if (missing.length > 0) throw priceMissing(definition, missing, prices);
  }
  ledger.settleWithParent();
  return ledger;
}

/**
 * The prices a run of `definition` uses: the built-in table, under agent.json `pricing`, under the
 * runner's `pricing` option (`--pricing`, `STEPFLOW_PRICING`).
 */
export function runPriceTable(
  definition: AgentDefinition,
  pricing: PriceTable | Readonly<Record<string, ModelPricing>> | undefined,
): PriceTable {
  let prices = PriceTable.builtIn();
  if (definition.pricing) {
    prices = prices.with(definition.pricing.source, definition.pricing.prices);
  }
  if (pricing instanceof PriceTable) return prices.over(pricing);
  // Checked like a pricing file: it may come from a stored request (a run submitted to workers).
  const where = "the runner's pricing option";
  return pricing ? prices.with(where, parsePrices(pricing, where)) : prices;
}

/** Checks a budget given through the runner's options (`--budget-usd`, `--budget-tokens`). */
function checkBudget(budget: RunBudget | undefined): RunBudget | undefined {
  if (budget === undefined) return undefined;
  const parsed = RunBudgetSchema.safeParse(budget);
  if (!parsed.success) {
    throw new StepflowError(
      "BUDGET_INVALID",
      `The run's budget is not valid: ${
        parsed.error.issues.map((i) => `${i.path.join(".") || "budget"}: ${i.message}`).join("; ")
      }. Give usd as a positive number of dollars, tokens, modelCalls and toolCalls as positive integers.`,
      { details: { budget } },
    );
  }
  const defined = Object.entries(parsed.data).filter(([, v]) => v !== undefined);
  return defined.length ? Object.fromEntries(defined) as RunBudget : undefined;
}

/** Whether this run or one above it has a dollar budget. */
function dollarBudgeted(ledger: SpendLedger): boolean {
  for (let l: SpendLedger | undefined = ledger; l; l = l.parentLedger) {
    if (l.budget?.usd !== undefined) return true;
  }
  return false;
}

/** The models an agent's steps (and its agent steps' children, all the way down) may call. */
function unpricedModels(
  definition: AgentDefinition,
  override: string | undefined,
  backend: LlmBackend,
  prices: PriceTable,
): { model?: string; agent: string; stepId: string }[] {
  const fallback = (backend as { model?: unknown }).model;
  // The models a chain walker tries after every chain (`--fallback-model`) need prices too.
  const after = (backend as { fallbackModels?: unknown }).fallbackModels;
  const afterEvery = Array.isArray(after) ? after.filter((m) => typeof m === "string") : [];
  const missing: { model?: string; agent: string; stepId: string }[] = [];
  const seen = new Set<AgentDefinition>();
  const visit = (def: AgentDefinition) => {
    if (seen.has(def) || seen.size > 64) return;
    seen.add(def);
    for (const step of Object.values(def.steps)) {
      if (step.kind === "agent" && step.child) visit(step.child);
      if (!callsModel(step)) continue;
      const setting = override ?? step.model ?? def.agent.behavior.model ??
        (typeof fallback === "string" ? fallback : undefined);
      // A chain's every entry may answer (its entries on other backends included).
      const models: (string | undefined)[] = setting === undefined || typeof setting === "string"
        ? [setting]
        : setting.map((e) => typeof e === "string" ? e : e.model);
      for (const model of [...models, ...afterEvery]) {
        if (prices.find(model)) continue;
        if (missing.some((m) => m.model === model)) continue;
        missing.push({
          ...(model !== undefined ? { model } : {}),
          agent: def.name,
          stepId: step.id,
        });
      }
    }
  };
  visit(definition);
  return missing;
}

function callsModel(step: FlowStep): boolean {
  return step.kind === "check" || step.kind === "gate" || step.kind === "closing";
}

function priceMissing(
  definition: AgentDefinition,
  missing: { model?: string; agent: string; stepId: string }[],
  prices: PriceTable,
): StepflowError {
  const list = missing.map((m) =>
    `${
      m.model === undefined ? "(no model named)" : m.model
    } (step "${m.stepId}" of agent ${m.agent})`
  ).join(", ");
  return new StepflowError(
    "BUDGET_PRICE_MISSING",
    `Agent ${definition.name} has a budget in US dollars, but these models have no price, so what the run spends could not be known: ${list}. Prices come from ${
      prices.sources.join(", ")
    }. Add the models to a pricing file — agent.json "pricing", --pricing FILE or STEPFLOW_PRICING=FILE, each mapping a model to { "inputUsdPerMTok", "outputUsdPerMTok", "cacheReadUsdPerMTok", "cacheWriteUsdPerMTok" } — name a model that has a price, or budget in tokens instead (--budget-tokens). Nothing was run.`,
    { details: { models: missing } },
  );
}

/**
 * Why the run cannot start its next step (its budget, or an ancestor's, is spent), as the error
 * the run ends `budget_exceeded` with; undefined when it can.
 */
export function budgetSpentBeforeStep(
  ledger: SpendLedger,
  state: RunnerState,
): StepError | undefined {
  const hit = ledger.exhausted();
  if (!hit) return undefined;
  return stopError(ledger, state, state.currentStepId, hit, "");
}

/**
 * A step the budget stopped (a model call or tool call was refused): the state is put back as the
 * step found it — with the step's recorded calls kept, so a resume continues inside it — and the
 * error the run ends `budget_exceeded` with is returned.
 */
export function budgetStopInStep(
  ledger: SpendLedger,
  state: RunnerState,
  step: FlowStep,
  inStep: StepCallJournal | undefined,
  error: BudgetExceeded,
): StepError {
  // What was spent stays counted: only the step's own counters go back.
  const { usage, spendByStep, loggedModelCalls } = state;
  if (inStep) {
    inStep.suspend(state);
    state.usage = usage;
    if (spendByStep) state.spendByStep = spendByStep;
    if (loggedModelCalls !== undefined) state.loggedModelCalls = loggedModelCalls;
  } else {
    state.iteration--;
    state.order--;
    // A check-gated step counts its run once its answer came; a refused check comes after that.
    if (step.kind === "check" && error.callKind === "check") {
      state.checkRuns = Math.max(0, state.checkRuns - 1);
    }
  }
  const hit = ledger.exhausted() ?? error.hit;
  return stopError(ledger, state, step.id, hit, error.message);
}

/** The message of a budget stop: what was refused, what was spent on what, how to go on. */
function stopError(
  ledger: SpendLedger,
  state: RunnerState,
  stepId: string,
  hit: LimitHit | undefined,
  refused: string,
): StepError {
  const parts: string[] = [];
  if (refused) parts.push(refused);
  else if (hit) {
    parts.push(
      `${
        hit.own
          ? `Run ${state.runId}'s budget`
          : `The budget of run ${hit.runId} (agent ${hit.agent})`
      } is spent (${limitText(hit.dimension, hit.spent)} of ${
        limitText(hit.dimension, hit.limit)
      }); step "${stepId}" was not started.`,
    );
  }
  parts.push(`Spent: ${spentSummary(state)}.`);
  const top = topSteps(state.spendByStep);
  if (top) parts.push(`Top steps: ${top}.`);
  const how = howToContinue(ledger, state, hit);
  parts.push(how.text);
  return {
    code: "BUDGET_EXCEEDED",
    message: parts.join(" "),
    stepId,
    details: {
      ...(hit ? { dimension: hit.dimension, limit: hit.limit, spent: hit.spent } : {}),
      next: how.next,
    },
  };
}

/** `$4.9873 (12 model calls, 35,012 tokens, 8 tool calls)`. */
export function spentSummary(state: Pick<RunnerState, "usage">): string {
  const u = state.usage;
  const cost = u.calls > 0 && (u.callsWithoutCost ?? 0) >= u.calls
    ? "cost unknown"
    : `${usd(u.costUsd)}${
      u.callsWithoutCost ? ` + unknown for ${u.callsWithoutCost} call(s)` : ""
    }${u.estimatedUsd ? ` + up to ${usd(u.estimatedUsd)} in calls cut off` : ""}`;
  const facts = [
    `${u.calls} model call${u.calls === 1 ? "" : "s"}`,
    `${(u.inputTokens + u.outputTokens).toLocaleString("en-US")} tokens`,
  ];
  if (u.toolCalls) facts.push(`${u.toolCalls} tool call${u.toolCalls === 1 ? "" : "s"}`);
  return `${cost} (${facts.join(", ")})`;
}

/** The (at most) three steps that spent most: dollars first, then tokens. */
export function topSteps(byStep: Readonly<Record<string, StepSpend>> | undefined): string {
  if (!byStep) return "";
  const rows = Object.entries(byStep).sort(([, a], [, b]) =>
    b.costUsd - a.costUsd || (b.inputTokens + b.outputTokens) - (a.inputTokens + a.outputTokens)
  );
  return rows.slice(0, 3).map(([id, s]) => {
    const facts = [`${s.calls} call${s.calls === 1 ? "" : "s"}`];
    const tokens = s.inputTokens + s.outputTokens;
    if (tokens) facts.push(`${tokens.toLocaleString("en-US")} tokens`);
    if (s.toolCalls) facts.push(`${s.toolCalls} tool call${s.toolCalls === 1 ? "" : "s"}`);
    const cost = s.calls > 0 && (s.callsWithoutCost ?? 0) >= s.calls
      ? "cost unknown"
      : usd(s.costUsd);
    return `"${id}" ${cost} (${facts.join(", ")})`;
  }).join(", ");
}

/**
 * How to go on: in words, and as the next step (data: the resume with the raised limit as its
 * arguments, which the CLI prints as a command line). The words name no command-line flag; the
 * budget option of a resume (`budget`, the CLI's budget flags) raises a dollar or token budget,
 * agent.json raises the others.
 */
function howToContinue(
  ledger: SpendLedger,
  state: RunnerState,
  hit: LimitHit | undefined,
): { text: string; next: NextStep } {
  if (!hit) {
    return {
      text:
        "The run stays resumable: raise the budget that stopped it (limits.budget in the child agent's agent.json), then resume the run.",
      next: { action: "resume", runId: state.runId },
    };
  }
  const raised = suggestedLimit(hit, hit.own ? ledger.budget?.[hit.dimension] : hit.limit);
  const args = raisedBudgetArgs(hit.dimension, raised);
  if (!hit.own) {
    return {
      text: `The run stays resumable: continue the top run ${hit.runId} with a higher budget (${
        limitText(hit.dimension, raised)
      }, say; it resumes this run inside its step).`,
      next: { action: "resume", runId: hit.runId, ...(args ? { args } : {}) },
    };
  }
  if (args) {
    return {
      text: `The run stays resumable: resume it with a higher budget (${
        limitText(hit.dimension, raised)
      }, say) to carry on inside the step.`,
      next: { action: "resume", runId: state.runId, args },
    };
  }
  return {
    text:
      `The run stays resumable: raise limits.budget.${hit.dimension} in agent.json (or the runner's budget option) to ${raised}, then resume the run.`,
    next: { action: "resume", runId: state.runId },
  };
}

/**
 * The arguments of a resume that raise a dollar or token budget to `limit` (`--budget-usd 0.04`);
 * undefined for a limit only agent.json sets (model calls, tool calls).
 *
 * @example
 * ```ts
 * import { raisedBudgetArgs } from "./run_spend.ts";
 * raisedBudgetArgs("usd", 0.04); // ["--budget-usd", "0.04"]
 * raisedBudgetArgs("modelCalls", 40); // undefined
 * ```
 */
export function raisedBudgetArgs(dimension: BudgetDimension, limit: number): string[] | undefined {
  if (dimension === "usd") return ["--budget-usd", String(limit)];
  if (dimension === "tokens") return ["--budget-tokens", String(limit)];
  return undefined;
}

/** Twice the limit (at least what was spent plus half again), rounded to something readable. */
function suggestedLimit(hit: LimitHit, limit: number | undefined): number {
  const base = Math.max((limit ?? hit.limit) * 2, hit.spent * 1.5);
  if (hit.dimension !== "usd") return Math.ceil(base);
  return base >= 10 ? Math.ceil(base) : Math.ceil(base * 100) / 100;
}

export { BudgetExceeded };
