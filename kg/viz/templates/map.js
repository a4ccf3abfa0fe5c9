/* kg technique map. Positions come from Python; this script draws labels that fit (level of
   detail), answers "which papers use this technique" in the side panel, and overlays venue or
   year. Corpus text reaches the page only through textContent and text nodes (never
   innerHTML), so markup in a title or abstract is shown, not run. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("kg-data").textContent);
  var started = performance.now();
  var N = data.nodes, P = data.papers;

  var el = kgEl;  // dom.js, inlined before this script
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function short(text, limit) {
    return text.length <= limit ? text : text.slice(0, limit - 1).replace(/\s+\S*$/, "") + "…";
  }
  function plural(n, word) { return n.toLocaleString("en") + " " + word + (n === 1 ? "" : "s"); }

  // Nodes ---------------------------------------------------------------------------------
  var maxN = 1;
  N.forEach(function (n) { if (n.n > maxN) maxN = n.n; });
  var neighbours = {};
  N.forEach(function (n) { neighbours[n.id] = []; });
  data.edges.forEach(function (e) { neighbours[e.from].push(e.to); neighbours[e.to].push(e.from); });
  function radius(n) { return 5 + 2.4 * Math.sqrt(countOf(n)); }
  function labelPx(n) { return Math.round(11 + 6 * Math.sqrt(n.n / maxN)); }
  function labelText(n) { return short(n.name, 28); }
  var layerOn = {};
  data.layers.forEach(function (l) { layerOn[l.type] = false; });

  // Year filter: yearRange is [first, last] index into the year facet's values, or null (every
  // paper, those without a year too). A technique's count in a range is the sum of its
  // per-year counts (n.f.year): the same papers its panel lists, filtered by year.
  var yearFacet = data.facets.filter(function (f) { return f.name === "year"; })[0];
  var yearRange = null;
  function inYears(p) {
    if (!yearRange) return true;
    var at = yearFacet.values.indexOf(p.y);
    return at >= yearRange[0] && at <= yearRange[1];
  }
  function countOf(n) {
    if (!yearRange) return n.n;
    var c = 0;
    for (var i = yearRange[0]; i <= yearRange[1]; i++) c += n.f.year[i];
    return c;
  }

  function tooltip(n) {
    var lines = [el("strong", {text: n.name + " (" + n.type + ")"}),
                 el("div", {text: "used by " + plural(countOf(n), "paper")})];
    if (n.aliases) lines.push(el("div", {className: "kg-meta", text: "also: " + n.aliases.join(", ")}));
    if (n.c !== undefined) lines.push(el("div", {className: "kg-meta",
                                                 text: "cluster: " + data.clusters[n.c].label}));
    return el("div", {className: "kg-tip"}, lines);
  }

  var colourMode = "cluster", onlyValue = "";
  var facetTotals = {};
  data.facets.forEach(function (f) { facetTotals[f.name] = f.totals; });
  function facetOf(name) { return data.facets.filter(function (f) { return f.name === name; })[0]; }
  function baseColour(n) {
    if (colourMode === "cluster") {
      if (n.layer) return data.layerColors[n.layer];
      return n.c === undefined ? data.otherColor : data.clusters[n.c].color;
    }
    // A value's colour when the node's papers lean to it (share of that value's papers,
    // normalised), grey when it is shared.
    var f = facetOf(colourMode), counts = n.f[colourMode], totals = facetTotals[colourMode];
    var shares = counts.map(function (c, i) { return totals[i] ? c / totals[i] : 0; });
    var sum = shares.reduce(function (a, b) { return a + b; }, 0);
    var best = 0;
    shares.forEach(function (s, i) { if (s > shares[best]) best = i; });
    return sum > 0 && shares[best] / sum >= 0.6 ? f.colors[best] : data.sharedColor;
  }
  function isHidden(n) {
    if (n.layer && !layerOn[n.layer]) return true;
    if (yearRange && !countOf(n)) return true;
    if (onlyValue !== "" && colourMode !== "cluster") {
      var at = facetOf(colourMode).values.map(String).indexOf(onlyValue);
      if (at >= 0 && !n.f[colourMode][at]) return true;
    }
    return false;
  }
  var focus = null;  // {nodes: {id: true}} while a technique or paper is chosen
  function visNode(n) {
    var colour = baseColour(n);
    var dim = focus && !focus.nodes[n.id];
    return {id: n.id, x: n.x, y: n.y, size: radius(n), shape: n.layer ? "diamond" : "dot",
            hidden: isHidden(n), opacity: dim ? 0.18 : 1,
            color: {background: colour, border: n.layer ? "#1b1f24" : colour,
                    highlight: {background: colour, border: "#1b1f24"},
                    hover: {background: colour, border: "#1b1f24"}}};
  }
  var nodes = new vis.DataSet(N.map(function (n) {
    var out = visNode(n);
    out.title = tooltip(n);
    return out;
  }));
  var edges = new vis.DataSet(data.edges.map(function (e, i) {
    return {id: i, from: e.from, to: e.to, width: 0.6 + 5 * e.w,
            title: plural(e.n, "paper") + " use both (Jaccard " + e.w + ")"};
  }));
  var container = document.getElementById("kg-network");
  var network = new vis.Network(container, {nodes: nodes, edges: edges}, data.options);
  var api = {network: network, data: data, ready: false, firstDrawMs: null, mode: "map",
             initialScale: function () { return s0; }};
  window.kgViz = api;
  api.count = function (id) { return countOf(N[id]); };

  // Labels: level of detail ----------------------------------------------------------------
  // Label i shows from zoom scale z[i] up. A label is centred on its node with a fixed
  // screen size, so two labels overlap exactly while the scale is below
  // min((wi+wj)/2|dx|, (hi+hj)/2|dy|); each label's z is the largest such bound over the
  // labels ranked before it (bigger nodes, or the chosen neighbourhood) that show by then.
  var measure = document.createElement("canvas").getContext("2d");
  var FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif";
  var boxes = {};
  N.forEach(function (n) {
    var px = labelPx(n);
    measure.font = (n.n === maxN ? "600 " : "") + px + "px " + FONT;
    boxes[n.id] = {w: measure.measureText(labelText(n)).width + 6, h: px * 1.25, px: px};
  });
  var z = {}, clusterLabels = [], s0 = 1, CLUSTER_ZOOM = 1.8;
  function conflict(a, b, bw, bh) {
    var dx = Math.abs(a.x - b.x), dy = Math.abs(a.y - b.y);
    var cx = dx ? (boxes[a.id].w + bw) / (2 * dx) : Infinity;
    var cy = dy ? (boxes[a.id].h + bh) / (2 * dy) : Infinity;
    return Math.min(cx, cy);
  }
  var HEAD = 6;  // the biggest nodes are labelled before the cluster names
  function computeLevels() {
    var shown = N.filter(function (n) { return !isHidden(n) && !(focus && !focus.nodes[n.id]); });
    shown.sort(function (a, b) {
      var fa = focus && focus.first[a.id] ? 0 : 1, fb = focus && focus.first[b.id] ? 0 : 1;
      return fa - fb || b.n - a.n || a.id - b.id;
    });
    z = {};
    clusterLabels = [];
    var head = focus ? shown.length : Math.min(HEAD, shown.length);
    function level(i) {
      var n = shown[i], lv = 0;
      for (var j = 0; j < i; j++) {
        var m = shown[j];
        var c = conflict(n, m, boxes[m.id].w, boxes[m.id].h);
        if (c > z[m.id] && c > lv) lv = c;
      }
      clusterLabels.forEach(function (cl) {
        var bound = Math.min(conflictBox(cl, n), s0 * CLUSTER_ZOOM);
        if (bound > lv) lv = bound;
      });
      z[n.id] = lv;
    }
    for (var i = 0; i < head; i++) level(i);
    if (!focus) placeClusterLabels(shown.slice(0, head));
    for (i = head; i < shown.length; i++) level(i);
  }
  // Cluster names: at the initial scale, clear of the biggest labels and of each other.
  function placeClusterLabels(headNodes) {
    measure.font = "700 15px " + FONT;
    data.clusters.forEach(function (cl) {
      var members = cl.members.map(function (id) { return N[id]; })
        .filter(function (n) { return !isHidden(n); });
      if (cl.size < 2 || cl.color === data.otherColor || !members.length) return;
      var cx = 0, cy = 0;
      members.forEach(function (n) { cx += n.x; cy += n.y; });
      cx /= members.length; cy /= members.length;
      var w = measure.measureText(cl.label).width + 14, h = 15 * 1.6;
      // Kept inside the initial view, so no cluster name is cut by the canvas edge.
      var lo = network.DOMtoCanvas({x: 0, y: 0});
      var hi = network.DOMtoCanvas({x: container.clientWidth, y: container.clientHeight});
      cx = Math.max(lo.x + w / (2 * s0), Math.min(hi.x - w / (2 * s0), cx));
      var step = h / s0, best = null;
      [0, -1, 1, -2, 2, -3, 3, -4, 4, -5, 5].some(function (k) {
        var c = {x: cx, y: cy + k * step, w: w, h: h};
        var free = headNodes.every(function (n) {
          return z[n.id] > s0 || conflictBox(c, n) <= s0;
        }) && clusterLabels.every(function (o) { return boxConflict(c, o) <= s0; });
        if (free) best = c;
        return free;
      });
      if (!best) return;
      best.text = cl.label; best.color = cl.color; best.id = cl.id;
      clusterLabels.push(best);
    });
  }
  function conflictBox(c, n) {
    var dx = Math.abs(c.x - n.x), dy = Math.abs(c.y - n.y);
    return Math.min(dx ? (c.w + boxes[n.id].w) / (2 * dx) : Infinity,
                    dy ? (c.h + boxes[n.id].h) / (2 * dy) : Infinity);
  }
  function boxConflict(a, b) {
    var dx = Math.abs(a.x - b.x), dy = Math.abs(a.y - b.y);
    return Math.min(dx ? (a.w + b.w) / (2 * dx) : Infinity, dy ? (a.h + b.h) / (2 * dy) : Infinity);
  }

  var drawn = [];
  network.on("afterDrawing", function (ctx) {
    var s = network.getScale();
    drawn = [];
    ctx.save();
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.lineJoin = "round";
    if (s < s0 * CLUSTER_ZOOM) {
      clusterLabels.forEach(function (c) {
        ctx.font = "700 " + 15 / s + "px " + FONT;
        ctx.lineWidth = 4 / s;
        ctx.strokeStyle = "rgba(255,255,255,0.92)";
        ctx.strokeText(c.text, c.x, c.y);
        ctx.fillStyle = "#1b1f24";
        ctx.fillText(c.text, c.x, c.y);
        drawn.push({kind: "cluster", id: c.id, text: c.text, x: c.x, y: c.y, w: c.w / s, h: c.h / s});
      });
    }
    N.forEach(function (n) {
      if (z[n.id] === undefined || z[n.id] > s) return;
      var b = boxes[n.id];
      ctx.font = (n.n === maxN ? "600 " : "") + b.px / s + "px " + FONT;
      ctx.lineWidth = 3 / s;
      ctx.strokeStyle = "rgba(255,255,255,0.95)";
      ctx.strokeText(labelText(n), n.x, n.y);
      ctx.fillStyle = "#111418";
      ctx.fillText(labelText(n), n.x, n.y);
      drawn.push({kind: "node", id: n.id, text: labelText(n), x: n.x, y: n.y,
                  w: b.w / s, h: b.h / s});
    });
    ctx.restore();
  });
  api.labelsShown = function () { return drawn.slice(); };

  // Header, legend, menus ---------------------------------------------------------------
  document.getElementById("kg-title").textContent = data.title;
  if (data.notice) {
    var notice = document.getElementById("kg-notice");
    notice.textContent = data.notice;
    notice.hidden = false;
  }
  function drawCounts() {
    var techCount = N.filter(function (n) { return !n.layer && !isHidden(n); }).length;
    var papers = yearRange ? P.filter(inYears).length : P.length;
    document.getElementById("kg-counts").textContent = plural(papers, "paper") +
      (yearRange ? " in " + yearLabel() : "") + " · " + plural(techCount, "technique") + " · " +
      plural(data.clusters.length, "cluster");
  }
  function yearLabel() {
    var a = yearFacet.values[yearRange[0]], b = yearFacet.values[yearRange[1]];
    return a === b ? String(a) : a + "–" + b;
  }
  function clusterPapers(cl) {
    if (!yearRange) return cl.papers;
    return P.filter(function (p) { return p.c === cl.id + 1 && inYears(p); }).length;
  }

  var legend = document.getElementById("kg-legend");
  function drawLegend() {
    clear(legend);
    if (colourMode === "cluster") {
      document.getElementById("kg-legend-title").textContent = "Clusters";
      data.clusters.forEach(function (cl) {
        var sw = el("span", {className: "kg-swatch"});
        sw.style.background = cl.color;
        var li = el("li", {"data-cluster": String(cl.id), title: cl.terms.join(", ")},
                    [sw, el("span", {text: cl.terms.join(" · ") + " (" + plural(clusterPapers(cl), "paper") + ")"})]);
        li.addEventListener("click", function () {
          network.fit({nodes: cl.members.filter(function (id) { return !isHidden(N[id]); }),
                       animation: false});
        });
        legend.appendChild(li);
      });
      if (data.clusterNote) legend.appendChild(el("li", {className: "kg-hint", id: "kg-cluster-note",
                                                        text: data.clusterNote}));
    } else {
      var f = facetOf(colourMode);
      document.getElementById("kg-legend-title").textContent = "Mostly used in";
      f.values.forEach(function (v, i) {
        var sw = el("span", {className: "kg-swatch"});
        sw.style.background = f.colors[i];
        legend.appendChild(el("li", {}, [sw, el("span", {text: String(v) + " (" +
          plural(facetTotals[f.name][i], "paper") + ")"})]));
      });
      var sw2 = el("span", {className: "kg-swatch"});
      sw2.style.background = data.sharedColor;
      legend.appendChild(el("li", {}, [sw2, el("span", {text: "shared (no " + f.name +
        " has 60% of its papers, by share)"})]));
    }
  }

  var techniqueSelect = document.getElementById("kg-technique");
  function fillTechniques() {
    var chosen = techniqueSelect.value;
    clear(techniqueSelect);
    techniqueSelect.appendChild(el("option", {value: "", text: "(choose)"}));
    N.filter(function (n) { return !n.layer && !isHidden(n); }).slice()
      .sort(function (a, b) { return a.name.toLowerCase() < b.name.toLowerCase() ? -1 : 1; })
      .forEach(function (n) {
        techniqueSelect.appendChild(el("option", {value: String(n.id),
          text: n.name + " (" + countOf(n) + ")"}));
      });
    techniqueSelect.value = chosen;
  }
  fillTechniques();
  techniqueSelect.addEventListener("change", function () {
    if (techniqueSelect.value !== "") api.chooseTechnique(Number(techniqueSelect.value));
  });

  var layerBox = document.getElementById("kg-layers");
  data.layers.forEach(function (l) {
    var box = el("input", {type: "checkbox", "data-layer": l.type});
    box.addEventListener("change", function () {
      layerOn[l.type] = box.checked;
      refresh();
    });
    var sw = el("span", {className: "kg-swatch"});
    sw.style.background = data.layerColors[l.type];
    layerBox.appendChild(el("label", {className: "kg-check"},
      [box, sw, l.type + "s", el("span", {className: "kg-count", text: String(l.count)})]));
  });
  if (!data.layers.length) layerBox.hidden = true;

  var colourSelect = document.getElementById("kg-colour");
  var onlySelect = document.getElementById("kg-only");
  data.facets.forEach(function (f) {
    colourSelect.appendChild(el("option", {value: f.name, text: f.name}));
  });
  function fillOnly() {
    clear(onlySelect);
    onlySelect.appendChild(el("option", {value: "", text: "everything"}));
    var f = facetOf(colourMode);
    if (f) f.values.forEach(function (v) {
      onlySelect.appendChild(el("option", {value: String(v), text: "only " + v}));
    });
    onlySelect.disabled = !f;
  }
  colourSelect.addEventListener("change", function () {
    colourMode = colourSelect.value;
    onlyValue = "";
    fillOnly();
    drawLegend();
    refresh();
  });
  onlySelect.addEventListener("change", function () { onlyValue = onlySelect.value; refresh(); });

  function refresh() {
    nodes.update(N.map(visNode));
    computeLevels();
    network.redraw();
  }

  var yearBox = document.getElementById("kg-years");
  var yearFrom = document.getElementById("kg-year-from");
  var yearTo = document.getElementById("kg-year-to");
  var shown = null;  // what the panel shows: {technique: id} or {paper: i}
  if (yearFacet) {
    yearBox.hidden = false;
    yearFacet.values.forEach(function (y) {
      yearFrom.appendChild(el("option", {value: String(y), text: String(y)}));
      yearTo.appendChild(el("option", {value: String(y), text: String(y)}));
    });
    yearTo.value = String(yearFacet.values[yearFacet.values.length - 1]);
    var onYears = function () { api.setYears(Number(yearFrom.value), Number(yearTo.value)); };
    yearFrom.addEventListener("change", onYears);
    yearTo.addEventListener("change", onYears);
  }
  // Restrict the map to papers from year `from` to `to` (every year: no filter, papers
  // without a year shown too): sizes, menu, legend, header and panel count those papers.
  api.setYears = function (from, to) {
    var vals = yearFacet.values.map(Number);
    var lo = vals.filter(function (y) { return y >= Math.min(from, to); })[0];
    var hi = vals.filter(function (y) { return y <= Math.max(from, to); }).pop();
    var range = lo === undefined || hi === undefined || lo > hi ? [1, 0] :
      [vals.indexOf(lo), vals.indexOf(hi)];
    yearRange = range[0] === 0 && range[1] === vals.length - 1 ? null : range;
    yearFrom.value = String(from);
    yearTo.value = String(to);
    nodes.update(N.map(function (n) { var out = visNode(n); out.title = tooltip(n); return out; }));
    fillTechniques();
    drawCounts();
    drawLegend();
    computeLevels();
    network.redraw();
    if (shown && shown.technique !== undefined) showTechnique(N[shown.technique]);
    else if (shown && shown.paper !== undefined) showPaper(shown.paper);
  };

  // Side panel -------------------------------------------------------------------------------
  var panel = document.getElementById("kg-panel");
  function techLink(id) {
    var a = el("a", {className: "kg-node-link", tabindex: "0", title: N[id].name,
                     text: short(N[id].name, 40)});
    a.addEventListener("click", function () { api.chooseTechnique(id); });
    return a;
  }
  function paperLink(i) {
    var a = el("a", {className: "kg-node-link", tabindex: "0", text: P[i].t});
    a.addEventListener("click", function () { api.choosePaper(i); });
    return a;
  }
  function outLink(p) { return kgPaperLinks([p.u].concat(p.l || [])); }
  function paperItem(row) {
    var p = P[row[0]];
    var meta = [p.v, p.y && (!p.v || p.v.indexOf(String(p.y)) < 0) ? String(p.y) : null]
      .filter(function (x) { return x; }).join(" · ");
    return el("li", {className: "kg-paper", "data-paper": p.id}, [
      paperLink(row[0]), meta ? el("span", {className: "kg-conf", text: " · " + meta}) : null,
      outLink(p),
      el("blockquote", {text: p.s ? p.s[row[1]] : ""}),
      row[2] === null ? null : el("span", {className: "kg-conf", text: "confidence " + row[2]})]);
  }
  function rowsInYears(rows) {
    return yearRange ? rows.filter(function (row) { return inYears(P[row[0]]); }) : rows;
  }
  // "Combined with" within the year range: counted as kg.viz.map._panel counts it, over the
  // papers that use it, without it and its narrower techniques (n.narrow).
  function combinedWith(n, rows) {
    if (!yearRange) return n.with;
    var counts = {};
    rows.forEach(function (row) {
      P[row[0]].k.forEach(function (j) {
        if (!N[j].layer && n.narrow.indexOf(j) < 0) counts[j] = (counts[j] || 0) + 1;
      });
    });
    return Object.keys(counts).map(Number)
      .sort(function (a, b) { return counts[b] - counts[a] || a - b; }).slice(0, 8)
      .map(function (j) { return [j, counts[j]]; });
  }
  function showTechnique(n) {
    shown = {technique: n.id};
    clear(panel);
    panel.appendChild(el("h2", {text: n.name}));
    var useRows = rowsInYears(n.uses), mentionRows = rowsInYears(n.mentions);
    var nUses = yearRange ? countOf(n) : n.usesTotal || n.uses.length;
    var nMentions = yearRange ? mentionRows.length : n.mentionsTotal || n.mentions.length;
    panel.appendChild(el("p", {className: "kg-meta", text: n.type + " · used by " +
      plural(nUses, "paper") + (yearRange ? " in " + yearLabel() : "") +
      (nMentions ? ", mentioned only by " + nMentions : "") +
      (n.c !== undefined ? " · cluster: " + data.clusters[n.c].label : "")}));
    if (n.aliases) panel.appendChild(el("p", {className: "kg-meta", text: "Also: " + n.aliases.join(", ")}));
    var withRows = combinedWith(n, useRows);
    if (withRows.length) {
      panel.appendChild(el("h3", {text: "Most often combined with"}));
      var w = el("ul", {id: "kg-with"});
      withRows.forEach(function (pair) {
        w.appendChild(el("li", {}, [techLink(pair[0]), " — " + plural(pair[1], "paper")]));
      });
      panel.appendChild(w);
    }
    panel.appendChild(el("h3", {text: "Papers that use it (" + nUses + ")"}));
    var uses = el("ul", {id: "kg-uses"});
    useRows.forEach(function (row) { uses.appendChild(paperItem(row)); });
    panel.appendChild(uses);
    if (nUses > useRows.length) {
      panel.appendChild(el("p", {className: "kg-hint", text: "the " + useRows.length +
        " surest of " + nUses + " listed; all: kg shared \"" + n.name + "\" --graph DIR"}));
    }
    if (mentionRows.length) {
      panel.appendChild(el("h3", {text: "Papers that only mention it — negated, contrasted " +
                                        "or prior work (" + mentionRows.length + ")"}));
      var ment = el("ul", {id: "kg-mentions"});
      mentionRows.forEach(function (row) { ment.appendChild(paperItem(row)); });
      panel.appendChild(ment);
    }
  }
  function showPaper(i) {
    shown = {paper: i};
    var p = P[i];
    clear(panel);
    panel.appendChild(el("h2", {text: p.t}));
    var meta = [p.v, p.y ? String(p.y) : null].filter(function (x) { return x; }).join(" · ");
    if (meta) panel.appendChild(el("p", {className: "kg-meta", text: meta}));
    panel.appendChild(el("p", {className: "kg-meta"}, ["id: " + p.id, outLink(p)]));
    panel.appendChild(el("h3", {text: "Techniques it uses"}));
    var ks = el("ul", {id: "kg-paper-techniques"});
    p.k.forEach(function (id) { ks.appendChild(el("li", {}, [techLink(id)])); });
    if (!p.k.length) ks.appendChild(el("li", {className: "kg-hint", text: "none on the map"}));
    panel.appendChild(ks);
    if (p.m && p.m.length) {
      panel.appendChild(el("h3", {text: "Only mentions"}));
      var ms = el("ul");
      p.m.forEach(function (id) { ms.appendChild(el("li", {}, [techLink(id)])); });
      panel.appendChild(ms);
    }
    panel.appendChild(el("h3", {text: "Most related papers (as kg related ranks them)"}));
    var rel = el("ol", {id: "kg-related"});
    if (!p.r) {  // not precomputed for very large corpora
      rel.appendChild(el("li", {className: "kg-hint",
                                text: "run: kg related " + p.id + " --graph DIR"}));
      panel.appendChild(rel);
      return;
    }
    p.r.forEach(function (row) {
      var q = P[row[0]];
      rel.appendChild(el("li", {className: "kg-paper", "data-paper": q.id}, [
        paperLink(row[0]), outLink(q),
        el("div", {className: "kg-shared", text: "shares: " + row[2].join(", ") +
                                                 " (score " + row[1] + ")"})]));
    });
    if (!p.r.length) rel.appendChild(el("li", {className: "kg-hint", text: "none share anything"}));
    panel.appendChild(rel);
  }

  // Choosing --------------------------------------------------------------------------------
  function setFocus(ids, first) {
    var keep = {}, top = {};
    ids.forEach(function (id) { keep[id] = true; });
    (first || []).forEach(function (id) { top[id] = true; keep[id] = true; });
    focus = {nodes: keep, first: top};
    nodes.update(N.map(visNode));
    var visible = Object.keys(keep).map(Number).filter(function (id) { return !isHidden(N[id]); });
    if (visible.length) network.fit({nodes: visible, animation: false});
    computeLevels();
    network.redraw();
  }
  api.chooseTechnique = function (id) {
    var n = N[id];
    if (n.layer && !layerOn[n.layer]) {
      layerOn[n.layer] = true;
      layerBox.querySelector('input[data-layer="' + n.layer + '"]').checked = true;
    }
    setFocus([id].concat(neighbours[id]), [id]);
    network.selectNodes([id]);
    techniqueSelect.value = n.layer ? "" : String(id);
    showTechnique(n);
  };
  api.choosePaper = function (i) {
    var ids = P[i].k.slice();
    setFocus(ids, ids);
    network.selectNodes(ids.filter(function (id) { return !isHidden(N[id]); }));
    showPaper(i);
  };
  api.reset = function () {
    focus = null;
    techniqueSelect.value = "";
    network.unselectAll();
    nodes.update(N.map(visNode));
    fitAll();
    computeLevels();
    network.redraw();
    clear(panel);
    shown = null;
    panel.appendChild(el("p", {className: "kg-hint",
      text: "Click a technique, or choose one in the menu, to list the papers that use it."}));
  };
  document.getElementById("kg-reset").addEventListener("click", api.reset);
  network.on("click", function (params) {
    if (params.nodes.length) api.chooseTechnique(params.nodes[0]);
    else if (!params.edges.length && focus) {
      focus = null;
      nodes.update(N.map(visNode));
      computeLevels();
      network.redraw();
    }
  });

  // Search: techniques (name, alias) then papers (title, id) --------------------------------
  var search = document.getElementById("kg-search");
  var results = document.getElementById("kg-results");
  api.search = function (query) {
    var q = query.trim().toLowerCase(), out = [];
    if (!q) return out;
    N.forEach(function (n) {
      var names = [n.name].concat(n.aliases || []).map(function (s) { return s.toLowerCase(); });
      var exact = names.indexOf(q) >= 0;
      if (exact || names.some(function (s) { return s.indexOf(q) >= 0; })) {
        out.push({kind: "technique", id: n.id, text: n.name, rank: exact ? 0 : 1, n: countOf(n)});
      }
    });
    out.sort(function (a, b) { return a.rank - b.rank || b.n - a.n; });
    out = out.slice(0, 10);
    var papers = 0;
    for (var i = 0; i < P.length && papers < 15; i++) {
      var forum = /[?&]id=([^&#\s]+)/.exec(P[i].id);  // an OpenReview URL's forum id
      if (P[i].t.toLowerCase().indexOf(q) >= 0 || P[i].id.toLowerCase() === q ||
          (forum && forum[1].toLowerCase() === q)) {
        out.push({kind: "paper", id: i, text: P[i].t});
        papers++;
      }
    }
    return out;
  };
  function choose(hit) {
    if (hit.kind === "technique") api.chooseTechnique(hit.id);
    else api.choosePaper(hit.id);
  }
  var searchTimer = null;
  search.addEventListener("input", function () {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(function () {
      clear(results);
      api.search(search.value).forEach(function (hit) {
        var a = el("a", {tabindex: "0", title: hit.text},
                   [el("span", {className: "kg-kind", text: hit.kind}), hit.text]);
        a.addEventListener("click", function () { choose(hit); });
        results.appendChild(a);
      });
    }, 120);
  });
  search.addEventListener("keydown", function (ev) {
    if (ev.key !== "Enter") return;
    var hits = api.search(search.value);
    if (hits.length) choose(hits[0]);
  });

  // Fit, then step back a little so the outermost labels are not cut by the canvas edge.
  function fitAll() {
    network.fit({animation: false});
    network.moveTo({scale: network.getScale() * 0.9, animation: false});
    s0 = network.getScale();
  }
  drawCounts();
  drawLegend();
  fillOnly();
  fitAll();
  computeLevels();
  network.once("afterDrawing", function () {
    // The canvas takes its final size on the first frame: fit again, then place labels.
    fitAll();
    computeLevels();
    network.once("afterDrawing", function () {
      api.firstDrawMs = performance.now() - started;
      api.ready = true;
    });
    network.redraw();
  });
  network.redraw();
})();
