// The page: state, events, and the request each turn sends. Rendering lives in view.js, the API in
// api.js, the pure parts (markdown, grounding, smart_resize, sse, request, tool_calls) in their own
// modules with tests.
import { FALLBACK_CONFIG, fetchConfig, fetchHealth, newSessionId, streamChat } from './api.js';
import { checkFile, readAttachment } from './attachments.js';
import { loadSettings, saveSettings, sanitizeSettings, DEFAULTS } from './settings.js';
import { h, icon, attachmentChip, userTurn, answerView, tokensOf } from './view.js';
import { formatBytes } from './errors.js';
import { buildMessages, buildRequestBody, checkSchemaText, checkToolsText, formatAndToolFields, modeSummary }
  from './request.js';
import { accumulateToolCalls, toApiToolCalls } from './tool_calls.js';

const PRESETS = [
  { id: 'describe', icon: 'eye', label: 'Describe', short: 'Describe', hint: 'What is in the image',
    prompt: 'Describe this image in detail.' },
  { id: 'ocr', icon: 'text', label: 'Extract text', short: 'Text', hint: 'OCR, in reading order',
    prompt: 'Read all the text in this image, in reading order, keeping the line breaks. Output only the text.' },
  { id: 'table', icon: 'table', label: 'Table → Markdown', short: 'Table', hint: 'Rebuild a table',
    prompt: 'Convert the table in this image into a Markdown table. Output only the table.' },
  { id: 'ground', icon: 'target', label: 'Find objects', short: 'Objects', hint: 'Boxes drawn on the image',
    prompt: 'Locate every distinct object in this image. Answer with a JSON list in a ```json block, one ' +
      'entry per object: {"bbox_2d": [x1, y1, x2, y2], "label": "name"}.' },
];

const $ = (id) => document.getElementById(id);
const els = {
  turns: $('turns'), empty: $('empty-state'), conversation: $('conversation'), prompt: $('prompt'),
  composer: $('composer'), attachments: $('attachments'), notice: $('notice'), fileInput: $('file-input'),
  send: $('send-btn'), stop: $('stop-btn'), status: $('status'), model: $('model-name'), budget: $('budget'),
  presets: $('presets'), presetCards: $('preset-cards'), limits: $('limits-hint'), drop: $('drop-overlay'),
  settings: $('settings'), settingsForm: $('settings-form'), announcer: $('announcer'),
};

const state = {
  config: { ...FALLBACK_CONFIG },
  configFromServer: false,
  settings: loadSettings(localStorage),
  pending: [],      // attachments for the next message
  turns: [],        // {text, images, json, answer: {text, toolCalls, status, error, finishReason, usage,
                    //  timings}, view}
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
  for (const file of list) {
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
  const total = pendingTokens + pastTokens;
  if (!total) { els.budget.textContent = ''; els.budget.className = ''; return; }
  const parts = [];
  if (pendingTokens) parts.push(`${pendingTokens.toLocaleString('en-US')} image tokens to send`);
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
  const files = [...(e.clipboardData ? e.clipboardData.files : [])].filter((f) => f.type.startsWith('image/'));
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
  addFiles(e.dataTransfer.files);
});

// ---------------------------------------------------------------- conversation

// A turn goes back to the model as history only if it produced text or tool calls (a failed turn is
// shown, not resent).
function inHistory(turn) {
  return turn.answer.text.length > 0 || turn.answer.toolCalls.length > 0 ||
    turn === (state.active && state.active.turn);
}

// The active turn is the last of the history: its question is asked, its answer not yet given.
function requestBody() {
  const messages = buildMessages(state.settings.system, state.turns.filter(inHistory));
  const { body } = buildRequestBody({ settings: state.settings, config: state.config, messages });
  return JSON.stringify(body);
}

// The images an answer refers to: those of its own turn, else of the latest earlier turn with images.
function imagesFor(turn) {
  for (let k = state.turns.indexOf(turn); k >= 0; k--) {
    const imgs = state.turns[k].images.filter((a) => a.decodable);
    if (imgs.length) return imgs;
  }
  return [];
}

function setBusy(busy) {
  els.send.hidden = busy;
  els.stop.hidden = !busy;
  els.composer.classList.toggle('busy', busy);
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
function settingsProblem() {
  const { error } = formatAndToolFields(state.settings);
  if (error) {
    notice(`${error} Fix it in Settings (⚙).`, true);
    settingsNotice = true;
    return true;
  }
  if (settingsNotice) els.notice.hidden = true;
  settingsNotice = false;
  return false;
}

async function send(text) {
  if (state.active) return;
  text = text.trim();
  if (!text && !state.pending.length) {
    notice('Type a question, or add an image and pick a task.', false, 'info');
    return;
  }
  if (settingsProblem()) return;
  const turn = {
    text,
    images: state.pending,
    json: state.settings.answerFormat !== 'text',
    answer: { text: '', toolCalls: [], status: 'waiting', error: '', finishReason: null, usage: null,
      timings: null },
  };
  state.pending = [];
  state.turns.push(turn);
  els.prompt.value = '';
  autosize();
  renderAttachments();

  const view = answerView(turn, { onCopy: copyAnswer, onRetry: retry, imageFor: imagesFor });
  turn.view = view;
  turn.li = h('li', { class: 'turn' }, userTurn(turn), view.root);
  els.turns.append(turn.li);
  showEmpty(false);
  scrollToBottom();

  const controller = new AbortController();
  state.active = { controller, turn };
  setBusy(true);
  const body = requestBody();
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
  if (state.active || settingsProblem()) return;
  state.turns = state.turns.filter((t) => t !== turn);
  turn.li.remove();
  state.pending = [...turn.images, ...state.pending];
  const draft = els.prompt.value;
  send(turn.text);
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

async function copyAnswer(turn, button) {
  const label = button.querySelector('span');
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(copyText(turn.answer));
    } else {
      // Plain-HTTP pages on another host have no async clipboard; the legacy path still works.
      const ta = h('textarea', { class: 'sr-only' });
      ta.value = copyText(turn.answer);
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
  const hasImage = state.pending.length > 0 || state.turns.some((t) => t.images.length);
  if (state.active) return;
  if (hasImage) {
    send(p.prompt);
  } else {
    els.prompt.value = p.prompt;
    autosize();
    notice('Add an image first (drop, paste or 📎), then press Enter.', false, 'info');
    els.prompt.focus();
  }
}

for (const p of PRESETS) {
  els.presets.append(h('button', { type: 'button', class: 'preset-chip', 'data-preset': p.id,
    title: p.prompt, 'aria-label': p.label, onclick: () => usePreset(p) }, icon(p.icon),
  h('span', { class: 'long', text: p.label }), h('span', { class: 'short', text: p.short })));
  els.presetCards.append(h('button', { type: 'button', class: 'preset-card', 'data-preset': p.id,
    onclick: () => usePreset(p) }, icon(p.icon), h('strong', { text: p.label }), h('span', { text: p.hint })));
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
renderAttachments();
refreshHealth();
els.prompt.focus();
