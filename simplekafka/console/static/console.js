// The SimpleKafka web console: plain JavaScript, no build step, no outside assets.
// It polls the REST API: /api/overview every second (brokers, controller, every
// partition's leader and ISR), /api/groups every few seconds; it draws with DOM
// calls (textContent), so names from the cluster are never parsed as HTML.
"use strict";

const OVERVIEW_EVERY_MS = 1000;
const GROUPS_EVERY_MS = 3000;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "class") node.className = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function getJson(url) {
  const answer = await fetch(url, { cache: "no-store" });
  const body = await answer.json();
  if (!answer.ok) throw new Error(body.error || answer.statusText);
  return body;
}

function setStatus(text, kind) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = "status " + kind;
}

function drawBrokers(overview) {
  const body = document.querySelector("#brokers tbody");
  body.replaceChildren(...overview.brokers.map((b) => {
    const isController = b.id === overview.controller_id;
    return el("tr", { "data-broker-id": b.id, class: isController ? "controller" : "" },
      el("td", {}, b.id), el("td", {}, `${b.host}:${b.port}`), el("td", {}, b.rack ?? ""),
      el("td", { class: "role" }, isController ? "controller" : "broker"));
  }));
}

function drawTopics(overview) {
  const showInternal = document.getElementById("show-internal").checked;
  const holder = document.getElementById("topics");
  const topics = overview.topics.filter((t) => showInternal || !t.internal);
  holder.replaceChildren(...topics.map((topic) => {
    const urp = topic.partitions.filter((p) => p.under_replicated).length;
    const title = el("h3", {}, topic.name, " ",
      el("small", {}, `${topic.partitions.length} partitions`));
    if (urp) title.append(" ", el("span", { class: "badge urp" }, `${urp} under-replicated`));
    const rows = topic.partitions.map((p) => {
      const kind = p.leader < 0 ? "offline" : (p.under_replicated ? "under-replicated" : "");
      return el("tr", { class: kind, "data-topic": topic.name, "data-partition": p.partition },
        el("td", {}, p.partition),
        el("td", { class: "leader" }, p.leader < 0 ? "none" : p.leader),
        el("td", { class: "replicas" }, p.replicas.join(",")),
        el("td", { class: "isr" }, p.isr.join(",")),
        el("td", {}, p.leader < 0 ? el("span", { class: "badge off" }, "offline")
          : (p.under_replicated ? el("span", { class: "badge urp" }, "under-replicated") : "")));
    });
    const table = el("table", { class: "partitions", "data-topic": topic.name },
      el("thead", {}, el("tr", {}, ...["partition", "leader", "replicas", "ISR", ""]
        .map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows));
    return el("div", { class: "topic", "data-topic": topic.name }, title, table);
  }));
  const select = document.getElementById("browse-topic");
  const chosen = select.value;
  const names = overview.topics.map((t) => t.name);
  if (names.join("\n") !== [...select.options].map((o) => o.value).join("\n")) {
    select.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
    if (names.includes(chosen)) select.value = chosen;
  }
}

async function refreshOverview() {
  try {
    const overview = await getJson("/api/overview");
    document.getElementById("cluster-id").textContent =
      `cluster ${overview.cluster_id ?? "?"} · controller ${overview.controller_id}`;
    drawBrokers(overview);
    drawTopics(overview);
    setStatus("live · " + new Date().toLocaleTimeString(), "ok");
  } catch (error) {
    setStatus("cluster unreachable: " + error.message, "stale");
  } finally {
    setTimeout(refreshOverview, OVERVIEW_EVERY_MS);
  }
}

async function refreshGroups() {
  try {
    const groups = await getJson("/api/groups");
    const described = await Promise.all(groups.map((g) =>
      getJson("/api/groups/" + encodeURIComponent(g.group_id)).catch(() => null)));
    const body = document.querySelector("#groups tbody");
    body.replaceChildren(...described.filter(Boolean).map((g) => el("tr",
      { "data-group": g.group_id },
      el("td", {}, g.group_id), el("td", {}, g.state), el("td", {}, g.members.length),
      el("td", { class: "lag" }, g.total_lag),
      el("td", {}, g.partitions.map((p) =>
        `${p.topic}-${p.partition}: ${p.committed ?? "–"} / ${p.latest}`).join("; ")))));
  } catch (error) {
    // the overview's status line already says when the cluster is unreachable
  } finally {
    setTimeout(refreshGroups, GROUPS_EVERY_MS);
  }
}

async function browse(event) {
  event.preventDefault();
  const topic = document.getElementById("browse-topic").value;
  const params = new URLSearchParams({
    partition: document.getElementById("browse-partition").value || "0",
    limit: document.getElementById("browse-limit").value || "20",
  });
  const offset = document.getElementById("browse-offset").value;
  if (offset !== "") params.set("offset", offset);
  const note = document.getElementById("browse-note");
  const body = document.querySelector("#records tbody");
  try {
    const page = await getJson(`/api/topics/${encodeURIComponent(topic)}/records?${params}`);
    note.textContent = `offsets ${page.earliest_offset}–${page.latest_offset}; ` +
      `${page.records.length} shown; next page from ${page.next_offset}`;
    document.getElementById("browse-offset").value = page.next_offset;
    body.replaceChildren(...page.records.map((r) => el("tr", {},
      el("td", {}, r.offset), el("td", {}, new Date(r.timestamp).toISOString()),
      el("td", { class: "bytes" }, (r.key ?? "null") + (r.encoding ? " (base64)" : "")),
      el("td", { class: "bytes" }, r.value ?? "null"),
      el("td", { class: "bytes" }, r.headers.map((h) => `${h.key}=${h.value}`).join(", ")))));
  } catch (error) {
    note.textContent = "error: " + error.message;
    body.replaceChildren();
  }
}

document.getElementById("browse").addEventListener("submit", browse);
refreshOverview();
refreshGroups();
