import assert from "node:assert/strict";
import {
  CLI_FLAGS,
  parameterList,
  type ParameterTable,
  parseCommandLine,
  scanCommandLine,
  usageText,
} from "../../src/cli/args.ts";
import { UsageError } from "../../src/errors.ts";

const PARAMS = {
  topic: { type: "string", description: "What to do", required: true },
  count: { type: "number", default: 2 },
  "dry-run": { type: "boolean" },
  verbose_log: { type: "boolean", default: true },
} as const;

function usage(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof UsageError, `expected a UsageError, got ${error}`);
    assert.match(error.message, pattern);
    return true;
  });
}

Deno.test("parseCommandLine: CLI flags", () => {
  const { flags, params } = parseCommandLine([
    "--agent",
    "a",
    "--backend",
    "openai",
    "--model",
    "m",
    "--base-url",
    "http://x/v1",
    "--script",
    "s.yaml",
    "--max-iterations",
    "7",
    "--allow-fallback",
    "--json",
    "--verbose",
  ]);
  assert.deepEqual(flags, {
    agent: "a",
    backend: "openai",
    model: "m",
    baseUrl: "http://x/v1",
    script: "s.yaml",
    maxIterations: 7,
    noStream: false,
    fallbackModel: [],
    allowFallback: true,
    allowRun: false,
    skipValidators: false,
    rerunUnfinishedCall: false,
    json: true,
    verbose: true,
    help: false,
    list: false,
    validate: false,
    connect: false,
    graph: false,
    runs: false,
    submit: false,
    wait: false,
    asScript: false,
  });
  assert.deepEqual(params, {});
  assert.equal(parseCommandLine(["-h"]).flags.help, true);
  assert.equal(parseCommandLine(["--init=x"]).flags.init, "x");
});

Deno.test("parseCommandLine: parameters are type-checked, defaults applied", () => {
  const parse = (...argv: string[]) =>
    parseCommandLine(["--agent", "a", ...argv], { parameters: PARAMS, agentName: "a" }).params;
  assert.deepEqual(parse("--topic", "x"), { topic: "x", count: 2, verbose_log: true });
  assert.deepEqual(parse("--topic", "", "--count", "1.5"), {
    topic: "",
    count: 1.5,
    verbose_log: true,
  });
  assert.equal(parse("--topic", "x", "--count", "-3").count, -3);
  assert.equal(parse("--topic", "x", "--count=-3").count, -3);
  assert.equal(parse("--topic=--x").topic, "--x");
  usage(
    () => parse("--topic", "--x"),
    /^--topic needs a value, but the next argument starts with "-"\. Write --topic=VALUE/,
  );
  // Boolean: flag form, explicit value, inline value.
  assert.equal(parse("--topic", "x", "--dry-run")["dry-run"], true);
  assert.equal(parse("--topic", "x", "--dry-run", "false")["dry-run"], false);
  assert.equal(parse("--topic", "x", "--dry-run", "TRUE")["dry-run"], true);
  assert.equal(parse("--topic", "x", "--dry-run=false")["dry-run"], false);
  assert.equal(parse("--dry-run", "--topic", "x")["dry-run"], true);
  assert.equal(parse("--topic", "x", "--verbose_log=false").verbose_log, false);
  // Values may hold spaces and '=' signs.
  assert.equal(parse("--topic=a = b").topic, "a = b");
});

Deno.test("parseCommandLine: every mistake is a UsageError naming the flag", () => {
  const parse = (...argv: string[]) =>
    parseCommandLine(["--agent", "a", ...argv], { parameters: PARAMS, agentName: "a" });
  usage(
    () => parse("--topic", "x", "--cuont", "1"),
    /^Unknown option --cuont\. Did you mean --count\?/,
  );
  usage(() => parse("--topic", "x", "--zzz"), /Unknown option --zzz\.\n\nParameters of agent "a":/);
  usage(() => parse("--topic", "x", "-q"), /Unknown option -q\./);
  usage(() => parse(), /^Missing required parameter --topic for agent "a"\./);
  usage(() => parse("--topic", "x", "--count", "abc"), /^--count expects a number, got "abc"\./);
  usage(() => parse("--topic", "x", "--count", ""), /^--count expects a number, got ""\./);
  usage(() => parse("--topic", "x", "--count"), /^--count needs a value/);
  usage(
    () => parse("--topic", "x", "--dry-run", "maybe"),
    /^--dry-run is a boolean: use --dry-run, --dry-run true or --dry-run false \(got "maybe"\)/,
  );
  usage(() => parse("--topic", "x", "stray"), /^Unexpected argument "stray"/);
  usage(() => parse("--topic", "x", "--topic", "y"), /^--topic given more than once/);
  usage(() => parse("--topic", "x", "--json=yes"), /^--json is a flag and takes no value\./);
  usage(
    () => parse("--topic", "x", "--max-iterations", "0"),
    /--max-iterations expects a positive integer/,
  );
  usage(
    () => parse("--topic", "x", "--max-attempts", "zero"),
    /--max-attempts expects a positive integer \(attempts per model call, default 3\)/,
  );
  assert.equal(parseCommandLine(["--agent", "a", "--max-attempts", "6"]).flags.maxAttempts, 6);
  usage(() => parseCommandLine(["--agent"]), /^--agent needs a value/);
  usage(
    () =>
      parseCommandLine(["--agent", "a"], {
        parameters: { model: { type: "string" } },
        agentName: "a",
      }),
    /declares the parameter "model", which clashes with the CLI flag --model/,
  );
  usage(
    () =>
      parseCommandLine(["--agent", "a"], {
        parameters: { x: { type: "string", flag: "resume" } },
        agentName: "a",
      }),
    /declares the parameter "x", which clashes with the CLI flag --resume/,
  );
  // The parameter list is appended, so the fix is on screen.
  usage(
    () => parse("--count", "abc"),
    /--topic <string> +What to do \(required\)\n {2}--count <number> +\(default 2\)/,
  );
});

Deno.test("parseCommandLine: --help skips the required-parameter check", () => {
  const { flags } = parseCommandLine(["--agent", "a", "--help"], { parameters: PARAMS });
  assert.equal(flags.help, true);
});

Deno.test("scanCommandLine tolerates the agent's parameters and bad values", () => {
  const flags = scanCommandLine([
    "--topic",
    "Fix it",
    "--agent",
    "x",
    "--max-iterations",
    "zero",
    "--verbose",
  ]);
  assert.equal(flags.agent, "x");
  assert.equal(flags.verbose, true);
  assert.equal(flags.maxIterations, undefined);
});

Deno.test("usageText lists every flag, the exit codes and the agent's parameters", () => {
  const text = usageText();
  for (const flag of CLI_FLAGS) assert.match(text, new RegExp(`--${flag.name}\\b`));
  assert.match(text, /Exit codes: 0 success/);
  assert.match(text, /INIT_CWD/);
  const withAgent = usageText({ parameters: PARAMS, agentName: "a" });
  assert.match(withAgent, /Parameters of agent "a":/);
  assert.match(withAgent, /--dry-run \[true\|false\]/);
  assert.equal(
    parameterList({}, "b"),
    'Parameters of agent "b": none (the agent declares no parameters).',
  );
});

Deno.test("parseCommandLine: parameter flags, arrays and enums", () => {
  const parameters: ParameterTable = {
    iterateMax: { type: "number", flag: "iterate-max", default: 5 },
    resume: { type: "boolean", flag: "resume-session" },
    labels: { type: "array", flag: "label" },
    ids: { type: "array", items: "number", enum: [1, 2, 3] },
    mode: { type: "string", enum: ["quick", "deep"] },
  };
  const parse = (...argv: string[]) =>
    parseCommandLine(["--agent", "a", ...argv], { parameters, agentName: "a" });
  // Values are stored under the parameter's key, whatever its flag.
  assert.deepEqual(
    parse(
      "--iterate-max",
      "9",
      "--resume-session",
      "--label",
      "a,b",
      "--label",
      "c",
      "--mode",
      "deep",
    )
      .params,
    { iterateMax: 9, resume: true, labels: ["a", "b", "c"], mode: "deep" },
  );
  assert.deepEqual(parse("--ids", "1,3").params, { iterateMax: 5, ids: [1, 3] });
  assert.equal(parse("--resume-session", "false").params.resume, false);
  usage(() => parse("--mode", "slow"), /^--mode must be one of quick, deep \(got slow\)/);
  usage(() => parse("--ids", "1,x"), /^--ids expects numbers, got "x"/);
  usage(() => parse("--ids", "4"), /^--ids must be one of 1, 2, 3 \(got 4\)/);
  usage(
    () => parse("--iterateMax", "3"),
    /^Unknown option --iterateMax\. Did you mean --iterate-max\?/,
  );
  usage(() => parse("--mode", "quick", "--mode", "deep"), /^--mode given more than once/);
  const help = usageText({ parameters, agentName: "a" });
  assert.match(help, /--iterate-max <number>/);
  assert.match(help, /--label <string>\.\.\. +\(repeat the flag or give a comma list\)/);
  assert.match(help, /--mode <quick\|deep>/);
});
