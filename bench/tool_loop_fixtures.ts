/**
 * What the tool-loop benches share: a zero-latency model that asks for a number of calls, a given
 * number per turn, then answers; and a tool output as tools make it.
 *
 * @module
 */
import type { ToolTurnBackend, ToolTurnRequest, ToolTurnResponse } from "../src/llm/tool_turn.ts";

/** A step request for the benches. */
export const BENCH_REQUEST = {
  kind: "step" as const,
  agent: "bench",
  stepId: "s",
  iteration: 1,
  prompt: "Go.",
  cwd: ".",
};

/** The tools of the benches are no agent tools a rule could name: every call is allowed. */
export const BYPASS_POLICY = { mode: "bypassPermissions" as const, allow: [], deny: [] };

/**
 * A model that answers at once: `perTurn` calls of `tool` (arguments `{ value: i }`) per turn until
 * `calls`, then the answer `done`. `onLastTurn` sees the request of the final turn.
 */
export class InstantModel implements ToolTurnBackend {
  readonly name = "instant";
  made = 0;

  /**
   * @param calls calls in all
   * @param perTurn calls per turn
   * @param tool the tool's name
   * @param onLastTurn told of the final turn's request
   */
  constructor(
    readonly calls: number,
    readonly perTurn: number,
    readonly tool: string,
    readonly onLastTurn?: (request: ToolTurnRequest) => void,
  ) {}

  toolTurn(request: ToolTurnRequest): Promise<ToolTurnResponse> {
    if (this.made >= this.calls) {
      this.onLastTurn?.(request);
      return Promise.resolve({ text: "done", toolCalls: [] });
    }
    const n = Math.min(this.perTurn, this.calls - this.made);
    const toolCalls = Array.from({ length: n }, (_, i) => ({
      id: `c${this.made + i}`,
      name: this.tool,
      arguments: { value: i },
    }));
    this.made += n;
    return Promise.resolve({ text: "", toolCalls });
  }
}

/**
 * A tool's output as tools make it: decoded from bytes, so a flat string of its own (a string
 * built with `padEnd` or `repeat` shares its pieces and would weigh almost nothing).
 */
export function toolOutput(value: number, chars: number): string {
  const bytes = new Uint8Array(chars).fill(0x78);
  bytes.set(new TextEncoder().encode(String(value)).subarray(0, chars));
  return new TextDecoder().decode(bytes);
}
