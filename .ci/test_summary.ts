/**
 * Runs the whole test suite and ends with the plain line `N passed, M failed` that CI reads.
 * The exit code is deno test's own.
 *
 * @module
 */
const args = ["test", "-A", "--parallel", ...Deno.args];
const child = new Deno.Command(Deno.execPath(), {
  args,
  stdout: "piped",
  stderr: "inherit",
  env: { NO_COLOR: "1" },
}).spawn();

const decoder = new TextDecoder();
let tail = "";
for await (const chunk of child.stdout) {
  await Deno.stdout.write(chunk);
  tail = (tail + decoder.decode(chunk, { stream: true })).slice(-4000);
}
const status = await child.status;
const summary = /(?:ok|FAILED) \| (\d+) passed(?: \([^)]*\))? \| (\d+) failed/.exec(tail);
if (summary) console.log(`\n${summary[1]} passed, ${summary[2]} failed`);
else console.log("\n0 passed, 1 failed");
Deno.exit(status.code);
