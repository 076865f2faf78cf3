/**
 * The MCP client's timeouts from the environment, as Claude Code reads them: `MCP_TIMEOUT` (ms to
 * start a server and finish the handshake) and `MCP_TOOL_TIMEOUT` (ms a tool call may take). They
 * replace the defaults wherever no timeout is given in code — agent runs, tool plans, QPlan.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";

/** The variable holding the connect timeout (ms). */
export const MCP_TIMEOUT_ENV = "MCP_TIMEOUT";
/** The variable holding the call timeout (ms). */
export const MCP_TOOL_TIMEOUT_ENV = "MCP_TOOL_TIMEOUT";

/**
 * The timeout `variable` sets, else `fallback`. A value that is not a whole number of
 * milliseconds ≥ 1 is refused: a typo must not turn into no limit or an instant failure.
 *
 * @throws StepflowError `MCP_CONFIG_INVALID`
 * @example
 * ```ts
 * import { timeoutFromEnv } from "./timeouts.ts";
 * timeoutFromEnv("MCP_TOOL_TIMEOUT", 120_000, { MCP_TOOL_TIMEOUT: "300000" }); // 300000
 * timeoutFromEnv("MCP_TOOL_TIMEOUT", 120_000, {}); // 120000
 * ```
 */
export function timeoutFromEnv(
  variable: string,
  fallback: number,
  env: Readonly<Record<string, string | undefined>> = processEnv(),
): number {
  const raw = Object.hasOwn(env, variable) ? env[variable]?.trim() : undefined;
  if (raw === undefined || raw === "") return fallback;
  const ms = /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
  if (!(ms >= 1)) {
    throw new StepflowError(
      "MCP_CONFIG_INVALID",
      `${variable}=${
        JSON.stringify(raw.slice(0, 40))
      } is not a timeout: set a whole number of milliseconds ≥ 1 (e.g. ${fallback}), or unset it for the default.`,
      { details: { variable } },
    );
  }
  return ms;
}

function processEnv(): Record<string, string | undefined> {
  try {
    return Deno.env.toObject();
  } catch {
    // No permission to read the environment: the defaults apply.
    return {};
  }
}
