import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isPdfFile, checkPdf, pageSelection, defaultPages, filePart, batchBody, resultText, exportName, prettyJson,
  unfence, htmlDocument, combinedExport } from '../js/document.js';
import { parseBbox, defuseAttributes } from '../js/safe_html.js';
import { PRESETS, INVOICE_SCHEMA, presetsFor } from '../js/presets.js';
import { buildMessages, buildRequestBody } from '../js/request.js';
import { imageCost, raisedPixels } from '../js/smart_resize.js';
import { DEFAULTS } from '../js/settings.js';

const CONFIG = { model: 'm', patch_size: 16, merge_size: 2, min_pixels: 65536, max_pixels: 1048576,
  max_image_bytes: 1000 };

test('a PDF is known by its type, or by its name when the browser gives no type', () => {
  assert.ok(isPdfFile({ name: 'a.bin', type: 'application/pdf' }));
  assert.ok(isPdfFile({ name: 'Scan.PDF', type: '' }));
  assert.ok(isPdfFile({ name: 'x.pdf', type: 'application/octet-stream' }));
  assert.ok(!isPdfFile({ name: 'x.png', type: 'image/png' }));
  assert.ok(!isPdfFile({ name: 'x.pdf.png', type: 'image/png' }));
  assert.match(checkPdf({ name: 'big.pdf', size: 1001 }, CONFIG), /big\.pdf.*accepts PDFs up to/);
  assert.match(checkPdf({ name: 'e.pdf', size: 0 }, CONFIG), /empty/);
  assert.equal(checkPdf({ name: 'ok.pdf', size: 1000 }, CONFIG), null);
});

test('page selections fold runs, ascending, no duplicates', () => {
  assert.equal(pageSelection([1, 2, 3, 7]), '1-3,7');
  assert.equal(pageSelection([7, 3, 1, 2, 2]), '1-3,7');
  assert.equal(pageSelection([1, 2]), '1,2');
  assert.equal(pageSelection([2]), '2');
  assert.equal(pageSelection([4, 5, 6, 9, 10]), '4-6,9,10');
  assert.equal(pageSelection([]), '');
  assert.deepEqual(defaultPages(3, 32), [1, 2, 3]);
  assert.deepEqual(defaultPages(40, 32).length, 32);
  assert.deepEqual(defaultPages(2, 0), [1, 2]);
});

test('the file part and the messages: images, then the PDF, then the text', () => {
  const doc = { name: 'inv.pdf', dataUrl: 'data:application/pdf;base64,JVBERi0=', dpi: 144, pages: [2, 1] };
  assert.deepEqual(filePart(doc), { type: 'file', file: { file_data: doc.dataUrl, filename: 'inv.pdf', pages: '1,2' } });
  assert.equal(filePart({ ...doc, dpi: 200 }).file.dpi, 200);
  const turns = [{ text: 'Total?', images: [{ dataUrl: 'data:image/png;base64,AA' }], doc, answer: { text: '', toolCalls: [] } }];
  const [m] = buildMessages('', turns);
  assert.deepEqual(m.content.map((p) => p.type), ['image_url', 'file', 'text']);
  const onlyDoc = buildMessages('', [{ ...turns[0], images: [] }]);
  assert.deepEqual(onlyDoc[0].content.map((p) => p.type), ['file', 'text']);
});

test('a batch body is the chat body without the stream fields, with per_page', () => {
  const { body } = buildRequestBody({ settings: { ...DEFAULTS, maxTokens: 9 }, config: CONFIG, messages: [] });
  const b = batchBody(body);
  assert.equal(b.stream, undefined);
  assert.equal(b.stream_options, undefined);
  assert.equal(b.per_page, true);
  assert.equal(b.max_tokens, 9);
});

test('presets: document ones set the format; fields send the invoice schema; grounding raises min_pixels', () => {
  assert.deepEqual(presetsFor('image').map((p) => p.id), ['describe', 'ocr', 'table', 'ground']);
  assert.deepEqual(presetsFor('doc').map((p) => p.id), ['doc-markdown', 'doc-html', 'doc-fields', 'doc-ground']);
  assert.equal(presetsFor('doc')[0].prompt, 'qwenvl markdown');
  assert.equal(presetsFor('doc')[1].prompt, 'qwenvl html');
  const fields = PRESETS.find((p) => p.id === 'doc-fields');
  // The preset's format wins over the Settings' (even an invalid schema there does not block it).
  const s = { ...DEFAULTS, answerFormat: 'json_schema', jsonSchema: '{oops' };
  const r = buildRequestBody({ settings: s, config: CONFIG, messages: [], preset: fields });
  assert.equal(r.error, undefined);
  assert.deepEqual(r.body.response_format, { type: 'json_schema', json_schema: { name: 'invoice', schema: INVOICE_SCHEMA, strict: true } });
  // Only keywords qvl's constrained decoding enforces.
  assert.ok(!/"(pattern|multipleOf|format)"/.test(JSON.stringify(INVOICE_SCHEMA)));
  const ground = PRESETS.find((p) => p.id === 'doc-ground');
  const g = buildRequestBody({ settings: DEFAULTS, config: CONFIG, messages: [], preset: ground }).body;
  assert.equal(g.min_pixels, 1024 * 32 * 32);
  assert.equal(g.max_pixels, CONFIG.max_pixels);
  // A smaller max-pixels setting is raised with it; a smaller server cap caps both.
  assert.deepEqual(raisedPixels(CONFIG, 200000, 1024), { min_pixels: 1048576, max_pixels: 1048576 });
  assert.deepEqual(raisedPixels({ ...CONFIG, max_pixels: 500000 }, 0, 1024), { min_pixels: 500000, max_pixels: 500000 });
});

test('imageCost with a raised min_pixels: a small page grows to >= 1024 tokens', () => {
  assert.equal(imageCost(320, 240, CONFIG, 0).tokens, 80);
  const raised = imageCost(320, 240, CONFIG, 0, 1024 * 1024);
  assert.ok(raised.tokens >= 1024 && raised.tokens <= 1100, String(raised.tokens));
  // min_pixels above the effective max is clamped to it, as the server does (smart_resize's
  // upscaling rounds up, so 300,000 pixels become 640x480).
  assert.equal(imageCost(320, 240, CONFIG, 300000, 1024 * 1024).tokens, 300);
});

test('data-bbox: four numbers, ordered and clamped to 0..1000, else nothing', () => {
  assert.deepEqual(parseBbox('80 60 620 110'), [80, 60, 620, 110]);
  assert.deepEqual(parseBbox(' 620,110, 80 60 '), [80, 60, 620, 110]);
  assert.deepEqual(parseBbox('-5 0 2000 10'), [0, 0, 1000, 10]);
  for (const bad of ['', '1 2 3', '1 2 3 4 5', 'a b c d', '5 5 5 9', null, 'javascript:1 2 3 4']) assert.equal(parseBbox(bad), null, String(bad));
});

test('results, exports and file names', () => {
  const ok = { page: 2, status: 'succeeded', result: { choices: [{ message: { content: 'Hi' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 3 } }, error: null };
  assert.deepEqual(resultText(ok), { text: 'Hi', error: '', finishReason: 'stop', tokens: null, usage: { prompt_tokens: 3 },
    timings: null });
  // A running page: its answer so far.
  assert.deepEqual(resultText({ page: 2, status: 'running', progress: { tokens: 7, text: '# Invoice' } }),
    { text: '# Invoice', error: '', finishReason: null, tokens: 7, usage: null, timings: null });
  // A page that ended keeps its result's text, never an older progress.
  assert.equal(resultText({ ...ok, progress: { tokens: 1, text: 'H' } }).text, 'Hi');
  assert.equal(resultText({ page: 3, status: 'queued' }).text, '');
  assert.equal(resultText({ page: 1, status: 'failed', result: null, error: { message: 'boom' } }).error, 'boom');
  assert.equal(exportName('My invoice.pdf', 2, 'md'), 'My_invoice-p2.md');
  assert.equal(exportName('a.pdf', 0, 'json'), 'a.json');
  assert.equal(prettyJson('{"a":1}'), '{\n  "a": 1\n}');
  assert.equal(prettyJson('{"a":'), '{"a":');
  assert.equal(unfence('```html\n<p>x</p>\n```'), '<p>x</p>');
  assert.equal(unfence('<p>x</p>'), '<p>x</p>');
  const html = htmlDocument('a <b>', '<p>x</p>');
  assert.match(html, /default-src 'none'/);
  assert.match(html, /<title>a &lt;b&gt;<\/title>/);
  const results = [{ page: 1, text: '{"total": 3}' }, { page: 2, text: 'not json' }];
  assert.deepEqual(JSON.parse(combinedExport('json', 'a.pdf', results)),
    { document: 'a.pdf', pages: [{ page: 1, value: { total: 3 } }, { page: 2, text: 'not json' }] });
  assert.equal(combinedExport('markdown', 'a.pdf', [{ page: 1, text: '# A\n' }, { page: 3, text: 'B' }]),
    '<!-- page 1 -->\n\n# A\n\n<!-- page 3 -->\n\nB\n');
  assert.match(combinedExport('html', 'a.pdf', [{ page: 1, text: 'x', html: '<p>x</p>' }]), /<section data-page="1">\n<h2>Page 1<\/h2>\n<p>x<\/p>/);
});

test('event-handler and style attributes are renamed inside tags only (fewer CSP console errors)', () => {
  assert.equal(defuseAttributes('<img src=x onerror="a()"><p style="x" data-bbox="1 2 3 4">on=1 style=2</p><b/onclick=x>'),
    '<img src=x data-dropped="a()"><p data-dropped="x" data-bbox="1 2 3 4">on=1 style=2</p><b/data-dropped=x>');
});
