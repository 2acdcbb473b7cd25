// fairseq-tree-view: draws the page's data (fairseq_tree/view/records.py) on demand. drawTree is
// fairseq_tree/trees/svg.py's tree_svg, element for element (tests/integration/test_view_browser.py checks it).
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const CHAR_W = 7, PAD = 10, ROW_H = 34, TOP = 16, MARGIN = 8, WORD_DY = 16, PAGE = 100;
  const MARKS = {"=": "match", "-": "missing", "+": "extra", ".": "ignored"};
  const DATA = JSON.parse(document.getElementById("view-data").textContent);
  const SENTS = DATA.sentences;
  const $ = (id) => document.getElementById(id);
  let shown = [], page = 0, selected = -1;

  function el(tag, attrs, text) {
    const e = document.createElementNS(NS, tag);
    for (const k of Object.keys(attrs)) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;  // text, never markup
    return e;
  }
  function html(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  const len = (s) => [...(s || "")].length;  // code points, as Python's len

  // ------------------------------------------------------------------ one tree (trees/svg.py)
  function treeParents(nodes, n) {
    const parents = nodes.map(() => -1), leafParents = new Array(n).fill(-1), stack = [];
    nodes.forEach(([s, e], i) => {
      while (stack.length && nodes[stack[stack.length - 1]][0] >= s && nodes[stack[stack.length - 1]][1] <= e) {
        parents[stack.pop()] = i;
      }
      for (let j = s; j < e; j++) if (leafParents[j] < 0) leafParents[j] = i;
      stack.push(i);
    });
    return [parents, leafParents];
  }

  function leafXs(words, tags) {
    const xs = [];
    let left = MARGIN;
    words.forEach((w, j) => {
      const width = Math.max(len(w), len(tags[j])) * CHAR_W + PAD;
      xs.push(left + Math.floor(width / 2));
      left += width;
    });
    return [xs, left + MARGIN];
  }

  function layout(words, tags, nodes) {
    const m = nodes.length, [parents, leafParents] = treeParents(nodes, words.length);
    const [leafX, width] = leafXs(words, tags);
    const depth = new Array(m).fill(0);
    for (let i = m - 1; i >= 0; i--) if (parents[i] >= 0) depth[i] = depth[parents[i]] + 1;
    const lo = new Array(m).fill(1e9), hi = new Array(m).fill(-1), nodeX = new Array(m).fill(0);
    leafParents.forEach((p, j) => {
      if (p >= 0) { lo[p] = Math.min(lo[p], leafX[j]); hi[p] = Math.max(hi[p], leafX[j]); }
    });
    for (let i = 0; i < m; i++) {
      nodeX[i] = Math.floor((lo[i] + hi[i]) / 2);
      const p = parents[i];
      if (p >= 0) { lo[p] = Math.min(lo[p], nodeX[i]); hi[p] = Math.max(hi[p], nodeX[i]); }
    }
    const nodeY = depth.map((d) => TOP + d * ROW_H);
    const tagY = leafParents.map((p) => TOP + (p >= 0 ? depth[p] + 1 : 0) * ROW_H);
    const leafY = Math.max(TOP, ...tagY);
    const wordY = leafY + (tags.some((t) => t) ? WORD_DY : 0);  // no tag anywhere: the words take the tags' row
    const drops = [];  // from under the tag (a tagless leaf: from its edge's end) to above the word
    tagY.forEach((y, j) => {
      const y1 = tags[j] ? y + 5 : y - 12;
      drops.push(wordY - 12 > y1 ? [y1, wordY - 12] : null);
    });
    return {leafX, nodeX, nodeY, parents, leafParents, tagY, leafY, wordY, drops, width, height: wordY + MARGIN};
  }

  function treeClasses(tree, n) {  // records.py's record_classes
    const tags = tree.t || new Array(n).fill(null);
    if (tree.cls) return [tree.n.map((x) => "c-" + x[2]), tags.map((t) => (t ? "c-" + t : ""))];
    const nodeCls = tree.m ? [...tree.m].map((c) => MARKS[c] || "") : tree.n.map(() => "");
    const leafCls = tree.lm ? [...tree.lm].map((c) => MARKS[c] || "") : new Array(n).fill("");
    return [nodeCls, leafCls];
  }

  function drawTree(words, tags, nodes, nodeCls, leafCls) {
    const b = layout(words, tags, nodes);
    const cls = (base, extra, k) => (extra && extra[k] ? base + " " + extra[k] : base);
    const svg = el("svg", {class: "tree", width: b.width, height: b.height, viewBox: `0 0 ${b.width} ${b.height}`});
    b.parents.forEach((p, i) => {
      if (p >= 0) svg.appendChild(el("line", {class: "edge", x1: b.nodeX[p], y1: b.nodeY[p] + 5, x2: b.nodeX[i],
                                               y2: b.nodeY[i] - 12}));
    });
    b.leafParents.forEach((p, j) => {
      if (p >= 0) svg.appendChild(el("line", {class: "edge", x1: b.nodeX[p], y1: b.nodeY[p] + 5, x2: b.leafX[j],
                                               y2: b.tagY[j] - 12}));
    });
    nodes.forEach(([s, e, label], i) => {
      const g = el("g", {class: cls("node", nodeCls, i), "data-span": `${s}-${e}`});
      g.appendChild(el("text", {x: b.nodeX[i], y: b.nodeY[i]}, label));
      svg.appendChild(g);
    });
    words.forEach((w, j) => {
      const g = el("g", {class: cls("leaf", leafCls, j)}), drop = b.drops[j];
      if (drop) g.appendChild(el("line", {class: "drop", x1: b.leafX[j], y1: drop[0], x2: b.leafX[j], y2: drop[1]}));
      if (tags[j]) g.appendChild(el("text", {class: "tag", x: b.leafX[j], y: b.tagY[j]}, tags[j]));
      g.appendChild(el("text", {class: "word", x: b.leafX[j], y: b.wordY}, w));
      svg.appendChild(g);
    });
    return svg;
  }

  function drawRecordTree(rec, tree) {
    const words = tree.w || rec.w, tags = tree.t || new Array(words.length).fill(null);
    const [nodeCls, leafCls] = treeClasses(tree, words.length);
    return drawTree(words, tags, tree.n, nodeCls, leafCls);
  }

  // ------------------------------------------------------------------ dependency arcs
  function drawArcs(words, arcs) {
    const [xs, width] = leafXs(words, words.map(() => null));
    const maxd = Math.max(1, ...arcs.h.map((h, d) => (h ? Math.abs(h - 1 - d) : 1)));
    const up = Math.min(160, 14 + maxd * 10), down = arcs.g ? up : 10;
    const base = up + 8, svg = el("svg", {class: "arcs", width, height: base + 20 + down});
    const arc = (h, d, cls, sign) => {
      const y = sign > 0 ? base - 4 : base + 16;
      if (!h) return el("line", {class: cls, x1: xs[d], y1: sign > 0 ? 2 : y + down - 2, x2: xs[d], y2: y});
      const x1 = xs[h - 1], x2 = xs[d], hgt = Math.min(up - 4, 10 + Math.abs(h - 1 - d) * 10) * sign;
      return el("path", {class: cls, d: `M${x1},${y} C${x1},${y - hgt} ${x2},${y - hgt} ${x2},${y}`});
    };
    arcs.h.forEach((h, d) => {
      const wrong = arcs.g && arcs.g[d] !== h;
      svg.appendChild(arc(h, d, wrong ? "arc wrong" : "arc", 1));
      if (arcs.g) svg.appendChild(arc(arcs.g[d], d, "arc gold", -1));
    });
    words.forEach((w, j) => svg.appendChild(el("text", {class: "word", x: xs[j], y: base + 10}, w)));
    return svg;
  }

  // ------------------------------------------------------------------ attention heat maps
  function drawHeat(att) {
    const C = 14, rl = 7 * Math.max(...att.rows.map(len)) + 10, cl = 7 * Math.max(...att.cols.map(len)) + 10;
    const vmax = Math.max(1e-9, ...att.v.map((r) => Math.max(...r)));
    const svg = el("svg", {class: "heat", width: rl + C * att.cols.length + 10, height: cl + C * att.rows.length + 10});
    att.cols.forEach((c, j) => {
      const x = rl + j * C + C / 2 + 3;
      svg.appendChild(el("text", {class: "coll", x, y: cl - 4, transform: `rotate(-90 ${x} ${cl - 4})`}, c));
    });
    att.rows.forEach((r, i) => {
      svg.appendChild(el("text", {class: "rowl", x: rl - 4, y: cl + i * C + C - 3}, r));
      att.v[i].forEach((v, j) => {
        const a = v / vmax, shade = Math.round(255 * (1 - a));
        const rect = el("rect", {class: "cell", x: rl + j * C, y: cl + i * C, width: C - 1, height: C - 1,
                                 fill: `rgb(${shade},${shade},255)`});
        rect.appendChild(el("title", {}, `${r} \u2192 ${att.cols[j]}: ${v}`));
        svg.appendChild(rect);
      });
    });
    return svg;
  }

  // ------------------------------------------------------------------ the selected sentence
  function legend() {
    const d = html("div", "legend");
    if (DATA.mode === "compare" || DATA.mode === "induced") {
      d.appendChild(html("span", "missing", "missing (gold only)"));
      d.appendChild(html("span", "extra", "extra (predicted only)"));
      d.appendChild(html("span", "ignored", "not scored"));
    }
    return d;
  }

  function show(k) {
    const rec = SENTS[k], box = $("detail");
    selected = k;
    box.replaceChildren();
    box.appendChild(html("h2", "", `Sentence ${rec.i}` + (rec.f !== null ? ` \u2014 F1 ${rec.f}` : "") +
                         (rec.r !== undefined ? ` (R ${rec.r}, P ${rec.p})` : "") + ` \u2014 ${rec.w.length} words`));
    if (rec.s) box.appendChild(html("div", "note", rec.s));
    box.appendChild(html("p", "text", rec.w.join(" ")));
    box.appendChild(legend());
    for (const tree of rec.trees || []) {
      box.appendChild(html("h3", "", tree.title));
      const div = html("div", "box");
      div.appendChild(drawRecordTree(rec, tree));
      box.appendChild(div);
    }
    for (const arcs of rec.arcs || []) {
      box.appendChild(html("h3", "", arcs.title + (arcs.g ? " (above; gold below, wrong heads red)" : "")));
      const div = html("div", "box");
      div.appendChild(drawArcs(rec.w, arcs));
      box.appendChild(div);
    }
    for (const att of rec.att || []) {
      box.appendChild(html("h3", "", att.title));
      const div = html("div", "box");
      div.appendChild(drawHeat(att));
      box.appendChild(div);
    }
    for (const li of $("list").children) li.classList.toggle("selected", +li.dataset.k === k);
    if (location.hash !== "#" + rec.i) history.replaceState(null, "", "#" + rec.i);
  }

  // ------------------------------------------------------------------ list, search, filters
  function num(id) {
    const v = $(id).value;
    return v === "" ? null : +v;
  }

  function filter() {
    const q = $("q").value.trim().toLowerCase(), label = $("label").value, bad = $("bad").checked;
    const fmin = num("fmin"), fmax = num("fmax"), lmin = num("lmin"), lmax = num("lmax");
    shown = [];
    SENTS.forEach((s, k) => {
      const n = s.w.length;
      if ((lmin !== null && n < lmin) || (lmax !== null && n > lmax)) return;
      if ((fmin !== null && (s.f === null || s.f < fmin)) || (fmax !== null && (s.f === null || s.f > fmax))) return;
      if (bad && !s.bad) return;
      if (label && !(s.lab || []).includes(label)) return;
      if (q && !s.w.join(" ").toLowerCase().includes(q)) return;
      shown.push(k);
    });
    const order = $("sort").value;
    if (order === "f") shown.sort((a, b) => (SENTS[a].f ?? 101) - (SENTS[b].f ?? 101) || a - b);
    if (order === "n") shown.sort((a, b) => SENTS[b].w.length - SENTS[a].w.length || a - b);
    page = 0;
    renderList();
  }

  function renderList() {
    const list = $("list"), start = page * PAGE, rows = shown.slice(start, start + PAGE);
    list.replaceChildren();
    for (const k of rows) {
      const s = SENTS[k], li = html("li", s.bad ? "bad" : "");
      li.dataset.k = k;
      li.appendChild(html("span", "sid", "#" + s.i));
      li.appendChild(html("span", "sf", s.f !== null ? String(s.f) : s.c || ""));
      li.appendChild(document.createTextNode(s.w.join(" ")));
      if (k === selected) li.classList.add("selected");
      list.appendChild(li);
    }
    $("count").textContent = shown.length ? `${start + 1}\u2013${start + rows.length} of ${shown.length} sentences` +
      (shown.length < SENTS.length ? ` (${SENTS.length} in all)` : "") : `no sentence (of ${SENTS.length})`;
    $("prev").disabled = page === 0;
    $("next").disabled = start + PAGE >= shown.length;
  }

  function init() {
    document.title = DATA.title;
    $("title").textContent = DATA.title;
    for (const [name, value] of DATA.summary) {
      const d = html("div");
      d.appendChild(html("dt", "", name));
      d.appendChild(html("dd", "", value));
      $("summary").appendChild(d);
    }
    for (const lab of DATA.labels) {
      const o = html("option", "", lab);
      o.value = lab;
      $("label").appendChild(o);
    }
    const scored = SENTS.some((s) => s.f !== null);
    for (const e of document.querySelectorAll(".fscore")) e.hidden = !scored;
    $("sort").options[1].hidden = !scored;
    $("label-name").textContent = {compare: "wrong bracket", treebank: "has label", sst: "gold class",
                                   induced: "missed gold label", attention: "map"}[DATA.mode] || "label";
    $("bad-name").textContent = DATA.mode === "sst" ? "wrong class only" : "errors only";
    for (const id of ["q", "fmin", "fmax", "lmin", "lmax"]) $(id).addEventListener("input", filter);
    for (const id of ["label", "bad", "sort"]) $(id).addEventListener("change", filter);
    $("prev").addEventListener("click", () => { page -= 1; renderList(); });
    $("next").addEventListener("click", () => { page += 1; renderList(); });
    $("list").addEventListener("click", (ev) => {
      const li = ev.target.closest("li");
      if (li) show(+li.dataset.k);
    });
    filter();
    const want = +location.hash.slice(1), k = SENTS.findIndex((s) => s.i === want);
    if (SENTS.length) show(k >= 0 ? k : 0);
    window.__view = {drawTree, drawRecordTree, data: DATA, show, filter};
    window.__readyMs = performance.now();
    window.__ready = true;
  }

  init();
})();
