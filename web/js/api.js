// The page's side of the HTTP API (same origin as the page).
//
//   GET  /health               200 when the model is loaded, 503 while loading
//   GET  /v1/models            OpenAI list; data[0].id is the served model
//   GET  /v1/qvl/config        qvl extension, what the page needs to predict image cost and refuse
//                              oversized input before sending (see web/README.md):
//                              {model, patch_size, merge_size, min_pixels, max_pixels (server cap),
//                               max_image_bytes, max_body_bytes, context_size, default_max_tokens}
//   POST /v1/chat/completions  OpenAI chat completions with stream: true (SSE), plus the extensions
//                              max_pixels (request) and timings (in the usage chunk); with
//                              response_format and tools when the settings ask (request.js)
//   POST /v1/qvl/documents/pages  qvl extension: a PDF's pages, sized and priced, with thumbnails:
//                              {file_data, dpi, thumbnail_size, min_pixels?, max_pixels?} ->
//                              {object: "qvl.document", pages, dpi, max_pages, page_info: [{page, width,
//                               height, image_tokens, thumbnail?}]}
//   POST /v1/qvl/videos/frames qvl extension: the frames the engine samples from a clip, with their times,
//                              thumbnails and the clip's token cost: {video, thumbnail_size?} ->
//                              {object: "qvl.video", width, height, fps, duration, video_tokens, frames:
//                               [{index, time, group, thumbnail?}], groups: [{time, text, frames}]}
//   POST /v1/jobs              a chat body with "per_page": true and one PDF file part -> 202
//                              {id: "batch-…", object: "qvl.job_batch", status, pages, jobs: [{page, id}]}
//   GET  /v1/jobs/{batch id}   {id, status, progress: {done, total}, results: [{page, id, status, result:
//                               chat.completion, error}]} in page order;  DELETE cancels the batch
import { SseParser, readChunk } from './sse.js';
import { describeHttpError, describeStreamError } from './errors.js';

// Used until /v1/qvl/config answers (and if an older server lacks it): Qwen3-VL's processor values
// and the server defaults of issue 7.
export const FALLBACK_CONFIG = Object.freeze({
  model: '',
  patch_size: 16,
  merge_size: 2,
  min_pixels: 65536,
  max_pixels: 1048576,
  max_image_bytes: 20 * 1024 * 1024,
  max_video_bytes: 64 * 1024 * 1024,
  max_body_bytes: 64 * 1024 * 1024,
  context_size: 8192,
  default_max_tokens: 1024,
});

function headers(apiKey, json, sessionId) {
  const h = {};
  if (json) h['Content-Type'] = 'application/json';
  if (apiKey) h.Authorization = `Bearer ${apiKey}`;
  if (sessionId) h['X-Session-Id'] = sessionId;
  return h;
}

// A conversation's id, sent as X-Session-Id with each of its turns: behind a load balancer
// (deploy/nginx/qvl.conf) it keeps a conversation on the replica that holds its prefix and image
// caches. Random, 128 bits; getRandomValues because randomUUID needs a secure context and the page
// is often served over plain http.
export function newSessionId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export async function fetchHealth(apiKey) {
  try {
    const res = await fetch('/health', { headers: headers(apiKey), cache: 'no-store' });
    if (res.ok) return 'ready';
    if (res.status === 503) return 'loading';
    return 'error';
  } catch {
    return 'offline';
  }
}

export async function fetchConfig(apiKey) {
  const cfg = { ...FALLBACK_CONFIG };
  let fromServer = false;
  try {
    const res = await fetch('/v1/qvl/config', { headers: headers(apiKey), cache: 'no-store' });
    if (res.ok) {
      const body = await res.json();
      for (const key of Object.keys(FALLBACK_CONFIG)) {
        if (typeof body[key] === typeof FALLBACK_CONFIG[key] && body[key] !== '') cfg[key] = body[key];
      }
      fromServer = true;
    }
  } catch {
    // keep the fallback values; the page says so
  }
  if (!cfg.model) {
    try {
      const res = await fetch('/v1/models', { headers: headers(apiKey), cache: 'no-store' });
      if (res.ok) {
        const body = await res.json();
        if (body && Array.isArray(body.data) && body.data.length) cfg.model = String(body.data[0].id);
      }
    } catch {
      // the model name is cosmetic
    }
  }
  return { config: cfg, fromServer };
}

// Streams one chat completion. Calls onReasoning(text) for each piece of a Thinking model's
// reasoning (delta.reasoning_content), onDelta(text) for each piece of the answer and
// onToolCalls(deltas) for each piece of its tool calls (fold them with accumulateToolCalls), and
// resolves to {finishReason, usage, timings, error, stopped}. Aborting `signal` (the Stop button)
// closes the connection, which makes the server cancel the work and free its slot. `sessionId` is the
// conversation's (newSessionId).
export async function streamChat(body, { apiKey, sessionId, signal, onDelta, onReasoning = () => {}, onToolCalls = () => {} }) {
  const result = { finishReason: null, usage: null, timings: null, error: null, stopped: false };
  let res;
  try {
    res = await fetch('/v1/chat/completions', {
      method: 'POST', headers: headers(apiKey, true, sessionId), body, signal,
    });
  } catch (e) {
    if (e.name === 'AbortError') { result.stopped = true; return result; }
    result.error = `Cannot reach the server at ${location.host}: ${e.message}`;
    return result;
  }
  if (!res.ok) {
    let payload = null;
    try { payload = await res.json(); } catch { payload = null; }
    result.error = describeHttpError(res.status, payload, res.headers.get('Retry-After'));
    return result;
  }
  const type = res.headers.get('Content-Type') || '';
  if (!type.includes('text/event-stream')) {
    // A server that ignored stream: true still gives a complete answer.
    try {
      const payload = await res.json();
      const choice = payload.choices && payload.choices[0];
      if (choice && choice.message && typeof choice.message.reasoning_content === 'string')
        onReasoning(choice.message.reasoning_content);
      onDelta(choice && choice.message ? String(choice.message.content ?? '') : '');
      const calls = choice && choice.message && choice.message.tool_calls;
      // Whole calls, each one delta with its position as index.
      if (Array.isArray(calls) && calls.length) onToolCalls(calls.map((c, index) => ({ index, ...c })));
      result.finishReason = choice ? choice.finish_reason : null;
      result.usage = payload.usage ?? null;
      result.timings = payload.timings ?? null;
    } catch (e) {
      result.error = `The server sent an unreadable answer: ${e.message}`;
    }
    return result;
  }

  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  let done = false;
  const handle = (events) => {
    for (const data of events) {
      const chunk = readChunk(data);
      if (chunk.done) { done = true; continue; }
      if (chunk.error) { result.error = describeStreamError(chunk.error); continue; }
      if (chunk.reasoning) onReasoning(chunk.reasoning);
      if (chunk.delta) onDelta(chunk.delta);
      if (chunk.toolCalls) onToolCalls(chunk.toolCalls);
      if (chunk.finishReason) result.finishReason = chunk.finishReason;
      if (chunk.usage) result.usage = chunk.usage;
      if (chunk.timings) result.timings = chunk.timings;
    }
  };
  try {
    for (;;) {
      const { value, done: eof } = await reader.read();
      if (eof) break;
      handle(parser.push(decoder.decode(value, { stream: true })));
    }
    handle(parser.push(decoder.decode()));
    handle(parser.end());
  } catch (e) {
    if (e.name === 'AbortError') { result.stopped = true; return result; }
    result.error = `The connection broke during the answer: ${e.message}`;
    return result;
  }
  if (!done && !result.error && !result.finishReason) {
    result.error = 'The connection closed before the answer was complete.';
  }
  return result;
}

// A JSON request of the document API: resolves to {data} or {error: sentence}.
// `feature`: what a 404 (an older server without the route) says this server cannot do yet.
async function jsonCall(method, url, { apiKey, body, signal, feature = 'PDF documents' } = {}) {
  let res;
  try {
    res = await fetch(url, { method, headers: headers(apiKey, body !== undefined), cache: 'no-store', signal,
      body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    if (e.name === 'AbortError') return { error: 'Stopped.', stopped: true };
    return { error: `Cannot reach the server at ${location.host}: ${e.message}` };
  }
  let payload = null;
  try { payload = await res.json(); } catch { payload = null; }
  if (!res.ok) {
    if (res.status === 404 && !(payload && payload.error && payload.error.param)) {
      return { error: `This server does not handle ${feature} on the page yet (no ` +
        `${url.replace(/\/batch-.*$/, '/…')}).`, status: 404 };
    }
    return { error: describeHttpError(res.status, payload, res.headers.get('Retry-After')), status: res.status };
  }
  if (!payload || typeof payload !== 'object') return { error: 'The server sent an unreadable answer.' };
  return { data: payload, status: res.status };
}

// The pages of a PDF (a data: URL), with each one's size, image-token cost and thumbnail.
export function fetchDocumentPages(request, opts) {
  return jsonCall('POST', '/v1/qvl/documents/pages', { ...opts, body: request });
}

// The frames qvl samples from a video (a data: URL), with their times, thumbnails and the token cost.
export function fetchVideoFrames(request, opts) {
  return jsonCall('POST', '/v1/qvl/videos/frames', { ...opts, body: request, feature: 'videos' });
}

// One job per page: a chat body (without stream) with per_page: true.
export function startBatch(body, opts) {
  return jsonCall('POST', '/v1/jobs', { ...opts, body });
}

export function getBatch(id, opts) {
  return jsonCall('GET', `/v1/jobs/${encodeURIComponent(id)}`, opts);
}

export function cancelBatch(id, opts) {
  return jsonCall('DELETE', `/v1/jobs/${encodeURIComponent(id)}`, opts);
}
