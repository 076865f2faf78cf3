import assert from "node:assert/strict";
import { credentialSecrets, redactDeep, redactText } from "../../src/llm/redact.ts";
import { promptFingerprint } from "../../src/llm/prompt_fingerprint.ts";

Deno.test("redact: credential names, URL passwords, and nothing shorter than 8 characters", () => {
  const secrets = credentialSecrets({
    OPENAI_API_KEY: "sk-1234567890",
    GITHUB_TOKEN: "short",
    DATABASE_URL: "postgres://me:pa55word-long@db:5432/x",
    HOME: "/home/someone-long",
    my_secret: "lowercase-secret",
  });
  assert.deepEqual(secrets.map((s) => s.name).sort(), [
    "DATABASE_URL",
    "OPENAI_API_KEY",
    "my_secret",
  ]);
  assert.equal(
    redactText("sk-1234567890 and pa55word-long at /home/someone-long", secrets),
    "[redacted:OPENAI_API_KEY] and [redacted:DATABASE_URL] at /home/someone-long",
  );
  const deep = redactDeep({ list: ["x sk-1234567890"], ["sk-1234567890"]: 1 }, secrets);
  assert.deepEqual(deep, { list: ["x [redacted:OPENAI_API_KEY]"], "[redacted:OPENAI_API_KEY]": 1 });
});

Deno.test("redact: a secret that contains another is replaced whole", () => {
  const secrets = credentialSecrets({ A_KEY: "abcdefgh", B_KEY: "abcdefgh-ijkl" });
  assert.equal(redactText("abcdefgh-ijkl", secrets), "[redacted:B_KEY]");
});

Deno.test("promptFingerprint: the same after redaction in another environment, different for another prompt", () => {
  const here = credentialSecrets({ API_KEY: "key-one-1234" });
  const there = credentialSecrets({ API_KEY: "key-two-5678" });
  assert.equal(
    promptFingerprint("sys", "use key-one-1234", here),
    promptFingerprint("sys", "use key-two-5678", there),
  );
  assert.notEqual(promptFingerprint("sys", "a"), promptFingerprint("sys", "b"));
  assert.notEqual(promptFingerprint(undefined, "a"), promptFingerprint("a", ""));
});
