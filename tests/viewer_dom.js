// Runs a `dialogue-gym view` page's script under Node with a minimal DOM, for machines without Chromium.
//
//   node viewer_dom.js PAGE.html
//
// loads the page, picks every value of every filter select, opens every listed dialogue and pages
// through its turns, and prints one JSON line: {"error": message or null, "summary": text, "counts":
// text, "opened": [{"index", "turn_pages", "turns_drawn_at_most", "text"}]}. An exception anywhere is the error.
"use strict";
const fs = require("fs");

const html = fs.readFileSync(process.argv[2], "utf8");
const data = /<script type="application\/json" id="dg-data">([\s\S]*?)<\/script>/.exec(html)[1];
const script = /<script>([\s\S]*)<\/script>\s*<\/body>/.exec(html)[1];

class Node {
  constructor(tag) {
    this.tagName = tag; this.children = []; this.attributes = Object.create(null); this.listeners = Object.create(null);
    this.style = {}; this.className = ""; this._text = ""; this.parent = null; this.disabled = false; this.value = "";
    const node = this;
    this.classList = {
      add(name) { node.className = (node.className + " " + name).trim(); },
      toggle(name, on) { const names = node.className.split(" ").filter((n) => n && n !== name); if (on) names.push(name); node.className = names.join(" "); },
    };
  }
  get firstChild() { return this.children[0] || null; }
  get textContent() { return this._text + this.children.map((kid) => kid.textContent).join(""); }
  set textContent(text) { this.children = []; this._text = String(text); }
  appendChild(kid) { kid.parent = this; this.children.push(kid); return kid; }
  insertBefore(kid, before) { const at = this.children.indexOf(before); kid.parent = this; this.children.splice(at < 0 ? 0 : at, 0, kid); return kid; }
  removeChild(kid) { this.children.splice(this.children.indexOf(kid), 1); return kid; }
  setAttribute(key, value) { this.attributes[key] = String(value); if (key === "value") this.value = String(value); }
  getAttribute(key) { return key in this.attributes ? this.attributes[key] : null; }
  addEventListener(type, listener) { (this.listeners[type] = this.listeners[type] || []).push(listener); }
  fire(type, extra) { (this.listeners[type] || []).forEach((listener) => listener(Object.assign({ preventDefault() {} }, extra || {}))); }
  all(test, found = []) { if (test(this)) found.push(this); this.children.forEach((kid) => kid.all(test, found)); return found; }
}

const body = new Node("body");
const fixed = Object.create(null);
for (const id of ["dg-counts", "dg-summary", "dg-filters", "dg-list", "dg-pager", "dg-detail"]) {
  fixed[id] = body.appendChild(new Node("section"));
  fixed[id].setAttribute("id", id);
}
const dataNode = new Node("script");
dataNode.textContent = data;
global.document = {
  body,
  createElement: (tag) => new Node(tag),
  createElementNS: (ns, tag) => new Node(tag),
  createTextNode: (text) => { const node = new Node("#text"); node._text = String(text); return node; },
  getElementById: (id) => (id === "dg-data" ? dataNode : fixed[id] || body.all((n) => n.getAttribute("id") === id)[0] || null),
  querySelectorAll: (selector) => (selector === "#dg-list li" ? fixed["dg-list"].children : []),
};
global.history = { replaceState() {} };
global.location = { hash: "" };
global.performance = { now: () => 0 };

const result = { error: null, opened: [] };
try {
  new Function(script)();
  for (const select of body.all((n) => n.tagName === "select")) {
    for (const option of select.children) { select.value = option.value; select.fire("change"); }
    select.value = ""; select.fire("change");
  }
  const items = fixed["dg-list"].children.filter((item) => item.getAttribute("data-index") !== null);
  for (const item of items) {
    item.fire("click");
    const detail = fixed["dg-detail"];
    let pages = 1, most = detail.all((n) => n.className.split(" ").includes("turn")).length;
    for (let next = detail.all((n) => n.className === "dg-turn-next")[0]; next && !next.disabled; next = detail.all((n) => n.className === "dg-turn-next")[0]) {
      next.fire("click");
      pages += 1;
      most = Math.max(most, detail.all((n) => n.className.split(" ").includes("turn")).length);
    }
    result.opened.push({ index: Number(item.getAttribute("data-index")), turn_pages: pages, turns_drawn_at_most: most, text: detail.textContent });
  }
} catch (exc) {
  result.error = String(exc && exc.stack || exc);
}
result.summary = fixed["dg-summary"].textContent;
result.counts = fixed["dg-counts"].textContent;
process.stdout.write(JSON.stringify(result) + "\n");
