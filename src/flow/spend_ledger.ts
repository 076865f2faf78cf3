/**
 * The one spend ledger of a run: every model call and tool call is counted here, priced from the
 * run's price table, and checked against the run's budget and the budget of every run above it
 * (an agent step's child counts against its parent, and so on up).
 *
 * The ledger writes into the run's state (`usage`, `spendByStep`), so what it counted is in every
 * checkpoint; a child's ledger adds what its run spends to its parent's state as it happens (and to
 * the parent's link to it), so the parent's budget sees it at once. The checks:
 *
 * - {@linkcode SpendLedger.admit} before every model call: no call once a limit is reached;
 * - {@linkcode CallTicket.beforeAttempt} before each attempt of a backend that knows the attempt's
 *   size (the chat APIs: prompt bytes and `max_tokens`): its worst case must fit what is left — its
 *   output limit is lowered until it does, and it is not sent when not even a small answer would;
 * - {@linkcode SpendLedger.beforeToolCall} before every tool call;
 * - after each call, with its real usage ({@linkcode CallTicket.settle}).
 *
 * Attempts in flight hold their worst case until they end, so calls made at the same time cannot
 * together overrun what is left. See docs/budgets.md for the promise these checks keep.
 *
 * Long because: the ledger and its call ticket share the chain's holds, in-flight counts and
 * prices (a ticket is the ledger's view of one call); apart, each would reach into the other's
 * internals. The records it writes are in spend_records.ts, its error and messages in
 * budget_exceeded.ts.
 *
 * @module
 */
import type { RunBudget } from "../definition/schema.ts";
import { costOf, dearestInputUsd, type FoundPrice, PriceTable } from "../llm/pricing.ts";
import type { AttemptBound, AttemptMeter, LlmUsage } from "../llm/types.ts";
import type { RunUsage } from "./types.ts";
import {
  type BudgetDimension,
  BudgetExceeded,
  count,
  type LimitHit,
  MIN_CAPPED_OUTPUT_TOKENS,
  noPriceMessage,
  spentMessage,
  tooDearMessage,
  usd,
} from "./budget_exceeded.ts";
import {
  addDelta,
  copySpendByStep,
  lineDelta,
  type ModelCallLine,
  readModelCallLine,
  type SpendDelta,
  type SpendHolder,
  stepSpendOf,
  usageDelta,
} from "./spend_records.ts";

// Where the ledger's records and its error are declared, for the files that use them with it.
export { BudgetExceeded, limitText, MIN_CAPPED_OUTPUT_TOKENS, usd } from "./budget_exceeded.ts";
export type { BudgetDimension, LimitHit } from "./budget_exceeded.ts";
export {
  addUsageBeyond,
  copySpendByStep,
  type ModelCallLine,
  type SpendHolder,
  type StepSpend,
  usageDelta,
} from "./spend_records.ts";

/** A parent's account of one child run: where the child's spend is added as it happens. */
export interface ChildAccount {
  /** The parent's ledger. */
  readonly parent: SpendLedger;
  /** The parent's agent step the child runs for. */
  readonly stepId: string;
  /** The parent's link to the child: what of the child's spend the parent counted. */
  readonly counted: RunUsage;
}

/** What a call or attempt holds of the budgets while it is in flight. */
interface Hold {
  usd: number;
  tokens: number;
}

/** Options of {@linkcode SpendLedger}. */
export interface SpendLedgerOptions {
  /** The run's state the counts live in. */
  state: SpendHolder;
  /** The run's own budget (agent.json `limits.budget` under the runner's `budget`). */
  budget?: RunBudget;
  /** The run's prices. */
  prices: PriceTable;
  /** The parent's account of this run, for a child run. */
  parent?: ChildAccount;
  /**
   * True when every charge is written to the run log as a `model_call` line (the run has a store):
   * `state.loggedModelCalls` then counts them, so a resume adds the lines it did not count.
   */
  recording?: boolean;
}

/** The run's ledger (see the module's note). */
export class SpendLedger {
  /** The run's own budget. */
  readonly budget?: RunBudget;
  /** The run's prices. */
  readonly prices: PriceTable;
  readonly #state: SpendHolder;
  readonly #parent?: ChildAccount;
  /** Worst cases of the attempts in flight (this run's and its children's). */
  readonly #held: Hold = { usd: 0, tokens: 0 };
  /** Model calls and tool calls in flight. */
  #inflightCalls = 0;
  #inflightTools = 0;
  /** Set when spend could not be measured at all: a dollar or token budget can no longer be kept. */
  #unmetered?: string;
  /** True when this ledger or one above it has a budget (else the checks are skipped). */
  readonly #checks: boolean;
  readonly #recording: boolean;
  /** Prices found per model (a run calls few models, every call asks). */
  readonly #found = new Map<string | undefined, FoundPrice | undefined>();
  /** This ledger and the ledgers above it, nearest first (fixed: a run's parent never changes). */
  readonly #ledgers: readonly SpendLedger[];

  /**
   * A ledger over `options.state`.
   *
   * @param options the state, budget, prices and parent account
   */
  constructor(options: SpendLedgerOptions) {
    this.#state = options.state;
    this.prices = options.prices;
    const budget = options.budget;
    if (budget && Object.values(budget).some((v) => v !== undefined)) this.budget = budget;
    this.#parent = options.parent;
    this.#checks = this.budget !== undefined ||
      (this.#parent !== undefined && this.#parent.parent.budgeted);
    this.#recording = options.recording === true;
    const above = this.#parent ? this.#parent.parent.#ledgers : [];
    this.#ledgers = [this, ...above];
    // The ledger changes the spend per step in place: on a copy of its own, never on an object a
    // store or a saved state holds.
    if (options.state.spendByStep) {
      options.state.spendByStep = copySpendByStep(options.state.spendByStep);
    }
  }

  /** The run's state the counts live in. */
  get state(): SpendHolder {
    return this.#state;
  }

  /** The price of `model` in the run's table (looked up once per model). */
  #priceOf(model: string | undefined): FoundPrice | undefined {
    if (this.#found.has(model)) return this.#found.get(model);
    const found = this.prices.find(model);
    if (this.#found.size < 256) this.#found.set(model, found);
    return found;
  }

  /** The ledger of the run above this one (a child run's parent), when there is one. */
  get parentLedger(): SpendLedger | undefined {
    return this.#parent?.parent;
  }

  /** True when a budget applies to this run (its own or an ancestor's). */
  get budgeted(): boolean {
    return this.#checks;
  }

  /** This ledger and the ledgers above it, nearest first. */
  #chain(): readonly SpendLedger[] {
    return this.#ledgers;
  }

  /** What this run (children included) spent in `dimension`, with what is held in flight. */
  #spent(dimension: BudgetDimension): number {
    const u = this.#state.usage;
    switch (dimension) {
      case "usd":
        return u.costUsd + (u.estimatedUsd ?? 0) + this.#held.usd;
      case "tokens":
        return u.inputTokens + u.outputTokens + (u.estimatedTokens ?? 0) + this.#held.tokens;
      case "modelCalls":
        return u.calls + this.#inflightCalls;
      case "toolCalls":
        return (u.toolCalls ?? 0) + this.#inflightTools;
    }
  }

  /** The first limit of this ledger that is reached, when one is. */
  #reached(dimensions: readonly BudgetDimension[]): LimitHit | undefined {
    const budget = this.budget;
    if (!budget) return undefined;
    for (const dimension of dimensions) {
      const limit = budget[dimension];
      if (limit === undefined) continue;
      const spent = this.#spent(dimension);
      if (spent >= limit) return this.#hit(dimension, limit, spent);
    }
    if (this.#unmetered && (budget.usd !== undefined || budget.tokens !== undefined)) {
      return this.#hit(budget.usd !== undefined ? "usd" : "tokens", 0, 0, this.#unmetered);
    }
    return undefined;
  }

  #hit(dimension: BudgetDimension, limit: number, spent: number, need?: string): LimitHit {
    return {
      runId: this.#state.runId,
      agent: this.#state.agent,
      own: true,
      dimension,
      limit,
      spent,
      ...(need !== undefined ? { need } : {}),
    };
  }

  /**
   * The first limit reached by this run or a run above it, when one is: the run must not go on (no
   * model call, no tool call, no next step).
   */
  exhausted(): LimitHit | undefined {
    if (!this.#checks) return undefined;
    for (const [i, ledger] of this.#chain().entries()) {
      const hit = ledger.#reached(ALL_DIMENSIONS);
      if (hit) return i === 0 ? hit : { ...hit, own: false };
    }
    return undefined;
  }

  /**
   * Admits one model call of `stepId` (a plain call, or one turn of the tool loop): throws
   * {@linkcode BudgetExceeded} once a limit of this run or a run above it is reached. The ticket
   * meters the call's attempts and counts its usage ({@linkcode CallTicket.settle}).
   */
  admit(stepId: string, kind: string, model: string | undefined): CallTicket {
    if (this.#checks) {
      const hit = this.exhausted();
      if (hit) {
        const what = `the next model call of step "${stepId}" (${kind})`;
        throw new BudgetExceeded(hit, spentMessage(hit, what), kind);
      }
    }
    return new CallTicket(this, stepId, kind, model);
  }

  /**
   * Before a tool call runs: throws {@linkcode BudgetExceeded} once a limit is reached (no tool runs
   * on a spent budget), and counts the call as in flight until {@linkcode SpendLedger.toolCallEnded}.
   */
  beforeToolCall(stepId: string, tool: string): void {
    if (this.#checks) {
      const hit = this.exhausted();
      if (hit) {
        throw new BudgetExceeded(
          hit,
          spentMessage(hit, `the tool call ${tool} of step "${stepId}"`),
        );
      }
    }
    for (const ledger of this.#chain()) ledger.#inflightTools++;
  }

  /** A tool call that {@linkcode SpendLedger.beforeToolCall} let run ended (`ran`: it was counted). */
  toolCallEnded(stepId: string, ran: boolean): void {
    for (const ledger of this.#chain()) {
      ledger.#inflightTools = Math.max(0, ledger.#inflightTools - 1);
    }
    if (ran) this.#add(stepId, { toolCalls: 1 });
  }

  /** Counts a tool call the backend ran itself (`claude-code`: reported after it ran). */
  countToolCall(stepId: string): void {
    this.#add(stepId, { toolCalls: 1 });
  }

  /** The account a child run of agent step `stepId` adds its spend to (`counted`: the link's usage). */
  childAccount(stepId: string, counted: RunUsage): ChildAccount {
    return { parent: this, stepId, counted };
  }

  /**
   * Adds to the parent what this (child) run spent that the parent has not counted yet: what an
   * earlier drive spent (its log and checkpoint have it, the parent's link does not). Called once
   * when a child's drive starts.
   */
  settleWithParent(): void {
    const account = this.#parent;
    if (!account) return;
    const delta = usageDelta(this.#state.usage, account.counted);
    if (delta) account.parent.#fromChild(account, delta);
  }

  /** Spend of a child run, added as it happens (and to the link that counts it). */
  #fromChild(account: ChildAccount, delta: SpendDelta): void {
    addDelta(account.counted, delta);
    this.#add(account.stepId, delta);
  }

  /** Adds `delta` to the run's usage and its step's spend, then to the parent's. */
  #add(stepId: string, delta: SpendDelta): void {
    const state = this.#state;
    addDelta(state.usage, delta);
    const step = stepSpendOf(state, stepId);
    if (delta.costUsd) step.costUsd += delta.costUsd;
    if (delta.inputTokens) step.inputTokens += delta.inputTokens;
    if (delta.outputTokens) step.outputTokens += delta.outputTokens;
    if (delta.calls) step.calls += delta.calls;
    if (delta.callsWithoutCost) {
      step.callsWithoutCost = (step.callsWithoutCost ?? 0) + delta.callsWithoutCost;
    }
    if (delta.toolCalls) step.toolCalls = (step.toolCalls ?? 0) + delta.toolCalls;
    const account = this.#parent;
    if (account) account.parent.#fromChild(account, delta);
  }

  /** {@linkcode SpendLedger.#add} of a line's spend, without building the delta (no parent to tell). */
  #addLine(line: ModelCallLine): void {
    const usage = this.#state.usage;
    const step = stepSpendOf(this.#state, line.stepId);
    usage.calls++;
    step.calls++;
    const used = line.usage;
    if (used) {
      usage.inputTokens += used.inputTokens;
      usage.outputTokens += used.outputTokens;
      step.inputTokens += used.inputTokens;
      step.outputTokens += used.outputTokens;
      if (used.cacheReadTokens) {
        usage.cacheReadTokens = (usage.cacheReadTokens ?? 0) + used.cacheReadTokens;
      }
      if (used.cacheWriteTokens) {
        usage.cacheWriteTokens = (usage.cacheWriteTokens ?? 0) + used.cacheWriteTokens;
      }
    } else usage.callsWithoutUsage = (usage.callsWithoutUsage ?? 0) + 1;
    if (line.costUsd !== undefined) {
      usage.costUsd += line.costUsd;
      step.costUsd += line.costUsd;
    } else {
      usage.callsWithoutCost = (usage.callsWithoutCost ?? 0) + 1;
      step.callsWithoutCost = (step.callsWithoutCost ?? 0) + 1;
    }
    if (line.estimatedUsd) usage.estimatedUsd = (usage.estimatedUsd ?? 0) + line.estimatedUsd;
    if (line.estimatedTokens) {
      usage.estimatedTokens = (usage.estimatedTokens ?? 0) + line.estimatedTokens;
    }
  }

  /** Marks spend as no longer measurable (a call without usage and without a bound). */
  #markUnmetered(why: string): void {
    for (const ledger of this.#chain()) ledger.#unmetered ??= why;
  }

  // The ticket's side: holds, attempts, and the call's charge.

  /** @internal Checks an attempt against every budget of the chain; returns the output cap. */
  _beforeAttempt(ticket: CallTicket, bound: AttemptBound): number | undefined {
    if (!this.#checks) return undefined;
    const found = this.#priceOf(bound.model);
    // The quick, looser bound first: a budget far from spent needs nothing closer.
    const ceiling = bound.promptTokensCeiling;
    if (ceiling !== undefined) {
      const quick = this.#fit(ticket, bound, ceiling, found, false);
      if (quick !== undefined) return this.#holdAttempt(ticket, bound, ceiling, found, quick);
    }
    const prompt = bound.promptTokens();
    const cap = this.#fit(ticket, bound, prompt, found, true)!;
    return this.#holdAttempt(ticket, bound, prompt, found, cap);
  }

  /**
   * The output limit an attempt of `prompt` tokens may ask for under every budget of the chain
   * (`Infinity`: no limit needed). Throws when a budget is spent, when a dollar budget meets a
   * model without a price, and — when `final` — when not even a small answer fits; not `final`,
   * it returns undefined instead whenever the attempt would be refused or limited (the caller then
   * asks again with the closer bound).
   */
  #fit(
    ticket: CallTicket,
    bound: AttemptBound,
    prompt: number,
    found: FoundPrice | undefined,
    final: boolean,
  ): number | undefined {
    const inUsd = found ? prompt * dearestInputUsd(found.pricing) : 0;
    const outUsd = found ? found.pricing.outputUsdPerMTok / 1_000_000 : 0;
    const requested = bound.maxOutputTokens ?? Infinity;
    const smallest = Math.min(MIN_CAPPED_OUTPUT_TOKENS, requested);
    let cap = Infinity;
    const ledgers = this.#chain();
    for (let i = 0; i < ledgers.length; i++) {
      const ledger = ledgers[i];
      const budget = ledger.budget;
      if (!budget) continue;
      const mark = i === 0 ? ownHit : ancestorHit;
      // The call itself was admitted (its model call counted in flight): its attempts answer to
      // the dollars and tokens left.
      const reached = ledger.#reached(SPEND_DIMENSIONS);
      if (reached) {
        throw new BudgetExceeded(
          mark(reached),
          spentMessage(mark(reached), ticket.what),
          ticket.kind,
        );
      }
      if (budget.usd !== undefined) {
        const spent = ledger.#spent("usd");
        if (!found) {
          const hit = mark(ledger.#hit("usd", budget.usd, spent, "a price"));
          throw new BudgetExceeded(
            hit,
            noPriceMessage(hit, bound.model, ticket.what, this.prices),
            ticket.kind,
          );
        }
        const left = budget.usd - spent;
        const fits = outUsd > 0 ? Math.floor((left - inUsd) / outUsd) : Infinity;
        if (fits < smallest) {
          if (!final) return undefined;
          const worst = inUsd + outUsd * (bound.maxOutputTokens ?? MIN_CAPPED_OUTPUT_TOKENS);
          const hit = mark(ledger.#hit("usd", budget.usd, spent, usd(worst)));
          throw new BudgetExceeded(
            hit,
            tooDearMessage(hit, ticket.what, bound, prompt, found, usd(Math.max(0, left))),
            ticket.kind,
          );
        }
        cap = Math.min(cap, fits);
      }
      if (budget.tokens !== undefined) {
        const spent = ledger.#spent("tokens");
        const left = budget.tokens - spent;
        const fits = left - prompt;
        if (fits < smallest) {
          if (!final) return undefined;
          const worst = prompt + (bound.maxOutputTokens ?? MIN_CAPPED_OUTPUT_TOKENS);
          const hit = mark(ledger.#hit("tokens", budget.tokens, spent, `${count(worst)} tokens`));
          throw new BudgetExceeded(
            hit,
            tooDearMessage(
              hit,
              ticket.what,
              bound,
              prompt,
              found,
              `${count(Math.max(0, left))} tokens`,
            ),
            ticket.kind,
          );
        }
        cap = Math.min(cap, fits);
      }
    }
    if (!final && cap < requested) return undefined;
    return cap;
  }

  /** Holds an attempt's worst case; returns the output limit to send (undefined: as it is). */
  #holdAttempt(
    ticket: CallTicket,
    bound: AttemptBound,
    prompt: number,
    found: FoundPrice | undefined,
    cap: number,
  ): number | undefined {
    const requested = bound.maxOutputTokens ?? Infinity;
    const output = Math.min(cap, requested);
    if (Number.isFinite(output)) {
      // Held at the bound the check used; an attempt that is then counted (cut off mid-answer)
      // counts its worst case at the closer bound.
      const worst = (tokens: number): Hold => ({
        usd: found
          ? tokens * dearestInputUsd(found.pricing) +
            output * found.pricing.outputUsdPerMTok / 1_000_000
          : 0,
        tokens: tokens + output,
      });
      ticket._hold(worst(prompt), () => worst(bound.promptTokens()));
    }
    return cap < requested ? cap : undefined;
  }

  /** @internal Adds `hold` to (or, negative, takes it from) every ledger of the chain. */
  _applyHold(hold: Hold, sign: 1 | -1): void {
    for (const ledger of this.#chain()) {
      ledger.#held.usd = Math.max(0, ledger.#held.usd + sign * hold.usd);
      ledger.#held.tokens = Math.max(0, ledger.#held.tokens + sign * hold.tokens);
    }
  }

  /** @internal A call in flight (`+1`) or ended (`-1`). */
  _inflight(sign: 1 | -1): void {
    for (const ledger of this.#chain()) {
      ledger.#inflightCalls = Math.max(0, ledger.#inflightCalls + sign);
    }
  }

  /** @internal Counts an attempt that failed but may have been charged, at its worst case. */
  _unmeasured(ticket: CallTicket, worst: Hold | undefined): ModelCallLine {
    const line: ModelCallLine = { stepId: ticket.stepId, kind: ticket.kind, unmeasured: true };
    if (ticket.model !== undefined) line.model = ticket.model;
    if (worst && (worst.usd > 0 || worst.tokens > 0)) {
      line.estimatedUsd = worst.usd;
      line.estimatedTokens = worst.tokens;
    } else if (this.#checks) {
      this.#markUnmetered(
        `an attempt of step "${ticket.stepId}" failed after it was sent, with no usage and no bound`,
      );
    }
    this.#count(line);
    return line;
  }

  /** Counts a logged (or about to be logged) call: its spend, and the line among the logged ones. */
  #count(line: ModelCallLine): void {
    if (this.#parent) this.#add(line.stepId, lineDelta(line));
    else this.#addLine(line);
    if (this.#recording) this.#state.loggedModelCalls = (this.#state.loggedModelCalls ?? 0) + 1;
  }

  /**
   * Adds the `model_call` lines of `log` that the state does not count yet (those after the
   * `state.loggedModelCalls` first ones): what a drive that stopped before its next checkpoint
   * spent. Returns how many were added.
   */
  restoreFrom(log: readonly { type: string; [key: string]: unknown }[]): number {
    const counted = this.#state.loggedModelCalls ?? 0;
    let seen = 0;
    let added = 0;
    for (const entry of log) {
      if (entry.type !== "model_call") continue;
      if (seen++ < counted) continue;
      const line = readModelCallLine(entry);
      if (!line) continue;
      this.#add(line.stepId, lineDelta(line));
      added++;
    }
    this.#state.loggedModelCalls = seen;
    return added;
  }

  /**
   * @internal Counts a finished call: its usage priced at the table's price of its model (a
   * backend's own `costUsd` wins), or, without usage, its worst case (estimated).
   */
  _charge(
    ticket: CallTicket,
    answer: { usage?: LlmUsage; costUsd?: number; model?: string },
    worst: Hold | undefined,
  ): ModelCallLine {
    const { stepId } = ticket;
    const model = answer.model ?? ticket.model;
    const usage = answer.usage;
    const found = answer.costUsd === undefined && usage ? this.#priceOf(model) : undefined;
    const costUsd = answer.costUsd ?? costOf(usage, found?.pricing);
    const line: ModelCallLine = { stepId, kind: ticket.kind };
    if (model !== undefined) line.model = model;
    if (usage) line.usage = usage;
    else if (worst && (worst.usd > 0 || worst.tokens > 0)) {
      line.estimatedUsd = worst.usd;
      line.estimatedTokens = worst.tokens;
    } else if (this.#checks) {
      this.#markUnmetered(`a call of step "${stepId}" reported no token usage`);
    }
    if (costUsd !== undefined) line.costUsd = costUsd;
    else if (usage && this.#checks && this.#chain().some((l) => l.budget?.usd !== undefined)) {
      this.#markUnmetered(`no price for model ${model ?? "(unnamed)"} (step "${stepId}")`);
    }
    // The price used, for the run log (only a recorded run writes the line).
    if (found && this.#recording) {
      line.price = { model: found.model, source: found.source, ...found.pricing };
    }
    this.#count(line);
    return line;
  }
}

/**
 * Adds to `state` the `model_call` lines of `log` it does not count yet (see
 * {@linkcode SpendLedger.restoreFrom}): what a drive killed before its next checkpoint spent.
 */
export function restoreSpend(
  state: SpendHolder,
  log: readonly { type: string; [key: string]: unknown }[],
): number {
  return new SpendLedger({ state, prices: EMPTY_PRICES }).restoreFrom(log);
}

const EMPTY_PRICES = new PriceTable([]);

function ownHit(hit: LimitHit): LimitHit {
  return hit;
}

function ancestorHit(hit: LimitHit): LimitHit {
  return { ...hit, own: false };
}

const ALL_DIMENSIONS: readonly BudgetDimension[] = ["usd", "tokens", "modelCalls", "toolCalls"];
const SPEND_DIMENSIONS: readonly BudgetDimension[] = ["usd", "tokens"];

/**
 * One model call in the ledger: the attempt meter a chat backend asks before each attempt, and the
 * charge when the call ends. Created by {@linkcode SpendLedger.admit}.
 */
export class CallTicket implements AttemptMeter {
  /** The step. */
  readonly stepId: string;
  /** `step`, `check` or `reask`. */
  readonly kind: string;
  /** The model the call was made for, when known before it answers. */
  readonly model?: string;
  /** The `model_call` lines this call produced (failed attempts that may have been charged, the call). */
  lines?: ModelCallLine[];
  readonly #ledger: SpendLedger;
  #hold?: Hold;
  #exactWorst?: () => Hold;
  #ended = false;

  /** @internal */
  constructor(ledger: SpendLedger, stepId: string, kind: string, model: string | undefined) {
    this.#ledger = ledger;
    this.stepId = stepId;
    this.kind = kind;
    if (model !== undefined) this.model = model;
    ledger._inflight(1);
  }

  /** How messages name the call. */
  get what(): string {
    return `the next model call of step "${this.stepId}" (${this.kind})`;
  }

  /** See {@linkcode AttemptMeter.beforeAttempt}. */
  beforeAttempt(bound: AttemptBound): number | undefined {
    this.#release();
    return this.#ledger._beforeAttempt(this, bound);
  }

  /** See {@linkcode AttemptMeter.attemptFailed}. */
  attemptFailed(maybeCharged: boolean): void {
    const worst = this.#hold && maybeCharged ? this.#exactWorst?.() : undefined;
    this.#release();
    if (maybeCharged) (this.lines ??= []).push(this.#ledger._unmeasured(this, worst));
  }

  /** @internal Holds an attempt's worst case (`exact`: its worst case at the closer bound). */
  _hold(hold: Hold, exact: () => Hold): void {
    this.#hold = hold;
    this.#exactWorst = exact;
    this.#ledger._applyHold(hold, 1);
  }

  #release(): void {
    if (!this.#hold) return;
    this.#ledger._applyHold(this.#hold, -1);
    this.#hold = undefined;
    this.#exactWorst = undefined;
  }

  /**
   * The call answered: counts its usage (priced by the answer's model, else the ticket's) and
   * returns its line (its cost, the price used).
   */
  settle(answer: { usage?: LlmUsage; costUsd?: number; model?: string }): ModelCallLine {
    const worst = this.#hold && !answer.usage ? this.#exactWorst?.() : undefined;
    this.#end();
    const line = this.#ledger._charge(this, answer, worst);
    (this.lines ??= []).push(line);
    return line;
  }

  /** The call failed or was refused: nothing more to count (failed attempts were counted). */
  abandon(): void {
    this.#end();
  }

  #end(): void {
    this.#release();
    if (this.#ended) return;
    this.#ended = true;
    this.#ledger._inflight(-1);
  }
}
