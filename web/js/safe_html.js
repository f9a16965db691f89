// HTML answers (Qwen's "qwenvl html" document parsing) shown as HTML, safely. The model's text is
// parsed by DOMParser into an inert document (no script runs, nothing is fetched: it has no browsing
// context), then a NEW tree is built in the page with createElement from an allow-list of tags and
// attributes. Nothing of the model's output is ever assigned to innerHTML, no element keeps an
// event handler, a style, a URL attribute (src, href, srcset, action, ...) or a class, and <img> becomes a
// labelled placeholder: the answer cannot run code or load anything remote.
//
// QwenVL HTML gives each element a `data-bbox="x1 y1 x2 y2"`: for Qwen3-VL in relative coordinates
// on a 0-1000 scale of the page image, like bbox_2d (grounding.js). Those boxes are returned as marks
// to draw on the page image. Source of the format: QwenLM/Qwen3-VL cookbooks/document_parsing.ipynb
// (prompts "qwenvl html" and "qwenvl markdown").

const SCALE = 1000;

// Kept, with their children.
const KEEP = new Set([
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p', 'br', 'hr', 'ul', 'ol', 'li', 'dl', 'dt', 'dd',
  'table', 'caption', 'thead', 'tbody', 'tfoot', 'tr', 'th', 'td',
  'strong', 'b', 'em', 'i', 'u', 's', 'del', 'ins', 'sub', 'sup', 'small', 'mark', 'code', 'pre', 'kbd',
  'blockquote', 'q', 'cite', 'abbr', 'span', 'div', 'section', 'article', 'header', 'footer', 'main',
  'aside', 'nav', 'figure', 'figcaption', 'address', 'time',
]);
// Dropped with everything inside them.
const DROP = new Set([
  'script', 'style', 'template', 'noscript', 'iframe', 'frame', 'frameset', 'object', 'embed', 'applet',
  'svg', 'math', 'head', 'title', 'link', 'meta', 'base', 'form', 'input', 'button', 'select', 'option',
  'textarea', 'audio', 'video', 'source', 'track', 'canvas', 'picture', 'map', 'area', 'portal', 'slot',
  'dialog', 'param',
]);
// Everything else (a, font, center, custom elements, ...) is unwrapped: its children stay, it goes.

const MAX_DEPTH = 48;
const MAX_NODES = 20000;

// "x1 y1 x2 y2" (spaces or commas) -> [x1, y1, x2, y2] ordered and clamped to 0..1000, or null.
export function parseBbox(value) {
  const parts = String(value ?? '').trim().split(/[\s,]+/).filter(Boolean);
  if (parts.length !== 4) return null;
  const n = parts.map(Number);
  if (!n.every(Number.isFinite)) return null;
  const [x1, y1, x2, y2] = n.map((v) => Math.min(SCALE, Math.max(0, v)));
  if (x1 === x2 || y1 === y2) return null;
  return [Math.min(x1, x2), Math.min(y1, y2), Math.max(x1, x2), Math.max(y1, y2)];
}

// A span's width in a table: a small positive integer, or nothing.
function spanValue(v) {
  return /^\s*\d{1,3}\s*$/.test(v) && Number(v) >= 1 ? String(Number(v)) : null;
}

// A readable label for an element's box: its kind of content.
function labelOf(tag) {
  if (/^h[1-6]$/.test(tag)) return 'heading';
  if (tag === 'p') return 'text';
  if (tag === 'img') return 'image';
  if (tag === 'ul' || tag === 'ol' || tag === 'li') return 'list';
  if (tag === 'table' || tag === 'caption') return tag;
  if (tag === 'figure' || tag === 'figcaption') return 'figure';
  return tag;
}

// Sanitizes `html` into nodes of `doc` (the page's document). Returns {fragment, marks}: the
// fragment to insert, and the data-bbox boxes as grounding marks [{kind: 'box', label, bbox}].
// Event-handler and style attributes are renamed inside tags before parsing. Not for safety (the
// allow-list drops every attribute it does not know, and the parsed document runs nothing), but
// because Chromium checks them against the page's Content-Security-Policy while parsing, and each
// refusal is a console error.
export function defuseAttributes(html) {
  return String(html).replace(/<[a-z][^>]*>/gi, (tag) => tag.replace(/([\s"'/])(on[a-z]+|style)(\s*=)/gi, '$1data-dropped$3'));
}

export function sanitizeHtml(html, doc = document, Parser = globalThis.DOMParser) {
  const parsed = new Parser().parseFromString(defuseAttributes(html), 'text/html');
  const fragment = doc.createDocumentFragment();
  const marks = [];
  let nodes = 0;

  const box = (src, out, tag) => {
    const bbox = parseBbox(src.getAttribute('data-bbox'));
    if (!bbox) return;
    out.setAttribute('data-bbox', bbox.join(' '));
    marks.push({ kind: 'box', label: labelOf(tag), bbox });
  };

  function copy(src, parent, depth) {
    for (const child of src.childNodes) {
      if (++nodes > MAX_NODES) return;
      if (child.nodeType === 3) {  // text
        parent.append(doc.createTextNode(child.data));
        continue;
      }
      if (child.nodeType !== 1) continue;  // comments, processing instructions
      const tag = child.localName;
      if (child.namespaceURI !== 'http://www.w3.org/1999/xhtml' || DROP.has(tag)) continue;
      if (tag === 'img') {
        // No source is ever set: a placeholder says an image was there (and its alt text).
        const alt = (child.getAttribute('alt') || '').trim();
        const ph = doc.createElement('span');
        ph.className = 'html-img';
        ph.setAttribute('role', 'img');
        ph.setAttribute('aria-label', alt ? `image: ${alt}` : 'image');
        ph.textContent = alt ? `image: ${alt}` : 'image';
        box(child, ph, tag);
        parent.append(ph);
        continue;
      }
      if (!KEEP.has(tag) || depth >= MAX_DEPTH) {
        copy(child, parent, depth);
        continue;
      }
      const out = doc.createElement(tag);
      if (tag === 'td' || tag === 'th') {
        for (const a of ['colspan', 'rowspan']) {
          const v = spanValue(child.getAttribute(a) ?? '');
          if (v) out.setAttribute(a, v);
        }
      }
      box(child, out, tag);
      copy(child, out, depth + 1);
      parent.append(out);
    }
  }
  copy(parsed.body || parsed.documentElement, fragment, 0);
  return { fragment, marks };
}
