// The SimpleKafka web console: plain JavaScript, no build step, no outside assets.
// One page with a hash router (#/, #/topic/NAME, #/records, #/groups, #/group/ID,
// #/brokers, #/broker/ID, #/acls, #/users, #/charts). Every action is a call to the
// REST API under /api. /api/overview is polled every second for the whole page (the
// broker-down banner, the status line, the overview's tables). Everything is drawn
// with DOM calls and textContent: names from the cluster are never parsed as HTML.
"use strict";

const OVERVIEW_EVERY_MS = 1000;
const GROUPS_EVERY_MS = 3000;
const CHARTS_EVERY_MS = 1000;
const THEME_KEY = "simplekafka-console-theme";

let overview = null;        // the last /api/overview answer
let viewToken = 0;          // bumped on every navigation: stale timers and answers stop
const overviewListeners = new Set();

// ----- helpers ---------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2), value);
    } else if (name === "value") node.value = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  appendAll(node, children);
  return node;
}

function appendAll(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  appendAll(node, children);
  return node;
}

function table(id, headers, rows, attrs) {
  return el("table", { id, ...(attrs || {}) },
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows));
}

async function api(method, url, body) {
  const options = { method, cache: "no-store", headers: {} };
  if (body !== undefined) {
    options.body = JSON.stringify(body);
    options.headers["content-type"] = "application/json";
  }
  const answer = await fetch(url, options);
  const text = await answer.text();
  let value = null;
  if (text) {
    try { value = JSON.parse(text); } catch (e) { value = { error: text }; }
  }
  if (!answer.ok) throw new Error((value && value.error) || `${answer.status} ${answer.statusText}`);
  return value;
}
const getJson = (url) => api("GET", url);
const enc = encodeURIComponent;

function flash(text, kind) {
  const box = document.getElementById("flash");
  box.textContent = text;
  box.className = kind || "ok";
  box.hidden = false;
  clearTimeout(flash.timer);
  flash.timer = setTimeout(() => { box.hidden = true; }, kind === "error" ? 10000 : 4000);
}

/** Ask before a destructive action, in the page's own dialog; resolves true or false. */
function confirmAction(text, okLabel) {
  const dialog = document.getElementById("confirm-dialog");
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = okLabel || "Delete";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

/** The browser's local time, as the since/until inputs take it (UTC in the tooltip). */
function formatTime(ms) {
  if (ms === undefined || ms === null || ms < 0) return "";
  const local = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
  return local.toISOString().replace("T", " ").replace("Z", "");
}

function formatBytes(n) {
  if (n === undefined || n === null) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let value = n;
  while (value >= 1024 && i < units.length - 1) { value /= 1024; i += 1; }
  return i === 0 ? `${n} B` : `${value.toFixed(1)} ${units[i]}`;
}

/** A run of async work that reports a failure as a flash instead of an uncaught error. */
function guarded(work) {
  return async (event) => {
    if (event && event.preventDefault) event.preventDefault();
    try { await work(event); } catch (error) { flash(error.message, "error"); }
  };
}

function isCurrent(token) { return token === viewToken; }

function brokerReachable(b) { return b.reachable !== false; }

// ----- theme -----------------------------------------------------------------------------

function currentTheme() {
  const chosen = document.documentElement.dataset.theme;
  if (chosen) return chosen;
  return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

function drawThemeButton() {
  const theme = currentTheme();
  const button = document.getElementById("theme-toggle");
  button.textContent = theme === "dark" ? "☀ light" : "☾ dark";
  button.dataset.theme = theme;
}

document.getElementById("theme-toggle").addEventListener("click", () => {
  const next = currentTheme() === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = next;
  try { localStorage.setItem(THEME_KEY, next); } catch (e) { /* not remembered then */ }
  drawThemeButton();
});
window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", drawThemeButton);
drawThemeButton();

// ----- the overview poll: status line, banner, listeners ----------------------------------

function setStatus(text, kind) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = "status " + kind;
}

function drawBanner() {
  const banner = document.getElementById("broker-banner");
  const down = overview ? overview.brokers.filter((b) => !brokerReachable(b)) : [];
  banner.hidden = down.length === 0;
  banner.replaceChildren(...down.map((b) => el("div", { "data-down-broker": b.id },
    `Broker ${b.id} (${b.host}:${b.port}) is down: it does not answer.`)));
}

async function refreshOverview() {
  try {
    overview = await getJson("/api/overview");
    document.getElementById("cluster-id").textContent =
      `cluster ${overview.cluster_id ?? "?"} · controller ${overview.controller_id}`;
    setStatus("live · " + new Date().toLocaleTimeString(), "ok");
    drawBanner();
    for (const listener of [...overviewListeners]) {
      try { listener(overview); } catch (error) { console.error(error); }
    }
  } catch (error) {
    setStatus("cluster unreachable: " + error.message, "stale");
  } finally {
    setTimeout(refreshOverview, OVERVIEW_EVERY_MS);
  }
}

/** Call ``draw`` with every overview while the view that asked is shown. */
function onOverview(token, draw) {
  const listener = (value) => {
    if (!isCurrent(token)) { overviewListeners.delete(listener); return; }
    draw(value);
  };
  overviewListeners.add(listener);
  if (overview) listener(overview);
}

/** Repeat ``work`` every ``ms`` while the view that asked is shown. */
function every(token, ms, work) {
  const tick = async () => {
    if (!isCurrent(token)) return;
    try { await work(); } catch (error) { /* the status line tells of an outage */ }
    if (isCurrent(token)) setTimeout(tick, ms);
  };
  tick();
}

function topicNames(value, showInternal) {
  return (value ? value.topics : []).filter((t) => showInternal || !t.internal).map((t) => t.name);
}

// ----- overview ----------------------------------------------------------------------------

function drawBrokers(body, value) {
  body.replaceChildren(...value.brokers.map((b) => {
    const isController = b.id === value.controller_id;
    const down = !brokerReachable(b);
    return el("tr", { "data-broker-id": b.id, "data-reachable": String(!down),
                      class: (isController ? "controller" : "") + (down ? " down" : "") },
      el("td", {}, el("a", { href: `#/broker/${b.id}` }, String(b.id))),
      el("td", {}, `${b.host}:${b.port}`), el("td", {}, b.rack ?? ""),
      el("td", { class: "role" }, isController ? "controller" : "broker"),
      el("td", { class: "state" }, down ? el("span", { class: "badge down" }, "down") : "up"));
  }));
}

function partitionRow(topic, p) {
  const kind = p.leader < 0 ? "offline" : (p.under_replicated ? "under-replicated" : "");
  return el("tr", { class: kind, "data-topic": topic, "data-partition": p.partition },
    el("td", {}, p.partition),
    el("td", { class: "leader" }, p.leader < 0 ? "none" : p.leader),
    el("td", { class: "replicas" }, p.replicas.join(",")),
    el("td", { class: "isr" }, p.isr.join(",")),
    el("td", {}, p.leader < 0 ? el("span", { class: "badge off" }, "offline")
      : (p.under_replicated ? el("span", { class: "badge urp" }, "under-replicated") : "")));
}

function drawTopics(holder, value, showInternal) {
  const topics = value.topics.filter((t) => showInternal || !t.internal);
  holder.replaceChildren(...topics.map((topic) => {
    const urp = topic.partitions.filter((p) => p.under_replicated).length;
    const title = el("h3", {},
      el("a", { href: `#/topic/${enc(topic.name)}`, "data-topic-link": topic.name }, topic.name),
      " ", el("small", {}, `${topic.partitions.length} partitions`),
      topic.internal ? [" ", el("span", { class: "badge internal" }, "internal")] : null,
      urp ? [" ", el("span", { class: "badge urp" }, `${urp} under-replicated`)] : null);
    const partitions = el("table", { class: "partitions", "data-topic": topic.name },
      el("thead", {}, el("tr", {}, ["partition", "leader", "replicas", "ISR", ""]
        .map((h) => el("th", {}, h)))),
      el("tbody", {}, topic.partitions.map((p) => partitionRow(topic.name, p))));
    return el("div", { class: "topic", "data-topic": topic.name }, title, partitions);
  }));
}

function viewOverview(token, view) {
  const brokersBody = el("tbody");
  const topicsHolder = el("div", { id: "topics" });
  const showInternal = el("input", { type: "checkbox", id: "show-internal" });
  const name = el("input", { id: "create-topic-name", required: true, placeholder: "name",
                             pattern: "[a-zA-Z0-9._\\-]{1,249}" });
  const partitions = el("input", { id: "create-topic-partitions", type: "number", min: 1,
                                   value: "3" });
  const replication = el("input", { id: "create-topic-replication", type: "number", min: 1,
                                    value: "1" });
  const configs = el("input", { id: "create-topic-configs", placeholder: "key=value, …",
                                size: 30 });
  const create = el("form", { id: "create-topic", class: "inline", onsubmit: guarded(async () => {
    const body = { name: name.value.trim(), partitions: Number(partitions.value),
                   replication_factor: Number(replication.value) };
    const pairs = parsePairs(configs.value, ",");
    if (Object.keys(pairs).length) body.configs = pairs;
    await api("POST", "/api/topics", body);
    flash(`created topic ${body.name}`);
    location.hash = `#/topic/${enc(body.name)}`;
  }) },
  el("label", {}, "topic", name), el("label", {}, "partitions", partitions),
  el("label", {}, "replication factor", replication), el("label", {}, "configs", configs),
  el("button", { type: "submit", class: "primary" }, "Create topic"));
  view.replaceChildren(
    el("section", {}, el("h2", {}, "Brokers"),
      el("table", { id: "brokers" }, el("thead", {}, el("tr", {},
        ["id", "address", "rack", "role", "state"].map((h) => el("th", {}, h)))), brokersBody)),
    el("section", {}, el("h2", {}, "Topics"), create,
      el("label", {}, showInternal, " show internal topics"), topicsHolder));
  const draw = (value) => {
    drawBrokers(brokersBody, value);
    drawTopics(topicsHolder, value, showInternal.checked);
  };
  showInternal.addEventListener("change", () => overview && draw(overview));
  onOverview(token, draw);
}

/** "a=1, b=2" (or one pair a line) as an object; a pair without "=" is an error. */
function parsePairs(text, separator) {
  const pairs = {};
  for (const part of text.split(separator)) {
    const item = part.trim();
    if (!item) continue;
    const at = item.indexOf("=");
    if (at <= 0) throw new Error(`"${item}" is not key=value`);
    pairs[item.slice(0, at).trim()] = item.slice(at + 1).trim();
  }
  return pairs;
}

// ----- configs (topics and brokers alike) -----------------------------------------------------

/** The configs answer as a list of {name, value, source, read_only, sensitive}. */
function configList(answer) {
  const found = Array.isArray(answer) ? answer : (answer && answer.configs) || answer || {};
  if (Array.isArray(found)) return found;
  return Object.entries(found).map(([name, entry]) =>
    (entry !== null && typeof entry === "object") ? { name, ...entry } : { name, value: entry });
}

function configEditor(url, what) {
  const body = el("tbody");
  const note = el("p", { class: "muted", id: "configs-note" });
  const filter = el("input", { id: "configs-filter", placeholder: "filter", size: 20 });
  let entries = [];
  // A change's answer is the configs once the broker describes it (read-your-writes):
  // shown as they are, where a fresh GET could still meet the broker before the change.
  const patch = async (change, message) => {
    show(await api("PATCH", url, change));
    flash(message);
  };
  const draw = () => {
    const needle = filter.value.trim().toLowerCase();
    body.replaceChildren(...entries.filter((c) => !needle || c.name.toLowerCase().includes(needle))
      .map((c) => {
        const valueCell = el("td", { class: "value bytes" },
          c.sensitive ? "(sensitive)" : (c.value ?? "null"));
        const actions = el("td", { class: "actions" });
        const row = el("tr", { "data-config": c.name, "data-source": c.source ?? "" },
          el("td", { class: "name" }, c.name), valueCell, el("td", { class: "source" }, c.source ?? ""),
          actions);
        if (!c.read_only) {
          actions.append(el("button", { type: "button", class: "edit", onclick: () => {
            const input = el("input", { class: "config-value", value: c.value ?? "", size: 30 });
            const save = el("form", { class: "inline", onsubmit: guarded(() =>
              patch({ set: { [c.name]: input.value } }, `${what}: set ${c.name}`)) },
            input, el("button", { type: "submit", class: "save primary" }, "Save"),
            el("button", { type: "button", class: "cancel", onclick: draw }, "Cancel"));
            valueCell.replaceChildren(save);
            input.focus();
          } }, "Edit"));
          if (c.source && /dynamic/i.test(c.source)) {
            actions.append(" ", el("button", { type: "button", class: "delete",
              onclick: guarded(() => patch({ delete: [c.name] }, `${what}: ${c.name} reset`)) },
            "Reset"));
          }
        }
        return row;
      }));
  };
  const show = (answer) => {
    entries = configList(answer).slice().sort((a, b) => a.name.localeCompare(b.name));
    note.textContent = `${entries.length} configs; Edit sets a dynamic value, Reset removes it`;
    draw();
  };
  const load = async () => show(await getJson(url));
  filter.addEventListener("input", draw);
  const newName = el("input", { id: "config-add-name", placeholder: "config name", required: true });
  const newValue = el("input", { id: "config-add-value", placeholder: "value", required: true });
  const add = el("form", { id: "config-add", class: "inline", onsubmit: guarded(() =>
    patch({ set: { [newName.value.trim()]: newValue.value } }, `${what}: set ${newName.value}`)) },
  el("label", {}, "name", newName), el("label", {}, "value", newValue),
  el("button", { type: "submit" }, "Set config"));
  const node = el("div", { class: "configs" }, filter, note,
    table("configs", ["name", "value", "source", ""], [], { "data-url": url }), add);
  node.querySelector("#configs").replaceChild(body, node.querySelector("#configs tbody"));
  return { node, load };
}

// ----- topic page ----------------------------------------------------------------------------

async function viewTopic(token, view, name) {
  const heading = el("h2", { id: "topic-name" }, `Topic ${name}`);
  const partitionsBody = el("tbody");
  const topicUrl = `/api/topics/${enc(name)}`;
  const configs = configEditor(`${topicUrl}/configs`, `topic ${name}`);
  const remove = el("button", { type: "button", id: "delete-topic", class: "danger",
    onclick: guarded(async () => {
      if (!await confirmAction(`Delete topic ${name} and all its records?`, "Delete topic")) return;
      await api("DELETE", topicUrl);
      flash(`deleted topic ${name}`);
      location.hash = "#/";
    }) }, "Delete topic");
  const produce = produceForm(name);
  view.replaceChildren(
    el("section", {}, heading,
      el("p", {}, el("a", { href: `#/records/${enc(name)}`, id: "browse-this-topic" }, "Browse records"),
        " · ", remove),
      el("h3", {}, "Partitions"),
      el("table", { id: "topic-partitions" }, el("thead", {}, el("tr", {},
        ["partition", "leader", "replicas", "ISR", "log start", "log end", "records", "size"]
          .map((h) => el("th", {}, h)))), partitionsBody)),
    el("section", {}, el("h3", {}, "Produce a record"), produce),
    el("section", {}, el("h3", {}, "Configs"), configs.node));
  const loadPartitions = async () => {
    const topic = await getJson(topicUrl);
    if (!isCurrent(token)) return;
    partitionsBody.replaceChildren(...topic.partitions.map((p) => {
      const start = p.log_start_offset ?? p.earliest_offset;
      const end = p.log_end_offset ?? p.latest_offset;
      const kind = p.leader < 0 ? "offline" : (p.under_replicated ? "under-replicated" : "");
      return el("tr", { "data-partition": p.partition, class: kind },
        el("td", {}, p.partition), el("td", { class: "leader" }, p.leader < 0 ? "none" : p.leader),
        el("td", { class: "replicas" }, p.replicas.join(",")),
        el("td", { class: "isr" }, p.isr.join(",")),
        el("td", { class: "log-start num" }, start ?? ""),
        el("td", { class: "log-end num" }, end ?? ""),
        el("td", { class: "count num" }, (start ?? null) !== null && (end ?? null) !== null
          ? end - start : ""),
        el("td", { class: "size num", "data-bytes": p.size_bytes ?? "" }, formatBytes(p.size_bytes)));
    }));
    produce.setPartitions(topic.partitions.map((p) => p.partition));
  };
  produce.after = loadPartitions;
  try {
    await loadPartitions();
  } catch (error) {
    view.replaceChildren(el("p", { class: "error", id: "topic-error" }, error.message));
    return;
  }
  every(token, 3000, loadPartitions);
  configs.load().catch((error) => flash(error.message, "error"));
}

function produceForm(topic) {
  const key = el("input", { id: "produce-key", placeholder: "null" });
  const value = el("textarea", { id: "produce-value", placeholder: "value" });
  const headers = el("textarea", { id: "produce-headers", placeholder: "one key=value a line" });
  const partition = el("select", { id: "produce-partition" }, el("option", { value: "" }, "any"));
  const result = el("p", { id: "produce-result" });
  const form = el("form", { id: "produce-form", class: "stack", onsubmit: guarded(async () => {
    const record = { key: key.value === "" ? null : key.value, value: value.value };
    const pairs = parsePairs(headers.value, "\n");
    if (Object.keys(pairs).length) {
      record.headers = Object.entries(pairs).map(([k, v]) => ({ key: k, value: v }));
    }
    if (partition.value !== "") record.partition = Number(partition.value);
    const answer = await api("POST", `/api/topics/${enc(topic)}/records`, { records: [record] });
    const at = answer.offsets[0];
    result.textContent = `sent to partition ${at.partition} at offset ${at.offset}`;
    result.dataset.partition = at.partition;
    result.dataset.offset = at.offset;
    if (form.after) await form.after();
  }) },
  el("label", {}, "key ", key), el("label", {}, "value ", value),
  el("label", {}, "headers ", headers), el("label", {}, "partition ", partition),
  el("button", { type: "submit", class: "primary", id: "produce-send" }, "Produce"), result);
  form.setPartitions = (numbers) => {
    if (partition.options.length === numbers.length + 1) return;
    const chosen = partition.value;
    partition.replaceChildren(el("option", { value: "" }, "any"),
      ...numbers.map((n) => el("option", { value: String(n) }, String(n))));
    partition.value = chosen;
  };
  return form;
}

// ----- records -----------------------------------------------------------------------------------

function localInputToMs(text) {
  if (!text) return null;
  const ms = new Date(text).getTime();  // datetime-local: the browser's time zone
  if (Number.isNaN(ms)) throw new Error(`not a time: ${text}`);
  return ms;
}

function prettyValue(record) {
  if (record.value === null || record.value === undefined) return el("span", { class: "muted" }, "null");
  let parsed;
  if (record.value_json !== undefined && record.value_json !== null) parsed = record.value_json;
  else if (!record.encoding) {
    try {
      const trimmed = record.value.trim();
      if (trimmed.startsWith("{") || trimmed.startsWith("[")) parsed = JSON.parse(trimmed);
    } catch (e) { parsed = undefined; }
  }
  if (parsed !== undefined && parsed !== null && typeof parsed === "object") {
    return el("pre", { class: "json" }, JSON.stringify(parsed, null, 2));
  }
  return record.value + (record.encoding ? " (base64)" : "");
}

function viewRecords(token, view, wantedTopic) {
  const topic = el("select", { id: "browse-topic" });
  const showInternal = el("input", { type: "checkbox", id: "browse-show-internal" });
  const partition = el("select", { id: "browse-partition" }, el("option", { value: "all" }, "all"));
  const since = el("input", { id: "browse-since", type: "datetime-local", step: 1 });
  const until = el("input", { id: "browse-until", type: "datetime-local", step: 1 });
  const contains = el("input", { id: "browse-contains", placeholder: "text in key, value or headers" });
  const limit = el("input", { id: "browse-limit", type: "number", min: 1, max: 1000, value: "50" });
  const note = el("p", { id: "browse-note", class: "muted" });
  const body = el("tbody");
  let loadedOnce = false;
  let latestRead = 0;  // only the last read asked for is shown: an earlier answer may come later

  const fillTopics = () => {
    const names = topicNames(overview, showInternal.checked);
    const chosen = topic.value || wantedTopic;
    if (names.join("\n") !== [...topic.options].map((o) => o.value).join("\n")) {
      topic.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
    }
    if (names.includes(chosen)) topic.value = chosen;
    fillPartitions();
  };
  const fillPartitions = () => {
    const meta = overview && overview.topics.find((t) => t.name === topic.value);
    const numbers = meta ? meta.partitions.map((p) => String(p.partition)) : [];
    const have = [...partition.options].slice(1).map((o) => o.value);
    if (have.join(",") === numbers.join(",")) return;
    const chosen = partition.value;
    partition.replaceChildren(el("option", { value: "all" }, "all"),
      ...numbers.map((n) => el("option", { value: n }, n)));
    partition.value = numbers.includes(chosen) ? chosen : "all";
  };
  const read = guarded(async () => {
    if (!topic.value) { note.textContent = "no topic to read"; return; }
    const params = new URLSearchParams({ partition: partition.value, limit: limit.value || "50" });
    const from = localInputToMs(since.value);
    const to = localInputToMs(until.value);
    if (from !== null) params.set("since_ms", String(from));
    if (to !== null) params.set("until_ms", String(to));
    if (contains.value) params.set("contains", contains.value);
    const asked = viewToken;
    const thisRead = ++latestRead;
    const stale = () => asked !== viewToken || thisRead !== latestRead;
    note.textContent = "reading…";
    let page;
    try {
      page = await getJson(`/api/topics/${enc(topic.value)}/records?${params}`);
    } catch (error) {
      if (stale()) return;
      note.textContent = "error: " + error.message;
      body.replaceChildren();
      return;
    }
    if (stale()) return;
    note.textContent = `${page.records.length} records of ${page.topic ?? topic.value}` +
      (partition.value === "all" ? " (all partitions)" : ` partition ${partition.value}`) +
      (page.complete === false ? "; there may be more: narrow the filters or raise the limit"
        : "");
    body.replaceChildren(...page.records.map((r) => el("tr",
      { "data-partition": r.partition ?? page.partition, "data-offset": r.offset },
      el("td", { class: "num" }, r.partition ?? page.partition),
      el("td", { class: "num" }, r.offset),
      el("td", { class: "timestamp", title: r.timestamp >= 0 ? new Date(r.timestamp).toISOString()
        : "" }, formatTime(r.timestamp)),
      el("td", { class: "key bytes" }, r.key ?? el("span", { class: "muted" }, "null")),
      el("td", { class: "value bytes" }, prettyValue(r)),
      el("td", { class: "headers bytes" }, (r.headers || []).map((h) => `${h.key}=${h.value}`)
        .join(", ")))));
  });
  const form = el("form", { id: "browse", class: "inline", onsubmit: read },
    el("label", {}, "topic", topic), el("label", {}, "partition", partition),
    el("label", {}, "since", since), el("label", {}, "until", until),
    el("label", {}, "contains", contains), el("label", {}, "limit", limit),
    el("button", { type: "submit", class: "primary" }, "Read"));
  view.replaceChildren(el("section", {}, el("h2", {}, "Records"), form,
    el("label", {}, showInternal, " show internal topics"), note,
    table("records", ["partition", "offset", "timestamp", "key", "value", "headers"], [])));
  view.querySelector("#records").replaceChild(body, view.querySelector("#records tbody"));
  showInternal.addEventListener("change", fillTopics);
  topic.addEventListener("change", () => { fillPartitions(); read(); });
  onOverview(token, () => {
    fillTopics();
    if (!loadedOnce && topic.value) { loadedOnce = true; read(); }
  });
}

// ----- groups ------------------------------------------------------------------------------------

function viewGroups(token, view) {
  const body = el("tbody");
  view.replaceChildren(el("section", {}, el("h2", {}, "Consumer groups"),
    table("groups", ["group", "state", "members", "lag"], [])));
  view.querySelector("#groups").replaceChild(body, view.querySelector("#groups tbody"));
  every(token, GROUPS_EVERY_MS, async () => {
    const groups = await getJson("/api/groups");
    const described = await Promise.all(groups.map((g) =>
      getJson("/api/groups/" + enc(g.group_id)).catch(() => null)));
    if (!isCurrent(token)) return;
    body.replaceChildren(...described.filter(Boolean).map((g) => el("tr", { "data-group": g.group_id },
      el("td", {}, el("a", { href: `#/group/${enc(g.group_id)}` }, g.group_id)),
      el("td", { class: "state" }, g.state), el("td", { class: "num" }, g.members.length),
      el("td", { class: "lag num" }, g.total_lag))));
  });
}

function viewGroup(token, view, groupId) {
  const url = `/api/groups/${enc(groupId)}`;
  const state = el("p", { id: "group-state" });
  const members = el("tbody");
  const offsets = el("tbody");
  const topic = el("select", { id: "reset-topic" }, el("option", { value: "" }, "all topics"));
  const to = el("select", { id: "reset-to" },
    ["earliest", "latest", "offset", "datetime", "shift_by"].map((k) =>
      el("option", { value: k }, k.replace("_", " "))));
  const amount = el("input", { id: "reset-value", placeholder: "offset, time or shift", size: 24 });
  const planBody = el("tbody");
  const planNote = el("p", { id: "reset-note", class: "muted" });
  const apply = el("button", { type: "button", id: "reset-apply", class: "danger", disabled: true },
    "Apply");
  let planned = null;  // the body of the plan on show: Apply sends it with execute

  const resetBody = () => {
    const body = {};
    if (topic.value) body.topic = topic.value;
    const text = amount.value.trim();
    if (to.value === "earliest" || to.value === "latest") body.to = to.value;
    else if (to.value === "offset") {
      if (!/^\d+$/.test(text)) throw new Error("the offset must be a number");
      body.to = Number(text);
    } else if (to.value === "shift_by") {
      if (!/^-?\d+$/.test(text)) throw new Error("shift by must be a whole number");
      body.to = { shift_by: Number(text) };
    } else {
      const ms = localInputToMs(text);
      if (ms === null) throw new Error("give a date and time, e.g. 2024-01-31T12:00:00");
      body.to = { datetime: new Date(ms).toISOString() };
    }
    return body;
  };
  const drawPlan = (answer, executed) => {
    planBody.replaceChildren(...answer.plan.map((p) => el("tr",
      { "data-topic": p.topic, "data-partition": p.partition },
      el("td", {}, p.topic), el("td", { class: "num" }, p.partition),
      el("td", { class: "current num" }, p.current ?? "–"),
      el("td", { class: "new num" }, p.new))));
    planNote.textContent = executed
      ? `applied: ${answer.plan.length} offsets committed`
      : `plan only: nothing is changed until Apply (${answer.plan.length} partitions)`;
    planNote.dataset.executed = String(Boolean(executed));
  };
  const preview = el("form", { id: "reset-form", class: "inline", onsubmit: guarded(async () => {
    const body = resetBody();
    const answer = await api("POST", `${url}/offsets/reset`, { ...body, execute: false });
    planned = body;
    drawPlan(answer, false);
    apply.disabled = false;
  }) },
  el("label", {}, "topic", topic), el("label", {}, "to", to), el("label", {}, "value", amount),
  el("button", { type: "submit", id: "reset-preview" }, "Show plan"));
  const fitAmount = () => {
    const kind = to.value;
    amount.disabled = kind === "earliest" || kind === "latest";
    amount.type = kind === "datetime" ? "datetime-local" : (amount.disabled ? "text" : "number");
    if (kind === "datetime") amount.step = "1";
    amount.placeholder = { offset: "offset", shift_by: "+/- records" }[kind] || "";
    amount.value = "";
  };
  to.addEventListener("change", fitAmount);
  fitAmount();
  [topic, to, amount].forEach((input) => input.addEventListener("input", () => {
    apply.disabled = true;
    planned = null;
  }));
  apply.addEventListener("click", guarded(async () => {
    if (!planned) return;
    const answer = await api("POST", `${url}/offsets/reset`, { ...planned, execute: true });
    drawPlan(answer, answer.executed !== false);
    apply.disabled = true;
    planned = null;
    flash(`offsets of ${groupId} reset`);
    await load();
  }));

  const load = async () => {
    const g = await getJson(url);
    if (!isCurrent(token)) return;
    state.textContent = `state ${g.state} · ${g.members.length} members · coordinator ` +
      `${g.coordinator ?? "?"} · total lag ${g.total_lag}`;
    state.dataset.state = g.state;
    members.replaceChildren(...g.members.map((m) => el("tr", { "data-member": m.member_id },
      el("td", { class: "client-id" }, m.client_id), el("td", { class: "host" }, m.client_host),
      el("td", { class: "assignment" }, m.partitions.map((p) => `${p.topic}-${p.partition}`)
        .join(", ")),
      el("td", { class: "member-id muted" }, m.member_id))));
    offsets.replaceChildren(...g.partitions.map((p) => el("tr",
      { "data-topic": p.topic, "data-partition": p.partition },
      el("td", {}, p.topic), el("td", { class: "num" }, p.partition),
      el("td", { class: "committed num" }, p.committed ?? "–"),
      el("td", { class: "latest num" }, p.latest ?? ""),
      el("td", { class: "lag num" }, p.lag ?? ""))));
    const names = [...new Set(g.partitions.map((p) => p.topic))].sort();
    if (names.join("\n") !== [...topic.options].slice(1).map((o) => o.value).join("\n")) {
      const chosen = topic.value;
      topic.replaceChildren(el("option", { value: "" }, "all topics"),
        ...names.map((n) => el("option", { value: n }, n)));
      topic.value = names.includes(chosen) ? chosen : "";
    }
  };
  view.replaceChildren(
    el("section", {}, el("h2", { id: "group-name" }, `Group ${groupId}`), state,
      el("h3", {}, "Members"),
      el("table", { id: "group-members" }, el("thead", {}, el("tr", {},
        ["client id", "host", "partitions", "member id"].map((h) => el("th", {}, h)))), members),
      el("h3", {}, "Offsets"),
      el("table", { id: "group-offsets" }, el("thead", {}, el("tr", {},
        ["topic", "partition", "committed", "latest", "lag"].map((h) => el("th", {}, h)))), offsets)),
    el("section", {}, el("h3", {}, "Reset offsets"),
      el("p", { class: "muted" }, "The group must have no members. Show plan computes the new " +
        "offsets and changes nothing; Apply commits them."),
      preview, planNote,
      el("table", { id: "reset-plan" }, el("thead", {}, el("tr", {},
        ["topic", "partition", "current", "new"].map((h) => el("th", {}, h)))), planBody),
      el("p", {}, apply)));
  every(token, GROUPS_EVERY_MS, load);
}

// ----- brokers and their configs ---------------------------------------------------------------

function viewBrokers(token, view) {
  const body = el("tbody");
  view.replaceChildren(el("section", {}, el("h2", {}, "Brokers"),
    el("table", { id: "brokers" }, el("thead", {}, el("tr", {},
      ["id", "address", "rack", "role", "state"].map((h) => el("th", {}, h)))), body),
    el("p", {}, el("a", { href: "#/broker/default", id: "broker-default-link" },
      "Cluster-wide default configs"), " apply to every broker that does not set its own.")));
  onOverview(token, (value) => drawBrokers(body, value));
}

function viewBroker(token, view, id) {
  const title = id === "default" ? "Cluster-wide broker defaults" : `Broker ${id}`;
  const configs = configEditor(`/api/brokers/${enc(id)}/configs`,
    id === "default" ? "broker defaults" : `broker ${id}`);
  view.replaceChildren(el("section", {}, el("h2", { id: "broker-title" }, title),
    el("p", {}, el("a", { href: "#/brokers" }, "all brokers")), configs.node));
  configs.load().catch((error) => {
    if (isCurrent(token)) view.append(el("p", { class: "error" }, error.message));
  });
}

// ----- ACLs ---------------------------------------------------------------------------------------

const ACL_FIELDS = ["resource_type", "resource_name", "pattern_type", "principal", "host",
  "operation", "permission_type"];

function aclKey(acl) { return ACL_FIELDS.map((f) => acl[f]).join("|"); }

function viewAcls(token, view) {
  const body = el("tbody");
  const choose = (id, values) => el("select", { id }, values.map((v) => el("option", { value: v }, v)));
  // Kafka's enum names, as the API takes them (and kafka-acls.sh prints them).
  const fields = {
    resource_type: choose("acl-resource-type", ["TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"]),
    resource_name: el("input", { id: "acl-resource-name", placeholder: "name (* for all)",
                                 required: true }),
    pattern_type: choose("acl-pattern-type", ["LITERAL", "PREFIXED"]),
    principal: el("input", { id: "acl-principal", placeholder: "User:alice", required: true }),
    host: el("input", { id: "acl-host", value: "*" }),
    operation: choose("acl-operation", ["READ", "WRITE", "CREATE", "DELETE", "ALTER",
      "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "CLUSTER_ACTION", "IDEMPOTENT_WRITE",
      "ALL"]),
    permission_type: choose("acl-permission", ["ALLOW", "DENY"]),
  };
  fields.resource_type.addEventListener("change", () => {
    if (fields.resource_type.value === "CLUSTER") fields.resource_name.value = "kafka-cluster";
  });
  const load = async () => {
    const answer = await getJson("/api/acls");
    if (!isCurrent(token)) return;
    const acls = Array.isArray(answer) ? answer : answer.acls;
    body.replaceChildren(...acls.map((acl) => el("tr", { "data-acl": aclKey(acl) },
      ACL_FIELDS.map((f) => el("td", { class: f.replace("_", "-") }, acl[f] ?? "")),
      el("td", {}, el("button", { type: "button", class: "delete danger", onclick: guarded(async () => {
        if (!await confirmAction(`Delete the ACL ${acl.permission_type} ${acl.principal} ` +
          `${acl.operation} on ${acl.resource_type} ${acl.resource_name}?`, "Delete ACL")) return;
        const filter = {};
        for (const f of ACL_FIELDS) filter[f] = acl[f];
        await api("DELETE", "/api/acls", filter);
        flash("ACL deleted");
        await load();
      }) }, "Delete")))));
  };
  const form = el("form", { id: "acl-form", class: "inline", onsubmit: guarded(async () => {
    const acl = {};
    for (const [name, input] of Object.entries(fields)) acl[name] = input.value.trim();
    await api("POST", "/api/acls", acl);
    flash("ACL created");
    await load();
  }) },
  Object.entries(fields).map(([name, input]) => el("label", {}, name.replace("_", " "), input)),
  el("button", { type: "submit", class: "primary" }, "Create ACL"));
  view.replaceChildren(el("section", {}, el("h2", {}, "ACLs"), form,
    el("table", { id: "acls" }, el("thead", {}, el("tr", {},
      [...ACL_FIELDS.map((f) => f.replace("_", " ")), ""].map((h) => el("th", {}, h)))), body)));
  load().catch((error) => {
    if (isCurrent(token)) view.append(el("p", { class: "error", id: "acls-error" }, error.message));
  });
}

// ----- SCRAM users ----------------------------------------------------------------------------------

function viewUsers(token, view) {
  const body = el("tbody");
  const name = el("input", { id: "user-name", placeholder: "name", required: true });
  const password = el("input", { id: "user-password", type: "password", placeholder: "password",
                                 required: true, autocomplete: "new-password" });
  const mechanism = el("select", { id: "user-mechanism" },
    ["SCRAM-SHA-256", "SCRAM-SHA-512"].map((m) => el("option", { value: m }, m)));
  const iterations = el("input", { id: "user-iterations", type: "number", min: 4096,
                                   value: "4096" });
  const load = async () => {
    const answer = await getJson("/api/users");
    if (!isCurrent(token)) return;
    const users = Array.isArray(answer) ? answer : answer.users;
    body.replaceChildren(...users.map((u) => el("tr", { "data-user": u.name },
      el("td", { class: "name" }, u.name),
      el("td", { class: "mechanisms" }, u.mechanisms.map((c) =>
        `${c.mechanism} (${c.iterations} iterations)`).join(", ")),
      el("td", {}, el("button", { type: "button", class: "delete danger", onclick: guarded(async () => {
        if (!await confirmAction(`Delete the SCRAM credentials of ${u.name}?`, "Delete user")) return;
        // One credential per mechanism: deleting the user deletes each.
        for (const c of u.mechanisms) {
          await api("DELETE", `/api/users/${enc(u.name)}?mechanism=${enc(c.mechanism)}`);
        }
        flash(`deleted user ${u.name}`);
        await load();
      }) }, "Delete")))));
  };
  const form = el("form", { id: "user-form", class: "inline", onsubmit: guarded(async () => {
    await api("PUT", `/api/users/${enc(name.value.trim())}`, {
      password: password.value, mechanism: mechanism.value, iterations: Number(iterations.value) });
    flash(`user ${name.value.trim()} saved`);
    password.value = "";
    await load();
  }) },
  el("label", {}, "name", name), el("label", {}, "password", password),
  el("label", {}, "mechanism", mechanism), el("label", {}, "iterations", iterations),
  el("button", { type: "submit", class: "primary" }, "Add user"));
  view.replaceChildren(el("section", {}, el("h2", {}, "SCRAM users"), form,
    table("users", ["user", "credentials", ""], [])));
  view.querySelector("#users").replaceChild(body, view.querySelector("#users tbody"));
  load().catch((error) => {
    if (isCurrent(token)) view.append(el("p", { class: "error", id: "users-error" }, error.message));
  });
}

// ----- charts ------------------------------------------------------------------------------------

const CHART = { width: 640, height: 180, left: 52, right: 10, top: 10, bottom: 22 };

function niceMax(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (value <= step * power) return step * power;
  return 10 * power;
}

function drawChart(topic, points) {
  const { width, height, left, right, top, bottom } = CHART;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const t0 = points.length ? points[0].t_ms : 0;
  const t1 = points.length ? points[points.length - 1].t_ms : 1;
  const span = Math.max(t1 - t0, 1);
  const highest = Math.max(0, ...points.map((p) => Math.max(p.messages_in_per_s ?? 0,
    p.messages_out_per_s ?? 0)));
  const max = niceMax(highest);
  const x = (t) => left + ((t - t0) / span) * plotW;
  const y = (v) => top + plotH - (v / max) * plotH;
  // A sample without a figure (null: no broker said) is left out of the line.
  const line = (field) => points.filter((p) => p[field] !== null && p[field] !== undefined)
    .map((p) => `${x(p.t_ms).toFixed(1)},${y(p[field]).toFixed(1)}`).join(" ");
  const grid = [0, 0.5, 1].map((f) => [
    svg("line", { class: "grid", x1: left, x2: width - right, y1: y(max * f), y2: y(max * f) }),
    svg("text", { class: "axis", x: left - 4, y: y(max * f) + 4, "text-anchor": "end" },
      formatRate(max * f))]);
  const last = points[points.length - 1];
  return el("div", { class: "chart-box", "data-chart-topic": topic },
    el("h3", {}, topic, " ", el("span", { class: "legend" },
      el("span", { class: "in" }, `in ${formatRate(last && last.messages_in_per_s)}/s`),
      el("span", { class: "out" }, `out ${formatRate(last && last.messages_out_per_s)}/s`))),
    svg("svg", { class: "chart", width, height, viewBox: `0 0 ${width} ${height}`,
                 role: "img", "aria-label": `messages in and out per second of ${topic}` },
    grid.flat(),
    svg("text", { class: "axis", x: left, y: height - 6 }, `${Math.round(span / 1000)} s ago`),
    svg("text", { class: "axis", x: width - right, y: height - 6, "text-anchor": "end" }, "now"),
    svg("polyline", { class: "in", points: line("messages_in_per_s"),
                      "data-points": points.length }),
    svg("polyline", { class: "out", points: line("messages_out_per_s"),
                      "data-points": points.length })));
}

function formatRate(v) {
  if (v === null || v === undefined) return "–";
  return v >= 100 ? String(Math.round(v)) : String(Math.round(v * 10) / 10);
}

function viewCharts(token, view) {
  const holder = el("div", { id: "charts" });
  const note = el("p", { class: "muted", id: "charts-note" });
  const showInternal = el("input", { type: "checkbox", id: "charts-show-internal" });
  view.replaceChildren(el("section", {}, el("h2", {}, "Messages in and out per topic"),
    el("p", { class: "muted" }, "Per second, from the brokers' own metrics: in is records " +
      "appended by producers at the leaders; out is records sent to consumers, estimated " +
      "from the bytes sent and the topic's mean record size."),
    el("label", {}, showInternal, " show internal topics"), note, holder));
  let last = null;
  const draw = () => {
    if (!last) return;
    const internal = new Set((overview ? overview.topics : []).filter((t) => t.internal)
      .map((t) => t.name));
    const names = Object.keys(last.topics).sort()
      .filter((n) => showInternal.checked || !(internal.has(n) || n.startsWith("__")));
    note.textContent = names.length ? `sampled every ${last.interval_ms} ms`
      : "no topics with traffic yet";
    holder.replaceChildren(...names.map((n) => drawChart(n, last.topics[n])));
  };
  showInternal.addEventListener("change", draw);
  every(token, CHARTS_EVERY_MS, async () => {
    const answer = await getJson("/api/metrics/throughput");
    if (!isCurrent(token)) return;
    last = answer;
    draw();
  });
}

// ----- router --------------------------------------------------------------------------------

const ROUTES = [
  [/^\/?$/, "overview", viewOverview],
  [/^\/topic\/(.+)$/, "overview", viewTopic],
  [/^\/records(?:\/(.+))?$/, "records", viewRecords],
  [/^\/groups$/, "groups", viewGroups],
  [/^\/group\/(.+)$/, "groups", viewGroup],
  [/^\/brokers$/, "brokers", viewBrokers],
  [/^\/broker\/(.+)$/, "brokers", viewBroker],
  [/^\/acls$/, "acls", viewAcls],
  [/^\/users$/, "users", viewUsers],
  [/^\/charts$/, "charts", viewCharts],
];

function route() {
  viewToken += 1;
  const token = viewToken;
  const path = location.hash.replace(/^#/, "");
  const view = document.getElementById("view");
  for (const [pattern, nav, draw] of ROUTES) {
    const match = pattern.exec(path);
    if (!match) continue;
    for (const link of document.querySelectorAll("#nav a")) {
      link.classList.toggle("active", link.dataset.nav === nav);
    }
    const args = match.slice(1).map((part) => (part === undefined ? undefined
      : decodeURIComponent(part)));
    view.dataset.view = draw.name;
    Promise.resolve(draw(token, view, ...args)).catch((error) => flash(error.message, "error"));
    return;
  }
  view.dataset.view = "none";
  view.replaceChildren(el("p", { class: "error" }, `no such page: ${path}`));
}

window.addEventListener("hashchange", route);
route();
refreshOverview();
