// DOM building for the page: attachment chips, conversation turns, answers and the grounding figure.
// Everything the user or the model wrote goes in as text nodes (textContent) or through the markdown
// renderer's toDom; nothing here assigns innerHTML.
import { parseMarkdown, toDom } from './markdown.js';
import { parseGrounding, containRect, placeBox, placePoint, labelHue } from './grounding.js';
import { imageCost } from './smart_resize.js';
import { formatBytes, describeTimings } from './errors.js';
import { formatJsonText, isJson, looksLikeJson } from './tool_calls.js';
import { sanitizeHtml } from './safe_html.js';
import { unfence, EXTENSIONS } from './document.js';

export function h(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v == null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    // Styles through CSSOM, not a style attribute, so a strict Content-Security-Policy allows them.
    else if (k === 'style') for (const [p, pv] of Object.entries(v)) e.style.setProperty(p, String(pv));
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    e.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return e;
}

export function icon(name) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('aria-hidden', 'true');
  const use = document.createElementNS(ns, 'use');
  use.setAttribute('href', `#i-${name}`);
  svg.append(use);
  return svg;
}

// Cost line of one image: "1920×1080 → 1344×768 · 1,008 tokens · 412 KB".
export function costText(att, config, maxPixels) {
  const size = formatBytes(att.bytes);
  if (!att.decodable) return `${size} · cannot preview; the server will check it`;
  try {
    const c = imageCost(att.width, att.height, config, maxPixels);
    return `${att.width}×${att.height} → ${c.width}×${c.height} · ${c.tokens.toLocaleString('en-US')} tokens · ${size}`;
  } catch (e) {
    return `${att.width}×${att.height} · ${e.message}`;
  }
}

export function tokensOf(att, config, maxPixels) {
  if (!att.decodable) return 0;
  try { return imageCost(att.width, att.height, config, maxPixels).tokens; } catch { return 0; }
}

export function attachmentChip(att, config, maxPixels, onRemove) {
  const thumb = att.decodable
    ? h('img', { src: att.dataUrl, alt: '', class: 'chip-thumb' })
    : h('div', { class: 'chip-thumb broken', 'aria-hidden': 'true', text: '?' });
  return h('li', { class: `chip${att.decodable ? '' : ' warn'}`, 'data-id': att.id },
    thumb,
    h('div', { class: 'chip-body' },
      h('span', { class: 'chip-name', title: att.name, text: att.name }),
      h('span', { class: 'chip-cost', text: costText(att, config, maxPixels) })),
    h('button', { type: 'button', class: 'chip-remove', 'aria-label': `Remove ${att.name}`,
      title: 'Remove', onclick: onRemove }, icon('x')));
}

// `videoNode`: the turn's video strip (video_view.js videoTurn), if it has a video.
export function userTurn(turn, docTurn, videoNode = null) {
  const imgs = turn.images.length
    ? h('div', { class: 'user-images' }, turn.images.map((a) => a.decodable
      ? h('img', { src: a.dataUrl, alt: a.name, title: a.name })
      : h('div', { class: 'img-broken', title: a.name, text: a.name })))
    : null;
  return h('div', { class: 'user-msg' }, imgs, turn.doc && docTurn ? docTurn(turn.doc) : null, videoNode,
    turn.text ? h('div', { class: 'user-text', text: turn.text }) : null);
}

// An answer's content as nodes, and the grounding marks it holds. `format` (from the task preset)
// 'html': QwenVL HTML rendered through safe_html.js (allow-listed nodes, no script, no URL), its
// data-bbox boxes as marks; `json` (or format 'json'): formatted JSON in a code block; otherwise
// Markdown (markdown.js: HTML in it stays text). bbox_2d/point_2d JSON in the text are marks too.
export function answerContent(text, { format = 'text', json = false, busy = false } = {}) {
  const marks = parseGrounding(text);
  if (format === 'html') {
    const { fragment, marks: boxes } = sanitizeHtml(unfence(text), document);
    return { nodes: [h('div', { class: 'html-answer' }, fragment)], marks: [...boxes, ...marks] };
  }
  if ((json || format === 'json') && looksLikeJson(text)) return { nodes: jsonAnswer(text, busy), marks };
  if (format === 'markdown') return qwenMarkdown(text, marks);
  return { nodes: [toDom(parseMarkdown(text), document)], marks };
}

// QwenVL Markdown ("qwenvl markdown"): Markdown whose pictures and tables are announced by a comment
// with their box, `<!-- Image (x1, y1, x2, y2) -->` / `<!-- Table (…) -->` (0-1000, as data-bbox),
// and whose wide tables are HTML. The comments become marks (not shown as text); HTML tables go
// through safe_html.js; the rest is Markdown.
const QWEN_COMMENT = /<!--\s*(Image|Table|Figure|Chart|Formula)\s*\(\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*\)\s*-->/gi;

function qwenMarkdown(text, marks) {
  const boxes = [];
  const clean = text.replace(QWEN_COMMENT, (_, kind, ...n) => {
    const bbox = n.slice(0, 4).map(Number).map((v) => Math.min(1000, Math.max(0, v)));
    if (bbox[0] !== bbox[2] && bbox[1] !== bbox[3]) {
      boxes.push({ kind: 'box', label: kind.toLowerCase(),
        bbox: [Math.min(bbox[0], bbox[2]), Math.min(bbox[1], bbox[3]), Math.max(bbox[0], bbox[2]), Math.max(bbox[1], bbox[3])] });
    }
    return '';
  });
  const nodes = [];
  for (const [k, part] of clean.split(/(<table[\s\S]*?(?:<\/table>|$))/i).entries()) {
    if (!part.trim()) continue;
    if (k % 2) nodes.push(h('div', { class: 'html-answer' }, sanitizeHtml(part, document).fragment));
    else nodes.push(toDom(parseMarkdown(part), document));
  }
  return { nodes, marks: [...boxes, ...marks] };
}

// The assistant side of a turn; update() re-renders it from the turn's current state. An answer
// asked for as JSON (turn.json) is shown as a formatted code block, not through Markdown; its tool
// calls (turn.answer.toolCalls) as one card each, after the text. A Thinking model's reasoning
// (turn.answer.reasoning) comes first, in a "Thinking" block that starts collapsed. `onRendered(body)`
// runs each time the answer's text is rendered anew (the page links a video's time mentions there).
export function answerView(turn, { onCopy, onRetry, onDownload, imageFor, onRendered }) {
  const thinkingText = h('div', { class: 'thinking-text' });
  const thinkingLabel = h('summary', { text: 'Thinking' });
  const thinking = h('details', { class: 'thinking', hidden: true }, thinkingLabel, thinkingText);
  const body = h('div', { class: 'answer-body md' });
  const calls = h('div', { class: 'tool-calls', hidden: true });
  const figureSlot = h('div', { class: 'figure-slot' });
  const error = h('div', { class: 'answer-error', role: 'alert', hidden: true });
  const meta = h('div', { class: 'answer-meta' });
  const copyBtn = h('button', { type: 'button', class: 'mini-btn copy-btn', title: 'Copy answer',
    'aria-label': 'Copy answer', onclick: () => onCopy(turn, copyBtn) }, icon('copy'), h('span', { text: 'Copy' }));
  const retryBtn = h('button', { type: 'button', class: 'mini-btn retry-btn', title: 'Send this message again',
    onclick: () => onRetry(turn) }, h('span', { text: 'Retry' }));
  // A task answer (Markdown, HTML, JSON) or an answer about a document can be saved as a file.
  const ext = EXTENSIONS[turn.format] || 'md';
  const canDownload = Boolean(onDownload && (turn.doc || (turn.format && turn.format !== 'text')));
  const downloadBtn = canDownload ? h('button', { type: 'button', class: 'mini-btn download-btn', title: `Download as .${ext}`,
    'aria-label': `Download answer as .${ext}`, onclick: () => onDownload(turn) }, icon('download'), h('span', { text: `.${ext}` })) : null;
  const sourceBtn = turn.format === 'html' ? h('button', { type: 'button', class: 'mini-btn source-btn', 'aria-pressed': 'false',
    title: 'Show the HTML the model wrote, as text', onclick: () => { showSource = !showSource; sourceBtn.setAttribute('aria-pressed', String(showSource)); lastText = null; update(); } },
  h('span', { text: 'Source' })) : null;
  let showSource = false;
  const actions = h('div', { class: 'answer-actions' }, sourceBtn, copyBtn, downloadBtn, retryBtn);
  const root = h('div', { class: 'answer', 'aria-busy': 'true' },
    h('div', { class: 'avatar', 'aria-hidden': 'true' }, icon('logo')),
    // The picture first: people would rather see the boxes than read the coordinates.
    h('div', { class: 'answer-main' }, thinking, figureSlot, body, calls, error, h('div', { class: 'answer-foot' }, meta, actions)));
  let lastText = null;
  let lastBusy = null;
  let lastBoxesKey = '';
  const cards = [];

  function update() {
    const a = turn.answer;
    const toolCalls = a.toolCalls || [];
    const busy = a.status === 'streaming' || a.status === 'waiting';
    root.dataset.state = a.status;
    root.setAttribute('aria-busy', String(busy));
    root.classList.toggle('has-calls', toolCalls.length > 0);
    const reasoning = a.reasoning || '';
    thinking.hidden = !reasoning;
    if (thinkingText.textContent !== reasoning) thinkingText.textContent = reasoning;
    // Still thinking: no reply yet.
    thinkingLabel.textContent = busy && !a.text && !toolCalls.length ? 'Thinking…' : 'Thinking';
    if (a.text !== lastText || (turn.json && busy !== lastBusy)) {
      lastText = a.text;
      lastBusy = busy;
      // A JSON answer bypasses Markdown (unless it is not JSON at all: an older server ignores
      // response_format, and its prose is better rendered as prose).
      const shown = a.text ? answerContent(a.text, { format: turn.format, json: turn.json, busy })
        : { nodes: toolCalls.length ? [] : [typingDots(a.status)], marks: [] };
      if (showSource && a.text) shown.nodes = [h('pre', { class: 'html-source' }, h('code', { text: a.text }))];
      body.replaceChildren(...shown.nodes);
      if (onRendered && a.text && !showSource) onRendered(body);
      const marks = shown.marks;
      const key = JSON.stringify(marks);
      if (key !== lastBoxesKey) {
        lastBoxesKey = key;
        const images = imageFor(turn);
        figureSlot.replaceChildren(marks.length && images.length ? groundingFigure(images, marks, Boolean(turn.doc)) : '');
      }
    } else if (!a.text) {
      body.replaceChildren(busy && !toolCalls.length ? typingDots(a.status) : '');
    }
    body.hidden = !a.text && toolCalls.length > 0;
    while (cards.length < toolCalls.length) {
      cards.push(toolCallCard());
      calls.append(cards[cards.length - 1].root);
    }
    // The cursor only on the call still being written (the last one).
    toolCalls.forEach((c, k) => cards[k].update(c, busy, busy && k === toolCalls.length - 1));
    calls.hidden = toolCalls.length === 0;
    error.hidden = !a.error;
    error.textContent = a.error || '';
    meta.textContent = metaText(a);
    copyBtn.hidden = (!a.text && !toolCalls.length) || busy;
    if (downloadBtn) downloadBtn.hidden = !a.text || busy;
    if (sourceBtn) sourceBtn.hidden = !a.text;
    retryBtn.hidden = a.status !== 'error' || Boolean(a.text);
    actions.hidden = copyBtn.hidden && retryBtn.hidden;
  }
  update();
  return { root, update };
}

// A JSON answer, formatted (also while it streams: formatJsonText takes any prefix). Once complete,
// text that does not parse says so: an answer cut at the token limit is not valid JSON.
function jsonAnswer(text, busy) {
  const complete = isJson(text);
  return [
    h('pre', { class: 'json-answer' }, h('code', { class: 'language-json', text: formatJsonText(text) })),
    !busy && !complete ? h('p', { class: 'json-note', text: 'Not valid JSON: the answer is incomplete.' }) : null,
  ].filter(Boolean);
}

// One tool call: the function's name, its arguments formatted (growing while they stream), the id.
// The page does not run tools; the card shows what the model asked for.
function toolCallCard() {
  const name = h('span', { class: 'tool-name' });
  const id = h('span', { class: 'tool-id' });
  const code = h('code', { class: 'language-json' });
  const note = h('span', { class: 'tool-note', hidden: true });
  const root = h('section', { class: 'tool-card', 'aria-label': 'Tool call' },
    h('header', {}, h('span', { class: 'tool-badge', 'aria-hidden': 'true', text: 'ƒ' }), name, id),
    h('pre', {}, code), note);
  let last = null;
  function update(call, busy, writing) {
    const key = `${call.name}\u0000${call.id}\u0000${call.arguments}\u0000${busy}\u0000${writing}`;
    if (key === last) return;
    last = key;
    name.textContent = call.name || '…';
    root.setAttribute('aria-label', `Tool call: ${call.name}`);
    id.textContent = call.id;
    id.title = call.id ? `Call id ${call.id}` : '';
    code.textContent = call.arguments ? formatJsonText(call.arguments) : (busy ? '' : '{}');
    const bad = !busy && call.arguments && !isJson(call.arguments);
    note.hidden = !bad;
    note.textContent = bad ? 'The arguments are not valid JSON (incomplete).' : '';
    root.classList.toggle('streaming', writing);
  }
  return { root, update };
}

function typingDots() {
  return h('span', { class: 'typing', 'aria-label': 'Waiting for the answer' }, h('i'), h('i'), h('i'));
}

function metaText(a) {
  const parts = [];
  if (a.status === 'stopped') parts.push('Stopped');
  if (a.finishReason === 'length') parts.push('Cut at the max-token limit');
  if (a.finishReason === 'repetition') parts.push('Stopped: the answer was repeating itself');
  const n = (a.toolCalls || []).length;
  if (n) parts.push(`${n} tool ${n === 1 ? 'call' : 'calls'} (not run by this page)`);
  const t = describeTimings(a.timings, a.usage);
  if (t) parts.push(t);
  return parts.join(' · ');
}

// The image an answer talks about, with the model's boxes and points drawn over it. Coordinates are
// 0..1000 of the image (see grounding.js), placed over the letterboxed <img> with containRect.
export function groundingFigure(images, marks, first = false) {
  let current = first ? images[0] : images[images.length - 1];
  const img = h('img', { src: current.dataUrl, alt: `${current.name} with detected objects` });
  const layer = h('div', { class: 'marks', 'aria-hidden': 'true' });
  const frame = h('div', { class: 'frame' }, img, layer);
  const legend = h('ul', { class: 'legend' });
  const counts = new Map();
  for (const m of marks) counts.set(m.label || 'object', (counts.get(m.label || 'object') || 0) + 1);
  for (const [label, n] of counts) {
    legend.append(h('li', { style: { '--hue': labelHue(label) } }, h('i'), `${label}${n > 1 ? ` ×${n}` : ''}`));
  }
  const picker = images.length > 1 ? h('div', { class: 'img-picker', role: 'group', 'aria-label': 'Draw on image' },
    images.map((im, k) => h('button', { type: 'button', class: 'mini-btn', 'aria-pressed': String(im === current),
      text: im.label || `Image ${k + 1}`,
      onclick: (ev) => {
        current = im;
        img.src = im.dataUrl;
        for (const b of ev.currentTarget.parentNode.children) b.setAttribute('aria-pressed', String(b === ev.currentTarget));
      } }))) : null;

  function layout() {
    if (!img.naturalWidth || !frame.clientWidth) return;
    const rect = containRect(img.naturalWidth, img.naturalHeight, frame.clientWidth, frame.clientHeight);
    layer.replaceChildren(...marks.map((m) => {
      const hue = labelHue(m.label || 'object');
      if (m.kind === 'box') {
        const r = placeBox(m.bbox, rect);
        // A box touching the top edge gets its label inside, where the frame does not clip it.
        const style = { '--hue': hue, left: `${r.left}px`, top: `${r.top}px`, width: `${r.width}px`,
          height: `${r.height}px` };
        return h('div', { class: r.top < 18 ? 'box label-inside' : 'box', style },
          m.label ? h('span', { class: 'box-label', text: m.label }) : null);
      }
      const p = placePoint(m.point, rect);
      return h('div', { class: 'point', style: { '--hue': hue, left: `${p.x}px`, top: `${p.y}px` } },
        m.label ? h('span', { class: 'box-label', text: m.label }) : null);
    }));
  }
  img.addEventListener('load', layout);
  new ResizeObserver(layout).observe(frame);
  return h('figure', { class: 'grounding' }, frame,
    h('figcaption', {}, legend, picker,
      h('span', { class: 'coord-note', text: `${marks.length} ${marks.length === 1 ? 'mark' : 'marks'} · 0–1000 relative coordinates` })));
}
