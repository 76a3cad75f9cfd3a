// Markdown for the chat page of x/conduit/web, written for it: no library,
// no build step. index.html loads it before app.js, which uses
// window.lodeMarkdown.
//
// It builds DOM nodes and sets only textContent and a checked href, never
// inner HTML, so that text from a model, a tool or a person can make
// elements of the kinds below and nothing else: no script, no handler, no
// style, no image, and links only to http: and https: addresses.
//
// Blocks: fenced code (``` or ~~~, with a language), headings (#…######),
// block quotes, lists (-, *, + and 1.), rules (---), paragraphs; a line
// break inside a paragraph is kept. Inline: `code`, **strong**, *em*,
// _em_, ~~del~~, [text](http://…) and bare http(s) addresses.
//
// Cost: linear in the text's length, whatever the text. Every scan moves
// forward: block lines are classified by hand, without regular expressions
// that could backtrack; a code span's closing run, a link's closing bracket
// and its address are each found once and remembered; emphasis is matched
// with a delimiter stack whose searches never pass the same delimiter twice
// for one kind of closer (CommonMark's "process emphasis" with its bottoms).
// Depth is bounded: quotes and lists nest at most MAX_DEPTH deep, and what
// lies deeper is shown as plain text; emphasis nests at most
// MAX_INLINE_DEPTH deep, and deeper delimiters are shown as written. Only
// the nesting of blocks recurses (at most MAX_DEPTH calls, and link text
// once more); inline nodes are built with an explicit stack.
"use strict";
(function (global) {
  // MAX_DEPTH is how deep block quotes and list items nest; a container
  // deeper than this shows its lines as plain text.
  const MAX_DEPTH = 24;
  // MAX_INLINE_DEPTH is how deep strong, em and del nest; a deeper pair of
  // delimiters is shown as the characters written.
  const MAX_INLINE_DEPTH = 16;

  // ops counts the steps of the last render: one per character or line
  // looked at, per delimiter examined and per node built. The tests read it
  // (lodeMarkdown.ops()) to check that the work grows linearly.
  let ops = 0;

  function el(tag, cls) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  }

  // safeURL is the address a link may have: absolute http or https, else
  // null (script and data addresses, relative paths and the rest are not links).
  function safeURL(raw) {
    let u;
    try { u = new URL(raw); } catch (_) { return null; }
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
  }

  const SPACE = /\s/;
  const PUNCT = /[\p{P}\p{S}]/u;
  // ws is whether c, one character or "" for the edge of the text, is
  // white space; an edge counts as space.
  function ws(c) { return c === "" || c === undefined || SPACE.test(c); }
  function punct(c) { return c !== "" && c !== undefined && PUNCT.test(c); }
  const ESCAPABLE = "\\`*_{}[]()#+-.!~>|";
  // Where an autolink stops, and what it does not end with.
  const URL_STOP = " \t\n\r\f\v<>()[]";
  const URL_TRAIL = ".,;:!?'\"*_~";

  // appendText appends s to parent, a newline as a <br>.
  function appendText(parent, s) {
    let from = 0;
    for (;;) {
      const nl = s.indexOf("\n", from);
      const piece = nl < 0 ? s.slice(from) : s.slice(from, nl);
      ops += piece.length + 1;
      if (piece) parent.append(document.createTextNode(piece));
      if (nl < 0) return;
      parent.append(el("br"));
      from = nl + 1;
    }
  }

  // --- Inline text.
  //
  // inline appends the nodes of one paragraph's text to parent, in three
  // passes, each linear: scan cuts the text into items (text, finished
  // nodes such as code and links, and runs of *, _ or ~); emphasis pairs
  // the runs; build turns the items into nodes with an explicit stack.
  function inline(text, parent, inLink) {
    const items = scan(text, inLink);
    emphasis(items.first);
    build(items.list, parent);
  }

  function scan(text, inLink) {
    const n = text.length;
    const list = [];
    let first = null, last = null;
    let from = 0; // start of the plain text not yet in list
    const plainTo = (i) => { if (i > from) list.push({ text: text.slice(from, i) }); };

    // Code spans: every backtick run, by length, found once; an opening run
    // closes at the next run of the same length after it.
    let runs = null;
    const next = new Map(); // run length -> index into runs.get(length)
    function codeClose(after, len) {
      if (!runs) {
        runs = new Map();
        for (let i = text.indexOf("`"); i >= 0 && i < n;) {
          let j = i;
          while (j < n && text[j] === "`") { j++; ops++; }
          const l = j - i;
          if (!runs.has(l)) runs.set(l, []);
          runs.get(l).push(i);
          i = text.indexOf("`", j);
        }
      }
      const at = runs.get(len);
      if (!at) return -1;
      let k = next.get(len) || 0;
      while (k < at.length && at[k] < after) { k++; ops++; }
      next.set(len, k);
      return k < at.length ? at[k] : -1;
    }

    // Links: the "]" (or newline) after a "[" is the same for every "[" before
    // it, so one scan serves them all; the address after a "](" is parsed
    // once, whichever "[" asks.
    let closeAt = -1;
    function nextClose(i) {
      if (i < closeAt) return closeAt;
      let j = i + 1;
      while (j < n && text[j] !== "]" && text[j] !== "\n") { j++; ops++; }
      closeAt = j;
      return j;
    }
    let destFor = -1, dest = null;
    function destination(close) {
      if (close === destFor) return dest;
      destFor = close;
      dest = parseDestination(text, close + 2);
      return dest;
    }

    let i = 0;
    while (i < n) {
      ops++;
      const c = text[i];
      if (c === "\\" && i + 1 < n && ESCAPABLE.includes(text[i + 1])) {
        plainTo(i);
        from = i + 1;
        i += 2;
        continue;
      }
      if (c === "`") {
        let j = i;
        while (j < n && text[j] === "`") { j++; ops++; }
        const close = codeClose(j, j - i);
        if (close < 0) { i = j; continue; } // the run is text
        plainTo(i);
        let body = text.slice(j, close);
        if (body.length >= 2 && body[0] === " " && body[body.length - 1] === " ") body = body.slice(1, -1);
        const code = el("code");
        code.textContent = body;
        ops += body.length;
        list.push({ node: code });
        i = from = close + (j - i);
        continue;
      }
      if (c === "*" || c === "_" || c === "~") {
        let j = i;
        while (j < n && text[j] === c) { j++; ops++; }
        const len = j - i;
        if (c === "~" && len !== 2) { i = j; continue; } // only ~~ strikes through
        const before = i > 0 ? text[i - 1] : "", after = j < n ? text[j] : "";
        const left = !ws(after) && (!punct(after) || ws(before) || punct(before));
        const right = !ws(before) && (!punct(before) || ws(after) || punct(after));
        let canOpen = left, canClose = right;
        if (c === "_") {
          canOpen = left && (!right || punct(before));
          canClose = right && (!left || punct(after));
        }
        if (!canOpen && !canClose) { i = j; continue; }
        plainTo(i);
        const d = { ch: c, len: len, count: len, canOpen: canOpen, canClose: canClose, opens: [], closes: [], pos: list.length, prev: last, next: null };
        if (last) last.next = d; else first = d;
        last = d;
        list.push(d);
        i = from = j;
        continue;
      }
      if (c === "[") {
        const close = nextClose(i);
        if (close < n && text[close] === "]" && text[close + 1] === "(") {
          const d = destination(close);
          if (d) {
            plainTo(i);
            list.push({ node: linkNode(text.slice(i + 1, close), d.url, inLink) });
            i = from = d.end;
            continue;
          }
        }
        i++;
        continue;
      }
      if (c === "h" && (text.startsWith("http://", i) || text.startsWith("https://", i))) {
        const end = autolinkEnd(text, i);
        if (end > i) {
          const raw = text.slice(i, end);
          const href = inLink ? null : safeURL(raw);
          if (href) {
            plainTo(i);
            const a = anchor(href);
            a.textContent = raw;
            list.push({ node: a });
            from = end;
          }
          i = end; // a URL inside link text stays text, and no emphasis
          continue;
        }
      }
      i++;
    }
    plainTo(n);
    return { list: list, first: first };
  }

  // parseDestination reads a link's "(address "title")" from just after
  // its "(": the address may hold one level of balanced parentheses. It
  // returns the address and where the link ends, or null.
  function parseDestination(text, p) {
    const n = text.length;
    while (p < n && ws(text[p])) { p++; ops++; }
    if (text[p] === "<") p++;
    const start = p;
    while (p < n) {
      ops++;
      const c = text[p];
      if (c === "(") {
        let q = p + 1;
        while (q < n && text[q] !== "(" && text[q] !== ")" && !ws(text[q])) { q++; ops++; }
        if (text[q] !== ")") break;
        p = q + 1;
        continue;
      }
      if (c === ")" || c === "<" || c === ">" || ws(c)) break;
      p++;
    }
    const url = text.slice(start, p);
    if (text[p] === ">") p++;
    if (p < n && ws(text[p])) { // a title: white space, then "…"
      let q = p;
      while (q < n && ws(text[q])) { q++; ops++; }
      if (text[q] === '"') {
        let r = q + 1;
        while (r < n && text[r] !== '"' && text[r] !== "\n") { r++; ops++; }
        if (text[r] === '"') p = r + 1;
      }
    }
    while (p < n && ws(text[p])) { p++; ops++; }
    return text[p] === ")" ? { url: url, end: p + 1 } : null;
  }

  // autolinkEnd is where a bare address starting at i ("http://" or
  // "https://") ends, without the punctuation that ends a sentence; i when
  // nothing follows the scheme.
  function autolinkEnd(text, i) {
    const n = text.length;
    const scheme = text.startsWith("https://", i) ? 8 : 7;
    let j = i + scheme;
    while (j < n && !URL_STOP.includes(text[j])) { j++; ops++; }
    while (j > i + scheme && URL_TRAIL.includes(text[j - 1])) { j--; ops++; }
    return j > i + scheme ? j : i;
  }

  function anchor(href) {
    const a = el("a");
    a.href = href;
    a.rel = "noopener noreferrer";
    a.target = "_blank";
    return a;
  }

  // linkNode is a link to url showing label, or, for an address that is
  // not http(s) or a link inside a link, the label alone, marked refused.
  // The label holds no "]" and no newline, so this recursion is one deep.
  function linkNode(label, url, inLink) {
    const href = inLink ? null : safeURL(url);
    const e = href ? anchor(href) : el("span", "link-refused");
    inline(label, e, true);
    return e;
  }

  // emphasis pairs runs of delimiters, as CommonMark does: each closer
  // looks back for the nearest opener of its kind; bottom remembers, per
  // kind of closer, below which position no opener was found, so that no
  // search passes the same delimiter twice. A pair records its tag in the
  // opener's opens and the closer's closes.
  function emphasis(first) {
    const bottom = {};
    const unlink = d => {
      if (d.prev) d.prev.next = d.next;
      if (d.next) d.next.prev = d.prev;
    };
    let closer = first;
    while (closer) {
      ops++;
      if (!closer.canClose) { closer = closer.next; continue; }
      const key = closer.ch + (closer.canOpen ? "o" : "c") + (closer.len % 3);
      const floor = key in bottom ? bottom[key] : -1;
      let opener = closer.prev, found = null;
      while (opener && opener.pos > floor) {
        ops++;
        if (opener.ch === closer.ch && opener.canOpen) {
          if (closer.ch === "~") {
            if (opener.count === closer.count) { found = opener; break; }
          } else if (!((closer.canOpen || opener.canClose) && closer.len % 3 !== 0 && (opener.len + closer.len) % 3 === 0)) {
            found = opener;
            break;
          }
        }
        opener = opener.prev;
      }
      if (!found) {
        bottom[key] = closer.prev ? closer.prev.pos : -1;
        const nx = closer.next;
        if (!closer.canOpen) unlink(closer);
        closer = nx;
        continue;
      }
      const use = closer.ch === "~" ? 2 : closer.count >= 2 && found.count >= 2 ? 2 : 1;
      const tag = closer.ch === "~" ? "del" : use === 2 ? "strong" : "em";
      found.count -= use;
      closer.count -= use;
      found.opens.push(tag);
      closer.closes.push(tag);
      found.next = closer; // the delimiters between can no longer pair
      closer.prev = found;
      if (found.count === 0) unlink(found);
      if (closer.count === 0) {
        const nx = closer.next;
        unlink(closer);
        closer = nx;
      }
    }
  }

  function marks(tag, ch) { return tag === "em" ? ch : ch + ch; }

  // build appends items to parent. A run of delimiters is its closing tags
  // (the characters it used first), then its unused characters, then its
  // opening tags, the outermost first. Past MAX_INLINE_DEPTH a pair is
  // shown as its characters.
  function build(list, parent) {
    const stack = [];
    let cur = parent;
    for (const it of list) {
      ops++;
      if (it.text !== undefined) { appendText(cur, it.text); continue; }
      if (it.node) { cur.append(it.node); continue; }
      for (const tag of it.closes) {
        const top = stack.pop();
        if (top === undefined) break;
        if (top.flat) appendText(cur, marks(tag, it.ch));
        cur = stack.length ? stack[stack.length - 1].el : parent;
      }
      if (it.count > 0) appendText(cur, it.ch.repeat(it.count));
      for (let k = it.opens.length - 1; k >= 0; k--) {
        const tag = it.opens[k];
        if (stack.length >= MAX_INLINE_DEPTH) {
          appendText(cur, marks(tag, it.ch));
          stack.push({ el: cur, flat: true });
          continue;
        }
        const e = el(tag);
        cur.append(e);
        stack.push({ el: e, flat: false });
        cur = e;
      }
    }
  }

  // --- Blocks. Each classifier looks at one line from its start and
  // moves forward only.

  // lead is how many spaces, at most three, start line.
  function lead(line) {
    let i = 0;
    while (i < 3 && line[i] === " ") i++;
    return i;
  }

  // fence is the opening of a fenced code block: its character, length
  // and info word; or null.
  function fence(line) {
    const i = lead(line), c = line[i];
    if (c !== "`" && c !== "~") return null;
    let j = i;
    while (line[j] === c) j++;
    if (j - i < 3) return null;
    if (c === "`" && line.indexOf("`", j) >= 0) return null;
    while (j < line.length && ws(line[j])) j++;
    let k = j;
    while (k < line.length && !ws(line[k])) k++;
    return { ch: c, len: j - i, info: line.slice(j, k) };
  }
  // closes is whether line closes the fenced block f.
  function closes(line, f) {
    let i = 0;
    while (i < line.length && ws(line[i])) i++;
    let j = i;
    while (line[j] === f.ch) j++;
    if (j - i < f.len) return false;
    while (j < line.length && ws(line[j])) j++;
    return j === line.length;
  }

  // heading is a heading's level and text, without a closing run of #.
  function heading(line) {
    const i = lead(line);
    let j = i;
    while (line[j] === "#") j++;
    const level = j - i;
    if (level < 1 || level > 6 || (j < line.length && !ws(line[j]))) return null;
    let s = j, e = line.length;
    while (s < e && ws(line[s])) s++;
    while (e > s && ws(line[e - 1])) e--;
    let k = e;
    while (k > s && line[k - 1] === "#") k--;
    if (k === s || ws(line[k - 1])) {
      e = k;
      while (e > s && ws(line[e - 1])) e--;
    }
    return { level: level, text: line.slice(s, e) };
  }

  // rule is whether line is a thematic break: three or more of one of
  // - * _, with only white space between.
  function rule(line) {
    let i = lead(line);
    const c = line[i];
    if (c !== "-" && c !== "*" && c !== "_") return false;
    let count = 0;
    for (; i < line.length; i++) {
      if (line[i] === c) count++;
      else if (!ws(line[i])) return false;
    }
    return count >= 3;
  }

  // quote is a block quote line's text after its ">" and one space, or null.
  function quote(line) {
    let i = lead(line);
    if (line[i] !== ">") return null;
    i++;
    if (i < line.length && ws(line[i])) i++;
    return line.slice(i);
  }

  // item is a list item's kind ("ul" or "ol"), number and text, or null.
  function item(line) {
    const i = lead(line), c = line[i];
    let j, kind, start = 1;
    if (c === "-" || c === "*" || c === "+") {
      kind = "ul";
      j = i + 1;
    } else {
      j = i;
      while (j - i < 10 && line[j] >= "0" && line[j] <= "9") j++;
      if (j === i || j - i > 9 || (line[j] !== "." && line[j] !== ")")) return null;
      kind = "ol";
      start = parseInt(line.slice(i, j), 10);
      j++;
    }
    if (j >= line.length || !ws(line[j])) return null;
    while (j < line.length && ws(line[j])) j++;
    return { kind: kind, start: start, text: line.slice(j) };
  }

  // indented is whether line starts with at least two white-space characters.
  function indented(line) { return line.length >= 2 && ws(line[0]) && ws(line[1]); }
  // unindent drops up to four leading white-space characters, when there
  // are at least two.
  function unindent(line) {
    let i = 0;
    while (i < 4 && i < line.length && ws(line[i])) i++;
    return i >= 2 ? line.slice(i) : line;
  }

  // plain shows lines as text in a paragraph, nothing parsed.
  function plain(lines, parent) {
    const p = el("p");
    lines.forEach((l, i) => {
      if (i > 0) p.append(el("br"));
      ops += l.length + 1;
      if (l) p.append(document.createTextNode(l));
    });
    parent.append(p);
  }

  // blocks renders lines into parent, at a depth of nested containers.
  function blocks(lines, parent, depth) {
    if (depth > MAX_DEPTH) { plain(lines, parent); return; }
    let i = 0;
    let para = [];
    const endPara = () => {
      if (para.length) {
        const p = el("p");
        inline(para.join("\n").trim(), p, false);
        parent.append(p);
        para = [];
      }
    };
    while (i < lines.length) {
      const line = lines[i];
      ops += 1 + line.length;
      let m;
      if ((m = fence(line))) {
        endPara();
        // The info string names a language only when it is a plain word.
        const lang = /^[A-Za-z0-9_+#.-]+$/.test(m.info) ? m.info.toLowerCase().replace(/[^a-z0-9_+-]/g, "") : "";
        const body = [];
        i++;
        while (i < lines.length && !closes(lines[i], m)) {
          ops += 1 + lines[i].length;
          body.push(lines[i]);
          i++;
        }
        i++; // the closing fence, or the end of an answer still streaming
        const pre = el("pre", "code");
        const code = el("code");
        if (lang) { code.className = "language-" + lang; pre.dataset.lang = lang; }
        code.textContent = body.join("\n");
        pre.append(code);
        parent.append(pre);
        continue;
      }
      if (line.trim() === "") { endPara(); i++; continue; }
      if ((m = heading(line))) {
        endPara();
        const h = el("h" + Math.min(6, m.level + 2)); // inside a message, # is not the page's title
        inline(m.text, h, false);
        parent.append(h);
        i++;
        continue;
      }
      if (rule(line)) { endPara(); parent.append(el("hr")); i++; continue; }
      if (quote(line) !== null) {
        endPara();
        const q = [];
        while (i < lines.length && (m = quote(lines[i])) !== null) {
          ops += 1 + lines[i].length;
          q.push(m);
          i++;
        }
        const bq = el("blockquote");
        blocks(q, bq, depth + 1);
        parent.append(bq);
        continue;
      }
      const first = item(line);
      if (first) {
        endPara();
        const list = el(first.kind);
        if (first.kind === "ol" && first.start !== 1) list.start = first.start;
        const items = [];
        let cur = null;
        while (i < lines.length) {
          const l = lines[i];
          ops += 1 + l.length;
          const it = item(l);
          if (it && it.kind === first.kind) {
            cur = [it.text];
            items.push(cur);
            i++;
            continue;
          }
          // A line indented under an item, or a lazy continuation, stays in it.
          if (cur && l.trim() !== "" && (indented(l) || !(it || fence(l) || heading(l) || quote(l) !== null))) {
            cur.push(unindent(l));
            i++;
            continue;
          }
          if (cur && l.trim() === "" && i + 1 < lines.length && indented(lines[i + 1]) && lines[i + 1].trim() !== "") {
            cur.push("");
            i++;
            continue;
          }
          break;
        }
        for (const inner of items) {
          const li = el("li");
          if (inner.length === 1) inline(inner[0], li, false);
          else blocks(inner, li, depth + 1);
          list.append(li);
        }
        parent.append(list);
        continue;
      }
      para.push(line);
      i++;
    }
    endPara();
  }

  // render returns a fragment holding text as Markdown.
  function render(text) {
    ops = 0;
    const f = document.createDocumentFragment();
    blocks(String(text).replace(/\r\n?/g, "\n").split("\n"), f, 0);
    return f;
  }

  global.lodeMarkdown = {
    render: render,
    safeURL: safeURL,
    ops: () => ops,
    MAX_DEPTH: MAX_DEPTH,
    MAX_INLINE_DEPTH: MAX_INLINE_DEPTH,
  };
})(window);
