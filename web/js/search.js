// Document search on the page (the Search view): the API of a server started with --task embed, and
// the pure parts (request bodies, labels) that web/test/search.test.mjs checks.
//
//   POST   /v1/index                 {file_data: data URL, filename, collection} -> {id, filename, pages,
//                                     outcome: "added"|"replaced"|"unchanged", collection}
//   GET    /v1/index?collection=     {data: [documents], collections: [{name, dimensions, documents, pages}]}
//   DELETE /v1/index/{id}
//   POST   /v1/search                {query, collection, top_k} -> {data: [{rank, score, filename, page,
//                                     page_id, thumbnail_url, image_url}]}
//   GET    /v1/index/pages/{id}/thumbnail, …/image   JPEG (fetched with the API key, shown as blob: URLs)
import { describeHttpError } from './errors.js';

export const DEFAULT_COLLECTION = 'default';
export const DEFAULT_TOP_K = 12;
export const MAX_TOP_K = 100;

const COLLECTION_RE = /^[A-Za-z0-9._-]{1,64}$/;

// What the index takes: PDFs and the image formats the server decodes.
export function isIndexable(file) {
  const name = (file.name || '').toLowerCase();
  return /^(application\/pdf|image\/(png|jpeg|webp|gif|bmp))$/.test(file.type || '') ||
    /\.(pdf|png|jpe?g|webp|gif|bmp)$/.test(name);
}

// The body of POST /v1/search, or {error} naming what is wrong before anything is sent.
export function searchBody(query, collection, topK = DEFAULT_TOP_K) {
  const q = (query || '').trim();
  if (!q) return { error: 'Type a question to search for.' };
  const c = (collection || '').trim() || DEFAULT_COLLECTION;
  if (!COLLECTION_RE.test(c)) return { error: 'A collection name is 1-64 letters, digits, dots, dashes or underscores.' };
  const k = Math.min(MAX_TOP_K, Math.max(1, Math.floor(Number(topK) || DEFAULT_TOP_K)));
  return { body: { query: q, collection: c, top_k: k } };
}

// "report.pdf · page 3" (an image has one page: its name alone).
export function hitLabel(hit) {
  const name = String(hit.filename || '').split('/').pop();
  return /\.pdf$/i.test(name) ? `${name} · page ${hit.page}` : name;
}

// The name a page gets as an attachment in the chat: "report-p3.jpg".
export function pageFileName(hit) {
  const base = String(hit.filename || 'page').split('/').pop().replace(/\.[^.]*$/, '') || 'page';
  return `${base}-p${hit.page}.jpg`;
}

function headers(apiKey, json) {
  const h = {};
  if (json) h['Content-Type'] = 'application/json';
  if (apiKey) h.Authorization = `Bearer ${apiKey}`;
  return h;
}

async function call(method, url, apiKey, body) {
  let res;
  try {
    res = await fetch(url, { method, headers: headers(apiKey, body !== undefined), cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    return { error: `Cannot reach the server at ${location.host}: ${e.message}` };
  }
  let payload = null;
  try { payload = await res.json(); } catch { payload = null; }
  if (!res.ok) return { error: describeHttpError(res.status, payload, res.headers.get('Retry-After')), status: res.status };
  return { data: payload };
}

export const indexFile = (apiKey, dataUrl, filename, collection) =>
  call('POST', '/v1/index', apiKey, { file_data: dataUrl, filename, collection });
export const listIndex = (apiKey, collection) =>
  call('GET', `/v1/index?collection=${encodeURIComponent(collection)}`, apiKey);
export const deleteDocument = (apiKey, id) => call('DELETE', `/v1/index/${encodeURIComponent(id)}`, apiKey);
export const searchPages = (apiKey, body) => call('POST', '/v1/search', apiKey, body);

// A page's JPEG (thumbnail or full page) as a Blob, or null.
export async function fetchPageBlob(apiKey, url) {
  try {
    const res = await fetch(url, { headers: headers(apiKey, false) });
    return res.ok ? await res.blob() : null;
  } catch {
    return null;
  }
}
