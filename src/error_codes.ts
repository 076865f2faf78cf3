/**
 * Every stable error code stepflow throws, one literal list per module in {@linkcode ERROR_CODES}:
 * a `StepflowError` whose literal code is in no list does not compile (a typo is a compile error),
 * and `tests/docs/docs_test.ts` checks the lists against docs/errors.md both ways (every code has an
 * entry there, every entry is a code here).
 *
 * **Adding a code:** one line in its module's list below (keep it sorted) and one entry in
 * docs/errors.md. The lists live in this one file, beside `errors.ts`, because `StepflowError`
 * (used by every layer) needs their union and a file at this level imports no folder.
 *
 * @module
 */

/**
 * The stable error codes by module (the folder under `src/` that owns the concept; another module
 * may throw them too).
 *
 * @example
 * ```ts
 * import { ERROR_CODES } from "./error_codes.ts";
 * ERROR_CODES.migrate.includes("MIGRATE_SOURCE_INVALID"); // true
 * ```
 */
export const ERROR_CODES = {
  /** Errors every layer throws (`UsageError`). */
  common: [
    "USAGE",
  ],
  /** Loading agent.json and the steps registry. */
  definition: [
    "AGENT_DEFINITION_INVALID",
    "AGENT_NOT_FOUND",
    "JSON_INVALID",
    "MCP_CONFIG_INVALID",
    "PERMISSION_MODE_INVALID",
    "PERMISSION_RULE_INVALID",
    "SCHEMA_RESOLUTION_FAILED",
  ],
  /** Prompt files, their paths and variables. */
  prompt: [
    "PROMPT_FRONTMATTER_INVALID",
    "PROMPT_NOT_FOUND",
    "PROMPT_PATH_INVALID",
    "PROMPT_VARIABLES_MISSING",
  ],
  /** The engines' shared kit (built-in prompt templates). */
  engine: [
    "PROMPT_TEMPLATE_INVALID",
    "TOOL_CALLS_FAILING",
    "TOOL_TURNS_EXCEEDED",
  ],
  /** Backends and scripted backends (`BackendErrorCode` names the `BACKEND_*` ones). */
  llm: [
    "BACKEND_AUTH",
    "BACKEND_BAD_RESPONSE",
    "BACKEND_ERROR",
    "BACKEND_HTTP_ERROR",
    "BACKEND_NETWORK",
    "BACKEND_NOT_INSTALLED",
    "BACKEND_REFUSED",
    "BACKEND_STREAM_INTERRUPTED",
    "BACKEND_TIMEOUT",
    "BACKEND_UNAVAILABLE",
    "PRICING_INVALID",
    "PRICING_NOT_FOUND",
    "RATE_LIMIT_YIELD",
    "REPLAY_ANSWER_MISMATCH",
    "REPLAY_EXHAUSTED",
    "REPLAY_FILE_OUTDATED",
    "REPLAY_NOT_RECORDED",
    "REPLAY_PROMPT_CHANGED",
    "REPLAY_STEP_UNKNOWN",
    "SCRIPT_EXHAUSTED",
    "SCRIPT_INVALID",
    "SCRIPT_NOT_FOUND",
  ],
  /** The tool registry and the built-in tools. */
  tools: [
    "COMMAND_FAILED",
    "COMMAND_NOT_FOUND",
    "COMMAND_REFUSED",
    "COMMAND_TIMEOUT",
    "EDIT_NOT_FOUND",
    "EDIT_NOT_UNIQUE",
    "EDIT_NO_CHANGE",
    "FILE_IS_BINARY",
    "FILE_IS_DIRECTORY",
    "FILE_NOT_FOUND",
    "FILE_TOO_LARGE",
    "GREP_PATTERN_INVALID",
    "HTTP_BODY_INVALID",
    "HTTP_BODY_TOO_LARGE",
    "HTTP_FAILED",
    "HTTP_STATUS",
    "HTTP_TIMEOUT",
    "HTTP_URL_REFUSED",
    "MCP_CALL_TIMEOUT",
    "MCP_CONNECT_FAILED",
    "MCP_CONNECT_TIMEOUT",
    "MCP_MESSAGE_TOO_LARGE",
    "MCP_SERVER_EXITED",
    "MCP_TOOL_ERROR",
    "NOT_A_DIRECTORY",
    "PATH_CHANGED",
    "PATH_ESCAPES_WORKSPACE",
    "PROCESS_CONTAINMENT_UNAVAILABLE",
    "TOOL_ARGS_INVALID",
    "TOOL_DUPLICATE",
    "TOOL_UNKNOWN",
    "WORKSPACE_ROOT_MISSING",
  ],
  /** Run stores, run logs, checkpoints and the lock. */
  store: [
    "PLAN_LOCKED",
    "PLAN_LOCK_LOST",
    "REQUEST_BUSY",
    "REQUEST_IO",
    "RUN_CHANGED",
    "RUN_CHECKPOINT_CORRUPT",
    "RUN_CHECKPOINT_INVALID",
    "RUN_CHECKPOINT_MISSING",
    "RUN_GROUP_INVALID",
    "RUN_ID_INVALID",
    "RUN_LOCKED",
    "RUN_LOCK_LOST",
    "RUN_LOG_CORRUPT",
    "RUN_LOG_ENTRY_INVALID",
    "RUN_LOG_TRUNCATED",
    "RUN_NOT_FOUND",
    "RUN_NOT_LOCKED",
    "RUN_STORE_IO",
    "RUN_STORE_NOT_INSTALLED",
    "RUN_STORE_SCHEMA_NEWER",
    "RUN_STORE_TIMEOUT",
    "RUN_STORE_UNAVAILABLE",
    "RUN_SUSPENDED",
    "STORE_INVALID",
    "STORE_OPTION_INVALID",
  ],
  /** The step-flow runner; also the codes of `result.error.code`. */
  flow: [
    "ABORTED",
    "ABORT_INTENT",
    "AGENT_STEP_ARGS",
    "AGENT_STEP_CHILD_STORE",
    "AGENT_STEP_DEPTH",
    "AGENT_STEP_FAILED",
    "BACKEND_RETRY",
    "BUDGET_EXCEEDED",
    "BUDGET_INVALID",
    "BUDGET_PRICE_MISSING",
    "CANCELLED",
    "COMMAND_NOT_ALLOWED",
    "COMMAND_UNKNOWN",
    "COMMAND_VARIABLE_MISSING",
    "FAILED_SCHEMA_RESOLUTION",
    "FANOUT_ITEMS_CHANGED",
    "FANOUT_ITEMS_INVALID",
    "FANOUT_ITEM_FAILED",
    "FANOUT_TOO_MANY_ITEMS",
    "INPUT_ANSWER_INVALID",
    "INPUT_NOT_WAITING",
    "INPUT_REQUEST_AMBIGUOUS",
    "INPUT_WAITING",
    "INPUT_WAIT_EXPIRED",
    "MAX_CHILDREN_INVALID",
    "MAX_ITERATIONS",
    "NO_RUN_STORE",
    "OUTPUT_REASK",
    "OUTPUT_SCHEMA_INVALID",
    "RETRIES_EXHAUSTED",
    "RUN_AGENT_MISMATCH",
    "RUN_IN_PROGRESS",
    "RUN_LOG_INCOMPLETE",
    "RUN_NOT_REDRIVABLE",
    "RUN_NOT_RESUMABLE",
    "RUN_STEP_UNKNOWN",
    "STEP_ROUTING_FAILED",
    "STEP_TIMEOUT",
    "STRUCTURED_OUTPUT_UNAVAILABLE",
    "TIMEOUT",
    "TOOL_CALL_STILL_RUNNING",
    "TOOL_CALL_UNFINISHED",
    "VALIDATION_FAILED",
  ],
  /** Tool plans: validation, execution, approvals, editing, recovery. */
  plan: [
    "APPROVAL_IO",
    "APPROVAL_NOT_WAITING",
    "DUPLICATE_STEP_ID",
    "INVALID_ARGS",
    "PLAN_EDIT_COMPLETED",
    "PLAN_EDIT_INVALID",
    "PLAN_EDIT_IN_USE",
    "PLAN_EDIT_POSITION",
    "PLAN_EDIT_UNKNOWN_STEP",
    "PLAN_FILE_INVALID_JSON",
    "PLAN_FILE_NOT_FOUND",
    "PLAN_GENERATION_FAILED",
    "PLAN_INVALID",
    "PLAN_RECOVER_NO_BACKEND",
    "PLAN_REORDER_DEPENDENCY",
    "PLAN_SCHEMA",
    "PLAN_STEP_INTERRUPTED",
    "RECOVERY_FAILED",
    "REF_NOT_ANCESTOR",
    "REF_UNRESOLVED",
    "UNKNOWN_DEPENDENCY",
    "UNKNOWN_REF",
    "UNKNOWN_TOOL",
  ],
  /** PlanSpec: parse, files, generation, the plan runner. */
  planspec: [
    "PLANSPEC_CONVERT",
    "PLANSPEC_INVALID",
    "PLANSPEC_PARSE",
    "PLANSPEC_TOO_DEEP",
    "PLANSPEC_UNREPRESENTABLE",
    "PLAN_EXISTS",
    "PLAN_GENERATION_INVALID",
    "PLAN_HISTORY_INVALID",
    "PLAN_NOT_COMPLETE",
    "PLAN_NOT_FOUND",
    "PLAN_RUNNING",
    "PLAN_RUN_LIMIT",
    "PLAN_WRITE_FAILED",
  ],
  /** QPlan scripts (`runScript`'s `QPLAN_ABORTED`, `QPLAN_TIMEOUT`, `QPLAN_INTERNAL` are result codes). */
  qplan: [
    "QPLAN_ABORTED",
    "QPLAN_INTERNAL",
    "QPLAN_INVALID",
    "QPLAN_MODULE_ARGS",
    "QPLAN_PARAMS",
    "QPLAN_RUNTIME",
    "QPLAN_SYNTAX",
    "QPLAN_TIMEOUT",
  ],
  /** Workers and the run queue. */
  worker: [
    "AGENT_DEFINITION_MISMATCH",
    "RUN_GIVEN_UP",
    "RUN_QUEUE_UNAVAILABLE",
    "WORKER_OPTION_INVALID",
  ],
  /** The dashboard. */
  ui: [
    "UI_ACTION_FAILED",
    "UI_ACTION_REFUSED",
    "UI_ACTION_UNSUPPORTED",
    "UI_BIND_FAILED",
    "UI_STORE_NOT_FOUND",
    "UI_STORE_UNSUPPORTED",
    "UI_TOKEN_REQUIRED",
  ],
  /** `deno task mcp`: stepflow's agents served to MCP clients. */
  mcp_server: [
    "MCP_ARGUMENTS_INVALID",
    "MCP_BIND_FAILED",
    "MCP_TOOL_UNKNOWN",
  ],
  /** Migrating climpt agents. */
  migrate: [
    "MIGRATE_OUT_UNUSABLE",
    "MIGRATE_PATH_ESCAPES",
    "MIGRATE_SOURCE_INVALID",
    "MIGRATE_SOURCE_NOT_FOUND",
    "MIGRATE_TARGET_EXISTS",
  ],
  /** The commands (`--init`). */
  cli: [
    "EVAL_CASES_INVALID",
    "EVAL_CASES_NOT_FOUND",
    "FILE_ACCESS",
    "FILE_NAME_TOO_LONG",
    "INIT_FAILED",
    "TEMPLATE_NOT_FOUND",
  ],
} as const;

/** A module of {@linkcode ERROR_CODES}: `"plan"`, `"store"`, … */
export type ErrorModule = keyof typeof ERROR_CODES;

/**
 * The codes of one module, as a literal union.
 *
 * @example
 * ```ts
 * import type { ErrorCodeOf } from "./error_codes.ts";
 * const code: ErrorCodeOf<"migrate"> = "MIGRATE_SOURCE_INVALID";
 * ```
 */
export type ErrorCodeOf<M extends ErrorModule> = (typeof ERROR_CODES)[M][number];

/** Every stable error code: the union of the modules' lists. */
export type StepflowErrorCode = ErrorCodeOf<ErrorModule>;
