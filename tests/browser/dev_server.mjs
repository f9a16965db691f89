// DEVELOPMENT AID ONLY — not the qvl server, and not used by any test that claims to test it.
//
// Serves web/ from disk and imitates the API the page talks to (same routes and shapes as issue 7:
// /health, /v1/models, /v1/qvl/config, streamed /v1/chat/completions with usage + timings), with
// canned answers, so the page can be developed, looked at and screenshotted before `qvl serve`
// exists. page.test.mjs runs against the real binary instead.
//
//   node tests/browser/dev_server.mjs [--port 8090] [--delay-ms 30]
//
// Canned answers, picked from the last user text: "Locate" -> grounding JSON for assets/scene.png,
// "table" -> a Markdown table, "Read all the text" -> OCR text, "#script" -> an HTML-injection
// attempt, "#busy" -> 429, "#timeout" -> an in-stream timeout error, otherwise a description.
// Like qvl serve: with `tools` (and tool_choice not "none") the answer is a sentence then one call
// per tool (at most three), streamed as delta.tool_calls pieces, finish_reason "tool_calls"; with
// response_format json_object / json_schema a JSON answer (for a schema, an instance of it); a
// schema using "pattern" is refused with 400 naming the keyword's param, as qvl's grammar does.
//
// PDF documents (issue 19), imitated for developing the page before the server's endpoints exist:
// POST /v1/qvl/documents/pages reads the page count and MediaBoxes with a regular expression (enough
// for simple PDFs like the tests' own; no rendering) and sends blank-page PNG thumbnails; POST
// /v1/jobs with "per_page": true runs a fake job per page (canned answers, one after the other, each
// page's text so far in its progress while it runs),
// GET /v1/jobs/{batch id} reports them and DELETE cancels. "qwenvl html" answers QwenVL HTML with
// data-bbox, "qwenvl markdown" Markdown. These are shapes to program against, not qvl's behaviour.
//
// Videos: POST /v1/qvl/videos/frames reads an MP4's boxes (size, frame rate, frame count) and samples
// as the Qwen3-VL video processor does at its defaults (frames, times, group texts, token cost: the
// same numbers as tests/fixtures/video/manifest.json), with blank thumbnails; a chat video_url part
// is read the same way and its tokens appear in usage.prompt_tokens_details.image_tokens.
import http from 'node:http';
import zlib from 'node:zlib';
import { imageCost, roundHalfEven } from '../../web/js/smart_resize.js';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web');
const MIME = { '.html': 'text/html; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8', '.svg': 'image/svg+xml', '.png': 'image/png' };

export const DEV_CONFIG = {
  model: 'Qwen/Qwen3-VL-2B-Instruct', patch_size: 16, merge_size: 2, min_pixels: 65536, max_pixels: 1048576,
  max_image_bytes: 20 * 1024 * 1024, max_video_bytes: 64 * 1024 * 1024, max_body_bytes: 64 * 1024 * 1024, context_size: 8192,
  default_max_tokens: 1024,
};

export const PAGE_CSP = "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; " +
  "script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const ANSWERS = {
  ground: 'Here are the objects I found:\n\n```json\n[\n' +
    '  {"bbox_2d": [792, 78, 917, 266], "label": "sun"},\n' +
    '  {"bbox_2d": [135, 281, 458, 781], "label": "house"},\n' +
    '  {"bbox_2d": [536, 359, 693, 789], "label": "tree"},\n' +
    '  {"bbox_2d": [677, 672, 896, 883], "label": "car"},\n' +
    '  {"point_2d": [286, 703], "label": "door"}\n]\n```',
  table: '| Object | Colour | Position |\n|:-------|:------:|---------:|\n| House | red-brown | left |\n' +
    '| Tree | green | centre |\n| Car | **blue** | bottom right |\n| Sun | yellow | top right |',
  ocr: 'QVL DEMO\nNo text is visible in this picture apart from what you see here.',
  script: 'Here is some HTML: <script>window.__injected = 1</script> and ' +
    '<img src=x onerror="window.__injected = 2"> and [a link](javascript:window.__injected=3).',
  describe: 'The image shows a **simple countryside scene** on a clear day:\n\n' +
    '- a red-brown **house** with a dark roof, two windows and a door, on the left;\n' +
    '- a round green **tree** in the middle;\n- a blue **car** parked at the bottom right;\n' +
    '- a bright yellow **sun** and two white clouds in a blue sky.\n\n' +
    'The style is flat and geometric, like a `vector` illustration.',
};

// Boxes (0-1000) where screenshots.mjs's invoice PDF has its lines.
ANSWERS.html = '```html\n<html><body>\n<h1 data-bbox="118 95 545 137">Invoice 2026-042</h1>\n' +
  '<p data-bbox="118 141 870 180">ACME Tools Ltd, 12 Harbour Road</p>\n' +
  '<table data-bbox="118 225 740 310"><tr><th>Item</th><th>Qty</th><th>Amount</th></tr>' +
  '<tr><td>Hammer</td><td>2</td><td>24.00</td></tr><tr><td>Nails (box)</td><td>5</td><td>7.50</td></tr></table>\n' +
  '<p data-bbox="118 352 660 395"><b>Total</b> 31.50 EUR</p>\n</body></html>\n```';
ANSWERS.html2 = '```html\n<html><body>\n<h2 data-bbox="91 125 540 175">Terms and conditions</h2>\n' +
  '<p data-bbox="91 182 530 230">Payment within 30 days.</p>\n' +
  '<p data-bbox="91 237 560 286">Late payment: 1% a month.</p>\n</body></html>\n```';
ANSWERS.docMarkdown = '# Invoice 2026-042\n\nACME Tools Ltd, 12 Harbour Road\n\n| Item | Qty | Amount |\n|---|--:|--:|\n' +
  '| Hammer | 2 | 24.00 |\n| Nails (box) | 5 | 7.50 |\n\n**Total** 31.50 EUR';
ANSWERS.regions = '```json\n[\n  {"bbox_2d": [118, 95, 545, 137], "label": "title"},\n' +
  '  {"bbox_2d": [118, 141, 870, 180], "label": "paragraph"},\n  {"bbox_2d": [118, 225, 740, 310], "label": "table"}\n]\n```';

// For a question about a video (what tests/fixtures/video's long_112x80_24fps shows, the clip of
// screenshots.mjs): times as the model gives them (the prompt's `<t seconds>`, m:ss), which the page
// links to the strip's frames.
ANSWERS.video = 'An orange disc moves from the bottom left towards the green square in the top right, over ' +
  'stripes whose colours change:\n\n- at the start (<0.3 seconds>) it is at the bottom left;\n' +
  '- around <2.4 seconds> it is in the middle;\n- by 0:04 it has reached the green square.';

function pickAnswer(text) {
  if (/#script/.test(text)) return ANSWERS.script;
  if (/qwenvl html/i.test(text)) return ANSWERS.html;
  if (/qwenvl markdown/i.test(text)) return ANSWERS.docMarkdown;
  if (/Locate every title/i.test(text)) return ANSWERS.regions;
  if (/Locate/i.test(text)) return ANSWERS.ground;
  if (/table/i.test(text)) return ANSWERS.table;
  if (/Read all the text/i.test(text)) return ANSWERS.ocr;
  return ANSWERS.describe;
}

const MAGIC = [[0x89, 0x50, 0x4e, 0x47], [0xff, 0xd8, 0xff], [0x47, 0x49, 0x46], [0x52, 0x49, 0x46, 0x46], [0x42, 0x4d]];

function checkImages(messages) {
  for (const [i, m] of messages.entries()) {
    if (!Array.isArray(m.content)) continue;
    for (const [j, part] of m.content.entries()) {
      if (part.type !== 'image_url') continue;
      const url = String(part.image_url && part.image_url.url);
      const mm = /^data:image\/[\w.+-]+;base64,(.*)$/.exec(url);
      if (!mm) return `messages[${i}].content[${j}]: image_url must be a data:image/...;base64 URI`;
      const bytes = Buffer.from(mm[1], 'base64');
      const png = MAGIC[0].every((b, k) => bytes[k] === b);
      if (!MAGIC.some((sig) => sig.every((b, k) => bytes[k] === b)) ||
          (png && bytes.toString('latin1', 12, 16) !== 'IHDR')) {
        return `messages[${i}].content[${j}]: not a decodable image (PNG, JPEG, WebP, GIF or BMP expected)`;
      }
    }
  }
  return null;
}

// A value the schema accepts, made up from its types, enums and names (enough for the shapes the page
// is tried with; not a validator).
function instanceOf(schema, name = 'value') {
  if (!schema || typeof schema !== 'object') return null;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (Array.isArray(schema.anyOf || schema.oneOf)) return instanceOf((schema.anyOf || schema.oneOf)[0], name);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const guess = { city: 'Paris', caption: 'A house, a tree and a car under a sunny sky', label: 'house', unit: 'celsius',
    timezone: 'Europe/Paris', tz: 'Europe/Paris', query: 'blue car' };
  switch (type) {
    case 'object': {
      const out = {};
      for (const [k, v] of Object.entries(schema.properties || {})) out[k] = instanceOf(v, k);
      return out;
    }
    case 'array': return schema.items ? [instanceOf(schema.items, name), instanceOf(schema.items, name)].slice(0, schema.maxItems ?? 2) : [];
    case 'string': return guess[name] ?? `${name} text`;
    case 'integer': return 3;
    case 'number': return 0.5;
    case 'boolean': return true;
    case 'null': return null;
    default: return schema.properties ? instanceOf({ ...schema, type: 'object' }, name) : {};
  }
}

// The first "pattern" keyword of a schema, as qvl names the param.
function findPattern(schema, at) {
  if (!schema || typeof schema !== 'object') return null;
  if (!Array.isArray(schema) && 'pattern' in schema) return `${at}.pattern`;
  for (const [k, v] of Object.entries(schema)) {
    const hit = findPattern(v, Array.isArray(schema) ? `${at}[${k}]` : `${at}.${k}`);
    if (hit) return hit;
  }
  return null;
}

function sendJson(res, status, obj, extra = {}) {
  res.writeHead(status, { 'Content-Type': 'application/json', ...extra });
  res.end(JSON.stringify(obj));
}

async function readBody(req) {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  try { return JSON.parse(raw); } catch { return undefined; }
}

const badJson = (res) => sendJson(res, 400, { error: { message: 'invalid JSON body', type: 'invalid_request_error', param: null, code: null } });

// ---------------------------------------------------------------- PDF (fake)

// [{width, height}] in points, in object order: a dev aid for simple PDFs, not a PDF parser.
function pdfPages(bytes) {
  const text = bytes.toString('latin1');
  if (!text.startsWith('%PDF-')) return null;
  const box = (src) => {
    const m = /\/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]/.exec(src);
    return m ? { width: Number(m[3]) - Number(m[1]), height: Number(m[4]) - Number(m[2]) } : null;
  };
  const objects = text.split(/\bendobj\b/);
  const parent = objects.find((o) => /\/Type\s*\/Pages\b/.test(o));
  const fallback = (parent && box(parent)) || { width: 612, height: 792 };
  return objects.filter((o) => /\/Type\s*\/Page(?![s\w])/.test(o)).map((o) => box(o) || fallback);
}

// A blank page (white, grey lines) as a PNG, w x h.
function pagePng(w, h) {
  const raw = Buffer.alloc((w * 3 + 1) * h, 255);
  for (let y = 0; y < h; y++) {
    raw[y * (w * 3 + 1)] = 0;
    const line = y > h * 0.1 && y < h * 0.9 && Math.floor(y / Math.max(3, h / 40)) % 2 === 0;
    if (!line) continue;
    for (let x = Math.floor(w * 0.1); x < Math.floor(w * (y % 7 === 0 ? 0.6 : 0.9)); x++) {
      raw.fill(200, y * (w * 3 + 1) + 1 + x * 3, y * (w * 3 + 1) + 4 + x * 3);
    }
  }
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; ihdr[9] = 2;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

const DEV_MAX_PAGES = 32;

function pdfOf(dataUrl) {
  const m = /^data:application\/pdf;base64,(.*)$/s.exec(String(dataUrl || ''));
  return m ? pdfPages(Buffer.from(m[1], 'base64')) : null;
}

async function documentPages(req, res, fixed) {
  const body = await readBody(req);
  if (body === undefined) return badJson(res);
  if (fixed) return sendJson(res, 200, fixed);
  const pages = pdfOf(body.file_data);
  if (!pages || !pages.length) {
    return sendJson(res, 400, { error: { message: 'not a PDF (no %PDF- header or no pages)', type: 'invalid_request_error',
      param: 'file_data', code: 'invalid_pdf' } });
  }
  const dpi = body.dpi ?? 144;
  const thumb = body.thumbnail_size ?? 256;
  await new Promise((r) => setTimeout(r, 150));
  sendJson(res, 200, { object: 'qvl.document', pages: pages.length, dpi, max_pages: DEV_MAX_PAGES,
    page_info: pages.map((p, k) => {
      const width = Math.round((p.width * dpi) / 72);
      const height = Math.round((p.height * dpi) / 72);
      const cost = imageCost(width, height, DEV_CONFIG, body.max_pixels ?? 0, body.min_pixels ?? 0);
      const s = thumb / Math.max(width, height);
      const png = pagePng(Math.max(1, Math.round(width * s)), Math.max(1, Math.round(height * s)));
      return { page: k + 1, width, height, image_tokens: cost.tokens, thumbnail: `data:image/png;base64,${png.toString('base64')}` };
    }) });
}

function parsePages(sel, count) {
  if (sel == null) return Array.from({ length: count }, (_, k) => k + 1);
  const out = [];
  for (const part of String(sel).split(',')) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d*)\s*)?$/.exec(part);
    if (!m) return null;
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : m[2] === '' ? count : Number(m[2]);
    for (let p = a; p <= b; p++) out.push(p);
  }
  return out.every((p) => p >= 1 && p <= count) ? out : null;
}

const batches = new Map();

async function createBatch(req, res, delayMs) {
  const body = await readBody(req);
  if (body === undefined) return badJson(res);
  if (body.per_page !== true) {
    return sendJson(res, 400, { error: { message: 'the dev server only fakes per_page batches', type: 'invalid_request_error',
      param: 'per_page', code: null } });
  }
  const user = [...(body.messages || [])].reverse().find((m) => m.role === 'user');
  const part = user && Array.isArray(user.content) ? user.content.find((p) => p.type === 'file') : null;
  const all = part ? pdfOf(part.file.file_data) : null;
  const pages = all ? parsePages(part.file.pages, all.length) : null;
  if (!pages) {
    return sendJson(res, 400, { error: { message: 'one PDF file part with valid pages expected', type: 'invalid_request_error',
      param: 'messages', code: 'invalid_pdf' } });
  }
  const text = user.content.filter((p) => p.type === 'text').map((p) => p.text).join(' ');
  const rf = body.response_format && body.response_format.type === 'json_schema' ? body.response_format : null;
  const id = `batch-dev${Date.now().toString(36)}`;
  const batch = { id, object: 'qvl.job_batch', status: 'queued', created: Math.floor(Date.now() / 1000),
    results: pages.map((page, k) => ({ page, id: `job-dev${k}${id.slice(-5)}`, status: 'queued', result: null, error: null })) };
  batches.set(id, batch);
  // One page after the other, like one engine slot; a running page's canned answer comes in a
  // word at a time as its progress ({tokens, text}), as the real server reports a page's text so far.
  (async () => {
    for (const r of batch.results) {
      if (batch.status === 'cancelled') return;
      batch.status = 'running';
      r.status = 'running';
      await new Promise((done) => setTimeout(done, Math.max(150, delayMs * 5)));
      const answer = rf ? JSON.stringify(instanceOf(rf.json_schema.schema))
        : r.page > 1 && /qwenvl html/i.test(text) ? ANSWERS.html2 : pickAnswer(text);
      const pieces = answer.match(/\s*\S+|\s+/g) || [];
      for (let k = 0; k < pieces.length && r.status === 'running'; k++) {
        r.progress = { tokens: k + 1, text: pieces.slice(0, k + 1).join('') };
        await new Promise((done) => setTimeout(done, delayMs));
      }
      delete r.progress;
      if (r.status === 'cancelled') return;
      r.status = 'succeeded';
      r.result = { id: `chatcmpl-${r.id}`, object: 'chat.completion', model: DEV_CONFIG.model,
        choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 700, completion_tokens: 60, total_tokens: 760 },
        timings: { queue_ms: 1, image_ms: 60, vision_ms: 2100, prefill_ms: 1300, prefill_tok_s: 530, decode_tok_s: 14.1 } };
    }
    batch.status = 'succeeded';
  })();
  sendJson(res, 202, { id, object: 'qvl.job_batch', status: batch.status, pages,
    jobs: batch.results.map((r) => ({ page: r.page, id: r.id })) });
}

function batchState(batch) {
  const done = batch.results.filter((r) => ['succeeded', 'failed', 'cancelled'].includes(r.status)).length;
  return { id: batch.id, object: batch.object, status: batch.status, created: batch.created,
    progress: { done, total: batch.results.length }, results: batch.results };
}

function batchRoute(req, res, id) {
  const batch = batches.get(id);
  if (!batch) return sendJson(res, 404, { error: { message: `no batch ${id}`, type: 'invalid_request_error', param: null, code: 'not_found' } });
  if (req.method === 'DELETE' && !['succeeded', 'failed'].includes(batch.status)) {
    batch.status = 'cancelled';
    for (const r of batch.results) if (r.status === 'queued' || r.status === 'running') r.status = 'cancelled';
  }
  sendJson(res, 200, batchState(batch));
}

// ---------------------------------------------------------------- video (fake)

// An MP4's video track, read from its boxes (moov/trak: tkhd size, mdhd time scale and duration, stsz
// frame count, stsd codec): a dev aid for the simple clips of tests/fixtures/video, not a demuxer.
function mp4Video(bytes) {
  const boxes = (from, to) => {
    const out = {};
    for (let at = from; at + 8 <= to;) {
      const size = bytes.readUInt32BE(at);
      const type = bytes.toString('latin1', at + 4, at + 8);
      if (size < 8 || at + size > to) break;
      (out[type] ||= []).push({ start: at + 8, end: at + size });
      at += size;
    }
    return out;
  };
  const moov = boxes(0, bytes.length).moov;
  if (!moov) return null;
  for (const trak of boxes(moov[0].start, moov[0].end).trak || []) {
    const t = boxes(trak.start, trak.end);
    const mdia = t.mdia && boxes(t.mdia[0].start, t.mdia[0].end);
    if (!t.tkhd || !mdia || !mdia.hdlr || !mdia.mdhd || !mdia.minf) continue;
    if (bytes.toString('latin1', mdia.hdlr[0].start + 8, mdia.hdlr[0].start + 12) !== 'vide') continue;
    const stbl = boxes(mdia.minf[0].start, mdia.minf[0].end).stbl;
    const tables = stbl && boxes(stbl[0].start, stbl[0].end);
    if (!tables || !tables.stsz || !tables.stsd) return null;
    const md = mdia.mdhd[0].start;
    const v1 = bytes[md] === 1;
    const scale = bytes.readUInt32BE(md + (v1 ? 20 : 12));
    const duration = v1 ? Number(bytes.readBigUInt64BE(md + 24)) : bytes.readUInt32BE(md + 16);
    const frames = bytes.readUInt32BE(tables.stsz[0].start + 8);
    const tkhdEnd = t.tkhd[0].end;  // width and height: the box's last two 16.16 numbers
    const codec = bytes.toString('latin1', tables.stsd[0].start + 12, tables.stsd[0].start + 16);
    if (!scale || !duration || !frames) return null;
    return { width: bytes.readUInt32BE(tkhdEnd - 8) >>> 16, height: bytes.readUInt32BE(tkhdEnd - 4) >>> 16,
      total_frames: frames, fps: frames / (duration / scale), codec: { avc1: 'h264', avc3: 'h264', hvc1: 'hevc', hev1: 'hevc' }[codec] || codec };
  }
  return null;
}

// The sampling of transformers' Qwen3-VL video processor at its defaults (fps 2, 4-768 frames, 4096 to
// 25165824 pixels over all frames; qvl's src/video/sampling.cpp): the frame indices, then the size
// each frame is resized to (smart_resize over the frames, in pairs).
const VIDEO_DEFAULTS = { fps: 2, min_frames: 4, max_frames: 768, min_pixels: 4096, max_pixels: 25165824 };

function sampleFrames(total, fps, s) {
  const n = Math.min(Math.max(Math.trunc((total / fps) * s.fps), s.min_frames), s.max_frames, total);
  const step = n > 1 ? (total - 1) / (n - 1) : 0;
  return Array.from({ length: n }, (_, i) => (i === n - 1 && n > 1 ? total - 1 : roundHalfEven(i * step)));
}

function videoTokens(width, height, frames, s) {
  const factor = DEV_CONFIG.patch_size * DEV_CONFIG.merge_size;
  const tBar = Math.ceil(frames / 2) * 2;
  let h = roundHalfEven(height / factor) * factor;
  let w = roundHalfEven(width / factor) * factor;
  if (tBar * h * w > s.max_pixels) {
    const beta = Math.sqrt((frames * height * width) / s.max_pixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (tBar * h * w < s.min_pixels) {
    const beta = Math.sqrt(s.min_pixels / (frames * height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return (tBar / 2) * (h / factor) * (w / factor);
}

// Python's "{:.1f}": a binary tie (x.25, x.75) goes to the even digit, where toFixed goes up.
const pyFixed1 = (x) => (Number.isInteger(x * 4) && (x * 4) % 2 === 1 ? (roundHalfEven(x * 10) / 10).toFixed(1) : x.toFixed(1));

const videoError = (res, message, param = 'video', code = 'invalid_video') =>
  sendJson(res, 400, { error: { message, type: 'invalid_request_error', param, code } });

// The clip of a data:video/...;base64 URL, with its sampled frames and cost, or an error sentence.
function sampledVideo(url) {
  const m = /^data:video\/[\w.+-]+;base64,(.*)$/s.exec(String(url || ''));
  if (!m) return { error: 'the dev server only reads data:video/...;base64 URLs' };
  const clip = mp4Video(Buffer.from(m[1], 'base64'));
  if (!clip) return { error: 'not an MP4 with a video track (the dev server reads MP4 boxes only)' };
  const indices = sampleFrames(clip.total_frames, clip.fps, VIDEO_DEFAULTS);
  return { clip, indices, tokens: videoTokens(clip.width, clip.height, indices.length, VIDEO_DEFAULTS) };
}

// POST /v1/qvl/videos/frames: the shape of docs/api.md "Video frames", at the sampling defaults (the
// keys that change them are refused here), with blank thumbnails. `fixed`: an answer to send instead
// (screenshots.mjs passes the real server's, so the strip shows the clip's frames).
async function videoFrames(req, res, fixed) {
  const body = await readBody(req);
  if (body === undefined) return badJson(res);
  if (fixed) return sendJson(res, 200, fixed);
  for (const key of Object.keys(body)) {
    if (key !== 'video' && key !== 'thumbnail_size') {
      return videoError(res, `the dev server samples at the defaults only: '${key}' is not faked`, key, 'unsupported_value');
    }
  }
  const v = sampledVideo(body.video);
  if (v.error) return videoError(res, v.error);
  const { clip, indices } = v;
  const thumb = body.thumbnail_size ?? 160;
  const s = Math.min(1, thumb / Math.max(clip.width, clip.height));
  const png = pagePng(Math.max(1, Math.round(clip.width * s)), Math.max(1, Math.round(clip.height * s)));
  const thumbnail = `data:image/png;base64,${png.toString('base64')}`;
  const frames = indices.map((index, k) => ({ index, time: index / clip.fps, group: Math.floor(k / 2), thumbnail }));
  const groups = [];
  for (let k = 0; k < frames.length; k += 2) {
    const pair = frames.slice(k, k + 2);
    const time = (pair[0].time + pair[pair.length - 1].time) / 2;  // an odd last frame is repeated
    groups.push({ time, text: `<${pyFixed1(time)} seconds>`, frames: pair.map((_, j) => k + j) });
  }
  await new Promise((r) => setTimeout(r, 100));
  sendJson(res, 200, { object: 'qvl.video', width: clip.width, height: clip.height, fps: clip.fps,
    total_frames: clip.total_frames, duration: clip.total_frames / clip.fps, container: 'mov,mp4,m4a,3gp,3g2,mj2',
    codec: clip.codec, video_tokens: v.tokens, thumbnail_size: thumb, frames, groups });
}

// ---------------------------------------------------------------- chat

async function chat(req, res, delayMs) {
  const body = await readBody(req);
  if (body === undefined) return badJson(res);
  const bad = checkImages(body.messages || []);
  if (bad) return sendJson(res, 400, { error: { message: bad, type: 'invalid_request_error', param: 'messages', code: 'invalid_image' } });
  // Every video_url part is read as the frames route reads it; usage's image_tokens counts the
  // videos' tokens (images are not priced here).
  let videoTokensSent = 0;
  for (const [i, m] of (body.messages || []).entries()) {
    for (const [j, part] of (Array.isArray(m.content) ? m.content : []).entries()) {
      if (part.type !== 'video_url') continue;
      const v = sampledVideo(part.video_url && part.video_url.url);
      if (v.error) return videoError(res, v.error, `messages[${i}].content[${j}].video_url`);
      videoTokensSent += v.tokens;
    }
  }
  const last = [...body.messages].reverse().find((m) => m.role === 'user');
  const text = typeof last.content === 'string' ? last.content
    : last.content.filter((p) => p.type === 'text').map((p) => p.text).join(' ');
  if (/#busy/.test(text)) {
    return sendJson(res, 429, { error: { message: 'queue full (4 waiting)', type: 'server_busy', param: null, code: 'queue_full' } },
      { 'Retry-After': '3' });
  }
  const rf = body.response_format && body.response_format.type !== 'text' ? body.response_format : null;
  const pattern = rf && rf.type === 'json_schema' ? findPattern(rf.json_schema && rf.json_schema.schema, 'response_format.json_schema.schema') : null;
  if (pattern) {
    return sendJson(res, 400, { error: { message: `response schema keyword 'pattern' is not supported by qvl's constrained ` +
      `decoding (at ${pattern})`, type: 'invalid_request_error', param: pattern, code: 'unsupported_value' } });
  }
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const choice = body.tool_choice ?? 'auto';
  const called = choice === 'none' ? []
    : choice && choice.type === 'function' ? tools.filter((t) => t.function.name === choice.function.name)
      : tools.slice(0, 3);
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  let closed = false;
  res.on('close', () => { closed = true; });
  const id = `chatcmpl-dev${Date.now()}`;
  const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk',
    model: DEV_CONFIG.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const hasVideo = Array.isArray(last.content) && last.content.some((p) => p.type === 'video_url');
  const answer = called.length ? (choice === 'auto' ? 'Let me look that up.' : '')
    : !rf ? (hasVideo ? ANSWERS.video : pickAnswer(text))
      : JSON.stringify(rf.type === 'json_schema' ? instanceOf(rf.json_schema.schema)
        : { caption: 'A simple countryside scene', objects: ['house', 'tree', 'car', 'sun'], has_text: false });
  const pieces = rf && !called.length ? answer.match(/.{1,6}/gs) || [] : answer.match(/\s*\S+|\s+/g) || [];
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  await sleep(Math.min(400, delayMs * 8));
  if (/#timeout/.test(text)) {
    res.end(`data: ${JSON.stringify({ error: { message: 'request exceeded the 180 s deadline', type: 'timeout_error', code: 'timeout' } })}\n\n`);
    return;
  }
  res.write(chunk({ role: 'assistant', content: '' }));
  let n = 0;
  for (const p of pieces) {
    if (closed) return;
    res.write(chunk({ content: p }));
    n++;
    await sleep(delayMs);
  }
  for (const [index, t] of called.entries()) {
    // As OpenAI streams calls: id, type and name first with empty arguments, then the arguments text.
    const args = JSON.stringify(instanceOf(t.function.parameters || {}));
    res.write(chunk({ tool_calls: [{ index, id: `call_dev${index}${id.slice(-6)}`, type: 'function',
      function: { name: t.function.name, arguments: '' } }] }));
    for (const piece of args.match(/.{1,5}/gs) || []) {
      if (closed) return;
      await sleep(delayMs);
      res.write(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
      n++;
    }
  }
  res.write(chunk({}, called.length ? 'tool_calls' : 'stop'));
  res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', choices: [],
    usage: { prompt_tokens: 312 + videoTokensSent, completion_tokens: n, total_tokens: 312 + videoTokensSent + n,
      prompt_tokens_details: { cached_tokens: 0, image_tokens: videoTokensSent } },
    timings: { queue_ms: 2, image_ms: 18, vision_ms: 1630, prefill_ms: 910, prefill_tok_s: 342.9,
      decode_tok_s: 14.2 } })}\n\n`);
  res.end('data: [DONE]\n\n');
}

// `documentPages`, `videoFrames`: fixed answers for /v1/qvl/documents/pages and /v1/qvl/videos/frames
// (screenshots.mjs passes what the real server rendered, so the thumbnails show the PDF's pages and
// the clip's frames instead of blank ones).
export function startDevServer({ port = 0, delayMs = 30, documentPages: fixedPages = null, videoFrames: fixedFrames = null } = {}) {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    if (req.method === 'GET' && url.pathname === '/health') return sendJson(res, 200, { status: 'ok' });
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: [{ id: DEV_CONFIG.model, object: 'model', owned_by: 'qvl',
        architecture: { modality: 'text+image+video->text', input_modalities: ['text', 'image', 'video'], output_modalities: ['text'] } }] });
    }
    if (req.method === 'GET' && url.pathname === '/v1/qvl/config') return sendJson(res, 200, DEV_CONFIG);
    if (req.method === 'POST' && url.pathname === '/v1/chat/completions') return chat(req, res, delayMs);
    if (req.method === 'POST' && url.pathname === '/v1/qvl/documents/pages') return documentPages(req, res, fixedPages);
    if (req.method === 'POST' && url.pathname === '/v1/qvl/videos/frames') return videoFrames(req, res, fixedFrames);
    if (req.method === 'POST' && url.pathname === '/v1/jobs') return createBatch(req, res, delayMs);
    const job = /^\/v1\/jobs\/(batch-[\w-]+)$/.exec(url.pathname);
    if (job && (req.method === 'GET' || req.method === 'DELETE')) return batchRoute(req, res, job[1]);
    if (req.method !== 'GET') return sendJson(res, 404, { error: { message: 'not found' } });
    const rel = url.pathname === '/' ? 'index.html' : decodeURIComponent(url.pathname.slice(1));
    const file = path.resolve(WEB, rel);
    if (!file.startsWith(WEB + path.sep) || rel.startsWith('test/')) return sendJson(res, 404, { error: { message: 'not found' } });
    try {
      const data = await readFile(file);
      // The strict policy the page is written for (no inline script or style, nothing remote).
      res.writeHead(200, { 'Content-Type': MIME[path.extname(file)] || 'application/octet-stream',
        'Content-Security-Policy': PAGE_CSP });
      res.end(data);
    } catch {
      sendJson(res, 404, { error: { message: 'not found' } });
    }
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name, def) => {
    const k = process.argv.indexOf(name);
    return k > 0 ? Number(process.argv[k + 1]) : def;
  };
  const server = await startDevServer({ port: arg('--port', 8090), delayMs: arg('--delay-ms', 30) });
  console.log(`dev server (fake API, development aid only): http://127.0.0.1:${server.address().port}/`);
}
