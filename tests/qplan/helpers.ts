/**
 * Test helpers: an event recorder that turns every event into a compact line, and a temporary
 * workspace.
 *
 * @module
 */
import type { ExecutorEvents } from "../../src/events/types.ts";

/** Records events as lines such as `start:read`, `end:read {"data":1}`, `retry:fetch:1`. */
export function recorder(options: { results?: boolean } = {}): {
  events: ExecutorEvents;
  log: string[];
  infos: Record<string, unknown>[];
} {
  const log: string[] = [];
  const infos: Record<string, unknown>[] = [];
  const showResults = options.results ?? true;
  const events: ExecutorEvents = {
    onPlanStart: (plan) =>
      void log.push(`plan:start:${(plan as { totalSteps: number }).totalSteps}`),
    onPlanEnd: (_plan, ctx) => void log.push(`plan:end:${ctx.status}`),
    onStepStart: (info) => {
      infos.push({ ...info });
      log.push(`start:${info.stepId}`);
    },
    onStepEnd: (info, result) =>
      void log.push(
        showResults && result !== undefined
          ? `end:${info.stepId} ${JSON.stringify(result)}`
          : `end:${info.stepId}`,
      ),
    onStepError: (info) => void log.push(`error:${info.stepId}`),
    onStepRetry: (info, attempt) => void log.push(`retry:${info.stepId}:${attempt}`),
    onStepJump: (info, target) => void log.push(`jump:${info.stepId}->${target}`),
    onAbort: () => void log.push("abort"),
    onPause: () => void log.push("pause"),
    onResume: () => void log.push("resume"),
    onTimeout: () => void log.push("timeout"),
    onStateChange: (next, prev) => void log.push(`state:${prev}->${next}`),
  };
  return { events, log, infos };
}

/** The step-level lines of a log (no plan or state lines). */
export function stepLines(log: string[]): string[] {
  return log.filter((l) => !l.startsWith("plan:") && !l.startsWith("state:"));
}

/** A fresh temporary folder with the given files. */
export async function workspace(files: Record<string, string> = {}): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "qplan_test_" });
  for (const [name, content] of Object.entries(files)) {
    const path = `${dir}/${name}`;
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    await Deno.writeTextFile(path, content);
  }
  return dir;
}
