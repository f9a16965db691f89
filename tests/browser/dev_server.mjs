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
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web');
const MIME = { '.html': 'text/html; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8', '.svg': 'image/svg+xml', '.png': 'image/png' };

export const DEV_CONFIG = {
  model: 'Qwen/Qwen3-VL-2B-Instruct', patch_size: 16, merge_size: 2, min_pixels: 65536, max_pixels: 1048576,
  max_image_bytes: 20 * 1024 * 1024, max_body_bytes: 64 * 1024 * 1024, context_size: 8192,
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

function pickAnswer(text) {
  if (/#script/.test(text)) return ANSWERS.script;
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

async function chat(req, res, delayMs) {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  let body;
  try { body = JSON.parse(raw); } catch {
    return sendJson(res, 400, { error: { message: 'invalid JSON body', type: 'invalid_request_error', param: null, code: null } });
  }
  const bad = checkImages(body.messages || []);
  if (bad) return sendJson(res, 400, { error: { message: bad, type: 'invalid_request_error', param: 'messages', code: 'invalid_image' } });
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
  const answer = called.length ? (choice === 'auto' ? 'Let me look that up.' : '')
    : !rf ? pickAnswer(text)
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
    await sleep(/#slow/.test(text) ? 200 : delayMs);
  }
  for (const [index, t] of called.entries()) {
    // As OpenAI streams calls: id, type and name first with empty arguments, then the arguments text.
    const args = JSON.stringify(instanceOf(t.function.parameters || {}));
    res.write(chunk({ tool_calls: [{ index, id: `call_dev${index}${id.slice(-6)}`, type: 'function',
      function: { name: t.function.name, arguments: '' } }] }));
    for (const piece of args.match(/.{1,5}/gs) || []) {
      if (closed) return;
      await sleep(/#slow/.test(text) ? 200 : delayMs);
      res.write(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
      n++;
    }
  }
  res.write(chunk({}, called.length ? 'tool_calls' : 'stop'));
  res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', choices: [],
    usage: { prompt_tokens: 312, completion_tokens: n, total_tokens: 312 + n },
    timings: { queue_ms: 2, image_ms: 18, vision_ms: 1630, prefill_ms: 910, prefill_tok_s: 342.9,
      decode_tok_s: 14.2 } })}\n\n`);
  res.end('data: [DONE]\n\n');
}

export function startDevServer({ port = 0, delayMs = 30 } = {}) {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    if (req.method === 'GET' && url.pathname === '/health') return sendJson(res, 200, { status: 'ok' });
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: [{ id: DEV_CONFIG.model, object: 'model', owned_by: 'qvl' }] });
    }
    if (req.method === 'GET' && url.pathname === '/v1/qvl/config') return sendJson(res, 200, DEV_CONFIG);
    if (req.method === 'POST' && url.pathname === '/v1/chat/completions') return chat(req, res, delayMs);
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
