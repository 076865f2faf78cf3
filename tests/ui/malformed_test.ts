/**
 * The dashboard over malformed requests: every route (enumerated from the server's own table)
 * with every kind of bad percent-encoding, malformed Host headers, the token redirect, loopback
 * spellings and `--port` values.
 */
import assert from "node:assert/strict";
import { DASHBOARD_ROUTES, isLoopback, serveDashboard } from "../../src/ui/server.ts";
import { discoverStores } from "../../src/ui/source.ts";
import { startDashboard } from "./browser.ts";
import { demoProject, runFlow, runUi } from "./fixtures.ts";

/** Segments that are not valid percent-encoded UTF-8: bad escapes, cut, overlong, out of range. */
const MALFORMED = [
  "%",
  "%%",
  "%2",
  "a%",
  "%zz",
  "%z1",
  "%1z",
  "%g0",
  "%-1",
  "%+F",
  "%E0%A4%A",
  "%E0%A4",
  "%E2%82",
  "%ff%fe",
  "%ff",
  "%fe",
  "%80",
  "%BF",
  "%C2",
  "%C3%28",
  "%A0%A1",
  "%C0%AF",
  "%C0%80",
  "%C1%BF",
  "%E0%80%AF",
  "%E0%9F%BF",
  "%F0%80%80%AF",
  "%F0%8F%BF%BF",
  "%F8%88%80%80%80",
  "%FC%84%80%80%80%80",
  "%ED%A0%80",
  "%ED%BF%BF",
  "%ED%A0%80%ED%B0%80",
  "%F4%90%80%80",
  "%F5%80%80%80",
  "%E2%28%A1",
  "%F0%28%8C%BC",
  "%F0%90%28%BC",
  "ok%E2%82%ACok%E2%82",
  "x%C0%AEx",
];

/** Every path form of every route with `{…}` parameters filled in; `bad` goes into one of them. */
function formsWith(bad: string): { method: string; path: string; route: string }[] {
  const all: { method: string; path: string; route: string }[] = [];
  for (const [name, route] of Object.entries(DASHBOARD_ROUTES)) {
    for (const form of route.forms) {
      const params = form.match(/\{[a-z]+\}/g) ?? [];
      params.forEach((param, i) => {
        let n = 0;
        const path = form.replace(/\{[a-z]+\}/g, () => (n++ === i ? bad : "ok"));
        all.push({ method: route.method, path, route: `${name} ${param}` });
      });
    }
  }
  return all;
}

Deno.test("dashboard routes: every form of every route matches its own pattern", () => {
  const forms = formsWith("x");
  assert.ok(forms.length >= 12, `${forms.length} forms`);
  for (const form of forms) {
    const route = Object.values(DASHBOARD_ROUTES).find((r) => r.pattern.test(form.path));
    assert.ok(route, `${form.path} matches no route`);
  }
});

Deno.test("dashboard: bad percent-encoding in any route parameter is 400 with a plain message", async () => {
  const project = await demoProject();
  await runFlow(project, { runId: "r1" });
  await using ui = await startDashboard(project.root, { actions: {} });
  const base = ui.url.replace(/\/$/, "");
  let cases = 0;
  for (const bad of MALFORMED) {
    for (const { method, path, route } of formsWith(bad)) {
      const res = await fetch(base + path, { method });
      const body = await res.text();
      assert.equal(res.status, 400, `${method} ${path} (${route}): ${body}`);
      assert.match(res.headers.get("content-type")!, /^text\/plain/);
      assert.match(body, /^Bad request: the path segment .* is not valid percent-encoded UTF-8/);
      assert.ok(!/URI malformed|stack|at /.test(body), body);
      cases++;
    }
  }
  assert.ok(cases >= MALFORMED.length * 12);
  // Well-formed encodings still reach the routes (a missing run is a 404, not a 400).
  for (const { method, path } of formsWith("%E2%9C%93%20x")) {
    const res = await fetch(base + path, { method });
    await res.body?.cancel();
    assert.notEqual(res.status, 400, path);
    assert.ok(res.status < 500, `${path}: ${res.status}`);
  }
});

/** The status line and body of a GET with the given raw Host header. */
async function rawGet(port: number, host: string, path = "/"): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    new TextEncoder().encode(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
  );
  let text = "";
  const buf = new Uint8Array(4096);
  for (;;) {
    const n = await conn.read(buf);
    if (n === null) break;
    text += new TextDecoder().decode(buf.subarray(0, n));
  }
  conn.close();
  return text;
}

Deno.test("dashboard: a malformed Host header is 400; loopback spellings pass the Host check", async () => {
  const project = await demoProject();
  await using ui = await startDashboard(project.root);
  for (const host of ["[::1", "[::1:80", "[", "a b", "127.0.0.1:99999"]) {
    const res = await rawGet(ui.port, host);
    assert.match(res, /^HTTP\/1\.1 (400|403)/, host);
    assert.ok(!res.includes("Invalid URL"), res);
  }
  assert.match(await rawGet(ui.port, "[::1"), /^HTTP\/1\.1 400[\s\S]*not a valid URL/);
  for (const host of ["127.1", `127.0.0.2:${ui.port}`, "[::ffff:127.0.0.1]", "[::ffff:7f00:1]"]) {
    assert.match(await rawGet(ui.port, host), /^HTTP\/1\.1 200/, host);
  }
  for (const host of ["evil.example", "x@127.0.0.1", "127.0.0.1.evil.example", "[::ffff:a00:1]"]) {
    assert.match(await rawGet(ui.port, host), /^HTTP\/1\.1 403/, host);
  }
});

Deno.test("dashboard token: ?token= on a path starting with // redirects on this server only", async () => {
  const project = await demoProject();
  const stores = await discoverStores(project.root);
  const token = "t0ken-for-test";
  const ui = serveDashboard({ source: { cwd: project.root, stores }, port: 0, token });
  try {
    const origin = `http://127.0.0.1:${ui.port}`;
    for (
      const path of [
        "//evil.example/",
        "///evil.example/x",
        "/%2F/evil.example/",
        "//evil.example/runs?a=1",
      ]
    ) {
      const res = await rawGet(
        ui.port,
        `127.0.0.1:${ui.port}`,
        `${path}${path.includes("?") ? "&" : "?"}token=${token}`,
      );
      assert.match(res, /^HTTP\/1\.1 303/, path);
      const location = /\r\nlocation: ([^\r]*)/i.exec(res)![1];
      assert.ok(location.startsWith("/") && !location.startsWith("//"), `${path} → ${location}`);
      assert.equal(new URL(location, origin).origin, origin, `${path} → ${location}`);
      assert.ok(!location.includes("token="), location);
    }
  } finally {
    await ui.server.shutdown();
  }
});

Deno.test("isLoopback: every spelling of a loopback address, nothing else", () => {
  for (
    const host of [
      "localhost",
      "127.0.0.1",
      "127.1",
      "127.0.0.2",
      "0x7f.0.0.1",
      "::1",
      "[::1]",
      "::ffff:127.0.0.1",
      "[::ffff:127.0.0.1]",
      "::ffff:7f00:1",
    ]
  ) {
    assert.ok(isLoopback(host), host);
  }
  for (
    const host of [
      "0.0.0.0",
      "::",
      "10.0.0.1",
      "128.0.0.1",
      "::ffff:10.0.0.1",
      "localhost.evil.example",
      "",
      "[::1",
      "a@127.0.0.1",
    ]
  ) {
    assert.ok(!isLoopback(host), host);
  }
});

Deno.test("deno task ui: --port takes decimal digits 0-65535 only; a host it cannot bind is exit 2", async () => {
  const userDir = await Deno.makeTempDir();
  for (
    const port of ["0x50", "1e3", "", " 80", "+80", "80.0", "-1", "65536", "99999999999999999999"]
  ) {
    const bad = await runUi([`--port=${port}`], userDir);
    assert.equal(bad.code, 2, `--port "${port}": ${bad.stderr}`);
    assert.match(bad.stderr, /--port .*: give a port number 0-65535 in decimal digits/);
  }
  for (const host of ["nosuch.invalid", "10.255.255.1", "999.1.1.1"]) {
    const failed = await runUi(["--port", "0", "--host", host], userDir);
    assert.equal(failed.code, 2, `--host ${host}: ${failed.stderr}`);
    assert.match(failed.stderr, /error \[UI_BIND_FAILED\]: The dashboard cannot listen on /);
    assert.ok(!/bug in stepflow|at .*\.ts/.test(failed.stderr), failed.stderr);
  }
  // A port that is taken.
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const busy = await runUi(["--port", String((taken.addr as Deno.NetAddr).port)], userDir);
  assert.equal(busy.code, 2);
  assert.match(busy.stderr, /UI_BIND_FAILED.*already in use; pick another with --port/);
});
