// DOM for PDF documents: the card of the attached PDF in the composer (page thumbnails with their
// token cost, page picking, ask once / page by page), the document in a sent turn, and the per-page
// results of a job batch (progress, each page's answer with its boxes on the page image, copy and
// download). Model output goes through answerContent (Markdown tree, safe_html.js or text), never
// innerHTML.
import { h, icon, answerContent, groundingFigure } from './view.js';
import { pageSelection, EXTENSIONS } from './document.js';
import { describeTimings, formatBytes } from './errors.js';
import { imageCost } from './smart_resize.js';

const fmt = (n) => n.toLocaleString('en-US');

// Tokens of one page: the server's count (page_info.image_tokens) for the budget the pages were
// measured with, else the page's rendered size through smart_resize with the budget asked
// (`pixels`: {maxPixels, minPixels}, e.g. raised for grounding).
export function pageTokens(doc, info, config, pixels) {
  if (!pixels.minPixels && pixels.maxPixels === doc.measuredMaxPixels && Number.isFinite(info.image_tokens)) {
    return info.image_tokens;
  }
  try {
    return imageCost(info.width, info.height, config, pixels.maxPixels, pixels.minPixels).tokens;
  } catch {
    return info.image_tokens || 0;
  }
}

export function pickedTokens(doc, config, pixels) {
  if (!doc.info) return 0;
  return doc.info.page_info.filter((p) => doc.picked.has(p.page))
    .reduce((s, p) => s + pageTokens(doc, p, config, pixels), 0);
}

// The attached PDF, in the composer. `raised`: the budget of the grounding presets, to show what
// they would cost. Handlers: onToggle(page), onAll(), onNone(), onMode(mode), onRemove().
export function docCard(doc, { config, pixels, raised, onToggle, onAll, onNone, onMode, onRemove }) {
  const head = h('div', { class: 'doc-head' },
    h('span', { class: 'doc-badge', 'aria-hidden': 'true', text: 'PDF' }),
    h('div', { class: 'doc-title' },
      h('span', { class: 'doc-name', title: doc.name, text: doc.name }),
      h('span', { class: 'doc-sum', 'aria-live': 'polite', text: docSummary(doc, config, pixels, raised) })),
    h('button', { type: 'button', class: 'chip-remove', 'aria-label': `Remove ${doc.name}`, title: 'Remove',
      onclick: onRemove }, icon('x')));
  if (doc.status !== 'ready') {
    return h('section', { class: 'doc-card', 'data-state': doc.status, 'aria-label': `Document ${doc.name}` }, head,
      h('div', { class: 'doc-loading' }, h('span', { class: 'typing', 'aria-hidden': 'true' }, h('i'), h('i'), h('i')),
        h('span', { text: `Reading the pages at ${doc.dpi} dpi…` })));
  }
  const max = doc.info.max_pages;
  const pages = h('ul', { class: 'doc-pages', 'aria-label': 'Pages to send' }, doc.info.page_info.map((p) => {
    const on = doc.picked.has(p.page);
    const tokens = pageTokens(doc, p, config, pixels);
    const full = !on && max > 0 && doc.picked.size >= max;
    return h('li', {},
      h('button', { type: 'button', class: 'page-thumb', 'aria-pressed': String(on), 'data-page': p.page,
        'data-tokens': tokens, disabled: full || null,
        title: full ? `At most ${max} pages per request`
          : `${p.width}×${p.height} px at ${p.dpi || doc.info.dpi} dpi${p.dpi_lowered ? ' (lowered: the page is large)' : ''}`,
        'aria-label': `Page ${p.page}, ${fmt(tokens)} tokens`, onclick: () => onToggle(p.page) },
      p.thumbnail ? h('img', { src: p.thumbnail, alt: '' }) : h('span', { class: 'no-thumb', text: String(p.page) }),
      h('span', { class: 'page-check', 'aria-hidden': 'true' }),
      h('span', { class: 'page-cap' }, h('b', { text: String(p.page) }), h('span', { class: 'page-cost', text: `${fmt(tokens)} tok` }))));
  }));
  const mode = h('div', { class: 'seg', role: 'radiogroup', 'aria-label': 'How to ask' },
    [['once', 'Ask once', 'One answer about all picked pages (one streamed request)'],
      ['pages', 'Page by page', 'One answer per page (a job per page, in page order)']].map(([value, label, title]) =>
      h('label', { title }, h('input', { type: 'radio', name: 'doc-mode', value, checked: doc.mode === value || null,
        onchange: () => onMode(value),
        // Enter on a radio would submit the composer's form (send); arrows and Space choose.
        onkeydown: (e) => { if (e.key === 'Enter') e.preventDefault(); } }), h('span', { text: label }))));
  const tools = h('div', { class: 'doc-tools' }, mode,
    h('span', { class: 'doc-pick' },
      h('button', { type: 'button', class: 'link-btn', onclick: onAll, text: max && doc.info.pages > max ? `First ${max}` : 'All' }),
      h('button', { type: 'button', class: 'link-btn', onclick: onNone, text: 'None' })));
  return h('section', { class: 'doc-card', 'data-state': 'ready', 'aria-label': `Document ${doc.name}` }, head, pages, tools);
}

function docSummary(doc, config, pixels, raised) {
  if (doc.status !== 'ready') return formatBytes(doc.bytes);
  const n = doc.info.pages;
  const k = doc.picked.size;
  const parts = [`${k} of ${n} ${n === 1 ? 'page' : 'pages'}`, `${fmt(pickedTokens(doc, config, pixels))} image tokens`];
  const forBoxes = raised && k ? pickedTokens(doc, config, raised) : 0;
  if (forBoxes && forBoxes !== pickedTokens(doc, config, pixels)) parts.push(`${fmt(forBoxes)} for boxes`);
  if (doc.info.max_pages && n > doc.info.max_pages) parts.push(`at most ${doc.info.max_pages} per request`);
  return parts.join(' · ');
}

// The document in a sent turn: the picked pages small, the name, the selection and the cost.
export function docTurn(doc) {
  const shown = doc.pageInfo.slice(0, 8);
  return h('div', { class: 'user-doc' },
    h('div', { class: 'user-doc-pages' }, shown.map((p) => p.thumbnail
      ? h('img', { src: p.thumbnail, alt: `Page ${p.page}`, title: `Page ${p.page}` })
      : h('span', { class: 'no-thumb', text: String(p.page) })),
    doc.pageInfo.length > shown.length ? h('span', { class: 'more', text: `+${doc.pageInfo.length - shown.length}` }) : null),
    h('span', { class: 'user-doc-meta', text: `${doc.name} · pages ${pageSelection(doc.pages)} · ` +
      `${fmt(doc.tokens)} image tokens${doc.raised ? ' (raised for boxes)' : ''} · ${doc.mode === 'pages' ? 'page by page' : 'asked once'}` }));
}

// A page image with the answer's boxes drawn on it (none: the page alone, small).
export function pageFigure(info, marks) {
  if (!info || !info.thumbnail) return null;
  const image = { dataUrl: info.thumbnail, name: `Page ${info.page}`, decodable: true };
  if (marks.length) return groundingFigure([image], marks);
  return h('figure', { class: 'page-fig' }, h('img', { src: info.thumbnail, alt: `Page ${info.page}` }));
}

const STATUS_TEXT = { queued: 'queued', running: 'working…', succeeded: 'done', failed: 'failed', cancelled: 'cancelled',
  expired: 'expired' };

// The results of a per-page job batch (turn.batch: {status, progress, results: [{page, status, text,
// tokens, error, usage, timings}], error}); update() re-renders from it. Each page: its state
// (queued, working with its tokens so far, done, failed), its image with boxes, its answer (while
// it runs, the text so far), Copy and Download once done; the header: progress, Download all.
export function batchView(turn, { onCopy, onDownload, onDownloadAll }) {
  const bar = h('progress', { max: 1, value: 0, 'aria-label': 'Pages done' });
  const label = h('span', { class: 'batch-label', 'aria-live': 'polite' });
  const all = h('div', { class: 'batch-all' });
  const list = h('ol', { class: 'page-results' });
  const error = h('div', { class: 'answer-error', role: 'alert', hidden: true });
  const root = h('div', { class: 'answer batch', 'aria-busy': 'true' },
    h('div', { class: 'avatar', 'aria-hidden': 'true' }, icon('logo')),
    h('div', { class: 'answer-main' }, h('div', { class: 'batch-head' }, label, bar, all), error, list));
  const rows = new Map();
  const ext = EXTENSIONS[turn.format] || 'md';

  function row(r) {
    const head = h('header', {}, h('strong', { text: `Page ${r.page}` }), h('span', { class: 'page-status' }));
    const fig = h('div', { class: 'page-result-fig' });
    const body = h('div', { class: 'answer-body md' });
    const err = h('div', { class: 'answer-error', role: 'alert', hidden: true });
    const meta = h('div', { class: 'answer-meta' });
    const copy = h('button', { type: 'button', class: 'mini-btn copy-btn', 'aria-label': `Copy page ${r.page}`,
      onclick: (e) => onCopy(turn, r, e.currentTarget) }, icon('copy'), h('span', { text: 'Copy' }));
    const dl = h('button', { type: 'button', class: 'mini-btn download-btn', 'aria-label': `Download page ${r.page} as .${ext}`,
      onclick: () => onDownload(turn, r) }, icon('download'), h('span', { text: `.${ext}` }));
    const li = h('li', { class: 'page-result', 'data-page': r.page }, head,
      h('div', { class: 'page-result-main' }, fig, h('div', { class: 'page-result-text' }, body, err,
        h('div', { class: 'answer-foot' }, meta, h('div', { class: 'answer-actions' }, copy, dl)))));
    const info = turn.doc.pageInfo.find((p) => p.page === r.page);
    const state = { li, head, fig, body, err, meta, copy, dl, info, last: null };
    rows.set(r.page, state);
    list.append(li);
    return state;
  }

  function update() {
    const b = turn.batch;
    const running = !['succeeded', 'failed', 'cancelled', 'error', 'stopped'].includes(b.status);
    root.dataset.state = running ? 'streaming' : b.status === 'succeeded' ? 'done' : b.status;
    root.setAttribute('aria-busy', String(running));
    const done = b.progress.done;
    const total = b.progress.total || b.results.length;
    bar.max = Math.max(1, total);
    bar.value = done;
    bar.hidden = !running;
    label.textContent = running
      ? `${done} of ${total} ${total === 1 ? 'page' : 'pages'} done${b.stopped ? ' · stopping…' : b.id ? '' : ' · starting'}`
      : `${done} of ${total} ${total === 1 ? 'page' : 'pages'} · ${b.status === 'succeeded' ? 'finished' : b.status}`;
    const finished = b.results.filter((r) => r.status === 'succeeded');
    all.replaceChildren(...(!running && finished.length ? [
      h('button', { type: 'button', class: 'mini-btn download-all', onclick: () => onDownloadAll(turn, ext) },
        icon('download'), h('span', { text: `All pages .${ext}` })),
      ext !== 'json' ? h('button', { type: 'button', class: 'mini-btn download-all-json', onclick: () => onDownloadAll(turn, 'json') },
        icon('download'), h('span', { text: 'All .json' })) : null,
    ] : []));
    error.hidden = !b.error;
    error.textContent = b.error || '';
    for (const r of b.results) {
      const s = rows.get(r.page) || row(r);
      const key = `${r.status}\u0000${r.text}\u0000${r.error}\u0000${r.tokens}`;
      if (key === s.last) continue;
      s.last = key;
      s.li.dataset.state = r.status;
      const busy = r.status === 'queued' || r.status === 'running';
      // A running page's answer streams in (polled): its text so far, and how many tokens.
      s.head.querySelector('.page-status').textContent = r.status === 'running' && r.tokens
        ? `working… ${fmt(r.tokens)} ${r.tokens === 1 ? 'token' : 'tokens'}` : STATUS_TEXT[r.status] || r.status;
      s.li.setAttribute('aria-busy', String(busy));
      if (r.text) {
        const { nodes, marks } = answerContent(r.text, { format: turn.format, json: turn.json, busy });
        s.body.replaceChildren(...nodes);
        s.fig.replaceChildren(pageFigure(s.info, marks) || '');
      } else {
        s.body.replaceChildren(busy ? h('span', { class: 'typing', 'aria-label': 'Waiting for this page' }, h('i'), h('i'), h('i')) : '');
        s.fig.replaceChildren(pageFigure(s.info, []) || '');
      }
      s.err.hidden = !r.error;
      s.err.textContent = r.error || '';
      s.meta.textContent = [r.finishReason === 'length' ? 'Cut at the max-token limit' : '',
        describeTimings(r.timings, r.usage)].filter(Boolean).join(' · ');
      s.copy.hidden = !r.text || busy;
      s.dl.hidden = !r.text || busy;
    }
  }
  update();
  return { root, update };
}
