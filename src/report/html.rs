//! The report's page: inline CSS and JavaScript around the data (JSON in a script element).
//!
//! The page renders from the data alone: the summary and histograms (inline SVG), the
//! cluster list (paged, 50 a page, filtered by id or title), a cluster's members, and a
//! member against its leader side by side. The location's hash opens a cluster and a member
//! (`#cluster=ID&member=ID`), so a link (or a headless browser) can show one directly.

/// The whole page, with `json` (the report's data) embedded.
pub(super) fn page(title: &str, json: &str) -> String {
    // `</` cannot close the script element once written `<\/` (the same JSON string).
    let json = json.replace("</", "<\\/");
    let mut s = String::with_capacity(json.len() + CSS.len() + JS.len() + 2048);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    s.push_str("<title>");
    s.push_str(&escape(title));
    s.push_str("</title>\n<style>");
    s.push_str(CSS);
    s.push_str("</style>\n</head>\n<body>\n");
    s.push_str(BODY);
    s.push_str("<script type=\"application/json\" id=\"data\">");
    s.push_str(&json);
    s.push_str("</script>\n<script>");
    s.push_str(JS);
    s.push_str("</script>\n</body>\n</html>\n");
    s
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const CSS: &str = r#"
:root { --del: #ffd7d5; --ins: #ccf2d1; --mv: #fff1a8; --line: #d0d7de; --muted: #57606a; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1f2328; }
header { padding: 12px 20px; border-bottom: 1px solid var(--line); background: #f6f8fa; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 16px 0 8px; }
main { padding: 0 20px 40px; }
.muted { color: var(--muted); }
#summary table, #clusters, #mirrors table { border-collapse: collapse; }
#summary td, #summary th { padding: 2px 10px 2px 0; text-align: left; }
.hists { display: flex; gap: 32px; flex-wrap: wrap; }
.hist text { font-size: 10px; fill: #1f2328; }
.hist rect { fill: #54aeff; }
#layout { display: grid; grid-template-columns: minmax(320px, 38%) 1fr; gap: 20px; }
#clusters { width: 100%; }
#clusters td, #clusters th, #mirrors td, #mirrors th { padding: 3px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
#clusters tr.cluster { cursor: pointer; }
#clusters tr.cluster:hover, #clusters tr.open { background: #ddf4ff; }
#clusters td.size { text-align: right; font-variant-numeric: tabular-nums; }
#filter { width: 100%; padding: 6px 8px; font-size: 14px; margin-bottom: 6px; }
.pager { margin: 6px 0; display: flex; gap: 8px; align-items: center; }
#members { list-style: none; padding: 0; margin: 0; }
#members li { padding: 3px 6px; cursor: pointer; border-bottom: 1px solid var(--line); }
#members li:hover, #members li.open { background: #ddf4ff; }
#members li.leader { font-weight: 600; cursor: default; background: #f6f8fa; }
#diff { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; margin-top: 10px; }
.side { border: 1px solid var(--line); border-radius: 6px; padding: 8px; white-space: pre-wrap; overflow-wrap: anywhere; font: 12.5px/1.5 ui-monospace, SFMono-Regular, Menlo, monospace; max-height: 70vh; overflow: auto; }
.side h3 { font: 600 13px system-ui, sans-serif; margin: 0 0 6px; white-space: normal; }
span.del { background: var(--del); text-decoration: line-through; }
span.ins { background: var(--ins); }
span.mv { background: var(--mv); }
#evidence { margin-top: 10px; padding: 8px; border: 1px solid var(--line); border-radius: 6px; background: #f6f8fa; }
#evidence .verdict { font-weight: 600; }
#evidence .yes { color: #1a7f37; } #evidence .no { color: #cf222e; }
.legend span { padding: 0 4px; margin-right: 6px; }
"#;

const BODY: &str = r#"<header><h1 id="title"></h1><div id="rule" class="muted"></div></header>
<main>
<section id="summary"></section>
<section id="mirrors"></section>
<h2>Clusters <span class="muted" id="listed"></span></h2>
<div id="layout">
<div>
<input id="filter" type="search" placeholder="Filter clusters by id or title" autocomplete="off">
<div class="pager"><button id="prev">‹ Previous</button><span id="page"></span><button id="next">Next ›</button></div>
<table id="clusters"><thead><tr><th>size</th><th>leader</th><th>title</th></tr></thead><tbody></tbody></table>
</div>
<div id="detail"><p class="muted">Choose a cluster, then a member, to see it beside its leader.</p></div>
</div>
</main>
"#;

const JS: &str = r###"
"use strict";
const DATA = JSON.parse(document.getElementById("data").textContent);
const S = DATA.summary;
const PAGE = 50;
let page = 0, shown = DATA.clusters, openCluster = null, openMember = null;
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
const pct = (n, d) => d ? (100 * n / d).toFixed(1) + "%" : "0%";
const fmt = (n) => Number(n).toLocaleString("en-US");

function histogram(title, bins) {
  const w = 360, h = 150, pad = 28, max = Math.max(1, ...bins.map((b) => b[1]));
  const bw = (w - pad) / bins.length;
  let svg = `<svg class="hist" width="${w}" height="${h + 30}" role="img" aria-label="${esc(title)}">`;
  bins.forEach(([label, n], i) => {
    const bh = Math.round((h - 20) * n / max), x = pad + i * bw, y = h - bh;
    svg += `<rect x="${x + 2}" y="${y}" width="${bw - 4}" height="${bh}"><title>${esc(label)}: ${fmt(n)}</title></rect>`;
    svg += `<text x="${x + bw / 2}" y="${y - 3}" text-anchor="middle">${n ? fmt(n) : ""}</text>`;
    svg += `<text x="${x + bw / 2}" y="${h + 14}" text-anchor="middle">${esc(label)}</text>`;
  });
  svg += `<line x1="${pad}" y1="${h}" x2="${w}" y2="${h}" stroke="#888"/></svg>`;
  return `<div><h2>${esc(title)}</h2>${svg}</div>`;
}

function renderSummary() {
  $("title").textContent = S.title;
  document.title = S.title;
  $("rule").textContent = "Match rule: " + S.rule;
  const d = S.documents;
  $("summary").innerHTML = `<h2>Summary</h2><table>
<tr><th>Documents</th><td>${fmt(d)}</td></tr>
<tr><th>Pairs by the rule</th><td>${fmt(S.pairs)}${S.hot_keys ? ` (${fmt(S.hot_keys)} hot keys were bounded: a few pairs may be missing)` : ""}</td></tr>
<tr><th>Near-duplicates (in a cluster)</th><td>${fmt(S.clustered)} (${pct(S.clustered, d)}) in ${fmt(S.clusters)} leader clusters; the largest holds ${fmt(S.largest)}</td></tr>
<tr><th>Connected components</th><td>${fmt(S.components_clustered)} documents in ${fmt(S.components)} components; the largest holds ${fmt(S.largest_component)}</td></tr>
<tr><th>Removed by Reject (keep the leaders)</th><td>${fmt(S.removed_reject)} (${pct(S.removed_reject, d)})</td></tr>
<tr><th>Removed by Replace (newest wins)</th><td>${fmt(S.removed_replace)} (${pct(S.removed_replace, d)})</td></tr>
<tr><th>Removed keeping one per component</th><td>${fmt(S.removed_components)} (${pct(S.removed_components, d)})</td></tr>
<tr><th>Removed by Tag or Off</th><td>0 (Tag records each document's group)</td></tr>
</table><div class="hists">${histogram("Cluster sizes (leader clusters)", S.size_histogram)}${histogram("Pair resemblance (sketch estimate, all pairs)", S.resemblance_histogram)}</div>`;
  let note = `${fmt(S.clusters_listed)} of ${fmt(S.clusters)} listed, largest first`;
  if (S.clusters_listed < S.clusters) note += ` (${fmt(S.clusters - S.clusters_listed)} smaller ones left out)`;
  note += `; members and texts for the largest ${fmt(S.clusters_detailed)}, at most ${S.members_per_cluster} members each, texts cut at ${fmt(S.max_text_bytes)} bytes`;
  $("listed").textContent = "(" + note + ")";
  if (DATA.mirrors.length) {
    let rows = DATA.mirrors.map((m) => `<tr class="mirror"><td>${esc(m.host_a)}</td><td>${esc(m.host_b)}</td><td>${fmt(m.shared_pages)}</td><td>${fmt(m.pages_a)} / ${fmt(m.pages_b)}</td><td>${(100 * m.share_a).toFixed(0)}% / ${(100 * m.share_b).toFixed(0)}%</td></tr>`).join("");
    $("mirrors").innerHTML = `<h2>Mirror host pairs (${fmt(DATA.mirrors.length)})</h2><table><thead><tr><th>host a</th><th>host b</th><th>shared pages</th><th>pages</th><th>share copied</th></tr></thead><tbody>${rows}</tbody></table>`;
  }
}

function renderList() {
  const pages = Math.max(1, Math.ceil(shown.length / PAGE));
  page = Math.min(page, pages - 1);
  const rows = shown.slice(page * PAGE, page * PAGE + PAGE).map((c) =>
    `<tr class="cluster${openCluster === c.id ? " open" : ""}" data-id="${esc(c.id)}"><td class="size">${fmt(c.size)}</td><td>${esc(c.id)}</td><td>${esc(c.title)}${c.detail === undefined ? ' <span class="muted">(members not carried)</span>' : ""}</td></tr>`).join("");
  document.querySelector("#clusters tbody").innerHTML = rows;
  $("page").textContent = `page ${page + 1} of ${pages} (${fmt(shown.length)} clusters)`;
  $("prev").disabled = page === 0;
  $("next").disabled = page + 1 >= pages;
}

function marked(text, marks) {
  let out = "", at = 0;
  for (const [s, e, k] of marks) {
    out += esc(text.slice(at, s)) + `<span class="${k}">${esc(text.slice(s, e))}</span>`;
    at = e;
  }
  return out + esc(text.slice(at));
}

// Byte offsets (UTF-8) of the data -> string offsets of the JavaScript string.
function toChars(text, marks) {
  const enc = new TextEncoder();
  const map = new Map();
  let bytes = 0, i = 0;
  map.set(0, 0);
  for (const ch of text) {
    bytes += enc.encode(ch).length;
    i += ch.length;
    map.set(bytes, i);
  }
  return marks.map(([s, e, k]) => [map.get(s) ?? 0, map.get(e) ?? text.length, k]);
}

function openClusterById(id, memberId) {
  const row = DATA.clusters.find((c) => c.id === id);
  if (!row) return;
  openCluster = id; openMember = null;
  const idx = shown.indexOf(row);
  if (idx >= 0) page = Math.floor(idx / PAGE);
  renderList();
  const det = $("detail");
  if (row.detail === undefined) {
    det.innerHTML = `<h2>${esc(row.id)} <span class="muted">(${fmt(row.size)} documents)</span></h2><p class="muted">This cluster's members are not carried in the report (only the largest ${fmt(S.clusters_detailed)} are); run <code>neardup clusters</code> or <code>neardup explain</code> for it.</p>`;
    return;
  }
  const d = DATA.details[row.detail];
  let items = `<li class="leader" data-id="${esc(d.leader.id)}">★ ${esc(d.leader.id)} — ${esc(d.leader.title)} <span class="muted">(leader)</span></li>`;
  items += d.members.map((m, i) => `<li class="member" data-i="${i}" data-id="${esc(m.doc.id)}">${esc(m.doc.id)} — ${esc(m.doc.title)} <span class="muted">${esc(short(m.evidence))}</span></li>`).join("");
  if (d.more) items += `<li class="muted">… ${fmt(d.more)} more members not carried</li>`;
  det.innerHTML = `<h2>${esc(row.id)} <span class="muted">(${fmt(row.size)} documents)</span></h2><ul id="members">${items}</ul><div id="evidence" hidden></div><div id="diff"></div>`;
  if (memberId !== undefined) {
    const i = d.members.findIndex((m) => m.doc.id === memberId);
    if (i >= 0) openMemberAt(d, i);
  }
}

function short(e) {
  const v = e.verdict;
  const words = "words " + e.words.resemblance.toFixed(2);
  if (!v) return "no match · " + words;
  return (v.match === "simhash" ? `d=${v.distance}` : `r≈${v.resemblance.toFixed(2)} d=${v.distance}`) + " · " + words;
}

function openMemberAt(d, i) {
  const m = d.members[i];
  openMember = m.doc.id;
  document.querySelectorAll("#members li.member").forEach((li) => li.classList.toggle("open", li.dataset.i === String(i)));
  const e = m.evidence;
  const [eq, del, ins, mv] = e.counts;
  const branch = (b) => `<div><span class="${b.matched ? "yes" : "no"}">${b.matched ? "✓" : "✗"} ${esc(b.name)}</span>: ${esc(b.reason)}</div>`;
  const chrome = (lines, who) => lines.length ? `<div>${who}: ${lines.length} line(s) left out as site chrome: ${lines.slice(0, 5).map((l) => "“" + esc(l.text) + "”").join(", ")}</div>` : "";
  $("evidence").hidden = false;
  $("evidence").innerHTML = `<div class="verdict ${e.verdict ? "yes" : "no"}">${esc(e.summary)}</div>${e.branches.map(branch).join("")}
<div>Block keys shared: ${e.simhash.shared_keys.length} of ${e.simhash.keys}; bands shared: ${e.minhash.shared_bands.length} of ${e.minhash.bands}; sketch estimate ${e.minhash.estimate.toFixed(3)}</div>
<div>Exact resemblance of the rule's shingles ${e.shingles.resemblance.toFixed(3)}; of word 3-shingles ${e.words.resemblance.toFixed(3)}</div>
${chrome(e.chrome[0], "leader")}${chrome(e.chrome[1], "member")}
<div class="legend">Alignment: ${fmt(eq)} words in common, <span class="del">${fmt(del)} deleted</span><span class="ins">${fmt(ins)} inserted</span><span class="mv">${fmt(mv)} moved</span></div>`;
  const side = (id, who, doc, marks) => `<div class="side" id="${id}"><h3>${who}: ${esc(doc.id)}${doc.host ? " · " + esc(doc.host) : ""}${doc.cut ? " <span class=\"muted\">(cut)</span>" : ""}</h3>${marked(doc.text, toChars(doc.text, marks))}</div>`;
  $("diff").innerHTML = side("side-leader", "leader", d.leader, m.marks_leader) + side("side-member", "member", m.doc, m.marks_member);
  const h = `#cluster=${encodeURIComponent(openCluster)}&member=${encodeURIComponent(openMember)}`;
  if (location.hash !== h) history.replaceState(null, "", h);
}

function fromHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  if (p.get("filter") !== null) {
    $("filter").value = p.get("filter");
    $("filter").dispatchEvent(new Event("input"));
  }
  if (p.get("cluster")) openClusterById(p.get("cluster"), p.get("member") ?? undefined);
}

$("filter").addEventListener("input", (ev) => {
  const q = ev.target.value.trim().toLowerCase();
  shown = q ? DATA.clusters.filter((c) => c.id.toLowerCase().includes(q) || c.title.toLowerCase().includes(q)) : DATA.clusters;
  page = 0;
  renderList();
});
$("prev").addEventListener("click", () => { page--; renderList(); });
$("next").addEventListener("click", () => { page++; renderList(); });
document.querySelector("#clusters tbody").addEventListener("click", (ev) => {
  const tr = ev.target.closest("tr.cluster");
  if (tr) {
    openClusterById(tr.dataset.id);
    history.replaceState(null, "", `#cluster=${encodeURIComponent(tr.dataset.id)}`);
  }
});
$("detail").addEventListener("click", (ev) => {
  const li = ev.target.closest("li.member");
  const row = DATA.clusters.find((c) => c.id === openCluster);
  if (li && row && row.detail !== undefined) openMemberAt(DATA.details[row.detail], Number(li.dataset.i));
});
window.addEventListener("hashchange", fromHash);
renderSummary();
renderList();
fromHash();
document.body.dataset.ready = "1";
// Milliseconds from the start of navigation to a rendered page (parse, data, first render).
document.body.dataset.renderMs = Math.round(performance.now());
"###;
