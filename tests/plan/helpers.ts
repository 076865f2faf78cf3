/** Test helpers for tool plans: a plan builder and tools that record what they did. */
import { z } from "zod";
import { ToolRegistry } from "../../src/tools/registry.ts";
import { parsePlan } from "../../src/plan/schema.ts";
import type { NewStep, Plan } from "../../src/plan/types.ts";

/** A plan from short step specs. */
export function makePlan(steps: NewStep[], extra: Partial<Plan> = {}): Plan {
  return parsePlan({
    id: "plan_test",
    taskId: "task_test",
    version: 1,
    createdAt: "2025-01-01T00:00:00.000Z",
    ...extra,
    steps: steps.map((s, i) => ({ id: s.id ?? `step_${i + 1}`, ...s })),
  });
}

/** Records which steps ran, in which order, and how many ran at once. */
export interface Recorder {
  started: string[];
  finished: string[];
  active: number;
  maxActive: number;
  overlaps: Array<[string, string[]]>;
}

/**
 * Tools for executor tests:
 * - `work {name, ms?, value?}`: waits `ms`, records overlap, returns `value` (or `name`);
 * - `fail {message, times?}`: fails `times` times per name (default always), then returns "recovered";
 * - `echo {...}`: returns its args;
 * - `danger {}`: requires approval;
 * - `hang {}`: waits until cancelled.
 */
export function testTools(
  recorder: Recorder = newRecorder(),
): { tools: ToolRegistry; recorder: Recorder } {
  const failures = new Map<string, number>();
  const tools = new ToolRegistry()
    .register({
      name: "work",
      description: "Waits and records overlap",
      inputSchema: z.object({
        name: z.string(),
        ms: z.number().optional(),
        value: z.unknown().optional(),
      }),
      async execute({ name, ms, value }, ctx) {
        recorder.started.push(name);
        recorder.active++;
        recorder.maxActive = Math.max(recorder.maxActive, recorder.active);
        recorder.overlaps.push([name, [
          ...recorder.started.filter((s) => !recorder.finished.includes(s) && s !== name),
        ]]);
        try {
          await new Promise<void>((resolve, reject) => {
            const t = setTimeout(resolve, ms ?? 5);
            ctx.signal?.addEventListener("abort", () => {
              clearTimeout(t);
              reject(ctx.signal!.reason);
            }, { once: true });
          });
        } finally {
          recorder.active--;
          recorder.finished.push(name);
        }
        return value === undefined ? name : value;
      },
    })
    .register({
      name: "fail",
      description: "Fails a number of times",
      inputSchema: z.object({ message: z.string(), times: z.number().optional() }),
      execute({ message, times }) {
        const n = (failures.get(message) ?? 0) + 1;
        failures.set(message, n);
        recorder.started.push(`fail:${message}`);
        if (times === undefined || n <= times) throw new Error(message);
        return "recovered";
      },
    })
    .register({
      name: "echo",
      description: "Returns its arguments",
      inputSchema: z.record(z.string(), z.unknown()),
      execute: (args) => args,
    })
    .register({
      name: "danger",
      description: "Needs approval",
      inputSchema: z.object({ what: z.string().optional() }),
      requiresApproval: true,
      execute: ({ what }) => {
        recorder.started.push(`danger:${what ?? ""}`);
        return "done";
      },
    })
    .register({
      name: "hang",
      description: "Waits until cancelled",
      inputSchema: z.object({}),
      execute: (_args, ctx) =>
        new Promise((_resolve, reject) => {
          recorder.started.push("hang");
          ctx.signal?.addEventListener("abort", () => reject(ctx.signal!.reason), { once: true });
        }),
    });
  return { tools, recorder };
}

/** A fresh recorder. */
export function newRecorder(): Recorder {
  return { started: [], finished: [], active: 0, maxActive: 0, overlaps: [] };
}
