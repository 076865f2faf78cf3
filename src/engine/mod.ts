/**
 * The engine kit: the parts the four engines (the step-flow runner, the PlanSpec runner, tool
 * plans, QPlan) share to drive a step — here the one `onError` grammar, with each engine's
 * accepted subset as data.
 *
 * @example
 * ```ts
 * import { parseOnErrorPolicy, PLAN_ON_ERROR } from "./mod.ts";
 * console.log(parseOnErrorPolicy("retry=2", PLAN_ON_ERROR)); // { kind: "retry", count: 2 }
 * ```
 *
 * @module
 */
export {
  FLOW_ON_ERROR,
  type OnErrorDialect,
  type OnErrorForm,
  type OnErrorPolicy,
  onErrorTextPattern,
  parseOnErrorPolicy,
  PLAN_ON_ERROR,
  QPLAN_ON_ERROR,
} from "../on_error.ts";
