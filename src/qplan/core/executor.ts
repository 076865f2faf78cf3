/**
 * The AST runner (docs/qplan.md): runs statements, evaluates expressions, calls tools, loops,
 * runs `parallel` blocks, and resumes at the right statement after a jump. It holds no step
 * logic: step statements are handed to the {@linkcode StepController}.
 *
 * Statements run synchronously while they can (a tool that returns a plain value never costs an
 * `await`), and switch to `async` execution at the first statement that returns a promise.
 *
 * @module
 */
import type {
  ActionStatement,
  EachStatement,
  ParallelStatement,
  Script,
  Statement,
  WhileStatement,
} from "./ast.ts";
import { type CallSite, callSiteArgs, compileCallSite } from "./call_site.ts";
import { QPlanRuntimeError } from "./errors.ts";
import { formatArgIssues, type QPlanToolRegistry } from "./tool_types.ts";
import { describeValue, evaluate, ExpressionError, truthy } from "./evaluate.ts";
import {
  createFrame,
  type ExecutionContext,
  type Frame,
  type ToolContextBase,
} from "./execution_context.ts";
import { setOwn } from "../../own_record.ts";
import { QPlanFuture } from "./future.ts";
import { type RunSupervisor, TICK_BATCH } from "./run_control.ts";
import type { StepController } from "../step/step_controller.ts";
import { blockingConstruct, entryIndexIn } from "../step/step_resolver.ts";
import {
  BREAK,
  CONTINUE,
  FlowSignal,
  JumpSignal,
  ReturnSignal,
  SKIP,
  STOP,
} from "../step/step_signals.ts";
import { errorMessage } from "../../errors.ts";

/**
 * Asks whether a tool that needs approval (`requiresApproval`, or `needsApproval(args)` said so)
 * may run with these arguments. `reason` is the tool's own reason when it gave one. A denial may
 * say why (`{ approved: false, reason }`): the run's error quotes it.
 */
export type ApproveTool = (request: {
  tool: string;
  args: Record<string, unknown>;
  stepId?: string;
  line: number;
  reason?: string;
}) =>
  | boolean
  | { approved: boolean; reason?: string }
  | Promise<boolean | { approved: boolean; reason?: string }>;

/**
 * What a loop does with what its body threw — the one place `break` and `continue` are handled, for
 * `while` and `each`, sync and async: `BREAK` ends the loop, `CONTINUE` goes on with the next round,
 * anything else (an error, `stop`, `jump`, `return`) leaves the loop.
 */
export function loopControl(thrown: unknown): "break" | "continue" {
  if (thrown === BREAK) return "break";
  if (thrown === CONTINUE) return "continue";
  throw thrown;
}

/** What an {@linkcode Executor} works with. */
export interface ExecutorOptions {
  /** Where modules are looked up. */
  registry: QPlanToolRegistry;
  /** The run's memory. */
  ctx: ExecutionContext;
  /** The step layer. */
  steps: StepController;
  /** Pause / abort / timeout. */
  supervisor: RunSupervisor;
  /** The run-wide tool context. */
  base: ToolContextBase;
  /** Approves tools that require it; without it such tools fail. */
  approve?: ApproveTool;
  /** Skip zod for argument types a call site has already validated (default true). */
  fastPath?: boolean;
}

/** What running a statement returns: nothing, or a promise when it went asynchronous. */
export type MaybePromise = void | Promise<void>;
type Maybe = MaybePromise;

/**
 * Runs a parsed, resolved and validated script.
 *
 * @example
 * ```ts ignore
 * const executor = new Executor({ registry, ctx, steps, supervisor, base });
 * await executor.run(script);
 * ```
 */
export class Executor {
  readonly #registry: QPlanToolRegistry;
  readonly #ctx: ExecutionContext;
  readonly #steps: StepController;
  readonly #sup: RunSupervisor;
  readonly #base: ToolContextBase;
  readonly #approve?: ApproveTool;
  readonly #fastPath: boolean;
  readonly #sites: (CallSite | undefined)[] = [];
  /** Blocks to enter part-way after a jump: block → statement index. */
  readonly #entries = new Map<Statement[], number>();

  /**

   * Creates an executor for one run.

   * @param options what the executor works with

   */
  constructor(options: ExecutorOptions) {
    this.#registry = options.registry;
    this.#ctx = options.ctx;
    this.#steps = options.steps;
    this.#sup = options.supervisor;
    this.#base = options.base;
    this.#approve = options.approve;
    this.#fastPath = options.fastPath ?? true;
  }

  /** Runs the top level of a script. Signals (`stop`, abort) propagate to the caller. */
  async run(script: Script): Promise<void> {
    const frame = createFrame(undefined, undefined, this.#base);
    const pending = this.runBlock(script.body, frame);
    if (pending !== undefined) await pending;
  }

  /** Runs a block in `frame`; returns a promise only when it had to go asynchronous. */
  runBlock(block: Statement[], frame: Frame): MaybePromise {
    let i = 0;
    if (this.#entries.size > 0) {
      const entry = this.#entries.get(block);
      if (entry !== undefined) {
        this.#entries.delete(block);
        i = entry;
      }
    }
    const sup = this.#sup;
    for (; i < block.length; i++) {
      const stmt = block[i];
      let pending: Maybe;
      try {
        if (sup.interrupted || ++sup.ticks >= TICK_BATCH) {
          const gate = sup.gate();
          if (gate !== undefined) return this.#blockAsync(block, frame, i, gate, false);
        }
        pending = this.#statement(stmt, frame);
      } catch (thrown) {
        const resume = this.#resumeIndex(block, thrown);
        if (resume < 0) throw this.#wrap(thrown, stmt, frame);
        i = resume - 1;
        continue;
      }
      if (pending !== undefined) return this.#blockAsync(block, frame, i, pending, true);
    }
  }

  async #blockAsync(
    block: Statement[],
    frame: Frame,
    i: number,
    pending: Promise<void>,
    started: boolean,
  ): Promise<void> {
    const sup = this.#sup;
    let first = true;
    for (; i < block.length; i++) {
      const stmt = block[i];
      try {
        if (first) {
          first = false;
          await pending;
          if (started) continue;
        } else if (sup.interrupted || ++sup.ticks >= TICK_BATCH) {
          const gate = sup.gate();
          if (gate !== undefined) await gate;
        }
        const r = this.#statement(stmt, frame);
        if (r !== undefined) await r;
      } catch (thrown) {
        const resume = this.#resumeIndex(block, thrown);
        if (resume < 0) throw this.#wrap(thrown, stmt, frame);
        i = resume - 1;
      }
    }
  }

  /** When `thrown` is a jump whose way passes through `block`: the index to resume at, else -1. */
  #resumeIndex(block: Statement[], thrown: unknown): number {
    if (!(thrown instanceof JumpSignal)) return -1;
    const target = thrown.target;
    const k = entryIndexIn(target, block);
    if (k < 0) return -1;
    const blocking = blockingConstruct(target, k);
    if (blocking) {
      throw new QPlanRuntimeError(
        `jump to '${target.node.id}' would enter the ${blocking.kind} at line ${blocking.line} part-way`,
        { line: blocking.line, column: blocking.column },
      );
    }
    this.#entries.clear();
    for (let h = k + 1; h < target.entry.length; h++) {
      this.#entries.set(target.entry[h].block, target.entry[h].index);
    }
    return target.entry[k].index;
  }

  #wrap(thrown: unknown, stmt: Statement, frame: Frame): unknown {
    if (thrown instanceof FlowSignal || thrown instanceof QPlanRuntimeError) return thrown;
    const stepId = frame.step?.id;
    if (thrown instanceof ExpressionError) {
      return new QPlanRuntimeError(thrown.message, {
        line: thrown.line,
        column: thrown.column,
        stepId,
      });
    }
    const message = errorMessage(thrown);
    return new QPlanRuntimeError(message, { line: stmt.line, column: stmt.column, stepId }, thrown);
  }

  #statement(stmt: Statement, frame: Frame): Maybe {
    switch (stmt.kind) {
      case "action":
        return this.#action(stmt, frame);
      case "var": {
        const value = evaluate(stmt.value, this.#ctx);
        if (stmt.name !== undefined) this.#ctx.vars.set(stmt.name, value);
        frame.hasValue = true;
        frame.lastValue = value;
        return;
      }
      case "set":
        if (!this.#ctx.has(stmt.name)) {
          throw new QPlanRuntimeError(`set target '${stmt.name}' does not exist`, {
            line: stmt.line,
            column: stmt.column,
            stepId: frame.step?.id,
          });
        }
        this.#ctx.vars.set(stmt.name, evaluate(stmt.value, this.#ctx));
        return;
      case "if":
        if (this.#entries.size > 0) {
          if (this.#entries.has(stmt.then)) return this.runBlock(stmt.then, frame);
          if (stmt.else && this.#entries.has(stmt.else)) return this.runBlock(stmt.else, frame);
        }
        if (truthy(evaluate(stmt.condition, this.#ctx))) return this.runBlock(stmt.then, frame);
        return stmt.else ? this.runBlock(stmt.else, frame) : undefined;
      case "while":
        return this.#while(stmt, frame);
      case "each":
        return this.#each(stmt, frame);
      case "parallel":
        return this.#parallel(stmt, frame);
      case "step":
        return this.#steps.runStep(stmt, frame, (f) => this.runBlock(stmt.children, f));
      case "return": {
        const payload: Record<string, unknown> = {};
        for (const e of stmt.entries) setOwn(payload, e.key, evaluate(e.value, this.#ctx));
        throw new ReturnSignal(payload);
      }
      case "jump":
        throw this.#steps.jumpTo(stmt.target, stmt, frame.step?.id);
      case "stop":
        throw STOP;
      case "skip":
        throw SKIP;
      case "break":
        throw BREAK;
      case "continue":
        throw CONTINUE;
      case "placeholder":
        return;
    }
  }

  // ---------------------------------------------------------------- loops

  #while(stmt: WhileStatement, frame: Frame): Maybe {
    const sup = this.#sup;
    for (;;) {
      if (sup.interrupted || ++sup.ticks >= TICK_BATCH) {
        const gate = sup.gate();
        if (gate !== undefined) return this.#whileAsync(stmt, frame, gate);
      }
      if (!truthy(evaluate(stmt.condition, this.#ctx))) return;
      let pending: Maybe;
      try {
        pending = this.runBlock(stmt.body, frame);
      } catch (thrown) {
        if (loopControl(thrown) === "break") return;
        continue;
      }
      if (pending !== undefined) return this.#whileAsync(stmt, frame, pending);
    }
  }

  async #whileAsync(stmt: WhileStatement, frame: Frame, pending: Promise<void>): Promise<void> {
    try {
      await pending;
    } catch (thrown) {
      if (loopControl(thrown) === "break") return;
    }
    const sup = this.#sup;
    for (;;) {
      if (sup.interrupted || ++sup.ticks >= TICK_BATCH) {
        const gate = sup.gate();
        if (gate !== undefined) await gate;
      }
      if (!truthy(evaluate(stmt.condition, this.#ctx))) return;
      try {
        const r = this.runBlock(stmt.body, frame);
        if (r !== undefined) await r;
      } catch (thrown) {
        if (loopControl(thrown) === "break") return;
      }
    }
  }

  #list(stmt: EachStatement, frame: Frame): ArrayLike<unknown> {
    const value = evaluate(stmt.iterable, this.#ctx);
    if (Array.isArray(value)) return value;
    if (typeof value === "string") return Array.from(value);
    if (
      value !== null && typeof value === "object" &&
      typeof (value as Iterable<unknown>)[Symbol.iterator] === "function"
    ) {
      return Array.from(value as Iterable<unknown>);
    }
    const what = stmt.iterable.kind === "path" ? `'${stmt.iterable.text}'` : "the value";
    throw new QPlanRuntimeError(
      `each needs a list, but ${what} is ${describeValue(value)}${
        value !== null && typeof value === "object"
          ? " (use json keys/values/entries for objects)"
          : ""
      }`,
      { line: stmt.line, column: stmt.column, stepId: frame.step?.id },
    );
  }

  #each(stmt: EachStatement, frame: Frame): Maybe {
    const list = this.#list(stmt, frame);
    const vars = this.#ctx.vars;
    const body = stmt.body;
    const item = stmt.item;
    const index = stmt.index;
    for (let k = 0; k < list.length; k++) {
      vars.set(item, list[k]);
      if (index !== undefined) vars.set(index, k);
      let pending: Maybe;
      try {
        pending = this.runBlock(body, frame);
      } catch (thrown) {
        if (loopControl(thrown) === "break") return;
        continue;
      }
      if (pending !== undefined) return this.#eachAsync(stmt, frame, list, k, pending);
    }
  }

  async #eachAsync(
    stmt: EachStatement,
    frame: Frame,
    list: ArrayLike<unknown>,
    k: number,
    pending: Promise<void>,
  ): Promise<void> {
    try {
      await pending;
    } catch (thrown) {
      if (loopControl(thrown) === "break") return;
    }
    const vars = this.#ctx.vars;
    for (k++; k < list.length; k++) {
      vars.set(stmt.item, list[k]);
      if (stmt.index !== undefined) vars.set(stmt.index, k);
      try {
        const r = this.runBlock(stmt.body, frame);
        if (r !== undefined) await r;
      } catch (thrown) {
        if (loopControl(thrown) === "break") return;
      }
    }
  }

  async #parallel(stmt: ParallelStatement, frame: Frame): Promise<void> {
    let limit = Infinity;
    if (stmt.concurrency) {
      const value = evaluate(stmt.concurrency, this.#ctx);
      const n = typeof value === "string" ? Number(value) : value;
      if (typeof n !== "number" || !Number.isInteger(n) || n < 1) {
        throw new QPlanRuntimeError(
          `parallel concurrency must be a whole number of at least 1, got ${describeValue(value)}`,
          { line: stmt.line, column: stmt.column, stepId: frame.step?.id },
        );
      }
      limit = n;
    }
    const body = stmt.body;
    const sup = this.#sup;
    let next = 0;
    let failed = false;
    let failure: unknown;
    const worker = async () => {
      while (next < body.length && !failed) {
        const s = body[next++];
        try {
          if (sup.interrupted) {
            const gate = sup.gate();
            if (gate !== undefined) await gate;
          }
          const r = this.#statement(s, frame);
          if (r !== undefined) await r;
        } catch (thrown) {
          const wrapped = this.#wrap(thrown, s, frame);
          if (stmt.ignoreErrors && !(wrapped instanceof FlowSignal)) {
            this.#steps.failures.push({
              stepId: frame.step?.id ?? "",
              attempt: 1,
              message: (wrapped as Error).message,
              line: s.line,
              handledBy: "ignoreErrors",
            });
            continue;
          }
          if (!failed) {
            failed = true;
            failure = wrapped;
          }
        }
      }
    };
    const workers: Promise<void>[] = [];
    for (let w = 0; w < Math.min(limit, body.length); w++) workers.push(worker());
    await Promise.all(workers);
    if (failed) throw failure;
  }

  // ---------------------------------------------------------------- actions

  #compile(node: ActionStatement, frame: Frame): CallSite {
    const tool = this.#registry.get(node.module);
    if (!tool) {
      const names = this.#registry.list().map((t) => t.name);
      throw new QPlanRuntimeError(
        `Unknown module '${node.module}' (available: ${names.join(", ") || "none"})`,
        { line: node.line, column: node.column, stepId: frame.step?.id, module: node.module },
      );
    }
    const site = compileCallSite(node, tool, this.#fastPath);
    this.#sites[node.site] = site;
    return site;
  }

  #action(node: ActionStatement, frame: Frame): Maybe {
    let site = this.#sites[node.site];
    if (site === undefined || site.node !== node) site = this.#compile(node, frame);
    const checked = site.checker.check(callSiteArgs(site, this.#ctx));
    if (!checked.ok) {
      throw new QPlanRuntimeError(
        `Module '${node.module}' got invalid arguments: ${formatArgIssues(checked.issues)}`,
        { line: node.line, column: node.column, stepId: frame.step?.id, module: node.module },
      );
    }
    if (site.tool.requiresApproval === true) return this.#approved(site, checked.args, frame);
    if (site.tool.needsApproval) return this.#maybeApproved(site, checked.args, frame);
    return this.#call(site, checked.args, frame);
  }

  async #maybeApproved(site: CallSite, args: Record<string, unknown>, frame: Frame): Promise<void> {
    let needed: boolean | string;
    try {
      needed = await site.tool.needsApproval!(args, frame.tool);
    } catch (error) {
      throw this.#toolError(error, site.node, frame);
    }
    const r = needed === false
      ? this.#call(site, args, frame)
      : this.#approved(site, args, frame, typeof needed === "string" ? needed : undefined);
    if (r !== undefined) await r;
  }

  async #approved(
    site: CallSite,
    args: Record<string, unknown>,
    frame: Frame,
    reason?: string,
  ): Promise<void> {
    const node = site.node;
    const where = {
      line: node.line,
      column: node.column,
      stepId: frame.step?.id,
      module: node.module,
    };
    if (!this.#approve) {
      throw new QPlanRuntimeError(
        `Module '${node.module}' requires approval${
          reason ? ` (${reason})` : ""
        }; pass an approve callback to runScript to allow it`,
        where,
      );
    }
    const request: Parameters<ApproveTool>[0] = {
      tool: node.module,
      args,
      stepId: frame.step?.id,
      line: node.line,
    };
    if (reason !== undefined) request.reason = reason;
    const answer = await this.#approve(request);
    const decision = typeof answer === "boolean" ? { approved: answer } : answer;
    if (!decision.approved) {
      const why = decision.reason ? `: ${decision.reason}` : "";
      throw new QPlanRuntimeError(`Module '${node.module}' was not approved${why}`, where);
    }
    const r = this.#call(site, args, frame);
    if (r !== undefined) await r;
  }

  #call(site: CallSite, args: Record<string, unknown>, frame: Frame): Maybe {
    let result: unknown;
    try {
      result = site.tool.execute(args, frame.tool);
    } catch (error) {
      throw this.#toolError(error, site.node, frame);
    }
    if (
      result !== null && typeof result === "object" &&
      typeof (result as PromiseLike<unknown>).then === "function"
    ) {
      return this.#settle(site.node, result as PromiseLike<unknown>, frame);
    }
    this.#store(site.node, result, frame);
  }

  async #settle(node: ActionStatement, pending: PromiseLike<unknown>, frame: Frame): Promise<void> {
    let result: unknown;
    try {
      result = await pending;
    } catch (error) {
      throw this.#toolError(error, node, frame);
    }
    this.#store(node, result, frame);
  }

  #store(node: ActionStatement, result: unknown, frame: Frame): void {
    const value = result instanceof QPlanFuture ? result.promise : result;
    if (node.output !== undefined) this.#ctx.vars.set(node.output, value);
    frame.hasValue = true;
    frame.lastValue = value;
  }

  #toolError(error: unknown, node: ActionStatement, frame: Frame): unknown {
    if (error instanceof FlowSignal) return error;
    const message = errorMessage(error);
    return new QPlanRuntimeError(
      `Module '${node.module}' failed: ${message}`,
      { line: node.line, column: node.column, stepId: frame.step?.id, module: node.module },
      error,
    );
  }
}
