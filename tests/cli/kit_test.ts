/**
 * The CLI kit (src/cli/kit/): the table-driven flag parser and help, the backend from flags, and
 * the error report shared by every command line.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { AgentDefinitionError } from "../../src/definition/errors.ts";
import { StepflowError, UsageError } from "../../src/errors.ts";
import { backendFromFlags, backendName } from "../../src/cli/kit/backend.ts";
import { EXIT_CODES } from "../../src/cli/kit/exit_codes.ts";
import {
  cleanParseMessage,
  declaredHelpLines,
  defineFlags,
  flagHelpLines,
  type FlagsOf,
  type FlagSpec,
  parseCommandFlags,
  parseFlags,
  parsePositiveInt,
  readDeclaredFlags,
} from "../../src/cli/kit/flags.ts";
import type { Exactly } from "../../src/type_equality.ts";
import { reportError } from "../../src/cli/kit/report_error.ts";

const TABLE: FlagSpec[] = [
  { name: "yes", type: "boolean", short: "y", description: "Start without asking" },
  {
    name: "approve",
    type: "string",
    value: "TOOLS",
    multiple: true,
    description: "Approve\nthese",
  },
  { name: "workspace", type: "string", value: "DIR", description: "Folder" },
  { name: "allow-everything-at-once", type: "boolean", description: "Long label" },
];

function usage(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof UsageError, `not a UsageError: ${error}`);
    assert.match(error.message, pattern);
    return true;
  });
}

Deno.test("parseFlags: values, short aliases, repeatable flags and positionals from the table", () => {
  const { values, positionals } = parseFlags(
    ["plan.json", "-y", "--approve", "a,b", "--approve=c", "--workspace", "w"],
    TABLE,
  );
  assert.deepEqual(positionals, ["plan.json"]);
  assert.equal(values.yes, true);
  assert.deepEqual(values.approve, ["a,b", "c"]);
  assert.equal(values.workspace, "w");
  assert.equal(Object.getPrototypeOf(values), null);
});

Deno.test("parseFlags: every problem is a UsageError that names the flag and ends with the hint", () => {
  const hint = " (see --help)";
  usage(
    () => parseFlags(["--yse"], TABLE, { hint }),
    /^Unknown option --yse\. Did you mean --yes\? \(see --help\)$/,
  );
  usage(() => parseFlags(["--zzz"], TABLE, { hint }), /^Unknown option --zzz\. \(see --help\)$/);
  usage(() => parseFlags(["--constructor"], TABLE), /^Unknown option --constructor\.$/);
  usage(
    () => parseFlags(["--workspace"], TABLE, { hint }),
    /^--workspace needs a value \(--workspace VALUE\)\. \(see/,
  );
  usage(() => parseFlags(["--yes=no"], TABLE), /^--yes is a flag and takes no value\./);
  usage(
    () => parseFlags(["--workspace", "a", "--workspace", "b"], TABLE),
    /^--workspace given more than once/,
  );
  usage(
    () => parseFlags(["stray"], TABLE, { positionals: false }),
    /^Unexpected argument "stray": this command takes only flags\./,
  );
});

Deno.test("cleanParseMessage: node's codes and positional advice are not shown", () => {
  assert.equal(
    cleanParseMessage(new TypeError("Something odd. To specify a positional x")),
    "Something odd.",
  );
});

Deno.test("flagHelpLines: aligned columns, continuation lines, long labels on their own line", () => {
  assert.deepEqual(flagHelpLines(TABLE, { width: 20 }), [
    "  -y, --yes           Start without asking",
    "  --approve TOOLS     Approve",
    "                      these",
    "  --workspace DIR     Folder",
    "  --allow-everything-at-once",
    "                      Long label",
  ]);
});

Deno.test("parsePositiveInt: valid, and a message that names the flag", () => {
  assert.equal(parsePositiveInt("--n")("3"), 3);
  usage(() => parsePositiveInt("--n")("0"), /^--n expects a positive integer, got "0"\.$/);
  usage(() => parsePositiveInt("--n")("1.5"), /got "1\.5"/);
  usage(() => parsePositiveInt("--n", (raw) => `bad ${raw}`)("x"), /^bad x$/);
});

const DECLARED = defineFlags({
  dryRun: { type: "boolean", description: "Show only" },
  approve: { type: "string", value: "TOOLS", multiple: true, description: "Approve" },
  concurrency: {
    type: "string",
    value: "N",
    description: "At once",
    parse: parsePositiveInt("--concurrency"),
    default: 4,
  },
  workspace: { type: "string", value: "DIR", description: "Folder" },
  runId: { name: "id", type: "string", value: "ID", description: "Run id" },
  help: { type: "boolean", short: "h", description: "Help" },
});

Deno.test("defineFlags: the parsed type follows from the declaration", () => {
  const proof: Exactly<FlagsOf<typeof DECLARED>, {
    dryRun: boolean;
    approve: string[];
    concurrency: number;
    workspace?: string;
    runId?: string;
    help: boolean;
  }> = true;
  assert.ok(proof);
});

Deno.test("parseCommandFlags: kebab-case names, defaults, parse, lists and absent keys", () => {
  const { flags, positionals } = parseCommandFlags(
    ["plan.json", "--dry-run", "--approve", "a", "--approve=b", "--id", "r1"],
    DECLARED,
  );
  assert.deepEqual(positionals, ["plan.json"]);
  assert.deepEqual(flags, {
    dryRun: true,
    approve: ["a", "b"],
    concurrency: 4,
    runId: "r1",
    help: false,
  });
  assert.ok(!("workspace" in flags));
  assert.equal(parseCommandFlags(["--concurrency", "7"], DECLARED).flags.concurrency, 7);
  assert.equal(parseCommandFlags(["-h"], DECLARED).flags.help, true);
});

Deno.test("parseCommandFlags: did-you-mean, given twice and a refused value are UsageErrors", () => {
  const hint = " (see --help)";
  usage(
    () => parseCommandFlags(["--dry-rn"], DECLARED, { hint }),
    /^Unknown option --dry-rn\. Did you mean --dry-run\? \(see --help\)$/,
  );
  usage(
    () => parseCommandFlags(["--id", "a", "--id", "b"], DECLARED),
    /^--id given more than once; pass each flag once\.$/,
  );
  usage(
    () => parseCommandFlags(["--concurrency", "0"], DECLARED),
    /^--concurrency expects a positive integer, got "0"\.$/,
  );
});

Deno.test("readDeclaredFlags: lenient leaves out a refused value instead of throwing", () => {
  const flags = readDeclaredFlags(DECLARED, { concurrency: "zero", "dry-run": true }, {
    lenient: true,
  });
  assert.equal(flags.concurrency, undefined);
  assert.equal(flags.dryRun, true);
  usage(() => readDeclaredFlags(DECLARED, { concurrency: "zero" }), /got "zero"/);
});

Deno.test("declaredHelpLines: the rows of the declaration, named by their flags", () => {
  assert.deepEqual(declaredHelpLines(DECLARED, { width: 20 }), [
    "  --dry-run           Show only",
    "  --approve TOOLS     Approve",
    "  --concurrency N     At once",
    "  --workspace DIR     Folder",
    "  --id ID             Run id",
    "  -h, --help          Help",
  ]);
});

Deno.test("backendFromFlags: --script means scripted; a clash, an unknown name and no name", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-kit-" });
  try {
    await Deno.writeTextFile(join(dir, "a.yaml"), "s: [hello]\n");
    const scripted = await backendFromFlags({ script: "a.yaml" }, { cwd: dir, env: {} });
    assert.equal(scripted?.name, "scripted");
    assert.equal(await backendFromFlags({}, { cwd: dir, env: {} }), undefined);
    assert.equal(backendName({}, { fallback: "Claude-Code" }), "claude-code");
    usage(
      () => backendName({ backend: "openai", script: "a.yaml" }),
      /^--script is for the scripted backend, but --backend is "openai"\./,
    );
    await assert.rejects(
      backendFromFlags({ backend: "scripted" }, { cwd: dir, env: {} }),
      /The scripted backend needs a script: pass --script FILE/,
    );
    await assert.rejects(
      backendFromFlags({ backend: "nope" }, { cwd: dir, env: {} }),
      /Unknown backend "nope"/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

function reported(error: unknown, options: Parameters<typeof reportError>[2]) {
  let text = "";
  const code = reportError(error, { write: (t) => void (text += t) }, options);
  return { code, text };
}

Deno.test("reportError: user errors exit 2 without a stack, locks 75, setup errors 2, bugs 70", () => {
  assert.deepEqual(reported(new UsageError("Bad flag."), { prefix: "qplan:" }), {
    code: EXIT_CODES.usage,
    text: "qplan: Bad flag.\n",
  });
  assert.equal(
    reported(new StepflowError("PLAN_LOCKED", "held"), { prefix: "x:", exitCodeOf: () => 1 }).code,
    EXIT_CODES.locked,
  );
  assert.equal(
    reported(new StepflowError("BACKEND_AUTH", "key"), { prefix: "x:", exitCodeOf: () => 1 }).code,
    EXIT_CODES.usage,
  );
  assert.equal(
    reported(new StepflowError("PLAN_GENERATION_FAILED", "bad"), {
      prefix: "x:",
      exitCodeOf: () => 1,
    })
      .code,
    EXIT_CODES.failed,
  );
  const bug = reported(new Error("boom"), { prefix: "error:", verbose: true });
  assert.equal(bug.code, EXIT_CODES.internal);
  assert.match(bug.text, /^error: boom\n\(this is a bug; please report it.*\nError: boom\n\s+at /);
  assert.doesNotMatch(reported(new Error("boom"), { prefix: "error:" }).text, /\bat /);
  const red = reported(new UsageError("u"), { prefix: "error:", color: true });
  assert.equal(red.text, "\x1b[31merror:\x1b[39m u\n");
});

Deno.test("reportError: an unexpected error after Ctrl-C is the cancellation (130)", () => {
  const controller = new AbortController();
  controller.abort();
  assert.deepEqual(
    reported(new DOMException("x", "AbortError"), {
      prefix: "run-plan:",
      signal: controller.signal,
    }),
    {
      code: EXIT_CODES.interrupted,
      text: "run-plan: cancelled\n",
    },
  );
});

Deno.test("reportError: a definition error lists its warnings and how to re-check", () => {
  const error = new AgentDefinitionError(".agent/a", ["p1"], ["w1"]);
  const { code, text } = reported(error, { prefix: "error:" });
  assert.equal(code, EXIT_CODES.usage);
  assert.ok(text.startsWith(`error: ${error.message}\n`));
  assert.ok(
    text.endsWith(
      "\nWarnings:\n  - w1\nFix the files above; `stepflow validate .agent/a` re-checks the agent without running it.\n",
    ),
  );
});
