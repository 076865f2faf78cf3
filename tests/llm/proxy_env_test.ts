/**
 * Which plain-http requests the chat backends send over their own HTTP client: those `fetch`
 * would not route through a proxy named by the environment (`NO_PROXY` read as Deno reads it).
 */
import assert from "node:assert/strict";
import { noProxyMatches, proxyMayApply } from "../../src/llm/proxy_env.ts";

const reader = (env: Record<string, string>) => (name: string) => env[name];

Deno.test("proxy_env: a proxy variable applies unless NO_PROXY names the host", () => {
  const url = new URL("http://127.0.0.1:11434/v1");
  assert.equal(proxyMayApply(url, reader({})), false, "no variable: no proxy");
  assert.equal(proxyMayApply(url, reader({ HTTP_PROXY: "" })), false, "an empty variable is none");
  for (const name of ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]) {
    assert.equal(proxyMayApply(url, reader({ [name]: "http://proxy:3128" })), true, name);
  }
  assert.equal(
    proxyMayApply(url, reader({ HTTPS_PROXY: "http://proxy:3128" })),
    false,
    "HTTPS_PROXY is for https: only",
  );
  const proxy = { HTTP_PROXY: "http://proxy:3128" };
  assert.equal(proxyMayApply(url, reader({ ...proxy, NO_PROXY: "127.0.0.1" })), false);
  assert.equal(proxyMayApply(url, reader({ ...proxy, no_proxy: "127.0.0.0/8" })), false);
  assert.equal(
    proxyMayApply(url, reader({ ...proxy, NO_PROXY: "", no_proxy: "127.0.0.1" })),
    true,
    "NO_PROXY, set even empty, wins over no_proxy (as Deno reads them)",
  );
});

Deno.test("proxy_env: NO_PROXY entries — names and their subdomains, addresses, networks, *", () => {
  const cases: [string, string, boolean][] = [
    ["localhost", "localhost", true],
    ["example.com", "api.example.com", true],
    [".example.com", "example.com", true],
    [".example.com", "a.b.example.com", true],
    ["example.com", "notexample.com", false],
    [" foo.lan , example.com ", "example.com", true],
    ["*", "models.lan", true],
    // Deno matches `*` against names only: a host written as an address is not covered by it.
    ["*", "127.0.0.1", false],
    ["127.0.0.1", "127.0.0.1", true],
    ["127.0.0.1", "127.0.0.2", false],
    ["10.0.0.0/8", "10.20.30.40", true],
    ["10.0.0.0/8", "11.0.0.1", false],
    ["192.168.1.0/24", "192.168.1.200", true],
    ["192.168.1.0/23", "192.168.0.9", true],
    ["::1", "[::1]", true],
    ["fd00::/8", "[fd12:3456::1]", true],
    ["fd00::/8", "[fe80::1]", false],
    ["::ffff:127.0.0.1", "[::ffff:7f00:1]", true],
    ["127.0.0.1:8080", "127.0.0.1", false],
    ["localhost", "127.0.0.1", false],
    ["", "localhost", false],
  ];
  for (const [list, host, expected] of cases) {
    assert.equal(noProxyMatches(list, host), expected, `NO_PROXY=${list} host ${host}`);
  }
});
