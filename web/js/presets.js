// The tasks offered as one-click presets: for images, and for PDF documents (shown when a PDF is
// attached). A preset is a prompt plus, optionally, what it changes in the request and in how the
// answer is shown:
//   format         'markdown' | 'html' | 'json' | 'text': how the answer is rendered and downloaded
//   responseFormat  sent as response_format in place of the Settings' answer format (constrained JSON)
//   minTokens       the image budget raised to at least this many tokens per image or page
//                   (min_pixels = minTokens x 32 x 32, smart_resize.js raisedPixels)
//   system          a system message sent before the Settings' one (none of the presets need it now)
//
// Document prompts follow Qwen's document-parsing cookbook (QwenLM/Qwen3-VL,
// cookbooks/document_parsing.ipynb): the model was trained on the short prompts "qwenvl markdown"
// and "qwenvl html"; grounding wants 1024-2048 image tokens (Qwen's recipes; llama.cpp warns that
// boxes are poor below that).

// Invoice-like key-value extraction. Only keywords qvl's constrained decoding enforces (no pattern,
// no fractional bounds); strings bounded so a weak model cannot write one forever.
export const INVOICE_SCHEMA = Object.freeze({
  type: 'object',
  properties: {
    document_type: { type: 'string', enum: ['invoice', 'receipt', 'order', 'quote', 'statement', 'other'] },
    vendor: { type: ['string', 'null'], maxLength: 120 },
    customer: { type: ['string', 'null'], maxLength: 120 },
    number: { type: ['string', 'null'], maxLength: 40 },
    date: { type: ['string', 'null'], maxLength: 40 },
    due_date: { type: ['string', 'null'], maxLength: 40 },
    currency: { type: ['string', 'null'], maxLength: 8 },
    line_items: {
      type: 'array',
      maxItems: 40,
      items: {
        type: 'object',
        properties: {
          description: { type: 'string', maxLength: 160 },
          quantity: { type: ['number', 'null'] },
          unit_price: { type: ['number', 'null'] },
          amount: { type: ['number', 'null'] },
        },
        required: ['description', 'quantity', 'unit_price', 'amount'],
        additionalProperties: false,
      },
    },
    subtotal: { type: ['number', 'null'] },
    tax: { type: ['number', 'null'] },
    total: { type: ['number', 'null'] },
  },
  required: ['document_type', 'vendor', 'customer', 'number', 'date', 'due_date', 'currency', 'line_items',
    'subtotal', 'tax', 'total'],
  additionalProperties: false,
});

export const GROUNDING_MIN_TOKENS = 1024;

export const PRESETS = Object.freeze([
  { id: 'describe', for: 'image', icon: 'eye', label: 'Describe', short: 'Describe', hint: 'What is in the image',
    prompt: 'Describe this image in detail.' },
  { id: 'ocr', for: 'image', icon: 'text', label: 'Extract text', short: 'Text', hint: 'OCR, in reading order',
    prompt: 'Read all the text in this image, in reading order, keeping the line breaks. Output only the text.' },
  { id: 'table', for: 'image', icon: 'table', label: 'Table → Markdown', short: 'Table', hint: 'Rebuild a table',
    prompt: 'Convert the table in this image into a Markdown table. Output only the table.', format: 'markdown' },
  { id: 'ground', for: 'image', icon: 'target', label: 'Find objects', short: 'Objects',
    hint: `Boxes drawn on the image (≥ ${GROUNDING_MIN_TOKENS.toLocaleString('en-US')} tokens)`,
    prompt: 'Locate every distinct object in this image. Answer with a JSON list in a ```json block, one ' +
      'entry per object: {"bbox_2d": [x1, y1, x2, y2], "label": "name"}.', minTokens: GROUNDING_MIN_TOKENS },

  { id: 'doc-markdown', for: 'doc', icon: 'text', label: 'Parse to Markdown', short: 'Markdown',
    hint: 'Text and tables as Markdown', prompt: 'qwenvl markdown', format: 'markdown' },
  { id: 'doc-html', for: 'doc', icon: 'code', label: 'Parse to HTML', short: 'HTML',
    hint: 'QwenVL HTML, element boxes drawn', prompt: 'qwenvl html', format: 'html' },
  { id: 'doc-fields', for: 'doc', icon: 'braces', label: 'Fields → JSON', short: 'JSON',
    hint: 'Invoice fields, schema-checked', format: 'json',
    prompt: 'Extract the key fields of this document (vendor, customer, number, dates, currency, line items, ' +
      'totals) as JSON. Use null for a field the document does not show; copy values as printed.',
    responseFormat: { type: 'json_schema', json_schema: { name: 'invoice', schema: INVOICE_SCHEMA, strict: true } } },
  { id: 'doc-ground', for: 'doc', icon: 'target', label: 'Find regions', short: 'Regions',
    hint: `Boxes per page (≥ ${GROUNDING_MIN_TOKENS.toLocaleString('en-US')} tokens)`,
    prompt: 'Locate every title, paragraph, table, figure and signature on this page. Answer with a JSON list ' +
      'in a ```json block, one entry per region: {"bbox_2d": [x1, y1, x2, y2], "label": "kind"}.',
    minTokens: GROUNDING_MIN_TOKENS },
]);

// The presets shown: the document ones while a PDF is attached, the image ones otherwise.
export function presetsFor(kind) {
  return PRESETS.filter((p) => p.for === kind);
}

export function presetById(id) {
  return PRESETS.find((p) => p.id === id) || null;
}
