// The page: state, events, and the request each turn sends. Rendering lives in view.js, the API in
// api.js, the pure parts (markdown, grounding, smart_resize, sse, request, tool_calls) in their own
// modules with tests.
import { FALLBACK_CONFIG, fetchConfig, fetchHealth, newSessionId, streamChat, fetchDocumentPages, fetchVideoFrames,
  startBatch, getBatch, cancelBatch } from './api.js';
import { checkFile, readAttachment, readAsDataUrl } from './attachments.js';
import { loadSettings, saveSettings, sanitizeSettings, DEFAULTS } from './settings.js';
import { h, icon, attachmentChip, userTurn, answerView, tokensOf } from './view.js';
import { formatBytes } from './errors.js';
import { buildMessages, buildRequestBody, checkSchemaText, checkToolsText, formatAndToolFields, modeSummary }
  from './request.js';
import { accumulateToolCalls, toApiToolCalls } from './tool_calls.js';
import { presetsFor, GROUNDING_MIN_TOKENS } from './presets.js';
import { raisedPixels } from './smart_resize.js';
import { isPdfFile, checkPdf, defaultPages, batchBody, BATCH_DONE, resultText, exportName, prettyJson, unfence,
  htmlDocument, combinedExport, MIME_TYPES, EXTENSIONS, DEFAULT_DPI, THUMBNAIL_SIZE } from './document.js';
import { docCard, docTurn, batchView, pickedTokens, pageTokens } from './document_view.js';
import { sanitizeHtml } from './safe_html.js';
import { isVideoFile, checkVideo, videoMime } from './video.js';
import { videoCard, videoTurn, linkTimes } from './video_view.js';
import { initSearch } from './search_view.js';

const $ = (id) => document.getElementById(id);
const els = {
  turns: $('turns'), empty: $('empty-state'), conversation: $('conversation'), prompt: $('prompt'),
  composer: $('composer'), attachments: $('attachments'), notice: $('notice'), fileInput: $('file-input'),
  send: $('send-btn'), stop: $('stop-btn'), status: $('status'), model: $('model-name'), budget: $('budget'),
  presets: $('presets'), presetCards: $('preset-cards'), limits: $('limits-hint'), drop: $('drop-overlay'),
  doc: $('doc'), video: $('video'),
  settings: $('settings'), settingsForm: $('settings-form'), announcer: $('announcer'),
};

const state = {
  config: { ...FALLBACK_CONFIG },
  configFromServer: false,
  settings: loadSettings(localStorage),
  pending: [],      // attachments for the next message
  doc: null,        // the PDF for the next message: {name, bytes, dataUrl, dpi, status: 'loading'|'ready',
                    //  info: /v1/qvl/documents/pages answer, picked: Set of pages, mode: 'once'|'pages',
                    //  measuredMaxPixels}
  docMode: 'once',  // ask once (one streamed request) or page by page (a job per page); kept across PDFs
  video: null,      // the video for the next message: {name, bytes, dataUrl, status: 'loading'|'ready',
                    //  info: /v1/qvl/videos/frames answer}
  turns: [],        // {text, images, json, answer: {reasoning, text, toolCalls, status, error, finishReason,
                    //  usage, timings}, view}
  active: null,     // {controller, turn} while an answer streams
  sessionId: newSessionId(),  // X-Session-Id of this conversation; a new one when it is cleared
  health: 'connecting',
};

// ---------------------------------------------------------------- theme

function applyTheme() {
  const t = state.settings.theme;
  if (t) document.documentElement.dataset.theme = t;
  else delete document.documentElement.dataset.theme;
  const dark = t ? t === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
  $('theme-btn').setAttribute('aria-label', dark ? 'Switch to light theme' : 'Switch to dark theme');
  document.documentElement.classList.toggle('is-dark', dark);
}

$('theme-btn').addEventListener('click', () => {
  const dark = document.documentElement.classList.contains('is-dark');
  state.settings.theme = dark ? 'light' : 'dark';
  saveSettings(localStorage, state.settings);
  applyTheme();
});
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', applyTheme);

// ---------------------------------------------------------------- notices

let noticeTimer = 0;
let settingsNotice = false;  // the notice shown says a setting stopped a request
// level 'error': something was refused; 'info': a hint or a warning that does not block anything.
function notice(text, sticky = false, level = 'error') {
  settingsNotice = false;
  els.notice.querySelector('.notice-text').textContent = text;
  els.notice.dataset.level = level;
  els.notice.hidden = false;
  clearTimeout(noticeTimer);
  if (!sticky) noticeTimer = setTimeout(() => { els.notice.hidden = true; }, 9000);
}
els.notice.querySelector('.notice-close').addEventListener('click', () => { els.notice.hidden = true; });

function announce(text) {
  els.announcer.textContent = '';
  setTimeout(() => { els.announcer.textContent = text; }, 30);
}

// ---------------------------------------------------------------- server status and limits

async function refreshHealth() {
  const hState = await fetchHealth(state.settings.apiKey);
  const was = state.health;
  state.health = hState;
  els.status.dataset.state = hState;
  els.status.querySelector('.status-text').textContent =
    { ready: 'ready', loading: 'loading model…', offline: 'server offline', error: 'server error' }[hState];
  if (hState === 'ready' && (was !== 'ready' || !state.configFromServer)) await refreshConfig();
  setTimeout(refreshHealth, hState === 'ready' ? 15000 : 3000);
}

async function refreshConfig() {
  const { config, fromServer } = await fetchConfig(state.settings.apiKey);
  state.config = config;
  state.configFromServer = fromServer;
  els.model.textContent = config.model || 'model';
  els.model.title = config.model ? `Model served: ${config.model}` : '';
  const cap = config.max_pixels.toLocaleString('en-US');
  const tokens = Math.floor(config.max_pixels / (config.patch_size * config.merge_size) ** 2);
  els.limits.textContent = `Images are resized to at most ${cap} pixels (about ${tokens.toLocaleString('en-US')} ` +
    `image tokens); files up to ${formatBytes(config.max_image_bytes)}. Smaller images answer faster.` +
    (fromServer ? '' : ' (Assumed limits: the server did not report its own.)');
  $('max-pixels-hint').textContent = `0 = the server's cap (${cap}). Fewer pixels = fewer image tokens = faster answers.`;
  $('max-tokens-hint').textContent = `0 = server default (${config.default_max_tokens})`;
  renderAttachments();
}

// ---------------------------------------------------------------- attachments

async function addFiles(files) {
  const list = [...files];
  const pdfs = list.filter(isPdfFile);
  if (pdfs.length) addPdf(pdfs[0]);
  if (pdfs.length > 1) notice('One PDF at a time: the first one is attached.', false, 'info');
  const videos = list.filter(isVideoFile);
  if (videos.length) addVideo(videos[0]);
  if (videos.length > 1) notice('One video at a time: the first one is attached.', false, 'info');
  for (const file of list) {
    if (isPdfFile(file) || isVideoFile(file)) continue;
    const problem = checkFile(file, state.config);
    if (problem) { notice(problem, true); continue; }
    try {
      const att = await readAttachment(file);
      state.pending.push(att);
      if (!att.decodable) {
        notice(`“${att.name}” could not be previewed here; the server will check it when you send.`, false, 'info');
      }
    } catch (e) {
      notice(`Could not read “${file.name}”: ${e.message}`, true);
    }
  }
  renderAttachments();
  els.prompt.focus();
}

// ---------------------------------------------------------------- documents (PDF)

// The server renders the pages: the page sends the file once to learn each page's size, token cost
// and thumbnail (POST /v1/qvl/documents/pages), then with the question.
async function addPdf(file) {
  const problem = checkPdf(file, state.config);
  if (problem) { notice(problem, true); return; }
  let dataUrl;
  try {
    dataUrl = (await readAsDataUrl(file)).replace(/^data:[^;,]*/, 'data:application/pdf');
  } catch (e) {
    notice(`Could not read “${file.name}”: ${e.message}`, true);
    return;
  }
  const maxPixels = state.settings.maxPixels;
  const doc = { name: file.name || 'document.pdf', bytes: file.size, dataUrl, dpi: DEFAULT_DPI, status: 'loading',
    info: null, picked: new Set(), measuredMaxPixels: maxPixels };
  state.doc = doc;
  renderDoc();
  const request = { file_data: dataUrl, dpi: doc.dpi, thumbnail_size: THUMBNAIL_SIZE };
  if (maxPixels > 0) request.max_pixels = maxPixels;
  const r = await fetchDocumentPages(request, { apiKey: state.settings.apiKey });
  if (state.doc !== doc) return;  // removed or replaced meanwhile
  if (r.error || !Array.isArray(r.data.page_info)) {
    state.doc = null;
    renderDoc();
    notice(`“${doc.name}”: ${r.error || 'the server did not list its pages.'}`, true);
    return;
  }
  doc.info = r.data;
  doc.status = 'ready';
  doc.picked = new Set(defaultPages(r.data.pages, r.data.max_pages));
  if (r.data.max_pages && r.data.pages > r.data.max_pages) {
    notice(`“${doc.name}” has ${r.data.pages} pages; the server takes ${r.data.max_pages} per request. ` +
      `The first ${r.data.max_pages} are picked: pick others below.`, false, 'info');
  }
  renderDoc();
  announce(`${doc.name}: ${r.data.pages} ${r.data.pages === 1 ? 'page' : 'pages'} ready.`);
}

// ---------------------------------------------------------------- videos

// The server samples the clip: the page sends it once to learn the frames qvl will use, their times,
// thumbnails and the token cost (POST /v1/qvl/videos/frames, the engine's own sampling), then with
// the question.
async function addVideo(file) {
  const problem = checkVideo(file, state.config);
  if (problem) { notice(problem, true); return; }
  let dataUrl;
  try {
    dataUrl = (await readAsDataUrl(file)).replace(/^data:[^;,]*/, `data:${videoMime(file)}`);
  } catch (e) {
    notice(`Could not read “${file.name}”: ${e.message}`, true);
    return;
  }
  const video = { name: file.name || 'video', bytes: file.size, dataUrl, status: 'loading', info: null };
  state.video = video;
  renderVideo();
  const r = await fetchVideoFrames({ video: dataUrl }, { apiKey: state.settings.apiKey });
  if (state.video !== video) return;  // removed or replaced meanwhile
  if (r.error || !Array.isArray(r.data.frames)) {
    state.video = null;
    renderVideo();
    notice(`“${video.name}”: ${r.error || 'the server did not list its frames.'}`, true);
    return;
  }
  video.info = r.data;
  video.status = 'ready';
  renderVideo();
  announce(`${video.name}: ${r.data.frames.length} frames, ${r.data.video_tokens} video tokens.`);
}

function renderVideo() {
  const video = state.video;
  els.video.hidden = !video;
  els.video.replaceChildren(video ? videoCard(video, {
    onRemove: () => { state.video = null; renderVideo(); els.prompt.focus(); },
  }) : '');
  renderPlaceholder();
  renderBudget();
}

// The video an answer's times refer to: its own turn's, else the latest earlier turn's.
function videoFor(turn) {
  for (let k = state.turns.indexOf(turn); k >= 0; k--) {
    const t = state.turns[k];
    if (t.strip) return { info: t.video.info, jump: t.strip.jump };
  }
  return null;
}

// The page budget of a request: the Settings' max pixels, raised by a grounding preset.
function docPixels(minTokens = 0) {
  const maxPixels = state.settings.maxPixels;
  if (!minTokens) return { maxPixels, minPixels: 0 };
  const r = raisedPixels(state.config, maxPixels, minTokens);
  return { maxPixels: r.max_pixels, minPixels: r.min_pixels };
}

function renderDoc() {
  const doc = state.doc;
  els.doc.hidden = !doc;
  if (!doc) {
    els.doc.replaceChildren();
  } else {
    doc.mode = state.docMode;
    const focused = document.activeElement && document.activeElement.closest('#doc') ? document.activeElement : null;
    const focusKey = focused ? (focused.dataset.page || focused.value || focused.textContent) : null;
    els.doc.replaceChildren(docCard(doc, {
      config: state.config, pixels: docPixels(), raised: docPixels(GROUNDING_MIN_TOKENS),
      onToggle: (page) => {
        if (doc.picked.has(page)) doc.picked.delete(page);
        else if (!doc.info.max_pages || doc.picked.size < doc.info.max_pages) doc.picked.add(page);
        renderDoc();
      },
      onAll: () => { doc.picked = new Set(defaultPages(doc.info.pages, doc.info.max_pages)); renderDoc(); },
      onNone: () => { doc.picked = new Set(); renderDoc(); },
      onMode: (mode) => { state.docMode = mode; renderDoc(); },
      onRemove: () => { state.doc = null; renderDoc(); els.prompt.focus(); },
    }));
    // Keep the keyboard where it was: the card is rebuilt on each change.
    if (focusKey != null) {
      const again = [...els.doc.querySelectorAll('button, input')].find((e) =>
        (e.dataset.page || e.value || e.textContent) === focusKey);
      if (again) again.focus();
    }
  }
  renderPlaceholder();
  renderPresets();
  renderBudget();
}

function renderPlaceholder() {
  const what = state.doc ? 'document' : state.video ? 'video' : 'image';
  els.prompt.placeholder = `Ask about the ${what}…`;
  els.empty.querySelector('h1').textContent = `Ask about ${what === 'image' ? 'an image' : `a ${what}`}`;
}

// What the next request sends of the document: a snapshot (later picking does not change a turn).
function docSnapshot(doc, preset) {
  const pages = [...doc.picked].sort((a, b) => a - b);
  const raised = Boolean(preset && preset.minTokens);
  const pixels = docPixels(raised ? preset.minTokens : 0);
  const pageInfo = doc.info.page_info.filter((p) => doc.picked.has(p.page));
  return { name: doc.name, dataUrl: doc.dataUrl, dpi: doc.dpi, pages, pageInfo, mode: doc.mode, raised, source: doc,
    tokens: pageInfo.reduce((s, p) => s + pageTokens(doc, p, state.config, pixels), 0) };
}

// The page images of a document turn, for drawing boxes on.
function docImages(doc) {
  return doc ? doc.pageInfo.filter((p) => p.thumbnail)
    .map((p) => ({ dataUrl: p.thumbnail, name: `Page ${p.page}`, label: `Page ${p.page}`, decodable: true })) : [];
}

function renderAttachments() {
  const maxPixels = state.settings.maxPixels;
  els.attachments.replaceChildren(...state.pending.map((att) =>
    attachmentChip(att, state.config, maxPixels, () => {
      state.pending = state.pending.filter((a) => a !== att);
      renderAttachments();
      els.prompt.focus();
    })));
  els.attachments.hidden = state.pending.length === 0;
  renderBudget();
}

function renderBudget() {
  const mp = state.settings.maxPixels;
  const pendingTokens = state.pending.reduce((s, a) => s + tokensOf(a, state.config, mp), 0);
  const pastTokens = state.turns.filter(inHistory)
    .reduce((s, t) => s + t.images.reduce((x, a) => x + tokensOf(a, state.config, mp), 0), 0);
  const docTokens = state.doc && state.doc.status === 'ready' ? pickedTokens(state.doc, state.config, docPixels()) : 0;
  const videoTokens = state.video && state.video.status === 'ready' ? state.video.info.video_tokens : 0;
  const pastVideo = state.turns.filter(inHistory).reduce((s, t) => s + (t.video ? t.video.info.video_tokens : 0), 0);
  const total = pendingTokens + pastTokens + docTokens + videoTokens + pastVideo;
  if (!total) { els.budget.textContent = ''; els.budget.className = ''; return; }
  const parts = [];
  if (pendingTokens + docTokens) parts.push(`${(pendingTokens + docTokens).toLocaleString('en-US')} image tokens to send`);
  if (videoTokens) parts.push(`${videoTokens.toLocaleString('en-US')} video tokens to send`);
  if (pastVideo) parts.push(`${pastVideo.toLocaleString('en-US')} video tokens in earlier turns`);
  if (pastTokens) parts.push(`${pastTokens.toLocaleString('en-US')} in earlier turns`);
  parts.push(`context ${state.config.context_size.toLocaleString('en-US')}`);
  els.budget.textContent = parts.join(' · ');
  els.budget.className = total > state.config.context_size * 0.9 ? 'over' : '';
}

els.fileInput.addEventListener('change', () => {
  addFiles(els.fileInput.files);
  els.fileInput.value = '';
});
$('attach-btn').addEventListener('click', () => els.fileInput.click());

document.addEventListener('paste', (e) => {
  const files = [...(e.clipboardData ? e.clipboardData.files : [])]
    .filter((f) => f.type.startsWith('image/') || isPdfFile(f) || isVideoFile(f));
  if (files.length) {
    e.preventDefault();
    addFiles(files);
  }
});

let dragDepth = 0;
const hasFiles = (e) => e.dataTransfer && [...e.dataTransfer.types].includes('Files');
window.addEventListener('dragenter', (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  dragDepth++;
  els.drop.hidden = false;
});
window.addEventListener('dragover', (e) => { if (hasFiles(e)) e.preventDefault(); });
window.addEventListener('dragleave', () => {
  dragDepth = Math.max(0, dragDepth - 1);
  if (!dragDepth) els.drop.hidden = true;
});
window.addEventListener('drop', (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  dragDepth = 0;
  els.drop.hidden = true;
  if (searchShown()) search.indexFiles(e.dataTransfer.files);
  else addFiles(e.dataTransfer.files);
});

// ---------------------------------------------------------------- the Search view

const searchShown = () => !$('search-view').hidden;
function showView(name) {
  const searching = name === 'search';
  $('search-view').hidden = !searching;
  els.conversation.hidden = searching;
  document.querySelector('.composer-wrap').hidden = searching;
  $('tab-chat').setAttribute('aria-selected', String(!searching));
  $('tab-search').setAttribute('aria-selected', String(searching));
  if (searching) { search.refreshList(); $('search-query').focus(); } else els.prompt.focus();
}
const search = initSearch($('search-view'), {
  apiKey: () => state.settings.apiKey,
  notice,
  openInChat: (file) => { showView('chat'); addFiles([file]); },
});
$('tab-chat').addEventListener('click', () => showView('chat'));
$('tab-search').addEventListener('click', () => showView('search'));

// ---------------------------------------------------------------- conversation

// A turn goes back to the model as history only if it produced text or tool calls (a failed turn is
// shown, not resent).
// A page-by-page batch is not part of the conversation: its answers are per page, not a reply.
function inHistory(turn) {
  if (turn.batch) return false;
  return turn.answer.text.length > 0 || turn.answer.toolCalls.length > 0 ||
    turn === (state.active && state.active.turn);
}

// The active turn is the last of the history: its question is asked, its answer not yet given.
function requestBody(turn) {
  const messages = buildMessages(state.settings.system, state.turns.filter(inHistory));
  const { body } = buildRequestBody({ settings: state.settings, config: state.config, messages, preset: turn.preset });
  return JSON.stringify(body);
}

// The images an answer refers to: those of its own turn, else of the latest earlier turn with images.
function imagesFor(turn) {
  for (let k = state.turns.indexOf(turn); k >= 0; k--) {
    const imgs = [...state.turns[k].images.filter((a) => a.decodable), ...docImages(state.turns[k].doc)];
    if (imgs.length) return imgs;
  }
  return [];
}

function setBusy(busy) {
  els.send.hidden = busy;
  els.stop.hidden = !busy;
  els.composer.classList.toggle('busy', busy);
}

// Shows a new turn (the question, then `view` for its answer) and makes it
// the active one; the returned controller is what Stop aborts.
function showActiveTurn(turn, view) {
  turn.view = view;
  if (turn.video) turn.strip = videoTurn(turn.video);
  turn.li = h('li', { class: 'turn' }, userTurn(turn, docTurn, turn.strip ? turn.strip.root : null), view.root);
  els.turns.append(turn.li);
  showEmpty(false);
  scrollToBottom();
  const controller = new AbortController();
  state.active = { controller, turn };
  setBusy(true);
  return controller;
}

let renderQueued = false;
function scheduleRender(turn) {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    const stick = nearBottom();
    turn.view.update();
    if (stick) scrollToBottom();
  });
}

function nearBottom() {
  const c = els.conversation;
  return c.scrollHeight - c.scrollTop - c.clientHeight < 120;
}

function scrollToBottom() {
  els.conversation.scrollTop = els.conversation.scrollHeight;
}

// A schema or tools setting that is not valid JSON stops the request (the message stays in the
// composer) and says what to fix; once fixed, that notice goes away with the next send.
// A preset with its own answer format (presets.js) makes the Settings' format irrelevant.
function settingsProblem(preset = null) {
  const settings = preset && preset.responseFormat ? { ...state.settings, answerFormat: 'text' } : state.settings;
  const { error } = formatAndToolFields(settings);
  if (error) {
    notice(`${error} Fix it in Settings (⚙).`, true);
    settingsNotice = true;
    return true;
  }
  if (settingsNotice) els.notice.hidden = true;
  settingsNotice = false;
  return false;
}

// `preset`: the task chosen (presets.js), which may set the answer's format and the image budget.
async function send(text, preset = null) {
  if (state.active) return;
  text = text.trim();
  const doc = state.doc;
  const video = state.video;
  if (video && !text) {
    notice('Type a question about the video, or pick a task.', false, 'info');
    return;
  }
  if (video && video.status !== 'ready') {
    notice('The video\'s frames are still being sampled; send again in a moment.', false, 'info');
    return;
  }
  if (!text && !state.pending.length) {
    notice(doc ? 'Type a question about the document, or pick a task.' : 'Type a question, or add an image and pick a task.',
      false, 'info');
    return;
  }
  if (doc && doc.status !== 'ready') {
    notice('The document\'s pages are still being read; send again in a moment.', false, 'info');
    return;
  }
  if (doc && doc.picked.size === 0) {
    notice('Pick at least one page of the document (or remove it).', false, 'info');
    return;
  }
  const perPage = Boolean(doc && doc.mode === 'pages');
  if (perPage && (state.pending.length || video)) {
    notice(`Page by page sends the PDF alone: remove the ${video ? 'video' : 'images'}, or choose “Ask once”.`, false, 'info');
    return;
  }
  if (settingsProblem(preset)) return;
  const turn = {
    text,
    images: state.pending,
    doc: doc ? docSnapshot(doc, preset) : null,
    video: video ? { name: video.name, dataUrl: video.dataUrl, info: video.info, source: video } : null,
    preset,
    format: preset && preset.format ? preset.format : 'text',
    json: preset && preset.responseFormat ? true : state.settings.answerFormat !== 'text',
    answer: { reasoning: '', text: '', toolCalls: [], status: 'waiting', error: '', finishReason: null, usage: null,
      timings: null },
  };
  state.pending = [];
  state.doc = null;
  state.video = null;
  state.turns.push(turn);
  els.prompt.value = '';
  autosize();
  renderAttachments();
  renderDoc();
  renderVideo();
  if (perPage) {
    runBatch(turn);
    return;
  }

  const view = answerView(turn, { onCopy: copyAnswer, onRetry: retry, onDownload: downloadAnswer, imageFor: imagesFor,
    onRendered: (body) => {
      const v = videoFor(turn);
      if (v) linkTimes(body, v.info, v.jump);
    } });
  const controller = showActiveTurn(turn, view);
  const body = requestBody(turn);
  const bodyBytes = new TextEncoder().encode(body).length;
  if (bodyBytes > state.config.max_body_bytes) {
    turn.answer.status = 'error';
    turn.answer.error = `This request is ${formatBytes(bodyBytes)}; the server accepts up to ` +
      `${formatBytes(state.config.max_body_bytes)}. Every earlier image is sent again with each turn: ` +
      'clear the conversation or use smaller images.';
  } else {
    const result = await streamChat(body, {
      apiKey: state.settings.apiKey,
      sessionId: state.sessionId,
      signal: controller.signal,
      onReasoning: (d) => {
        turn.answer.reasoning += d;
        turn.answer.status = 'streaming';
        scheduleRender(turn);
      },
      onDelta: (d) => {
        turn.answer.text += d;
        turn.answer.status = 'streaming';
        scheduleRender(turn);
      },
      onToolCalls: (deltas) => {
        turn.answer.toolCalls = accumulateToolCalls(turn.answer.toolCalls, deltas);
        turn.answer.status = 'streaming';
        scheduleRender(turn);
      },
    });
    Object.assign(turn.answer, {
      finishReason: result.finishReason, usage: result.usage, timings: result.timings,
      error: result.error || '',
      status: result.stopped ? 'stopped' : result.error ? 'error' : 'done',
    });
  }
  state.active = null;
  setBusy(false);
  const stick = nearBottom();
  view.update();
  if (stick) scrollToBottom();
  renderBudget();
  announce(turn.answer.error ? 'The answer failed.' : turn.answer.status === 'stopped' ? 'Stopped.' : 'Answer complete.');
}

// ---------------------------------------------------------------- page by page (a job per page)

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// One job per picked page (POST /v1/jobs with per_page: true), polled until every page is done;
// Stop cancels the batch (DELETE). The results are shown per page, in page order.
async function runBatch(turn) {
  const pages = turn.doc.pages;
  turn.batch = { id: null, status: 'queued', error: '', progress: { done: 0, total: pages.length },
    results: pages.map((page) => ({ page, status: 'queued', text: '', error: '' })) };
  const view = batchView(turn, { onCopy: copyPage, onDownload: downloadPage, onDownloadAll: downloadAll });
  const controller = showActiveTurn(turn, view);
  const opts = { apiKey: state.settings.apiKey };
  const messages = buildMessages(state.settings.system, [turn]);
  const built = buildRequestBody({ settings: state.settings, config: state.config, messages, preset: turn.preset });
  const started = await startBatch(batchBody(built.body), opts);
  const b = turn.batch;
  if (started.error) {
    b.status = 'error';
    b.error = started.error;
  } else {
    b.id = started.data.id;
    b.status = started.data.status || 'queued';
    view.update();
    let delay = 250;
    let stopDeadline = 0;
    for (;;) {
      if (controller.signal.aborted && !b.stopped) {
        await cancelBatch(b.id, opts);
        b.stopped = true;
        // The server cancels the running page at once and the queued ones as its queue reaches
        // them: keep polling a little so each page shows what became of it.
        stopDeadline = Date.now() + 10000;
        delay = 250;
      }
      const r = await getBatch(b.id, opts);
      if (r.error) {
        b.status = 'error';
        b.error = r.error;
        break;
      }
      applyBatch(b, r.data);
      view.update();
      if (BATCH_DONE.has(b.status) || (b.stopped && Date.now() > stopDeadline)) break;
      await (b.stopped ? sleep(delay)
        : Promise.race([sleep(delay), new Promise((res) => controller.signal.addEventListener('abort', res, { once: true }))]));
      // A page whose answer is coming in is polled often enough to read as a stream; a batch
      // with every page waiting less often.
      const streaming = b.results.some((r) => r.status === 'running');
      delay = streaming ? 250 : Math.min(1000, delay + 150);
    }
    if (b.stopped) {
      // The server cancels what had not ended; show it so even if the last poll was earlier.
      if (!BATCH_DONE.has(b.status)) b.status = 'cancelled';
      for (const r of b.results) if (r.status === 'queued' || r.status === 'running') r.status = 'cancelled';
    }
  }
  state.active = null;
  setBusy(false);
  view.update();
  renderBudget();
  announce(b.error ? 'The pages failed.' : `${b.progress.done} of ${b.progress.total} pages done.`);
}

function applyBatch(b, data) {
  b.status = data.status || b.status;
  if (data.progress) b.progress = { done: data.progress.done ?? 0, total: data.progress.total ?? b.results.length };
  for (const r of Array.isArray(data.results) ? data.results : []) {
    const mine = b.results.find((x) => x.page === r.page);
    if (!mine) continue;
    Object.assign(mine, { status: r.status || mine.status, ...resultText(r) });
  }
}

// ---------------------------------------------------------------- copy and download

function saveFile(name, text, mime) {
  const url = URL.createObjectURL(new Blob([text], { type: `${mime};charset=utf-8` }));
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// An HTML answer as a file: the sanitized tree (what the page shows), never the model's raw text.
function safeHtmlText(text) {
  const div = document.createElement('div');
  div.append(sanitizeHtml(unfence(text), document).fragment);
  return div.innerHTML;  // reading serializes the allow-listed nodes; nothing is assigned
}

function fileText(format, text, title) {
  if (format === 'html') return htmlDocument(title, safeHtmlText(text));
  if (format === 'json') return prettyJson(text);
  return text;
}

function downloadAnswer(turn) {
  const format = turn.json && turn.format === 'text' ? 'json' : turn.format;
  const name = exportName(turn.doc ? turn.doc.name : 'answer', 0, EXTENSIONS[format] || 'md');
  saveFile(name, fileText(format, turn.answer.text, name), MIME_TYPES[format] || 'text/markdown');
}

function pageFormat(turn) {
  return turn.json && turn.format === 'text' ? 'json' : turn.format;
}

function downloadPage(turn, r) {
  const format = pageFormat(turn);
  const name = exportName(turn.doc.name, r.page, EXTENSIONS[format] || 'md');
  saveFile(name, fileText(format, r.text, `${turn.doc.name}, page ${r.page}`), MIME_TYPES[format] || 'text/markdown');
}

function downloadAll(turn, ext) {
  const format = ext === 'json' ? 'json' : pageFormat(turn);
  const results = turn.batch.results.filter((r) => r.text)
    .map((r) => ({ page: r.page, text: r.text, error: r.error, html: format === 'html' ? safeHtmlText(r.text) : undefined }));
  saveFile(exportName(turn.doc.name, 0, EXTENSIONS[format] || 'md'), combinedExport(format, turn.doc.name, results),
    MIME_TYPES[format] || 'text/markdown');
}

function copyPage(turn, r, button) {
  copyTo(pageFormat(turn) === 'json' ? prettyJson(r.text) : r.text, button);
}

// The start page shows the tasks as cards; the chip row above the composer takes over afterwards.
function showEmpty(empty) {
  els.empty.hidden = !empty;
  els.presets.hidden = empty;
}

function stop() {
  if (state.active) state.active.controller.abort();
}

// A failed turn (queue full, timeout, ...) is sent again as it was, replacing the failed one.
function retry(turn) {
  if (state.active || settingsProblem(turn.preset)) return;
  state.turns = state.turns.filter((t) => t !== turn);
  turn.li.remove();
  state.pending = [...turn.images, ...state.pending];
  if (turn.doc) {
    // The document as it was sent: same file, same pages, same way of asking.
    const doc = turn.doc.source;
    doc.picked = new Set(turn.doc.pages);
    state.doc = doc;
    state.docMode = turn.doc.mode;
  }
  if (turn.video) state.video = turn.video.source;
  const draft = els.prompt.value;
  send(turn.text, turn.preset);
  els.prompt.value = draft;
  autosize();
}

function clearConversation() {
  stop();
  state.turns = [];
  state.sessionId = newSessionId();
  els.turns.replaceChildren();
  showEmpty(true);
  renderBudget();
  els.prompt.focus();
}

// The text, then the tool calls as the API's JSON (what code calling the API would get).
function copyText(answer) {
  const calls = answer.toolCalls.length ? JSON.stringify(toApiToolCalls(answer.toolCalls), null, 2) : '';
  return [answer.text, calls].filter(Boolean).join('\n\n');
}

function copyAnswer(turn, button) {
  copyTo(copyText(turn.answer), button);
}

async function copyTo(text, button) {
  const label = button.querySelector('span');
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
    } else {
      // Plain-HTTP pages on another host have no async clipboard; the legacy path still works.
      const ta = h('textarea', { class: 'sr-only' });
      ta.value = text;
      document.body.append(ta);
      ta.select();
      document.execCommand('copy');
      ta.remove();
    }
    label.textContent = 'Copied';
  } catch {
    label.textContent = 'Copy failed';
  }
  setTimeout(() => { label.textContent = 'Copy'; }, 1500);
}

// ---------------------------------------------------------------- composer

function autosize() {
  els.prompt.style.height = 'auto';
  els.prompt.style.height = `${Math.min(els.prompt.scrollHeight, 220)}px`;
}

els.prompt.addEventListener('input', autosize);
els.prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
    e.preventDefault();
    send(els.prompt.value);
  }
});
els.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  send(els.prompt.value);
});
els.stop.addEventListener('click', stop);
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && state.active && !els.settings.open) stop();
});
$('clear-btn').addEventListener('click', clearConversation);

function usePreset(p) {
  const hasImage = state.pending.length > 0 || state.doc || state.video ||
    state.turns.some((t) => t.images.length || t.doc || t.video);
  if (state.active) return;
  if (hasImage) {
    send(p.prompt, p);
  } else {
    els.prompt.value = p.prompt;
    autosize();
    notice('Add an image first (drop, paste or 📎), then press Enter.', false, 'info');
    els.prompt.focus();
  }
}

// The image tasks, or the document tasks while a PDF is attached (presets.js).
let presetKind = '';
function renderPresets() {
  const kind = state.doc ? 'doc' : 'image';
  if (kind === presetKind) return;
  presetKind = kind;
  const list = presetsFor(kind);
  els.presets.replaceChildren(...list.map((p) => h('button', { type: 'button', class: 'preset-chip', 'data-preset': p.id,
    title: presetTitle(p), 'aria-label': p.label, onclick: () => usePreset(p) }, icon(p.icon),
  h('span', { class: 'long', text: p.label }), h('span', { class: 'short', text: p.short }))));
  els.presetCards.replaceChildren(...list.map((p) => h('button', { type: 'button', class: 'preset-card', 'data-preset': p.id,
    title: presetTitle(p), onclick: () => usePreset(p) }, icon(p.icon), h('strong', { text: p.label }), h('span', { text: p.hint }))));
}

function presetTitle(p) {
  const extra = [p.minTokens ? `Raises the image budget to at least ${p.minTokens.toLocaleString('en-US')} tokens per image or page.` : '',
    p.responseFormat ? 'The answer is JSON, checked against a schema by the server.' : ''].filter(Boolean).join(' ');
  return `${p.prompt}${extra ? `\n\n${extra}` : ''}`;
}

// ---------------------------------------------------------------- settings

const EXAMPLE_SCHEMA = {
  type: 'object',
  properties: {
    caption: { type: 'string', maxLength: 200 },
    objects: { type: 'array', items: { type: 'string' }, maxItems: 10 },
    has_text: { type: 'boolean' },
  },
  required: ['caption', 'objects', 'has_text'],
  additionalProperties: false,
};
const EXAMPLE_TOOLS = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'],
      additionalProperties: false,
    },
  },
}];

function fillSettingsForm() {
  const f = els.settingsForm.elements;
  f.system.value = state.settings.system;
  f.maxTokens.value = state.settings.maxTokens;
  f.temperature.value = state.settings.temperature;
  f.maxPixels.value = state.settings.maxPixels;
  f.apiKey.value = state.settings.apiKey;
  f.answerFormat.value = state.settings.answerFormat;
  f.jsonSchema.value = state.settings.jsonSchema;
  f.tools.value = state.settings.tools;
  f.toolChoice.value = state.settings.toolChoice;
  renderJsonSettings();
}

// The answer-format and tools fields: the schema box only for "JSON schema", and what is wrong with
// the JSON typed, under its box (the request will not be sent until it is fixed).
function renderJsonSettings() {
  const s = state.settings;
  const f = els.settingsForm.elements;
  $('schema-field').hidden = s.answerFormat !== 'json_schema';
  const schemaError = s.answerFormat === 'json_schema' && s.jsonSchema.trim() ? checkSchemaText(s.jsonSchema).error : '';
  showFieldError(f.jsonSchema, $('schema-error'), schemaError);
  const tools = checkToolsText(s.tools);
  showFieldError(f.tools, $('tools-error'), tools.error);
  const n = tools.value ? tools.value.length : 0;
  $('tools-hint').textContent = tools.error ? '' : n
    ? `${n} ${n === 1 ? 'tool' : 'tools'} sent with each request: ${tools.value.map((t) => t.function.name).join(', ')}. ` +
      'The page shows the calls; it does not run them.'
    : 'Empty = no tools. Calls the model makes are shown as cards; the page does not run them.';
  f.toolChoice.disabled = n === 0;
  renderMode();
}

function showFieldError(input, slot, message) {
  slot.textContent = message || '';
  slot.hidden = !message;
  if (message) input.setAttribute('aria-invalid', 'true');
  else input.removeAttribute('aria-invalid');
}

function renderMode() {
  const mode = modeSummary(state.settings);
  $('mode-hint').textContent = mode;
  $('mode-hint').title = mode;
}

els.settingsForm.addEventListener('input', () => {
  const f = els.settingsForm.elements;
  const next = sanitizeSettings({
    ...state.settings, system: f.system.value, maxTokens: f.maxTokens.value,
    temperature: f.temperature.value, maxPixels: f.maxPixels.value, apiKey: f.apiKey.value,
    answerFormat: f.answerFormat.value, jsonSchema: f.jsonSchema.value, tools: f.tools.value,
    toolChoice: f.toolChoice.value,
  });
  const keyChanged = next.apiKey !== state.settings.apiKey;
  state.settings = next;
  saveSettings(localStorage, state.settings);
  renderJsonSettings();
  renderAttachments();
  if (state.doc) renderDoc();
  if (keyChanged) refreshConfig();
});
for (const [id, name, example] of [['schema-example', 'jsonSchema', EXAMPLE_SCHEMA], ['tools-example', 'tools', EXAMPLE_TOOLS]]) {
  $(id).addEventListener('click', () => {
    const input = els.settingsForm.elements[name];
    input.value = JSON.stringify(example, null, 2);
    input.dispatchEvent(new Event('input', { bubbles: true }));
    input.focus();
  });
}
$('settings-btn').addEventListener('click', () => {
  fillSettingsForm();
  els.settings.showModal();
});
$('settings-reset').addEventListener('click', () => {
  state.settings = { ...DEFAULTS, theme: state.settings.theme };
  saveSettings(localStorage, state.settings);
  fillSettingsForm();
  renderAttachments();
});
els.settings.addEventListener('close', () => els.prompt.focus());
els.settings.addEventListener('click', (e) => { if (e.target === els.settings) els.settings.close(); });

// ---------------------------------------------------------------- start

applyTheme();
renderMode();
showEmpty(true);
renderPresets();
renderAttachments();
refreshHealth();
els.prompt.focus();
