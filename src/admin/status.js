// augur's status page: polls /-/status.json and renders it. Every value
// from the JSON is written as text (names come from clients and
// upstreams), never as markup.
"use strict";

const EVERY_MS = 3000;
const KEY = "augur-admin-token";
const needsToken = document.documentElement.dataset.token === "required";
let timer = null;

const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") node.className = v;
    else if (k === "title") node.title = v;
    else node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function fill(tableId, rows, empty, columns) {
  const body = $(tableId).tBodies[0];
  body.replaceChildren();
  if (rows.length === 0) {
    body.append(el("tr", {}, el("td", { class: "muted", colspan: String(columns) }, empty)));
    return;
  }
  for (const r of rows) body.append(r);
}

function bytes(n) {
  if (!n) return "0 B";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function clock(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : d.toLocaleTimeString();
}

function ago(iso, now) {
  const s = Math.max(0, Math.round((new Date(now) - new Date(iso)) / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

function badge(text, kind) {
  return el("span", { class: `badge ${kind}` }, text);
}

function tile(label, value, kind) {
  return el("div", { class: `tile ${kind || ""}` },
    el("div", { class: "value", "data-figure": label }, String(value)),
    el("div", { class: "label" }, label));
}

function renderTiles(s) {
  const t = s.totals;
  const up = s.upstreams.filter((u) => u.healthy).length;
  const flying = s.upstreams.reduce((n, u) => n + u.in_flight, 0);
  $("tiles").replaceChildren(
    tile("requests", t.requests),
    tile("in flight", flying),
    tile("upstreams healthy", `${up} / ${s.upstreams.length}`, up === s.upstreams.length ? "good" : "bad"),
    tile("repairs", t.repairs, t.repairs ? "repair" : ""),
    tile("retries", t.retries, t.retries ? "retry" : ""),
    tile("fallbacks", t.fallbacks, t.fallbacks ? "fallback" : ""),
    tile("refusals", t.refusals, t.refusals ? "refusal" : ""),
    tile("low confidence", t.low_confidence || 0, t.low_confidence ? "low_confidence" : ""));
  // How requests ended (the access log's outcome), past the complete ones.
  const e = t.endings || {};
  const ended = (label, n) => tile(label, n || 0, n ? "bad" : "");
  $("tiles").append(
    ended("upstream cut", e.upstream_cut),
    ended("timed out", e.timed_out),
    ended("errors", e.error),
    tile("client left", e.client_left || 0));
}

function renderUpstreams(s) {
  fill("upstreams", s.upstreams.map((u) => {
    const health = u.stalled ? badge("stalled", "warn") : u.healthy ? badge("healthy", "good") : badge("down", "bad");
    const loaded = u.loaded.length === 0
      ? el("span", { class: "muted" }, u.loaded_read_at ? "none loaded" : "not read yet")
      : el("ul", { class: "plain" }, u.loaded.map((m) => el("li", {},
          el("strong", {}, (m.names || [m.name]).join(", ")), " ",
          el("span", { class: "muted" }, `${bytes(m.size_vram)} VRAM of ${bytes(m.size)}`,
            m.expires_at ? `, until ${clock(m.expires_at)}` : ""))));
    const error = u.last_error ? el("span", { class: "error", title: u.last_error.at }, u.last_error.message)
      : u.loaded_error ? el("span", { class: "error" }, u.loaded_error) : el("span", { class: "muted" }, "–");
    return el("tr", {},
      el("td", {}, el("strong", {}, u.name), el("div", { class: "muted small" }, u.url)),
      el("td", {}, health), el("td", { class: "num" }, u.in_flight), el("td", {}, loaded), el("td", {}, error));
  }), "no upstreams", 5);
}

// A bar filled to used / limit (red once full).
function meter(used, limit) {
  const share = Math.min(100, Math.max(0, (100 * used) / Math.max(1, limit)));
  const bar = el("div", { class: "bar" }, el("div", { class: share >= 100 ? "fill over" : "fill" }));
  bar.firstChild.style.width = `${share}%`;
  return bar;
}

function renderLimits(s) {
  const l = s.limits;
  fill("queues", l.queues.map((q) => el("tr", {},
    el("td", {}, q.model), el("td", { class: "muted" }, q.rule),
    el("td", { class: "num" }, `${q.in_flight} / ${q.max_in_flight}`),
    el("td", {}, q.waiting.length === 0 ? el("span", { class: "muted" }, "none")
      : q.waiting.map((w) => badge(`${w.principal}: ${w.waiting}`, "neutral"))))),
    "no model with a concurrency limit has been used", 4);
  fill("budgets", l.budgets.map((b) => el("tr", {},
    el("td", {}, b.principal), el("td", {}, b.model || el("span", { class: "muted" }, "all")),
    el("td", {}, meter(b.used, b.tokens_per_minute), el("span", { class: "small" }, `${b.used} of ${b.tokens_per_minute} tokens`)))),
    "no token budget spent", 3);
  const rate = (r) => r ? [r.requests_per_minute ?? "–", r.burst ?? "–", r.tokens_per_minute ?? "–"] : ["–", "–", "–"];
  const row = (who, r, weight) => el("tr", {}, el("td", {}, who),
    rate(r).map((v) => el("td", { class: "num" }, v)), el("td", { class: "num" }, weight));
  const rows = l.rates.keys.map((k) => row(k.id, k.rate_limit, k.weight));
  rows.push(row(el("span", { class: "muted" }, "default (anonymous, keys without their own)"), l.rates.default, 1));
  const models = (s.policy.effective && s.policy.effective.models) || [];
  for (const m of models) {
    const r = m.settings && m.settings.rate_limit;
    if (r) rows.push(row([el("span", { class: "muted" }, "each principal on "), el("code", {}, m.glob)], r, "–"));
  }
  fill("rates", rows, "", 5);
  fill("rate-usage", l.rates.usage.map((u) => el("tr", {},
    el("td", {}, u.principal),
    el("td", {}, u.model ? ["per model ", el("code", {}, u.model)] : "per principal"),
    el("td", {}, meter(u.burst - u.remaining, u.burst), el("span", { class: "small" }, `${u.remaining} of ${u.burst} left`)))),
    "no request limit used lately", 3);
  $("store").textContent = l.store
    ? `Shared limit store ${l.store.location}: ${l.store.up ? "up" : `down (${l.store.error || "no connection"})`}; rates and budgets shown are this replica's.`
    : "Limits are counted in this process.";
}

function renderCache(s) {
  const c = s.cache;
  $("cache-note").textContent = `${c.entries} entries, ${bytes(c.bytes)}`;
  fill("cache", c.principals.map((p) => el("tr", {},
    el("td", {}, p.principal),
    el("td", { class: "num" }, p.hit), el("td", { class: "num" }, p.miss), el("td", { class: "num" }, p.bypass))),
    "no request for a model with a cache", 4);
}

function renderPolicy(s) {
  const p = s.policy;
  const dl = $("policy");
  dl.replaceChildren();
  const add = (k, v) => dl.append(el("dt", {}, k), el("dd", {}, v));
  add("version", el("code", {}, p.version));
  add("loaded", `${clock(p.loaded_at)} (${ago(p.loaded_at, s.now)} ago)`);
  add("files", p.files.length ? p.files.join(", ") : el("span", { class: "muted" }, "none (permissive)"));
  const err = $("policy-error");
  err.hidden = !p.last_error;
  err.textContent = p.last_error ? `Last edit rejected at ${clock(p.last_error_at)}: ${p.last_error}` : "";
  const text = JSON.stringify(p.effective, null, 2);
  if ($("effective").textContent !== text) $("effective").textContent = text;
}

function renderEvents(s) {
  $("events-note").textContent = `(last ${s.events.length}, newest first)`;
  fill("events", s.events.map((e) => el("tr", { "data-kind": e.kind },
    el("td", { class: "nowrap" }, clock(e.at)), el("td", {}, badge(e.kind, e.kind)),
    el("td", {}, e.principal), el("td", {}, e.model), el("td", {}, e.detail),
    el("td", { class: "muted small mono" }, e.request_id))),
    "no repairs, retries, fallbacks, refusals or low-confidence answers yet", 6);
}

function render(s) {
  $("meta").textContent = `v${s.version} · up ${ago(s.started_at, s.now)} · updated ${clock(s.now)}`;
  renderTiles(s);
  renderUpstreams(s);
  renderLimits(s);
  renderCache(s);
  renderPolicy(s);
  renderEvents(s);
}

function setState(text, kind) {
  const pill = $("state");
  pill.textContent = text;
  pill.className = `pill ${kind}`;
}

function askToken(message) {
  clearTimeout(timer);
  $("main").hidden = true;
  $("login").hidden = false;
  $("forget").hidden = true;
  $("login-error").hidden = !message;
  $("login-error").textContent = message || "";
  setState("token needed", "warn");
  $("token").focus();
}

async function poll() {
  clearTimeout(timer);
  const token = sessionStorage.getItem(KEY);
  if (needsToken && !token) { askToken(); return; }
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  try {
    const r = await fetch("/-/status.json", { headers, cache: "no-store" });
    if (r.status === 401) {
      sessionStorage.removeItem(KEY);
      askToken("That token was refused.");
      return;
    }
    if (!r.ok) throw new Error(`status ${r.status}`);
    render(await r.json());
    $("login").hidden = true;
    $("main").hidden = false;
    $("forget").hidden = !token;
    setState("live", "good");
  } catch (e) {
    setState(`offline (${e.message})`, "bad");
  }
  timer = setTimeout(poll, EVERY_MS);
}

$("login").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const value = $("token").value.trim();
  if (!value) return;
  sessionStorage.setItem(KEY, value);
  $("token").value = "";
  poll();
});

$("forget").addEventListener("click", () => {
  sessionStorage.removeItem(KEY);
  askToken();
});

poll();
