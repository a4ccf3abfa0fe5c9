/* kg viz page script. Every piece of corpus text reaches the page through textContent or
   text nodes (never innerHTML), so markup inside an abstract is shown, not run. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("kg-data").textContent);
  var started = performance.now();

  var el = kgEl;  // dom.js, inlined before this script

  function firstLines(text, limit) {
    text = (text || "").replace(/\s+/g, " ").trim();
    return text.length <= limit ? text : text.slice(0, limit - 1).replace(/\s+\S*$/, "") + "…";
  }

  // Node kinds and lookups --------------------------------------------------------------
  var typeOf = {};
  var neighbours = {};
  data.nodes.forEach(function (n) { typeOf[n.id] = n.group; neighbours[n.id] = []; });
  var edgeById = {};
  data.edges.forEach(function (e) {
    edgeById[e.id] = e;
    neighbours[e.from].push(e.to);
    neighbours[e.to].push(e.from);
  });
  var isPaper = function (id) { return Object.prototype.hasOwnProperty.call(data.papers, id); };

  // Evidence is [paper node, start, end]: code-point offsets into the paper's text (title +
  // newline + abstract), as kg records them; Array.from splits by code point, not UTF-16 unit.
  var codePoints = {};
  function sentence(ev) {
    var id = ev[0];
    if (!codePoints[id]) {
      var p = data.papers[id];
      codePoints[id] = Array.from(p.title ? p.title + "\n" + p.abstract : p.abstract);
    }
    return codePoints[id].slice(ev[1], ev[2]).join("");
  }

  function nodeName(id) {
    if (isPaper(id)) {
      var p = data.papers[id];
      return p.title || p.label || p.id;
    }
    return data.entities[id].name;
  }

  function tooltip(id) {
    if (isPaper(id)) {
      var p = data.papers[id];
      return el("div", {className: "kg-tip"}, [
        el("strong", {text: p.label || p.title || p.id}),
        p.title && p.label ? el("div", {className: "kg-meta", text: p.title}) : null,
        el("div", {text: firstLines(p.abstract, 280)})]);
    }
    var e = data.entities[id];
    return el("div", {className: "kg-tip"}, [
      el("strong", {text: e.name + " (" + e.type + ")"}),
      el("div", {text: e.aliases.length ? "Also: " + e.aliases.join(", ") : "No aliases"}),
      el("div", {className: "kg-meta",
                 text: e.papers + (e.papers === 1 ? " paper" : " papers") + " in the corpus"})]);
  }

  function edgeTooltip(e) {
    return el("div", {className: "kg-tip"}, [
      el("strong", {text: nodeName(e.from) + " → " + nodeName(e.to)}),
      el("div", {text: e.predicates.join(", ") + " · click for the evidence"})]);
  }

  // The network ---------------------------------------------------------------------------
  // No vis-network labels: the page draws its own (see Labels below). The tooltip holds the
  // whole name of a node whose label is shortened.
  var nodes = new vis.DataSet(data.nodes.map(function (n) {
    return {id: n.id, group: n.group, value: n.value, x: n.x, y: n.y, title: tooltip(n.id)};
  }));
  var edges = new vis.DataSet(data.edges.map(function (e) {
    var out = {id: e.id, from: e.from, to: e.to};
    // Tens of thousands of tooltip elements slow the first render; big graphs rely on the
    // panel (click) for an edge's details.
    if (data.edges.length <= 3000) out.title = edgeTooltip(e);
    if (e.relation) {
      out.arrows = "to";
      out.dashes = true;
      // No text on the line: it would lie across node labels. The tooltip and the panel name
      // the relation.
    }
    return out;
  }));
  var container = document.getElementById("kg-network");
  var network = new vis.Network(container, {nodes: nodes, edges: edges}, data.options);

  var api = {network: network, nodes: nodes, edges: edges, data: data, firstDrawMs: null,
             ready: false, sentence: sentence};
  window.kgViz = api;

  // Labels ----------------------------------------------------------------------------------
  // Drawn by the page at a fixed size on screen (vis-network's shrink with the zoom until
  // unreadable): the chosen nodes first, then papers, then entities by their links, each only
  // where it touches no label drawn before it, so labels never pile up and zooming in makes
  // room for more. A paper on the ring (kg.viz._ring_layout) is labelled outward from it.
  var FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif";
  // Widest label (px) of each tier; a longer one ends in "…" (its tooltip has the whole name).
  var LABEL_MAX_W = [280, 200, 200];
  var measure = document.createElement("canvas").getContext("2d");
  var central = {}, narrower = {};
  data.centre.forEach(function (id) { central[id] = true; });
  if (data.focus !== null && data.focus !== undefined) central[data.focus] = true;
  data.narrower.forEach(function (id) { narrower[id] = true; });
  function fitWidth(text, font, max) {
    measure.font = font;
    if (measure.measureText(text).width <= max) return text;
    var cut = text;
    while (cut.length > 1 && measure.measureText(cut + "…").width > max) {
      cut = cut.slice(0, -1);
    }
    return cut.replace(/\s+$/, "") + "…";
  }
  var labels = data.nodes.filter(function (n) { return n.label; }).map(function (n) {
    // Tiers: the chosen paper or technique; papers and the technique's narrower concepts;
    // the other entities.
    var tier = central[n.id] ? 0 : isPaper(n.id) || narrower[n.id] ? 1 : 2;
    var px = [15, 13, 12][tier];
    var font = (tier === 0 || narrower[n.id] ? "600 " : "") + px + "px " + FONT;
    var text = fitWidth(n.label, font, LABEL_MAX_W[tier]);
    measure.font = font;
    return {id: n.id, tier: tier, value: n.value, side: n.side || "", text: text, px: px,
            paper: isPaper(n.id) ? 0 : 1,
            font: font, w: Math.ceil(measure.measureText(text).width) + 2,
            h: Math.ceil(px * 1.3)};
  });
  // Within a tier, papers first: a narrower concept's label gives way to a paper's on the ring.
  labels.sort(function (a, b) {
    return a.tier - b.tier || a.paper - b.paper || b.value - a.value || a.id - b.id;
  });
  var labelOf = {};
  labels.forEach(function (l) { labelOf[l.id] = l; });

  // The label's box on screen for a node drawn at p with radius r (px): right of a node on the
  // ring's right side, left of one on its left side, else centred below the node.
  function labelBox(l, p, r) {
    var x0 = l.side === "r" ? p.x + r + 5 : l.side === "l" ? p.x - r - 5 - l.w : p.x - l.w / 2;
    var y0 = l.side ? p.y - l.h / 2 : p.y + r + 2;
    return {x0: x0, y0: y0, x1: x0 + l.w, y1: y0 + l.h};
  }
  var placed = [];
  var kept = null;  // while a node is highlighted: its neighbourhood, the only nodes labelled
  function placeLabels() {
    var s = network.getScale(), grid = {}, CELL = 64;
    function cells(b) {
      var keys = [];
      for (var gx = Math.floor(b.x0 / CELL); gx <= Math.floor(b.x1 / CELL); gx++) {
        for (var gy = Math.floor(b.y0 / CELL); gy <= Math.floor(b.y1 / CELL); gy++) {
          keys.push(gx + "," + gy);
        }
      }
      return keys;
    }
    function clashes(b, within, id) {
      return cells(b).some(function (k) {
        return (within[k] || []).some(function (o) {
          return o.id !== id && b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1;
        });
      });
    }
    // Papers and the chosen nodes are obstacles to entity labels: none is written across them.
    var discs = {};
    labels.forEach(function (l) {
      var node = network.body.nodes[l.id];
      if (l.tier === 2 || !node || node.options.hidden) return;
      var p = network.canvasToDOM({x: node.x, y: node.y}), r = node.options.size * s;
      var b = {x0: p.x - r, y0: p.y - r, x1: p.x + r, y1: p.y + r, id: l.id};
      cells(b).forEach(function (k) { (discs[k] = discs[k] || []).push(b); });
    });
    placed = [];
    var W = container.clientWidth, H = container.clientHeight;
    labels.forEach(function (l) {
      var node = network.body.nodes[l.id];
      if (!node || node.options.hidden || (kept && !kept[l.id])) return;
      var b = labelBox(l, network.canvasToDOM({x: node.x, y: node.y}), node.options.size * s);
      if (b.x0 < 0 || b.y0 < 0 || b.x1 > W || b.y1 > H) return;  // never cut by the edge
      var keys = cells(b);
      var clash = clashes(b, grid, -1) || (l.tier === 2 && clashes(b, discs, l.id));
      if (clash) return;
      keys.forEach(function (k) { (grid[k] = grid[k] || []).push(b); });
      placed.push({label: l, box: b});
    });
  }
  network.on("afterDrawing", function (ctx) {
    placeLabels();
    var ratio = network.canvas.pixelRatio || 1;
    ctx.save();
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);  // draw in screen pixels
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    ctx.lineJoin = "round";
    placed.forEach(function (item) {
      var b = item.box, y = (b.y0 + b.y1) / 2;
      ctx.font = item.label.font;
      ctx.lineWidth = 3;
      ctx.strokeStyle = "rgba(255,255,255,0.95)";
      ctx.strokeText(item.label.text, b.x0 + 1, y);
      ctx.fillStyle = "#111418";
      ctx.fillText(item.label.text, b.x0 + 1, y);
    });
    ctx.restore();
  });
  // What is labelled now: boxes in pixels of the canvas, for tests and the curious.
  api.labelsShown = function () {
    return placed.map(function (item) {
      var l = item.label;
      return {id: l.id, kind: isPaper(l.id) ? "paper" : "entity", text: l.text,
              full: nodeName(l.id), px: l.px, x0: item.box.x0, y0: item.box.y0,
              x1: item.box.x1, y1: item.box.y1};
    });
  };

  // The first view: the largest zoom (at most 1.5) at which every shown node and its label
  // fits the canvas, centred.
  function fitView() {
    var W = container.clientWidth, H = container.clientHeight, M = 12;
    var items = data.nodes.filter(function (n) {
      return !network.body.nodes[n.id].options.hidden;
    }).map(function (n) {
      var node = network.body.nodes[n.id];  // where it is now (physics may have moved it)
      return {x: node.x, y: node.y, r: node.options.size, label: labelOf[n.id] || null};
    });
    if (!items.length) return;
    function extent(s) {
      var e = {x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity};
      items.forEach(function (it) {
        var x = it.x * s, y = it.y * s, r = it.r * s;
        var boxes = [{x0: x - r, y0: y - r, x1: x + r, y1: y + r}];
        if (it.label) boxes.push(labelBox(it.label, {x: x, y: y}, r));
        boxes.forEach(function (b) {
          e.x0 = Math.min(e.x0, b.x0); e.y0 = Math.min(e.y0, b.y0);
          e.x1 = Math.max(e.x1, b.x1); e.y1 = Math.max(e.y1, b.y1);
        });
      });
      return e;
    }
    function fits(s) {
      var e = extent(s);
      return e.x1 - e.x0 <= W - 2 * M && e.y1 - e.y0 <= H - 2 * M;
    }
    var lo = 0.01, hi = 1.5;
    if (fits(hi)) lo = hi;
    for (var i = 0; i < 40 && lo < hi; i++) {
      var mid = (lo + hi) / 2;
      if (fits(mid)) lo = mid; else hi = mid;
    }
    var e = extent(lo);
    network.moveTo({position: {x: (e.x0 + e.x1) / 2 / lo, y: (e.y0 + e.y1) / 2 / lo},
                    scale: lo, animation: false});
    fitted = [W, H, lo];
  }
  var fitted = null, moved = false;
  api.fitView = fitView;
  fitView();
  // Until the reader moves the view, a canvas that changes size is fitted again.
  network.on("dragStart", function () { moved = true; });
  network.on("zoom", function () { moved = true; });
  network.on("resize", function () {
    // vis-network restores its own view right after this event: fit once it has.
    setTimeout(function () {
      if (moved) return;
      fitView();
      network.redraw();
    }, 0);
  });
  network.once("afterDrawing", function () {
    function ready() {
      api.firstDrawMs = performance.now() - started;
      api.ready = true;
    }
    // Fitted before the first frame; should the canvas have changed size on it (or the view
    // been moved), fit again and draw once more.
    if (fitted && fitted[0] === container.clientWidth && fitted[1] === container.clientHeight &&
        fitted[2] === network.getScale()) {
      ready();
      return;
    }
    fitView();
    network.once("afterDrawing", ready);
    network.redraw();
  });

  // Header ----------------------------------------------------------------------------------
  document.getElementById("kg-title").textContent = data.title;
  if (data.notice) {
    var notice = document.getElementById("kg-notice");
    notice.textContent = data.notice;
    notice.hidden = false;
  }
  function updateCounts() {
    var shown = api.visibleNodeIds().length;
    var shownEdges = edges.get({filter: function (e) { return !e.hidden; }}).length;
    document.getElementById("kg-counts").textContent =
      Object.keys(data.papers).length + " papers, " + Object.keys(data.entities).length +
      " entities, " + data.edges.length + " links" +
      (shown < data.nodes.length ? " — showing " + shown + " nodes, " + shownEdges + " links" : "");
  }

  // Filters ---------------------------------------------------------------------------------
  var typeCounts = {};
  data.nodes.forEach(function (n) { typeCounts[n.group] = (typeCounts[n.group] || 0) + 1; });
  var typeBox = document.getElementById("kg-types");
  data.types.forEach(function (t) {
    if (!typeCounts[t.type]) return;
    var box = el("input", {type: "checkbox", value: t.type, "data-type": t.type});
    box.checked = true;
    box.addEventListener("change", applyFilters);
    var swatch = el("span", {className: "kg-swatch" + (t.type === "Paper" ? " kg-square" : "")});
    swatch.style.background = t.color;
    typeBox.appendChild(el("label", {className: "kg-check"}, [
      box, swatch, t.type, el("span", {className: "kg-count", text: String(typeCounts[t.type])})]));
  });

  var techniqueSelect = document.getElementById("kg-technique");
  data.techniques.forEach(function (t, i) {
    var papers = {};
    t.members.forEach(function (m) {
      neighbours[m].forEach(function (p) { if (isPaper(p)) papers[p] = true; });
    });
    techniqueSelect.appendChild(el("option", {value: String(i),
      text: t.label + " (" + Object.keys(papers).length + ")"}));
  });
  if (!data.techniques.length) techniqueSelect.disabled = true;
  techniqueSelect.addEventListener("change", applyFilters);

  var search = document.getElementById("kg-search");
  var searchTimer = null;
  search.addEventListener("input", function () {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(applyFilters, 150);
  });

  function searchText(id) {
    if (isPaper(id)) {
      var p = data.papers[id];
      return [p.id, p.label, p.title || ""].join("\n").toLowerCase();
    }
    var e = data.entities[id];
    return [e.id, e.name].concat(e.aliases).join("\n").toLowerCase();
  }
  var haystack = {};
  data.nodes.forEach(function (n) { haystack[n.id] = searchText(n.id); });

  var hidden = {};  // node id -> currently hidden
  function applyFilters() {
    var types = {};
    typeBox.querySelectorAll("input").forEach(function (b) { types[b.value] = b.checked; });
    var tech = techniqueSelect.value === "" ? null : data.techniques[Number(techniqueSelect.value)];
    var techNodes = null;
    if (tech) {
      // Papers using the technique (or a narrower one) and every entity of those papers.
      techNodes = {};
      tech.members.forEach(function (m) {
        techNodes[m] = true;
        neighbours[m].forEach(function (p) {
          if (!isPaper(p)) return;
          techNodes[p] = true;
          neighbours[p].forEach(function (q) { techNodes[q] = true; });
        });
      });
    }
    var query = search.value.trim().toLowerCase();
    var matched = null;
    if (query) {
      matched = {};
      data.nodes.forEach(function (n) {
        if (haystack[n.id].indexOf(query) >= 0) {
          matched[n.id] = true;
          neighbours[n.id].forEach(function (q) { matched[q] = true; });
        }
      });
    }
    var nodeChanges = [];
    data.nodes.forEach(function (n) {
      var hide = !types[n.group] || (techNodes && !techNodes[n.id]) ||
                 (matched && !matched[n.id]) || false;
      if ((hidden[n.id] || false) !== hide) {
        hidden[n.id] = hide;
        nodeChanges.push({id: n.id, hidden: hide});
      }
    });
    nodes.update(nodeChanges);
    var edgeChanges = [];
    data.edges.forEach(function (e) {
      var hide = hidden[e.from] || hidden[e.to] || false;
      edgeChanges.push({id: e.id, hidden: hide});
    });
    edges.update(edgeChanges);
    updateCounts();
    if (query && matched) {
      var hits = Object.keys(matched).map(Number).filter(function (id) { return !hidden[id]; });
      if (hits.length && hits.length < data.nodes.length) {
        network.fit({nodes: hits, animation: false});
        moved = true;
      }
    }
  }

  api.visibleNodeIds = function () {
    return nodes.getIds({filter: function (n) { return !n.hidden; }});
  };
  api.applyFilters = applyFilters;

  document.getElementById("kg-physics").addEventListener("change", function (ev) {
    network.setOptions({physics: {enabled: ev.target.checked,
                                  barnesHut: {gravitationalConstant: -3000}}});
  });
  document.getElementById("kg-reset").addEventListener("click", function () {
    search.value = "";
    techniqueSelect.value = "";
    typeBox.querySelectorAll("input").forEach(function (b) { b.checked = true; });
    applyFilters();
    clearHighlight();
    network.unselectAll();
    showNothing();
    moved = false;
    fitView();
  });

  // Neighbourhood highlighting ----------------------------------------------------------------
  var dimmed = false;
  function highlight(nodeIds) {
    var keep = {};
    nodeIds.forEach(function (id) {
      keep[id] = true;
      neighbours[id].forEach(function (q) { keep[q] = true; });
    });
    nodes.update(data.nodes.map(function (n) { return {id: n.id, opacity: keep[n.id] ? 1 : 0.15}; }));
    kept = keep;
    edges.update(data.edges.map(function (e) {
      var on = keep[e.from] && keep[e.to] && (nodeIds.indexOf(e.from) >= 0 ||
                                              nodeIds.indexOf(e.to) >= 0);
      return {id: e.id, color: {opacity: on ? 1 : 0.12}};
    }));
    dimmed = true;
  }
  function clearHighlight() {
    if (!dimmed) return;
    nodes.update(data.nodes.map(function (n) { return {id: n.id, opacity: 1}; }));
    edges.update(data.edges.map(function (e) { return {id: e.id, color: {opacity: 1}}; }));
    dimmed = false;
    kept = null;
  }

  // Side panel ----------------------------------------------------------------------------------
  var panel = document.getElementById("kg-panel");
  function clearPanel() { while (panel.firstChild) panel.removeChild(panel.firstChild); }
  function showNothing() {
    clearPanel();
    panel.appendChild(el("p", {className: "kg-hint", text: "Nothing selected."}));
  }
  function nodeLink(id) {
    var link = el("a", {className: "kg-node-link", tabindex: "0", text: nodeName(id)});
    link.addEventListener("click", function () { api.select(id); });
    return link;
  }
  function evidenceList(items, limit) {
    var list = el("div");
    items.slice(0, limit).forEach(function (item) {
      list.appendChild(el("blockquote", {}, [sentence(item), " — ", nodeLink(item[0])]));
    });
    if (items.length > limit) {
      list.appendChild(el("p", {className: "kg-hint",
                                text: "… and " + (items.length - limit) + " more sentences"}));
    }
    return list;
  }

  function showNode(id) {
    clearPanel();
    var links = data.edges.filter(function (e) { return e.from === id || e.to === id; });
    if (isPaper(id)) {
      var p = data.papers[id];
      panel.appendChild(el("h2", {text: p.title || p.label || p.id}));
      if (p.title && p.label) panel.appendChild(el("p", {className: "kg-meta", text: p.label}));
      panel.appendChild(el("p", {className: "kg-meta", text: "id: " + p.id}));
      var meta = [p.venue, p.year].filter(function (x) { return x; }).join(" ");
      if (meta) panel.appendChild(el("p", {className: "kg-meta", text: meta}));
      if (p.authors.length) {
        panel.appendChild(el("p", {className: "kg-meta", text: p.authors.join(", ")}));
      }
      var out = kgPaperLinks([p.url].concat(p.links || []));
      if (out) panel.appendChild(el("p", {className: "kg-meta"}, [out]));
      panel.appendChild(el("h3", {text: "Entities and evidence"}));
      var list = el("ul");
      links.forEach(function (e) {
        var other = e.from === id ? e.to : e.from;
        list.appendChild(el("li", {}, [
          nodeLink(other), " (" + data.entities[other].type + ") — " + e.predicates.join(", "),
          el("div", {}, e.evidence.map(function (ev) {
            return el("blockquote", {text: sentence(ev)});
          }))
        ]));
      });
      panel.appendChild(list);
      panel.appendChild(el("h3", {text: "Abstract"}));
      panel.appendChild(el("p", {className: "kg-abstract", text: p.abstract}));
    } else {
      var e = data.entities[id];
      panel.appendChild(el("h2", {text: e.name}));
      panel.appendChild(el("p", {className: "kg-meta", text: e.type + " · " + e.papers +
        (e.papers === 1 ? " paper" : " papers") + " in the corpus · id: " + e.id}));
      if (e.aliases.length) {
        panel.appendChild(el("p", {className: "kg-meta", text: "Aliases: " + e.aliases.join(", ")}));
      }
      if (e.concept) panel.appendChild(el("p", {className: "kg-meta", text: e.concept}));
      panel.appendChild(el("h3", {text: "Evidence"}));
      var items = [];
      links.forEach(function (l) {
        l.evidence.forEach(function (ev) { items.push(ev); });
      });
      panel.appendChild(evidenceList(items, 60));
    }
  }

  function showEdge(edgeId) {
    clearPanel();
    var e = edgeById[edgeId];
    panel.appendChild(el("h2", {}, [nodeLink(e.from), " → ", nodeLink(e.to)]));
    panel.appendChild(el("p", {className: "kg-meta", text: e.predicates.join(", ")}));
    panel.appendChild(el("h3", {text: "Evidence"}));
    panel.appendChild(evidenceList(e.evidence, 60));
  }

  api.select = function (id, dim) {
    network.selectNodes([id]);
    if (dim === false) clearHighlight(); else highlight([id]);
    showNode(id);
  };
  api.showEdge = function (edgeId) {
    network.selectEdges([edgeId]);
    clearHighlight();
    showEdge(edgeId);
  };

  network.on("click", function (params) {
    if (params.nodes.length) {
      highlight(params.nodes);
      showNode(params.nodes[0]);
    } else if (params.edges.length) {
      clearHighlight();
      showEdge(params.edges[0]);
    } else {
      clearHighlight();
      showNothing();
    }
  });

  updateCounts();
  // The chosen paper or technique opens in the panel; its ring stays in full view (not dimmed).
  if (data.focus !== null && data.focus !== undefined) api.select(data.focus, false);
})();
