// The DOM helper both pages use (viz.js and map.js); kg.viz inlines it before each.
// Text always goes in as text nodes or textContent, never as HTML.
function kgEl(tag, attrs, children) {
  var node = document.createElement(tag);
  var key;
  for (key in attrs || {}) {
    if (key === "text") node.textContent = attrs[key];
    else if (key === "className") node.className = attrs[key];
    else node.setAttribute(key, attrs[key]);
  }
  (children || []).forEach(function (child) {
    if (child === null || child === undefined) return;
    node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  });
  return node;
}

// A paper's links (its url, then paper.links): only http(s) URLs become links, named by
// their host; anything else (javascript:, data:, a bare word) is left out.
function kgPaperLinks(urls) {
  var seen = {}, out = [];
  (urls || []).forEach(function (url) {
    if (typeof url !== "string" || !/^https?:\/\/[^\s]/i.test(url) || seen[url]) return;
    seen[url] = true;
    var host = url.replace(/^https?:\/\//i, "").split(/[\/?#]/)[0].replace(/^www\./, "");
    out.push(kgEl("a", {className: "kg-out", href: url, target: "_blank",
                        rel: "noopener noreferrer", title: url, text: host + " ↗"}));
  });
  return out.length ? kgEl("span", {className: "kg-links"}, out) : null;
}
