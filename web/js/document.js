// PDF documents on the page: which files are PDFs, the page selection the API takes, the request
// parts and bodies (one streamed chat request, or one job per page), and the exports of the results
// (Markdown, HTML, JSON). Pure functions, no DOM; the DOM is in document_view.js, the calls in api.js.
//
// The server renders the pages (Poppler, docs/api.md "PDF documents"); the page never parses a PDF.
import { formatBytes } from './errors.js';

export const DEFAULT_DPI = 144;        // Qwen's document recipes; the server's default too
export const THUMBNAIL_SIZE = 256;     // longest side of the thumbnails /v1/qvl/documents/pages sends

// A dropped or picked file is a PDF by its type or, when the browser gives none, by its name.
export function isPdfFile(file) {
  const byName = /\.pdf$/i.test(file.name || '');
  return file.type === 'application/pdf' ||
    (byName && (!file.type || file.type === 'application/octet-stream' || file.type === 'application/x-pdf'));
}

// A PDF is capped by the server's image-file limit (--max-image-bytes). Error sentence or null.
export function checkPdf(file, config) {
  const name = file.name || 'document.pdf';
  if (file.size === 0) return `“${name}” is empty.`;
  if (file.size > config.max_image_bytes) {
    return `“${name}” is ${formatBytes(file.size)}; the server accepts PDFs up to ` +
      `${formatBytes(config.max_image_bytes)}.`;
  }
  return null;
}

// Page numbers (1-based) -> the API's selection text, ascending, runs folded: [1,2,3,7] -> "1-3,7".
export function pageSelection(pages) {
  const sorted = [...new Set(pages)].filter((p) => Number.isInteger(p) && p > 0).sort((a, b) => a - b);
  const runs = [];
  for (const p of sorted) {
    const last = runs[runs.length - 1];
    if (last && p === last[1] + 1) last[1] = p;
    else runs.push([p, p]);
  }
  return runs.map(([a, b]) => (a === b ? String(a) : b === a + 1 ? `${a},${b}` : `${a}-${b}`)).join(',');
}

// The pages picked when a document arrives: all of them, up to the server's per-request cap.
export function defaultPages(count, maxPages) {
  const n = Math.max(0, Math.min(count, maxPages > 0 ? maxPages : count));
  return Array.from({ length: n }, (_, k) => k + 1);
}

// The chat-content part that carries the PDF: OpenAI's file part with qvl's pages and dpi.
export function filePart(doc) {
  const file = { file_data: doc.dataUrl, filename: doc.name, pages: pageSelection(doc.pages) };
  if (doc.dpi && doc.dpi !== DEFAULT_DPI) file.dpi = doc.dpi;
  return { type: 'file', file };
}

// A streamed chat body -> the body of a per-page job batch (POST /v1/jobs with "per_page": true):
// jobs are polled, not streamed, so the stream fields go.
export function batchBody(chatBody) {
  const { stream, stream_options: streamOptions, ...rest } = chatBody;
  return { ...rest, per_page: true };
}

export const BATCH_DONE = new Set(['succeeded', 'failed', 'cancelled']);

// The text and error of one result of GET /v1/jobs/{batch id}: {page, id, status, result, error}, or
// while the page runs {progress: {tokens, text}}: its answer so far (`tokens` counts it).
export function resultText(r) {
  const choice = r && r.result && Array.isArray(r.result.choices) ? r.result.choices[0] : null;
  const progress = !choice && r && r.status === 'running' && r.progress ? r.progress : null;
  const text = choice && choice.message ? String(choice.message.content ?? '')
    : progress ? String(progress.text ?? '') : '';
  const err = r && r.error ? (typeof r.error === 'string' ? r.error : r.error.message || JSON.stringify(r.error)) : '';
  return { text, error: err, finishReason: choice ? choice.finish_reason : null,
    tokens: progress && Number.isFinite(progress.tokens) ? progress.tokens : null,
    usage: r && r.result ? r.result.usage ?? null : null, timings: r && r.result ? r.result.timings ?? null : null };
}

// ---------------------------------------------------------------- exports

// The format of an answer, from the preset that asked for it: 'markdown', 'html', 'json' or 'text'
// (text downloads as Markdown: chat answers are Markdown).
export const EXTENSIONS = { markdown: 'md', text: 'md', html: 'html', json: 'json' };
export const MIME_TYPES = { markdown: 'text/markdown', text: 'text/markdown', html: 'text/html', json: 'application/json' };

// "invoice.pdf", page 2, "md" -> "invoice-p2.md"; no page -> "invoice.md".
export function exportName(docName, page, ext) {
  const stem = String(docName || 'answer').replace(/\.pdf$/i, '').replace(/[^\w.-]+/g, '_').slice(0, 80) || 'answer';
  return `${stem}${page ? `-p${page}` : ''}.${ext}`;
}

// A JSON answer pretty-printed when it parses, else as it came.
export function prettyJson(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
}

// Strips the ```html fence (or any fence) a model may wrap its HTML in.
export function unfence(text) {
  const m = /^\s*```[\w-]*[ \t]*\n([\s\S]*?)(?:\n```\s*)?$/.exec(String(text));
  return m ? m[1] : String(text);
}

// One document wrapping sanitized body HTML (safe_html.js output). Its policy forbids every fetch
// and script, so even a reader that opens it in a browser loads nothing.
export function htmlDocument(title, bodyHtml) {
  const esc = String(title).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
  return '<!doctype html>\n<html><head><meta charset="utf-8">\n' +
    '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">\n' +
    `<title>${esc}</title>\n<style>body{font:15px/1.5 system-ui,sans-serif;max-width:50em;margin:2em auto;padding:0 1em}` +
    'table{border-collapse:collapse}td,th{border:1px solid #999;padding:4px 8px}' +
    'section{border-top:1px solid #ccc;margin-top:2em}</style>\n' +
    `</head><body>\n${bodyHtml}\n</body></html>\n`;
}

// Every page's result as one file. `results`: [{page, text, html?}] in page order; `html` is the
// sanitized HTML of an HTML answer (the page renders it; the raw text is never written as HTML).
export function combinedExport(format, docName, results) {
  if (format === 'json') {
    return JSON.stringify({ document: docName, pages: results.map((r) => {
      const out = { page: r.page };
      try { out.value = JSON.parse(r.text); } catch { out.text = r.text; }
      if (r.error) out.error = r.error;
      return out;
    }) }, null, 2);
  }
  if (format === 'html') {
    const body = results.map((r) => `<section data-page="${r.page}">\n<h2>Page ${r.page}</h2>\n${r.html ?? ''}\n</section>`).join('\n');
    return htmlDocument(docName, body);
  }
  return results.map((r) => `<!-- page ${r.page} -->\n\n${r.text.trim()}\n`).join('\n');
}
