// Markdown for model answers, safe by construction: the parser returns a small tree of plain objects
// ({tag, attrs, children} or strings) whose tags come only from the parser itself, and toDom() builds
// it with createElement/createTextNode, never innerHTML. Text from the model is always text, so an
// answer can never inject HTML; links are kept only for http(s) URLs. Works in the browser and in Node.
//
// Covers what chat answers use: paragraphs (a single newline is a line break), headings, lists
// (nested, ordered, unordered), fenced code blocks, block quotes, rules, GFM tables, inline code,
// bold, italic, strikethrough, links, autolinks.

const ALLOWED = new Set([
  'p', 'br', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'li', 'pre', 'code', 'blockquote', 'hr',
  'table', 'thead', 'tbody', 'tr', 'th', 'td', 'strong', 'em', 'del', 'a',
]);

function el(tag, children = [], attrs = {}) {
  return { tag, attrs, children };
}

// Accepts only absolute http(s) URLs; anything else (javascript:, data:, relative) is dropped.
export function safeHref(raw) {
  const s = String(raw).trim();
  if (!/^https?:\/\//i.test(s)) return null;
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- blocks

const FENCE_RE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING_RE = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const HR_RE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE_RE = /^ {0,3}> ?(.*)$/;
const LIST_RE = /^( *)([-*+]|\d{1,9}[.)])([ \t]+(.*))?$/;
const TABLE_SEP_RE = /^ *\|? *:?-+:? *(\| *:?-+:? *)*\|? *$/;

const isBlank = (line) => /^\s*$/.test(line);
const indentOf = (line) => line.match(/^ */)[0].length;

function isTableStart(lines, i) {
  return i + 1 < lines.length && lines[i].includes('|') && TABLE_SEP_RE.test(lines[i + 1]) &&
    lines[i + 1].includes('-') && (lines[i + 1].includes('|') || splitRow(lines[i]).length > 1);
}

function startsBlock(lines, i) {
  const line = lines[i];
  return FENCE_RE.test(line) || HEADING_RE.test(line) || HR_RE.test(line) || QUOTE_RE.test(line) ||
    isListStart(line) || isTableStart(lines, i);
}

function isListStart(line) {
  const m = LIST_RE.exec(line);
  return m !== null && m[1].length < 4 && m[4] !== undefined && m[4].trim() !== '';
}

export function parseMarkdown(text) {
  const lines = String(text).replace(/\r\n?/g, '\n').replace(/\t/g, '    ').split('\n');
  return parseBlocks(lines);
}

function parseBlocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) { i++; continue; }

    let m = FENCE_RE.exec(line);
    if (m) {
      const fence = m[1];
      const body = [];
      const indent = indentOf(line);
      i++;
      // An unclosed fence runs to the end: while streaming, the closing fence has not arrived yet.
      while (i < lines.length && !new RegExp(`^ {0,3}${fence[0]}{${fence.length},}\\s*$`).test(lines[i])) {
        body.push(lines[i].replace(new RegExp(`^ {0,${indent}}`), ''));
        i++;
      }
      i++;
      const lang = /^[a-z0-9_+-]{1,32}$/i.test(m[2]) ? m[2].toLowerCase() : '';
      const code = el('code', [body.join('\n')], lang ? { class: `lang-${lang}` } : {});
      out.push(el('pre', [code]));
      continue;
    }

    m = HEADING_RE.exec(line);
    if (m) {
      out.push(el(`h${m[1].length}`, parseInline(m[2] || '')));
      i++;
      continue;
    }

    if (HR_RE.test(line)) { out.push(el('hr')); i++; continue; }

    if (QUOTE_RE.test(line)) {
      const inner = [];
      while (i < lines.length && !isBlank(lines[i])) {
        const q = QUOTE_RE.exec(lines[i]);
        inner.push(q ? q[1] : lines[i]);
        i++;
      }
      out.push(el('blockquote', parseBlocks(inner)));
      continue;
    }

    if (isTableStart(lines, i)) {
      i = parseTable(lines, i, out);
      continue;
    }

    if (isListStart(line)) {
      i = parseList(lines, i, out);
      continue;
    }

    const para = [];
    while (i < lines.length && !isBlank(lines[i]) && (para.length === 0 || !startsBlock(lines, i))) {
      para.push(lines[i].trim());
      i++;
    }
    out.push(el('p', inlineWithBreaks(para)));
  }
  return out;
}

function inlineWithBreaks(lines) {
  const out = [];
  lines.forEach((l, k) => {
    if (k > 0) out.push(el('br'));
    out.push(...parseInline(l));
  });
  return out;
}

function listKind(marker) {
  return /\d/.test(marker) ? `ol${marker.slice(-1)}` : `ul${marker}`;
}

function parseList(lines, i, out) {
  const first = LIST_RE.exec(lines[i]);
  const kind = listKind(first[2]);
  const base = first[1].length;
  const ordered = kind.startsWith('ol');
  const items = [];
  let loose = false;
  while (i < lines.length) {
    const m = LIST_RE.exec(lines[i]);
    if (!m || m[1].length > base + 3 || m[1].length < base || listKind(m[2]) !== kind ||
        m[4] === undefined) break;
    const contentIndent = m[1].length + m[2].length + Math.min(m[3].length - m[4].length, 4);
    const body = [m[4]];
    i++;
    let sawBlank = false;
    while (i < lines.length) {
      const line = lines[i];
      if (isBlank(line)) { sawBlank = true; body.push(''); i++; continue; }
      const ind = indentOf(line);
      if (ind >= contentIndent) {
        body.push(line.slice(contentIndent));
      } else if (!sawBlank && !startsBlock(lines, i)) {
        body.push(line.trim());  // lazy continuation of the item's paragraph
      } else if (!sawBlank && ind > base && isListStart(line)) {
        body.push(line.slice(Math.min(ind, contentIndent)));  // a sub-list indented less than the text
      } else {
        break;
      }
      sawBlank = false;
      i++;
    }
    while (body.length && body[body.length - 1] === '') body.pop();
    if (body.includes('') && i < lines.length) loose = true;
    items.push(body);
    // A blank line between items makes the list loose (paragraphs inside items).
    if (i > 0 && isBlank(lines[i - 1]) && i < lines.length) {
      const next = LIST_RE.exec(lines[i]);
      if (next && next[1].length === base && listKind(next[2]) === kind) loose = true;
    }
  }
  const lis = items.map((body) => {
    const blocks = parseBlocks(body);
    if (!loose && blocks.length >= 1 && blocks[0].tag === 'p') {
      return el('li', [...blocks[0].children, ...blocks.slice(1)]);
    }
    return el('li', blocks);
  });
  const attrs = {};
  if (ordered) {
    const start = parseInt(first[2], 10);
    if (start !== 1) attrs.start = String(start);
  }
  out.push(el(ordered ? 'ol' : 'ul', lis, attrs));
  return i;
}

// Splits a table row on '|' that are neither escaped nor inside a code span.
function splitRow(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cur = '';
  let inCode = false;
  for (let k = 0; k < s.length; k++) {
    const c = s[k];
    if (c === '\\' && s[k + 1] === '|') { cur += '|'; k++; continue; }
    if (c === '`') inCode = !inCode;
    if (c === '|' && !inCode) { cells.push(cur.trim()); cur = ''; continue; }
    cur += c;
  }
  cells.push(cur.trim());
  return cells;
}

function parseTable(lines, i, out) {
  const head = splitRow(lines[i]);
  const align = splitRow(lines[i + 1]).map((c) => {
    const l = c.startsWith(':');
    const r = c.endsWith(':');
    return l && r ? 'al-c' : r ? 'al-r' : l ? 'al-l' : '';
  });
  i += 2;
  const rows = [];
  while (i < lines.length && !isBlank(lines[i]) && lines[i].includes('|')) {
    rows.push(splitRow(lines[i]));
    i++;
  }
  const cell = (tag, text, k) => el(tag, parseInline(text), align[k] ? { class: align[k] } : {});
  const thead = el('thead', [el('tr', head.map((c, k) => cell('th', c, k)))]);
  const tbody = el('tbody', rows.map((r) =>
    el('tr', head.map((_, k) => cell('td', r[k] ?? '', k)))));
  out.push(el('table', rows.length ? [thead, tbody] : [thead]));
  return i;
}

// ---------------------------------------------------------------- inline

const PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
const URL_RE = /^https?:\/\/[^\s<>"'`]+/i;

export function parseInline(text) {
  const out = [];
  let buf = '';
  const flush = () => { if (buf) { out.push(buf); buf = ''; } };
  const s = String(text);
  let i = 0;
  while (i < s.length) {
    const c = s[i];

    if (c === '\\' && i + 1 < s.length && PUNCT.includes(s[i + 1])) {
      buf += s[i + 1];
      i += 2;
      continue;
    }

    if (c === '`') {
      const run = s.slice(i).match(/^`+/)[0];
      const close = findCodeClose(s, i + run.length, run.length);
      if (close >= 0) {
        flush();
        let code = s.slice(i + run.length, close);
        if (/^ .* $/.test(code) && code.trim() !== '') code = code.slice(1, -1);
        out.push(el('code', [code]));
        i = close + run.length;
        continue;
      }
      buf += run;
      i += run.length;
      continue;
    }

    const pair = ['**', '__', '~~'].find((d) => s.startsWith(d, i));
    if (pair) {
      const close = findPairClose(s, i + 2, pair);
      const inner = close > i + 2 ? s.slice(i + 2, close) : '';
      if (inner.trim() !== '' && !/^\s/.test(inner) && !/\s$/.test(inner) &&
          !(pair === '__' && isWordChar(s[i - 1]))) {
        flush();
        out.push(el(pair === '~~' ? 'del' : 'strong', parseInline(inner)));
        i = close + 2;
        continue;
      }
    }

    if ((c === '*' || c === '_') && s[i + 1] !== c) {
      const close = findEmClose(s, i + 1, c);
      if (close > i + 1 && !/^\s/.test(s[i + 1]) && !(c === '_' && isWordChar(s[i - 1]))) {
        flush();
        out.push(el('em', parseInline(s.slice(i + 1, close))));
        i = close + 1;
        continue;
      }
    }

    if (c === '[' || (c === '!' && s[i + 1] === '[')) {
      const link = parseLink(s, c === '!' ? i + 1 : i);
      if (link) {
        flush();
        const label = c === '!' ? [link.text || link.href || ''] : parseInline(link.text);
        const href = safeHref(link.href);
        // Images are never loaded (the page works offline and leaks nothing): shown as a link.
        if (href) out.push(el('a', label, { href }));
        else out.push(...label);  // an unsafe link keeps its text, loses the link
        i = link.end;
        continue;
      }
    }

    if (c === '<') {
      const m = /^<(https?:\/\/[^\s<>]+)>/i.exec(s.slice(i));
      if (m && safeHref(m[1])) {
        flush();
        out.push(el('a', [m[1]], { href: safeHref(m[1]) }));
        i += m[0].length;
        continue;
      }
    }

    if ((c === 'h' || c === 'H') && !isWordChar(s[i - 1])) {
      const m = URL_RE.exec(s.slice(i));
      if (m) {
        const url = m[0].replace(/[.,;:!?)\]]+$/, '');
        const href = safeHref(url);
        if (href) {
          flush();
          out.push(el('a', [url], { href }));
          i += url.length;
          continue;
        }
      }
    }

    buf += c;
    i++;
  }
  flush();
  return out;
}

function isWordChar(ch) {
  return ch !== undefined && /[\p{L}\p{N}]/u.test(ch);
}

function findCodeClose(s, from, n) {
  let k = from;
  while (k < s.length) {
    const j = s.indexOf('`', k);
    if (j < 0) return -1;
    const run = s.slice(j).match(/^`+/)[0].length;
    if (run === n) return j;
    k = j + run;
  }
  return -1;
}

// A closing ** / __ / ~~: not after whitespace, and for __ not inside a word (snake__case).
function findPairClose(s, from, pair) {
  for (let k = s.indexOf(pair, from); k >= 0; k = s.indexOf(pair, k + 1)) {
    if (/\s/.test(s[k - 1])) continue;
    if (pair === '__' && isWordChar(s[k + 2])) continue;
    return k;
  }
  return -1;
}

function findEmClose(s, from, ch) {
  for (let k = from; k < s.length; k++) {
    if (s[k] === '\\') { k++; continue; }
    if (s[k] === '`') {
      const run = s.slice(k).match(/^`+/)[0].length;
      const close = findCodeClose(s, k + run, run);
      if (close >= 0) { k = close + run - 1; continue; }
    }
    if (s[k] === ch && s[k + 1] === ch) { k++; continue; }
    if (s[k] === ch && !/\s/.test(s[k - 1]) && !(ch === '_' && isWordChar(s[k + 1]))) return k;
  }
  return -1;
}

// [text](href "title") starting at s[i] === '['; returns {text, href, end} or null.
function parseLink(s, i) {
  let depth = 0;
  let k = i;
  for (; k < s.length; k++) {
    if (s[k] === '\\') { k++; continue; }
    if (s[k] === '[') depth++;
    else if (s[k] === ']' && --depth === 0) break;
  }
  if (k >= s.length || s[k + 1] !== '(') return null;
  const m = /^\(\s*<?([^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)>?(?:\s+"[^"]*")?\s*\)/.exec(s.slice(k + 1));
  if (!m) return null;
  return { text: s.slice(i + 1, k), href: m[1], end: k + 1 + m[0].length };
}

// ---------------------------------------------------------------- output

// Builds real DOM nodes. Tags and attributes are checked again here (defence in depth): only the
// parser's own tags, only known attributes, hrefs re-validated, links open safely in a new tab.
export function toDom(nodes, doc) {
  const frag = doc.createDocumentFragment();
  for (const n of nodes) frag.appendChild(nodeToDom(n, doc));
  return frag;
}

function nodeToDom(n, doc) {
  if (typeof n === 'string') return doc.createTextNode(n);
  if (!ALLOWED.has(n.tag)) return doc.createTextNode('');
  const e = doc.createElement(n.tag);
  for (const [name, value] of Object.entries(n.attrs || {})) {
    const v = safeAttr(n.tag, name, value);
    if (v !== null) e.setAttribute(name, v);
  }
  if (n.tag === 'a') {
    if (!e.getAttribute('href')) return textOnly(n, doc);
    e.setAttribute('rel', 'noopener noreferrer nofollow');
    e.setAttribute('target', '_blank');
  }
  for (const c of n.children || []) e.appendChild(nodeToDom(c, doc));
  return e;
}

function textOnly(n, doc) {
  const frag = doc.createDocumentFragment();
  for (const c of n.children || []) frag.appendChild(nodeToDom(c, doc));
  return frag;
}

function safeAttr(tag, name, value) {
  const v = String(value);
  if (tag === 'a' && name === 'href') return safeHref(v);
  if (tag === 'code' && name === 'class') return /^lang-[a-z0-9_+-]+$/.test(v) ? v : null;
  if ((tag === 'th' || tag === 'td') && name === 'class') return /^al-[lcr]$/.test(v) ? v : null;
  if (tag === 'ol' && name === 'start') return /^\d{1,9}$/.test(v) ? v : null;
  return null;
}

// HTML text of the tree with everything escaped: what toDom produces, as a string (used by tests and
// for copying an answer as HTML).
export function toHtml(nodes) {
  return nodes.map(nodeToHtml).join('');
}

const VOID = new Set(['br', 'hr']);

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) =>
    ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

function nodeToHtml(n) {
  if (typeof n === 'string') return escapeHtml(n);
  if (!ALLOWED.has(n.tag)) return '';
  let attrs = '';
  for (const [name, value] of Object.entries(n.attrs || {})) {
    const v = safeAttr(n.tag, name, value);
    if (v !== null) attrs += ` ${name}="${escapeHtml(v)}"`;
  }
  if (n.tag === 'a') {
    if (!attrs) return (n.children || []).map(nodeToHtml).join('');
    attrs += ' rel="noopener noreferrer nofollow" target="_blank"';
  }
  if (VOID.has(n.tag)) return `<${n.tag}${attrs}>`;
  return `<${n.tag}${attrs}>${(n.children || []).map(nodeToHtml).join('')}</${n.tag}>`;
}
