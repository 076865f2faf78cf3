/**
 * What containment costs a command (src/process_containment.ts): `bash -c true` started plainly in
 * a session of its own (what `Bash` did before) against the same under the supervisor (a Deno
 * start-up per command). Both in one group, interleaved by `deno bench`, so a busy machine slows
 * both alike: read the ratio, not the milliseconds.
 */
import { spawnContained } from "../src/process_containment.ts";

Deno.bench({
  name: "bash -c true: plain, in a session of its own",
  group: "spawn",
  baseline: true,
  async fn() {
    await new Deno.Command("bash", {
      args: ["-c", "true"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
      detached: true,
    }).output();
  },
});

Deno.bench({
  name: "bash -c true: contained (supervisor on Linux)",
  group: "spawn",
  async fn() {
    const p = await spawnContained("bash", {
      args: ["-c", "true"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    });
    await p.status;
  },
});
