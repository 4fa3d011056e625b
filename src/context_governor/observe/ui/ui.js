// context-governor's page: conversations, a conversation's chart, a request's two views.
// Plain JavaScript, no build step, nothing fetched from elsewhere. Data comes from the
// proxy's /ui/api/ (the token, if any, kept in sessionStorage) or, in a file written by
// `context-governor govern FILE --html`, from window.CG_DATA. Every text is set with
// textContent: message content never becomes markup.
"use strict";

const EMBEDDED = window.CG_DATA || null;

// The window the request stands for and where it came from; when a learned ratio of
// the upstream's count to ours shrank it, the window it was governed to, and why.
function windowText(row, rep) {
  if (row.window == null) return rep ? `${num(rep.context_window)} (${rep.window_source})` : "–";
  const base = `${num(row.window)} (${row.window_source})`;
  if (row.ratio === 1 || row.window_governed == null) return base;
  return `${base}; governed as ${num(row.window_governed)}: the upstream counts ${row.ratio}× our count`;
}

function token() {
  const params = new URLSearchParams(location.search);
  const given = params.get("token");
  if (given) {
    sessionStorage.setItem("cg-token", given);
    params.delete("token");
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
  }
  return sessionStorage.getItem("cg-token");
}
const TOKEN = EMBEDDED ? null : token();

async function load(path) {
  if (EMBEDDED) {
    const found = EMBEDDED[path];
    if (found === undefined) throw new Error("not in this file: " + path);
    return found;
  }
  const headers = TOKEN ? { Authorization: "Bearer " + TOKEN } : {};
  const response = await fetch("api/" + path, { headers });
  if (!response.ok) throw new Error(response.status + " " + (await response.text()));
  return response.json();
}

function h(tag, attrs, ...children) {
  const el = tag === "svg" || SVG_TAGS.has(tag)
    ? document.createElementNS("http://www.w3.org/2000/svg", tag)
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "onclick") el.addEventListener("click", v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}
const SVG_TAGS = new Set(["g", "line", "polyline", "circle", "text", "rect", "path", "title"]);

const num = (v) => (v === null || v === undefined ? "–" : Math.round(v).toLocaleString("en"));
const pct = (v) => (v === null || v === undefined ? "–" : (100 * v).toFixed(1) + "%");
const ms = (v) => (v === null || v === undefined ? "–" : v.toFixed(1) + " ms");

function card(label, value, id, raw) {
  return h("div", { class: "card", id, "data-value": raw }, h("div", { class: "v" }, value),
    h("div", { class: "k" }, label));
}

function show(...nodes) {
  const app = document.getElementById("app");
  app.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
}

function crumbs(...items) {
  document.getElementById("crumbs").replaceChildren(...items.flatMap((x) => [" / ", x]));
}

// ------------------------------------------------------------------ conversations

async function listView() {
  const conversations = await load("conversations");
  crumbs("conversations");
  const total = (key) => conversations.reduce((s, c) => s + (c[key] || 0), 0);
  const input = total("input");
  const read = total("cache_read");
  const rows = conversations.map((c) => {
    const sentShare = c.client_tokens ? c.forwarded_tokens / c.client_tokens : null;
    return h("tr", { "data-conversation": c.id, "data-cache-read": c.cache_read,
      "data-input": c.input },
      h("td", { class: "l" }, h("a", { href: "#c=" + encodeURIComponent(c.id) }, c.id)),
      h("td", { class: "l" }, c.model || "–"),
      h("td", {}, c.requests),
      h("td", {}, num(c.client_tokens)),
      h("td", {}, num(c.forwarded_tokens), " ", h("span", { class: "muted" }, pct(sentShare))),
      h("td", {}, num(c.input)),
      h("td", {}, num(c.cache_read)),
      h("td", {}, num(c.cache_write)),
      h("td", {}, h("span", { class: "bar", style: `width:${Math.round(60 * (c.cached_share || 0))}px` }),
        " ", pct(c.cached_share)),
      h("td", {}, c.cost === null || c.cost === undefined ? "–"
        : num(c.cost) + " / " + num(c.uncached_cost)),
      h("td", {}, c.compactions),
      h("td", { class: c.busts ? "warn" : "" }, c.busts));
  });
  show(
    h("h1", {}, "Conversations"),
    h("div", { class: "cards" },
      card("conversations", conversations.length),
      card("tokens the clients sent", num(total("client_tokens")), "client-total", total("client_tokens")),
      card("tokens forwarded", num(total("forwarded_tokens")), "forwarded-total", total("forwarded_tokens")),
      card("provider input tokens", num(input), "input-total", input),
      card("provider cache read", num(read), "cache-read-total", read),
      card("provider cache write", num(total("cache_write")), "cache-write-total", total("cache_write")),
      card("cached share", pct(input ? read / input : null), "cached-share", input ? read / input : "")),
    conversations.length === 0 ? h("p", { class: "muted" }, "No requests yet.") :
    h("table", { id: "conversations" },
      h("thead", {}, h("tr", {},
        h("th", { class: "l" }, "conversation"), h("th", { class: "l" }, "model"),
        h("th", {}, "requests"), h("th", {}, "client sent"), h("th", {}, "forwarded"),
        h("th", {}, "provider input"), h("th", {}, "cache read"), h("th", {}, "cache write"),
        h("th", {}, "cached"), h("th", { title: "prompt cost at the model's cache prices, " +
          "in uncached-input-token units / without the cache" }, "cost / uncached"),
        h("th", {}, "compactions"), h("th", {}, "cache busts"))),
      h("tbody", {}, rows)));
}

// ------------------------------------------------------------------ one conversation

function chart(rows) {
  const W = 1100, H = 300, L = 70, R = 16, T = 14, B = 34;
  const max = Math.max(1, ...rows.flatMap((r) => [r.tokens_before, r.tokens_after, r.input || 0]));
  const n = Math.max(1, rows.length - 1);
  const x = (i) => L + ((W - L - R) * i) / n;
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const line = (key, color, cls) => {
    const points = rows.map((r, i) => (r[key] === null || r[key] === undefined ? null
      : `${x(i).toFixed(1)},${y(r[key]).toFixed(1)}`)).filter(Boolean);
    return points.length ? h("polyline", { class: cls, points: points.join(" "), fill: "none",
      stroke: color, "stroke-width": 2 }) : null;
  };
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => h("g", {},
    h("line", { x1: L, x2: W - R, y1: y(max * f), y2: y(max * f), stroke: "#eee" }),
    h("text", { x: L - 6, y: y(max * f) + 4, "text-anchor": "end", "font-size": 11,
      fill: "#6b7280" }, num(max * f))));
  const marks = rows.map((r, i) => r.compacted ? h("g", { class: "compaction-mark",
    "data-index": r.index },
    h("line", { x1: x(i), x2: x(i), y1: T, y2: H - B, stroke: "var(--compact)",
      "stroke-dasharray": "4 3", "stroke-width": 1.5 }),
    h("text", { x: x(i), y: T + 10, "text-anchor": "middle", "font-size": 11,
      fill: "var(--compact)" }, "▼"),
    h("title", {}, `request ${r.index}: compacted (${r.compacting.join(", ")})`)) : null);
  const busts = rows.map((r, i) => r.bust_tokens ? h("circle", { class: "bust-mark",
    cx: x(i), cy: y(r.cache_read || 0), r: 5, fill: "var(--bust)" },
    h("title", {}, `request ${r.index}: cache bust, ${num(r.bust_tokens)} cached tokens lost`))
    : null);
  const svg = h("svg", { id: "chart", viewBox: `0 0 ${W} ${H}`, width: "100%",
    role: "img", "aria-label": "tokens per request" },
    ticks,
    h("text", { x: (W + L) / 2, y: H - 6, "text-anchor": "middle", "font-size": 11,
      fill: "#6b7280" }, "request"),
    marks,
    line("tokens_before", "var(--client)", "series-client"),
    line("tokens_after", "var(--sent)", "series-forwarded"),
    line("cache_read", "var(--cached)", "series-cached"),
    busts);
  return h("div", { class: "chart" }, svg, h("div", { class: "legend" },
    h("span", {}, h("i", { style: "background:var(--client)" }), "client sent"),
    h("span", {}, h("i", { style: "background:var(--sent)" }), "forwarded"),
    h("span", {}, h("i", { style: "background:var(--cached)" }), "read from the provider's cache"),
    h("span", {}, h("i", { style: "background:var(--compact)" }), "compaction"),
    h("span", {}, h("i", { style: "background:var(--bust)" }), "cache bust")));
}

async function conversationView(id) {
  const c = await load("conversations/" + encodeURIComponent(id));
  crumbs(h("a", { href: "#" }, "conversations"), c.id);
  const rows = c.rows.map((r) => h("tr", {
      class: [r.compacted ? "compacted" : "", r.bust_tokens ? "bust" : ""].join(" ").trim() || null,
      "data-seq": r.seq },
    h("td", { class: "l" }, h("a", { href: "#r=" + r.seq }, r.index)),
    h("td", {}, r.status), h("td", { class: "l" }, r.outcome),
    h("td", {}, num(r.tokens_before)), h("td", {}, num(r.tokens_after)),
    h("td", {}, num(r.input)), h("td", {}, num(r.cache_read)), h("td", {}, num(r.cache_write)),
    h("td", {}, r.input ? pct((r.cache_read || 0) / r.input) : "–"),
    h("td", {}, r.cost === null ? "–" : num(r.cost)),
    h("td", { class: "l" }, r.compacted ? "compacted: " + r.compacting.join(", ")
      + (r.removed ? ` (−${num(r.removed)} a request; ${num(r.rewritten)} re-sent)` : "") : ""),
    h("td", { class: r.bust_tokens ? "warn" : "" }, r.bust_tokens ? num(r.bust_tokens) : ""),
    h("td", {}, ms(r.added_ms))));
  show(
    h("h1", {}, "Conversation ", c.id),
    h("div", { class: "cards" },
      card("model", c.model || "–"), card("requests", c.requests),
      card("client sent", num(c.client_tokens)), card("forwarded", num(c.forwarded_tokens)),
      card("provider cache read", num(c.cache_read), "conv-cache-read", c.cache_read),
      card("cached share", pct(c.cached_share), "conv-cached-share", c.cached_share ?? ""),
      card("cost / uncached", c.cost === null || c.cost === undefined ? "–"
        : num(c.cost) + " / " + num(c.uncached_cost)),
      card("compactions", c.compactions, "conv-compactions", c.compactions),
      card("compactions took off / re-sent", num(c.compaction_removed || 0) + " / "
        + num(c.compaction_rewritten || 0), "conv-compaction-cost", c.compaction_rewritten || 0),
      card("cache busts", c.busts, "conv-busts", c.busts)),
    c.shown < c.requests ? h("p", { class: "muted" },
      `the oldest ${c.requests - c.shown} requests are no longer kept`) : null,
    chart(c.rows),
    h("h2", {}, "Requests"),
    h("table", { id: "requests" },
      h("thead", {}, h("tr", {}, h("th", { class: "l" }, "#"), h("th", {}, "status"),
        h("th", { class: "l" }, "outcome"), h("th", {}, "client sent"), h("th", {}, "forwarded"),
        h("th", {}, "provider input"), h("th", {}, "cache read"), h("th", {}, "cache write"),
        h("th", {}, "cached"), h("th", {}, "cost"), h("th", { class: "l" }, "governance"),
        h("th", {}, "bust: lost"), h("th", {}, "added"))),
      h("tbody", {}, rows)));
}

// ------------------------------------------------------------------ one request

function message(row) {
  const head = [row.role, row.name, row.tool_call_id ? "id " + row.tool_call_id : null,
    num(row.chars) + " chars"].filter(Boolean).join(" · ");
  return h("div", { class: "msg " + row.mark, "data-mark": row.mark, "data-i": row.i },
    row.mark === "kept" ? null : h("span", { class: "tag" }, row.mark),
    h("div", { class: "role" }, `#${row.i} `, head),
    h("pre", {}, row.text));
}

async function requestView(seq) {
  const r = await load("requests/" + seq);
  crumbs(h("a", { href: "#" }, "conversations"),
    h("a", { href: "#c=" + encodeURIComponent(r.conversation) }, r.conversation),
    "request " + r.index);
  // the proxy forgets the oldest reports first (--ui-reports-mb): then the row's figures
  const rep = r.report;
  const fig = rep || r.row;
  const stages = {};
  for (const a of rep ? rep.actions : []) stages[a.stage] = (stages[a.stage] || 0) + 1;
  const u = r.usage;
  const view = r.view;
  show(
    h("h1", {}, `Request ${r.index} of ${r.conversation}`),
    h("div", { class: "cards" },
      card("model", r.model || "–"), card("status", r.status + " " + r.outcome),
      card("client sent", num(fig.tokens_before)), card("forwarded", num(fig.tokens_after)),
      card("budget", num(fig.budget)),
      card("window", windowText(r.row, rep)),
      card("provider input", u ? num(u.input_tokens) : "–"),
      card("cache read", u ? num(u.cache_read_tokens) : "–", "req-cache-read", u ? u.cache_read_tokens : ""),
      card("cache write", u ? num(u.cache_write_tokens) : "–"),
      card("output", u ? num(u.output_tokens) : "–")),
    h("h2", {}, "Report"),
    rep ? h("p", {}, "actions by stage: ", Object.entries(stages).map(([s, n]) => `${s} ${n}`).join(", ") || "none")
      : h("p", { class: "muted", id: "no-report" }, r.report_note),
    rep && rep.notes.length ? h("ul", { class: "notes" }, rep.notes.map((n) => h("li", {}, n))) : null,
    rep && rep.violations.length ? h("p", { class: "warn" }, `${rep.violations.length} rule(s) still broken`) : null,
    h("h2", {}, "What the client sent, and what the model received"),
    view ? h("p", { id: "view-counts" }, Object.entries(view.counts)
      .map(([k, n]) => `${k} ${n}`).join(" · "))
      : h("p", { class: "muted", id: "no-content" }, r.content_note),
    view ? h("div", { class: "cols", id: "diff" },
      h("div", { id: "client-side" }, h("h2", {}, `client (${view.client.length} messages)`),
        view.client.map(message)),
      h("div", { id: "model-side" }, h("h2", {}, `model (${view.model.length} messages)`),
        view.model.map(message))) : null);
}

// ------------------------------------------------------------------ routing

async function route() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const status = document.getElementById("status");
  try {
    if (hash.get("r")) await requestView(hash.get("r"));
    else if (hash.get("c")) await conversationView(hash.get("c"));
    else await listView();
    status.textContent = EMBEDDED ? "offline file" : "updated " + new Date().toLocaleTimeString();
    document.body.setAttribute("data-ready", "1");
  } catch (err) {
    show(h("p", { class: "warn", id: "error" }, String(err.message || err)));
    document.body.setAttribute("data-ready", "error");
  }
}

window.addEventListener("hashchange", route);
route();
