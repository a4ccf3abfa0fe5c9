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
