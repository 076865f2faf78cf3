/**
 * The dashboard's static assets as string modules: they ship inside the package (a checkout and
 * the published JSR package alike) and are served by the app itself — nothing is fetched at run
 * time. The script follows a live run (server-sent events) and sends the actions when they are
 * allowed; pages work without it.
 *
 * @module
 */

/** The stylesheet (`/assets/app.css`). */
export const APP_CSS = `
:root { --fg:#1d232b; --muted:#5e6a78; --line:#d8dee6; --bg:#f6f8fa; --card:#fff; --accent:#0b63ce;
  --ok:#1a7f37; --bad:#c62828; --warn:#9a6700; --run:#0b63ce; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg);
  background:var(--bg); }
header.top { display:flex; gap:18px; align-items:center; padding:10px 20px; background:#14202e;
  color:#fff; }
header.top a { color:#cfe3ff; text-decoration:none; }
header.top .brand { font-weight:700; color:#fff; }
main { padding:18px 20px; max-width:1400px; }
h1 { font-size:20px; margin:0 0 12px; } h2 { font-size:16px; margin:22px 0 8px; }
a { color:var(--accent); }
.actions { display:flex; gap:10px; align-items:center; margin:10px 0; }
.actions button { padding:4px 12px; border:1px solid var(--line); border-radius:6px;
  background:var(--card); cursor:pointer; font:inherit; }
.actions .ok { color:var(--ok); } .actions .bad { color:var(--bad); }
.actions .confirm { display:inline-flex; gap:8px; align-items:center; }
.actions .confirm[hidden] { display:none; }
.notice { border:1px solid var(--line); border-radius:6px; padding:4px 12px; margin:10px 0; }
table { border-collapse:collapse; width:100%; background:var(--card); }
th, td { text-align:left; padding:6px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { font-weight:600; color:var(--muted); background:#eef2f6; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
.status { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px;
  font-weight:600; background:#e8ecf0; white-space:nowrap; }
.status.completed { background:#dcf5e3; color:var(--ok); }
.status.failed, .status.aborted, .status.timeout { background:#fde2e1; color:var(--bad); }
.status.running { background:#dbeafe; color:var(--run); }
.status.paused, .status.cancelled, .status.interrupted, .status.queued { background:#fff3cd; color:var(--warn); }
.status.waiting { background:#ede9fe; color:#5b21b6; }
section.waiting { border:1px solid #c4b5fd; border-radius:6px; padding:.5rem 1rem; margin:1rem 0; }
section.waiting .prompt { white-space:pre-wrap; }
section.approval dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:.25rem 1rem;
  margin:.5rem 0; }
section.approval dt { color:var(--muted); } section.approval dd { margin:0; word-break:break-word; }
section.approval button.approve { background:#dcfce7; }
section.approval button.deny { background:#fee2e2; }
.waiting-for { font-size:12px; color:#5b21b6; white-space:nowrap; }
.waiting-for code { display:inline-block; max-width:14em; overflow:hidden; text-overflow:ellipsis;
  vertical-align:bottom; }
.table-scroll { overflow-x:auto; }
#runs td.run a, #runs td.agent a, #runs td.when, #runs td.num { white-space:nowrap; }
#runs .waiting-for { display:block; margin-top:2px; } #runs .waiting-for .sep { display:none; }
#runs td.end { min-width:12em; }
.answer .field { display:flex; gap:.5rem; align-items:baseline; margin:.4rem 0; }
.answer .field label { min-width:10rem; }
form.filters { display:flex; gap:10px; align-items:center; margin-bottom:12px; }
a.group { display:inline-block; margin-left:6px; padding:0 6px; border:1px solid var(--line); border-radius:8px; font-size:11px; color:inherit; text-decoration:none; }
.pager { display:flex; gap:12px; align-items:center; margin:10px 0; color:var(--muted); }
.meta { display:grid; grid-template-columns:repeat(auto-fill,minmax(180px,1fr)); gap:8px 18px;
  background:var(--card); border:1px solid var(--line); border-radius:8px; padding:12px; }
.meta > div > span:first-child { display:block; color:var(--muted); font-size:12px; }
.graph-box { overflow:auto; background:var(--card); border:1px solid var(--line); border-radius:8px;
  padding:8px; }
svg.graph .node rect { fill:#fff; stroke:#8896a6; stroke-width:1.4; }
svg.graph .node.closing rect { stroke-width:3; }
svg.graph .node.input rect { fill:#ede9fe; stroke:#5b21b6; stroke-dasharray:6 3; }
svg.graph .node.agent rect { fill:#e0f2fe; stroke:#0369a1; stroke-width:2px; rx:14px; }
svg.graph .node.terminal rect { fill:#eef2f6; rx:23; }
svg.graph .node.missing rect { stroke:var(--bad); stroke-dasharray:4 4; }
svg.graph .node.visited rect { fill:#e3efff; stroke:var(--accent); stroke-width:2.4; }
svg.graph .node.current rect { fill:#fff3cd; stroke:var(--warn); }
svg.graph .node.done rect { fill:#dcf5e3; stroke:var(--ok); }
svg.graph .node.failed rect { fill:#fde2e1; stroke:var(--bad); }
svg.graph .node.waiting rect { fill:#fff3cd; stroke:var(--warn); }
svg.graph .node.running rect { fill:#dbeafe; stroke:var(--run); }
svg.graph text { font:12px system-ui, sans-serif; text-anchor:middle; fill:var(--fg); }
svg.graph text.sub { font-size:10px; fill:var(--muted); }
svg.graph .badge circle { fill:var(--accent); }
svg.graph .badge text { fill:#fff; font-size:11px; font-weight:700; }
svg.graph .edge path { fill:none; stroke:#9aa7b5; stroke-width:1.3; }
svg.graph .edge.retry path, svg.graph .edge.fallback path, svg.graph .edge.error path {
  stroke-dasharray:5 4; }
svg.graph .edge text { font-size:10px; fill:var(--muted); text-anchor:start; }
svg.graph .edge.left text { text-anchor:end; }
svg.graph .edge.taken path { stroke:var(--accent); stroke-width:3; }
svg.graph .edge.taken text { fill:var(--accent); font-weight:600; }
svg.graph marker path { fill:#6b7886; }
.chart { margin:0; background:var(--card); border:1px solid var(--line); border-radius:8px;
  padding:8px; overflow-x:auto; }
svg.timeline-chart { display:block; font:11px system-ui, sans-serif; }
svg.timeline-chart .axis line { stroke:#e3e8ee; }
svg.timeline-chart .axis line.base { stroke:#9aa7b5; }
svg.timeline-chart .axis text { fill:var(--muted); font-size:10px; text-anchor:middle; }
svg.timeline-chart .labels text { fill:var(--fg); }
svg.timeline-chart .bar, .chart .swatch { fill:#9aa7b5; background:#9aa7b5; }
svg.timeline-chart .bar.ok, .chart .swatch.ok { fill:#2da44e; background:#2da44e; }
svg.timeline-chart .bar.bad, .chart .swatch.bad { fill:var(--bad); background:var(--bad); }
svg.timeline-chart .bar.warn, .chart .swatch.warn { fill:#d4a72c; background:#d4a72c; }
svg.timeline-chart .bar.wait, .chart .swatch.wait { fill:#8b5cf6; background:#8b5cf6; }
svg.timeline-chart .bar.run, .chart .swatch.run { fill:var(--run); background:var(--run); }
svg.timeline-chart .bar.open { fill-opacity:.55; }
svg.timeline-chart a:hover .bar, svg.timeline-chart a:focus .bar { stroke:#14202e; stroke-width:1.5; }
.chart .swatch { display:inline-block; width:10px; height:10px; border-radius:2px; margin:0 3px 0 8px;
  vertical-align:middle; }
.timeline .row { content-visibility:auto; contain-intrinsic-size:auto 64px;
  background:var(--card); border:1px solid var(--line); border-radius:6px;
  margin:6px 0; padding:6px 10px; }
.timeline .row.event { background:#f0f3f7; font-size:13px; color:var(--muted); }
.timeline .row.failed { border-left:4px solid var(--bad); }
.timeline .line { display:flex; flex-wrap:wrap; gap:6px 16px; align-items:baseline; }
.timeline .line b { min-width:3em; }
.timeline .k { color:var(--muted); font-size:12px; }
.calls { margin:4px 0; }
ol.calls-list { margin:2px 0; padding-left:2.8em; font-size:13px; }
li.call details { margin:1px 0; }
li.call summary { color:var(--fg); overflow-wrap:anywhere; }
li.call .mark { display:inline-block; width:1.2em; text-align:center; font-weight:700; }
li.call.ok .mark { color:var(--ok); }
li.call.error .mark, li.call.invalid .mark, li.call.error .state, li.call.invalid .state {
  color:var(--bad); }
li.call.denied { background:#fde2e1; border-radius:4px; }
li.call.denied .mark, li.call.denied .state { color:var(--bad); font-weight:600; }
li.call.running .mark, li.call.asking .mark, li.call.running .state, li.call.asking .state {
  color:var(--run); font-weight:600; }
li.call.unfinished .mark, li.call.unfinished .state { color:var(--warn); }
li.call code.args, li.call .result { color:var(--muted); }
.call-meta { margin:4px 0; padding:8px; }
.calls .grant { color:var(--ok); font-size:13px; margin:2px 0 2px 1.2em; }
details { margin:4px 0; } summary { cursor:pointer; color:var(--accent); font-size:13px; }
pre { white-space:pre-wrap; word-break:break-word; background:#f3f5f8; border:1px solid var(--line);
  border-radius:4px; padding:8px; margin:4px 0; max-height:420px; overflow:auto;
  font:12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
.errors { color:var(--bad); }
.note { color:var(--muted); font-size:12px; }
.warn { color:var(--warn); } .wide { grid-column:1/-1; }
.live { color:var(--run); font-weight:600; }
ul.tree { list-style:none; padding-left:18px; } ul.tree li { margin:3px 0; }
.progress-line progress { width:320px; vertical-align:middle; }
.progress { height:8px; background:#e3e8ee; border-radius:4px; overflow:hidden; max-width:320px; }
.progress i { display:block; height:100%; background:var(--ok); }
svg .progress-bar rect, svg.graph .node .progress-bar rect { fill:#d5dce4; stroke:none; rx:0; }
svg .progress-bar rect.seg.ok, svg.graph .node .progress-bar rect.seg.ok { fill:#2da44e; }
svg .progress-bar rect.seg.bad, svg.graph .node .progress-bar rect.seg.bad { fill:var(--bad); }
svg .progress-bar rect.seg.run, svg.graph .node .progress-bar rect.seg.run { fill:var(--run); }
svg .progress-bar rect.seg.wait, svg.graph .node .progress-bar rect.seg.wait { fill:#8b5cf6; }
svg .progress-bar rect.seg.warn, svg.graph .node .progress-bar rect.seg.warn { fill:#d4a72c; }
svg.graph .node.fanout rect { stroke-width:2.4; }
section.fanout { margin:10px 0 18px; }
section.fanout h3 { font-size:14px; margin:8px 0; }
.fanout-progress { display:flex; gap:10px; align-items:center; margin:6px 0; }
.fanout-progress svg { border-radius:4px; }
table.fanout-items td.item { min-width:10em; max-width:28em; overflow-wrap:anywhere; }
table.fanout-items td.run a { white-space:nowrap; }
table.fanout-items tr.failed td:first-child { border-left:4px solid var(--bad); }
table.fanout-items tr.waiting td:first-child { border-left:4px solid #8b5cf6; }
.status.not-started, .status.started { background:#eef2f6; color:var(--muted); }
section.waits > section.waiting { margin:.6rem 0; }
`;

/**
 * The page script (`/assets/app.js`): on a running run's page, follows the run over server-sent
 * events and swaps in the rows, graph and header the server renders (already escaped there).
 * No polling: the browser's EventSource keeps one connection open.
 */
export const APP_JS = `"use strict";
(function () {
  var body = document.body;
  // Prompts, answers and handoffs load when their section is first opened.
  document.addEventListener("toggle", function (e) {
    var el = e.target;
    if (!el || el.tagName !== "DETAILS" || !el.open || el.getAttribute("data-loaded")) return;
    var src = el.getAttribute("data-src");
    if (!src) return;
    el.setAttribute("data-loaded", "loading");
    fetch(src, { credentials: "same-origin" }).then(function (r) {
      return r.text().then(function (t) { return { ok: r.ok, text: t }; });
    }).then(function (res) {
      var box = el.querySelector(".body");
      if (res.ok) box.innerHTML = res.text; else box.textContent = res.text;
      el.setAttribute("data-loaded", "true");
    }, function (err) {
      el.querySelector(".body").textContent = "Could not load: " + err;
      el.removeAttribute("data-loaded");
    });
  }, true);
  // Actions (--allow-actions): POST with the server's secret; the answer is shown, then the page
  // reloads so a resumed run shows live and a cancelled one its end.
  // A confirm step: a data-arm button shows what it names (the real action) and hides itself;
  // data-disarm puts it back.
  document.addEventListener("click", function (e) {
    var btn = e.target && e.target.closest ? e.target.closest("button[data-arm],button[data-disarm]") : null;
    if (!btn) return;
    var armed = btn.hasAttribute("data-arm");
    var step = document.getElementById(btn.getAttribute(armed ? "data-arm" : "data-disarm"));
    if (!step) return;
    var opener = document.querySelector('button[data-arm="' + step.id + '"]');
    step.hidden = !armed;
    if (opener) opener.hidden = armed;
  });
  // One POST of an action or an answer, with the server's secret: the reply's message is shown,
  // the box and its status marked done or refused; a success reloads the page a moment later, a
  // refusal or a failure to send makes the buttons usable again.
  var postAction = function (url, body, box, out, setBusy) {
    var headers = { "x-stepflow-csrf": box.getAttribute("data-csrf") };
    if (body !== null) headers["content-type"] = "application/json";
    setBusy(true);
    out.textContent = "…";
    fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: headers,
      body: body === null ? undefined : body
    }).then(function (r) {
      return r.text().then(function (t) {
        var message = t;
        try { message = JSON.parse(t).message; } catch (_) { /* plain text */ }
        return { ok: r.ok, message: message };
      });
    }).then(function (res) {
      out.textContent = res.message;
      out.className = res.ok ? "ok" : "bad";
      box.setAttribute("data-done", res.ok ? "ok" : "refused");
      out.setAttribute("data-done", res.ok ? "ok" : "refused");
      if (res.ok) setTimeout(function () { location.reload(); }, 1000);
      else setBusy(false);
    }, function (err) {
      out.textContent = "Could not send: " + err;
      setBusy(false);
    });
  };
  document.addEventListener("click", function (e) {
    var btn = e.target && e.target.closest ? e.target.closest("button[data-action]") : null;
    var box = btn ? btn.closest(".actions[data-csrf]") : null;
    if (!btn || !box) return;
    postAction(
      box.getAttribute("data-run") + "/" + btn.getAttribute("data-action"),
      btn.getAttribute("data-body"),
      box,
      box.querySelector("[role=status]"),
      function (busy) { btn.disabled = busy; }
    );
  });
  // A waiting run's answer form: the fields become the answer object, POSTed with the secret.
  document.addEventListener("submit", function (e) {
    var form = e.target;
    // The run's answer form, or one of its fan-out children's (answer-form-item-N).
    if (!form || !/^answer-form(-item-\\d+)?$/.test(form.id)) return;
    e.preventDefault();
    var out = form.querySelector("[role=status]");
    var buttons = form.querySelectorAll("button[type=submit]");
    var setBusy = function (busy) { for (var b = 0; b < buttons.length; b++) buttons[b].disabled = busy; };
    // An approval card's Approve / Deny: the button pressed is the choice.
    var choice = e.submitter ? e.submitter.getAttribute("data-choice") : null;
    if (choice !== null) form.querySelector("input[type=hidden][data-kind=choice]").value = choice;
    var value = {};
    var fields = form.querySelectorAll("[data-path]");
    try {
      for (var i = 0; i < fields.length; i++) {
        var el = fields[i];
        var kind = el.getAttribute("data-kind");
        var text = el.value;
        if (text === "" && !(kind === "string" && el.getAttribute("data-required") === "true")) continue;
        var v = kind === "choice" || kind === "boolean" || kind === "json" ? JSON.parse(text)
          : kind === "number" ? Number(text) : text;
        var path = JSON.parse(el.getAttribute("data-path"));
        var node = value;
        for (var j = 0; j < path.length - 1; j++) {
          if (typeof node[path[j]] !== "object" || node[path[j]] === null) {
            Object.defineProperty(node, path[j], { value: {}, enumerable: true, writable: true, configurable: true });
          }
          node = node[path[j]];
        }
        Object.defineProperty(node, path[path.length - 1], { value: v, enumerable: true, writable: true, configurable: true });
      }
    } catch (err) {
      out.textContent = "Not JSON in " + el.id + ": " + err.message;
      out.className = "bad";
      return;
    }
    postAction(
      form.getAttribute("data-run") + "/answer",
      JSON.stringify({ requestId: form.getAttribute("data-request"), value: value }),
      form,
      out,
      setBusy
    );
  });
  // A reload the server asks for waits for the person: an answer that succeeded reloads the page
  // itself a moment later, one in flight is awaited, and an answer being typed (its form holds the
  // focus) is not thrown away — the page reloads once the focus leaves the form.
  var reloadWhenIdle = function () {
    if (document.querySelector('.actions[data-done="ok"]')) return;
    if (document.querySelector(".actions button:disabled")) return setTimeout(reloadWhenIdle, 300);
    var active = document.activeElement;
    if (active && active.closest && active.closest("form.answer")) {
      active.addEventListener("blur", function () { setTimeout(reloadWhenIdle, 0); }, { once: true });
      return;
    }
    location.reload();
  };
  // A tool plan's page reloads when its plan file or approval requests change.
  var watch = document.getElementById("plan-watch");
  if (watch && window.EventSource) {
    var changes = new EventSource(watch.getAttribute("data-watch"));
    changes.addEventListener("changed", function () {
      changes.close();
      reloadWhenIdle();
    });
  }
  var url = body.getAttribute("data-live");
  if (!url || !window.EventSource) return;
  var source = new EventSource(url);
  // A row swapped in keeps the sections as the reader left them: open or closed, and what an
  // open one loaded — unless what it shows changed since (a call finished): it loads again.
  function keepOpen(el, markup) {
    var box = document.createElement("div");
    box.innerHTML = markup;
    var fresh = box.firstElementChild;
    if (!fresh) { el.outerHTML = markup; return; }
    var before = el.querySelectorAll("details[data-src]");
    var twins = fresh.querySelectorAll("details[data-src]");
    var bySrc = {};
    for (var i = 0; i < twins.length; i++) bySrc["=" + twins[i].getAttribute("data-src")] = twins[i];
    for (var j = 0; j < before.length; j++) {
      var old = before[j];
      var twin = bySrc["=" + old.getAttribute("data-src")];
      if (!twin) continue;
      var same = old.getAttribute("data-version") === twin.getAttribute("data-version");
      if (old.open && same && old.getAttribute("data-loaded") === "true" &&
          twin.getAttribute("data-loaded") !== "true") {
        twin.setAttribute("data-loaded", "true");
        twin.querySelector(".body").innerHTML = old.querySelector(".body").innerHTML;
      }
      twin.open = old.open;
    }
    el.replaceWith(fresh);
  }
  function swap(id, markup, parentId) {
    var el = document.getElementById(id);
    if (el) { keepOpen(el, markup); return; }
    var parent = document.getElementById(parentId);
    if (parent) parent.insertAdjacentHTML("beforeend", markup);
  }
  source.addEventListener("rows", function (e) {
    var rows = JSON.parse(e.data);
    for (var i = 0; i < rows.length; i++) swap("row-" + rows[i].index, rows[i].html, "timeline");
    body.setAttribute("data-rows", String(document.querySelectorAll("#timeline .row").length));
  });
  source.addEventListener("graph", function (e) { swap("flow-graph", JSON.parse(e.data), "graph-host"); });
  source.addEventListener("chart", function (e) { swap("run-chart", JSON.parse(e.data), "chart-host"); });
  source.addEventListener("header", function (e) { swap("run-meta", JSON.parse(e.data), "meta-host"); });
  source.addEventListener("output", function (e) { swap("final-output", JSON.parse(e.data), "output-host"); });
  source.addEventListener("fanouts", function (e) { swap("fan-outs", JSON.parse(e.data), "fanout-host"); });
  // The run ended: its buttons change (Redrive instead of Cancel) — unless an answered action
  // reloads the page in a moment anyway (its message stays shown until then).
  source.addEventListener("actions", function (e) {
    var box = document.getElementById("run-actions");
    if (!box || box.getAttribute("data-done") === "ok") return;
    swap("run-actions", JSON.parse(e.data), "");
  });
  // The server could not read the log any more (damaged, removed): stop instead of reconnecting.
  source.addEventListener("problem", function (e) {
    source.close();
    var badge = document.getElementById("live-badge");
    if (badge) badge.textContent = "live view stopped: " + JSON.parse(e.data);
  });
  // The run reached an input step (or its fan-out children wait): reload to show the questions.
  source.addEventListener("waiting", function () {
    source.close();
    reloadWhenIdle();
  });
  source.addEventListener("end", function () {
    source.close();
    body.removeAttribute("data-live");
    body.setAttribute("data-ended", "true");
    var badge = document.getElementById("live-badge");
    if (badge) badge.remove();
  });
})();
`;
