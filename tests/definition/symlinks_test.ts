/**
 * Symbolic links out of the agent folder are refused wherever the loader or the prompt resolver
 * opens a file; the agent folder itself may be a link.
 */
import assert from "node:assert/strict";
import { cp, rename } from "node:fs/promises";
import { join } from "node:path";
import { PromptResolver } from "../../src/prompt/resolver.ts";
import { copyExample, load, loadFails, type TempAgent, writeText } from "./fixtures.ts";

/** Moves `<agent>/<rel>` to a folder outside the agent and links it back. */
async function linkOut(agent: TempAgent, rel: string): Promise<string> {
  const outside = await Deno.makeTempDir({ prefix: "stepflow_outside_" });
  const target = join(outside, rel.replaceAll("/", "_"));
  await rename(join(agent.dir, rel), target);
  await Deno.symlink(target, join(agent.dir, rel));
  return target;
}

const REFUSED = /Refused .*: it is a symbolic link to .*, outside the agent folder /;

Deno.test("symlinks: prompts/, schemas/, steps_registry.json and agent.json linking out are refused", async () => {
  for (const rel of ["prompts", "schemas", "steps_registry.json", "agent.json"]) {
    const agent = await copyExample("issue-solver");
    const target = await linkOut(agent, rel);
    const error = await loadFails(agent);
    const text = error.problems.join("\n");
    assert.ok(error.problems.length >= 1, rel);
    assert.match(
      text,
      rel === "schemas" ? /Refused schemas folder .*outside the agent folder/ : REFUSED,
      rel,
    );
    assert.ok(text.includes(target), `${rel}: names the link target\n${text}`);
  }
});

Deno.test("symlinks: the agent folder itself may be a link; links inside it are fine", async () => {
  const agent = await copyExample("issue-solver");
  const elsewhere = await Deno.makeTempDir({ prefix: "stepflow_real_agent_" });
  await cp(agent.dir, join(elsewhere, "issue-solver"), { recursive: true });
  await Deno.remove(agent.dir, { recursive: true });
  await Deno.symlink(join(elsewhere, "issue-solver"), agent.dir);
  // A link that stays inside the (real) agent folder is accepted.
  const prompts = join(elsewhere, "issue-solver", "prompts");
  await rename(join(prompts, "system.md"), join(prompts, "system-real.md"));
  await Deno.symlink(join(prompts, "system-real.md"), join(prompts, "system.md"));
  const def = await load(agent);
  assert.equal(def.name, "issue-solver");
});

Deno.test("symlinks: the run-time resolver refuses a prompt folder and a fallbackDir that link out", async () => {
  const agent = await copyExample("issue-solver");
  await linkOut(agent, "prompts");
  const resolver = new PromptResolver({ agentDir: agent.dir });
  await assert.rejects(
    resolver.template({ c1: "steps", c2: "initial", c3: "issue" }),
    (error: Error & { code?: string }) => {
      assert.equal(error.code, "PROMPT_PATH_INVALID");
      assert.match(error.message, /Refused prompt folder .*prompts: it is a symbolic link to /);
      return true;
    },
  );

  const other = await copyExample("issue-solver");
  const outside = await Deno.makeTempDir({ prefix: "stepflow_outside_fb_" });
  await writeText(join(outside, "steps", "missing", "x", "f_default.md"), "secret");
  await Deno.symlink(outside, join(other.dir, "fallback"));
  const fallback = new PromptResolver({
    agentDir: other.dir,
    fallbackDir: "fallback",
    allowFallback: true,
    onWarning: () => {},
  });
  await assert.rejects(
    fallback.template({ c1: "steps", c2: "missing", c3: "x" }),
    /Refused prompt folder .*fallback: it is a symbolic link to /,
  );
});
