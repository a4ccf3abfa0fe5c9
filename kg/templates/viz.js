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
  var nodes = new vis.DataSet(data.nodes.map(function (n) {
    return {id: n.id, label: n.label, group: n.group, value: n.value, x: n.x, y: n.y,
            title: tooltip(n.id)};
  }));
  var edges = new vis.DataSet(data.edges.map(function (e) {
    var out = {id: e.id, from: e.from, to: e.to};
    // Tens of thousands of tooltip elements slow the first render; big graphs rely on the
    // panel (click) for an edge's details.
    if (data.edges.length <= 3000) out.title = edgeTooltip(e);
    if (e.relation) {
      out.arrows = "to";
      out.dashes = true;
      out.label = e.predicates.join(", ");
      out.font = {size: 10, align: "middle"};
    }
    return out;
  }));
  var container = document.getElementById("kg-network");
  var network = new vis.Network(container, {nodes: nodes, edges: edges}, data.options);

  var api = {network: network, nodes: nodes, edges: edges, data: data, firstDrawMs: null,
             ready: false, sentence: sentence};
  window.kgViz = api;
  network.once("afterDrawing", function () {
    api.firstDrawMs = performance.now() - started;
    api.ready = true;
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
    network.fit({animation: false});
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
      if (p.url) panel.appendChild(el("p", {className: "kg-meta", text: p.url}));
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

  api.select = function (id) {
    network.selectNodes([id]);
    highlight([id]);
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
  if (data.focus !== null && data.focus !== undefined) api.select(data.focus);
})();
