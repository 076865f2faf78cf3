/**
 * Model fallback chains (docs/backends.md, "Model fallback chains"): the one place a chain is
 * walked. A {@linkcode ModelChainBackend} wraps the run's backend; each call tries the entries of
 * its chain — the request's `modelChain` (agent.json or the step's `model` as an array), else its
 * `model`, then the fallbacks the backend was built with (`--fallback-model`) — in order, and goes
 * on to the next entry only on the failure classes of {@linkcode fallbackReason}. Entries on
 * another backend or server are built once, on first use, by the `build` function (the factory's
 * `createBackend` with the run's options), and chat backends share one conversation store, so the
 * conversation is carried over in the other provider's format.
 *
 * @module
 */
import type { ModelChainEntry, ModelOnBackend, ModelSetting } from "../definition/schema.ts";
import { errorMessage, UsageError } from "../errors.ts";
import type { ModelFallbackEvent, ModelRef } from "../events/types.ts";
import { BackendError } from "./backend_error.ts";
import { urlWithoutCredentials } from "./backend_choice.ts";
import type { ConversationStore } from "./conversation.ts";
import { fallbackReason } from "./fallback_class.ts";
import { fallbackReasonText, modelRefText } from "../events/model_notice_text.ts";
import {
  supportsToolTurns,
  type ToolTurnBackend,
  type ToolTurnRequest,
  type ToolTurnResponse,
} from "./tool_turn.ts";
import type { LlmBackend, LlmCallOptions, LlmRequest, LlmResponse } from "./types.ts";

/** Options of {@linkcode ModelChainBackend}. */
export interface ModelChainOptions {
  /** Entries tried after every call's own chain (`--fallback-model NAME`, repeatable). */
  fallbacks?: readonly ModelChainEntry[];
  /**
   * Builds the backend of an entry on another backend or server (`{ backend, model, baseUrl }`),
   * with the run's options (retry policy, timeouts, streaming, credentials from the environment).
   * Called once per backend and server.
   */
  build(entry: ModelOnBackend): Promise<LlmBackend>;
}

/** An entry of a call's chain: a model of the wrapped backend (undefined: its default), or one elsewhere. */
type ChainEntry = string | undefined | ModelOnBackend;

/** A chain entry with its backend. */
interface Target {
  backend: LlmBackend;
  model?: string;
  ref: ModelRef;
}

/**
 * A backend that walks model chains over another backend (the run's). A call whose chain has one
 * entry goes straight to the wrapped backend, as if there were no chain; otherwise each answer says
 * which entry gave it (`model`, `backend`) and which fall-throughs came before (`fallbacks`), and
 * each fall-through is reported to `LlmCallOptions.onFallback` before the next entry is asked.
 *
 * When every entry failed, the last entry's error is thrown, its message naming the entries tried
 * before it. A call cancelled, a failure outside the documented classes (a refused key, a model's
 * refusal, a server that cannot be reached) and `RateLimitYield` end the walk at once.
 *
 * @example
 * ```ts
 * import { ModelChainBackend } from "./model_chain.ts";
 * import { ScriptedBackend } from "./scripted.ts";
 * const chain = new ModelChainBackend(new ScriptedBackend(["hi"]), {
 *   fallbacks: ["small-model"],
 *   build: () => Promise.reject(new Error("no other backend in this example")),
 * });
 * const answer = await chain.complete({
 *   kind: "step", agent: "a", stepId: "s", iteration: 1, prompt: "p", cwd: ".", model: "big-model",
 * });
 * console.log(answer.text, answer.model); // "hi" "big-model"
 * ```
 */
export class ModelChainBackend implements LlmBackend {
  /** The wrapped backend's name. */
  readonly name: string;
  /** The run's backend: the one that serves model names (string entries). */
  readonly primary: LlmBackend;
  /** Whether the wrapped backend runs its own tools (`claude-code`). */
  readonly reportsToolCalls?: boolean;
  /** Always true: requests' `modelChain` is walked here (wrappers forward it). */
  readonly walksModelChains = true;
  /**
   * One model turn of the tool loop, walked like {@linkcode ModelChainBackend.complete}; present
   * when the wrapped backend runs tool turns.
   */
  readonly toolTurn?: (req: ToolTurnRequest, opts?: LlmCallOptions) => Promise<ToolTurnResponse>;
  readonly #fallbacks: readonly ModelChainEntry[];
  readonly #build: ModelChainOptions["build"];
  readonly #members = new Map<string, Promise<LlmBackend>>();
  #conversations?: ConversationStore;

  /**
   * Wraps `primary`; nothing is built until a chain reaches an entry on another backend.
   *
   * @param primary the run's backend
   * @param options fallbacks after every chain, and how to build other backends
   */
  constructor(primary: LlmBackend, options: ModelChainOptions) {
    this.primary = primary;
    this.name = primary.name;
    if (primary.reportsToolCalls) this.reportsToolCalls = true;
    this.#fallbacks = options.fallbacks ?? [];
    this.#build = options.build;
    this.#conversations = sharedStore(primary)?.conversationStore;
    if (supportsToolTurns(primary)) {
      this.toolTurn = (req, opts = {}) =>
        this.#walk(
          req,
          opts,
          true,
          (backend, request, o) => (backend as LlmBackend & ToolTurnBackend).toolTurn(request, o),
        );
    }
  }

  /** The wrapped backend's default model, when it has one. */
  get model(): string | undefined {
    const model = (this.primary as { model?: unknown }).model;
    return typeof model === "string" ? model : undefined;
  }

  /** The entries appended to every call's chain. */
  get fallbacks(): readonly ModelChainEntry[] {
    return this.#fallbacks;
  }

  /** Runs one call down its chain (see the class documentation). */
  complete(req: LlmRequest, opts: LlmCallOptions = {}): Promise<LlmResponse> {
    return this.#walk(req, opts, false, (backend, request, o) => backend.complete(request, o));
  }

  async #walk<R extends LlmRequest | ToolTurnRequest, A extends LlmResponse | ToolTurnResponse>(
    req: R,
    opts: LlmCallOptions,
    toolTurn: boolean,
    call: (backend: LlmBackend, request: R, opts: LlmCallOptions) => Promise<A>,
  ): Promise<A> {
    const entries = this.#entries(req);
    if (entries.length === 1 && typeof entries[0] !== "object") {
      return await call(this.primary, requestFor(req, entries[0]), opts);
    }
    // Built before the first call: an entry that cannot be built (a key missing) is said now,
    // not at the moment it is needed.
    const targets = await Promise.all(entries.map((entry) => this.#target(entry)));
    const usable = targets.filter((t) => this.#usable(t, req, toolTurn));
    if (usable.length === 0) {
      throw new UsageError(
        `Step "${req.stepId}": no entry of its model chain can run its tools (they run inside ${this.primary.name}, which cannot hand them to another backend). Put a model of ${this.primary.name} in the chain, or run the agent on anthropic or openai.`,
        { stepId: req.stepId },
      );
    }
    const fallbacks: ModelFallbackEvent[] = [];
    for (const [i, target] of usable.entries()) {
      try {
        const answer = await call(target.backend, requestFor(req, target.model), opts);
        // A backend that says who answered (a replay of a recorded chain) is taken at its word.
        if (answer.model === undefined) {
          answer.backend = target.ref.backend;
          if (target.ref.model !== undefined) answer.model = target.ref.model;
        }
        if (fallbacks.length > 0) answer.fallbacks = [...fallbacks, ...(answer.fallbacks ?? [])];
        return answer;
      } catch (error) {
        if (opts.signal?.aborted) throw error;
        const reason = fallbackReason(error);
        const next = usable[i + 1];
        if (reason === undefined || next === undefined) throw withTried(error, fallbacks);
        const fallback: ModelFallbackEvent = {
          from: target.ref,
          to: next.ref,
          reason,
          detail: firstLine(errorMessage(error)).slice(0, 500),
        };
        fallbacks.push(fallback);
        try {
          opts.onFallback?.(fallback);
        } catch {
          // A listener must never change the outcome of the call.
        }
      }
    }
    throw new Error("unreachable: the last entry of a chain returns or throws");
  }

  /** The call's chain: its own (or its model), then the fallbacks, each entry once. */
  #entries(req: LlmRequest | ToolTurnRequest): ChainEntry[] {
    const own: ChainEntry[] = req.modelChain?.length ? [...req.modelChain] : [req.model];
    const all = [...own, ...this.#fallbacks];
    const seen = new Set<string>();
    return all.filter((entry) => {
      const key = entryKey(entry);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  }

  async #target(entry: ChainEntry): Promise<Target> {
    if (typeof entry !== "object") {
      const model = entry ?? this.model;
      return {
        backend: this.primary,
        ...(entry !== undefined ? { model: entry } : {}),
        ref: { backend: this.primary.name, ...(model !== undefined ? { model } : {}) },
      };
    }
    const key = `${entry.backend}|${entry.baseUrl ?? ""}`;
    let member = this.#members.get(key);
    if (!member) {
      member = this.#build(entry).then((backend) => {
        this.#share(backend);
        return backend;
      });
      // A failed build (a key missing) is tried again on the next call.
      member.catch(() => this.#members.delete(key));
      this.#members.set(key, member);
    }
    return {
      backend: await member,
      model: entry.model,
      ref: {
        backend: entry.backend,
        model: entry.model,
        ...(entry.baseUrl !== undefined ? { baseUrl: urlWithoutCredentials(entry.baseUrl) } : {}),
      },
    };
  }

  /** Chat backends of one chain keep one conversation, whichever of them answers. */
  #share(backend: LlmBackend): void {
    const chat = sharedStore(backend);
    if (!chat) return;
    if (this.#conversations) chat.useConversationStore(this.#conversations);
    else this.#conversations = chat.conversationStore;
  }

  /**
   * Whether `target` can take this call: a call that carries its tools to a backend running its
   * own (`claude-code`) cannot move to a backend that does not.
   */
  #usable(target: Target, req: LlmRequest | ToolTurnRequest, toolTurn: boolean): boolean {
    if (target.backend === this.primary || toolTurn) return true;
    const tools = (req as LlmRequest).allowedTools;
    return !(tools?.length && this.primary.reportsToolCalls && !target.backend.reportsToolCalls);
  }
}

/** What a chat backend (`ChatApiBackend`) offers to share its conversations; undefined for others. */
function sharedStore(backend: LlmBackend):
  | { conversationStore: ConversationStore; useConversationStore(store: ConversationStore): void }
  | undefined {
  const chat = backend as Partial<{
    conversationStore: ConversationStore;
    useConversationStore(store: ConversationStore): void;
  }>;
  return chat.conversationStore !== undefined && typeof chat.useConversationStore === "function"
    ? chat as {
      conversationStore: ConversationStore;
      useConversationStore(store: ConversationStore): void;
    }
    : undefined;
}

/** The request for one entry: its model, no chain (the entry's backend reads `model`). */
function requestFor<R extends LlmRequest | ToolTurnRequest>(req: R, model: string | undefined): R {
  const { modelChain: _chain, model: _model, ...rest } = req;
  return (model !== undefined ? { ...rest, model } : rest) as R;
}

function entryKey(entry: ChainEntry): string {
  if (typeof entry !== "object") return `|${entry ?? ""}`;
  return `${entry.backend}|${entry.baseUrl ?? ""}|${entry.model}`;
}

/**
 * The model a backend takes as its default from a `model` setting: the name, or a chain's first
 * model of the run's own backend (a name entry); undefined when the chain starts elsewhere.
 *
 * @example
 * ```ts
 * import { defaultModelOf } from "./model_chain.ts";
 * defaultModelOf(["claude-sonnet-5-5", { backend: "openai", model: "gpt-5.4" }]); // "claude-sonnet-5-5"
 * ```
 */
export function defaultModelOf(setting: ModelSetting | undefined): string | undefined {
  if (typeof setting === "string" || setting === undefined) return setting;
  return setting.find((entry): entry is string => typeof entry === "string");
}

/**
 * The last entry's error, its message naming the entries the call fell through before (a
 * `BackendError` keeps its code and details).
 */
function withTried(error: unknown, fallbacks: readonly ModelFallbackEvent[]): unknown {
  if (fallbacks.length === 0 || !(error instanceof BackendError)) return error;
  const tried = fallbacks.map((f) => `${modelRefText(f.from)} (${fallbackReasonText(f.reason)})`);
  return new BackendError(
    error.code,
    `${error.message} The model chain fell through ${tried.join(", then ")} before this entry.`,
    { ...error.details, fallbacks: fallbacks.map((f) => ({ ...f })) },
    error,
  );
}

function firstLine(text: string): string {
  const i = text.indexOf("\n");
  return i < 0 ? text : text.slice(0, i);
}
