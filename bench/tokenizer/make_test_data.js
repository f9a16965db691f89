// Regenerates tests/tokenizer/data/ with Hugging Face's Rust tokenizers as the
// reference (run by hand after `npm install` here; the tests only read the
// output):
//  - hf_random_cases.json: random strings over characters that stress the
//    Qwen2 split rules, encoded with the fixture tokenizer.json;
//  - flags_tokenizer.json + flags_cases.json: a small byte-level BPE with
//    "a b" string merges and added tokens using lstrip / rstrip / single_word /
//    normalized, and the ids `tokenizers` gives for texts around them.
// Usage: node make_test_data.js
'use strict';

const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('@anush008/tokenizers');

const root = path.resolve(__dirname, '../..');
const out = path.join(root, 'tests/tokenizer/data');
const opts = { addSpecialTokens: false };

let state = 20251130;
function rand() {  // mulberry32
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const pool = [...'abcXYZ\'sStTlLmdrevRE0123456789 .,;:!?-_()[]{}"\\/@#$%^&*+=<>|`~',
  ' ', '  ', '\t', '\n', '\r', '\r\n', '\u00a0', '\u3000', '\u2028', '\u2029', '\u0085', '\u000b', '\u000c', '\u1680',
  '你', '好', '。', '，', '日', '本', '한', '국', '\u1100', '\u1161', '\u11a8', 'é', 'e\u0301', 'A\u030a', '\u0301',
  '\u0308', 'ſ', 'ß', 'ﬁ', 'Ω', 'Ω', '½', '²', '①', '٣', '१', 'Ⅻ', '😀', '👍🏽', '\u200d', '\u200b', '\ufeff', '\u0000',
  '\u001b', '\u202e', 'ก', '\u0e33', 'ा', '\u093c', '\u09be', '\u09c7', 'ʰ', '々', '〇',
  '<|im_end|>', '<|im_start|>', '<think>', '</think>', '<|image_pad|>', '<|', '|>', '<|im_', "'ll", "'LL", "'ve",
  "'re", "'s", "'t", "'d", "'m", "'ſ", 'Ｈ', 'ｈ', '١'];

function randomText() {
  let s = '';
  const len = 1 + Math.floor(rand() * 16);
  for (let k = 0; k < len; k++) s += pool[Math.floor(rand() * pool.length)];
  return s;
}

function byteLevelChars() {
  const chars = [];
  let extra = 256;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    chars.push(String.fromCodePoint(printable ? b : extra++));
  }
  return chars;
}

function flagsTokenizer(qwen) {
  const vocab = {};
  byteLevelChars().forEach((c, i) => { vocab[c] = i; });
  const merges = [];
  for (const [a, b] of [['Ġ', 't'], ['h', 'e'], ['Ġt', 'he'], ['i', 'n'], ['c', 'a'], ['Ġ', 'ca'],
    ['a', 'b'], ['Ã', '©'], ['Ġ', 'Ġ'], ['ĠĠ', 'Ġ']]) {
    vocab[a + b] = Object.keys(vocab).length;
    merges.push(`${a} ${b}`);
  }
  // The ids written here are deliberately not the ones `tokenizers` assigns
  // (it ignores them: a content already in the vocabulary keeps its id, the
  // others are numbered after the vocabulary).
  const token = (id, content, flags) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
    normalized: false, special: false, ...flags });
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [
      token(300, '<mask>', { lstrip: true, special: true }),
      token(301, '[R]', { rstrip: true, special: true }),
      token(302, 'cat', { single_word: true }),
      token(303, 'éa', { normalized: true }),
      token(304, '<|a|>', { special: true }),
      token(305, '<|a|>x', { special: true }),
      token(306, '[B]', { lstrip: true, rstrip: true }),
      token(307, 'in', { special: true }),
      token(308, '_x_', { single_word: true }),
    ],
    normalizer: { type: 'NFC' },
    pre_tokenizer: qwen.pre_tokenizer, post_processor: qwen.post_processor, decoder: qwen.decoder,
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
      fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
  };
}

async function encodeAll(tok, texts) {
  const cases = [];
  for (const text of texts) cases.push({ text, ids: (await tok.encode(text, null, opts)).getIds() });
  return cases;
}

async function main() {
  fs.mkdirSync(out, { recursive: true });
  const qwenPath = path.join(root, 'tests/fixtures/tiny-qwen3vl/tokenizer.json');
  const qwen = JSON.parse(fs.readFileSync(qwenPath, 'utf8'));
  const texts = [];
  for (let n = 0; n < 1500; n++) texts.push(randomText());
  fs.writeFileSync(path.join(out, 'hf_random_cases.json'), JSON.stringify({
    description: 'Random strings encoded by Hugging Face tokenizers (@anush008/tokenizers) with ' +
      'tests/fixtures/tiny-qwen3vl/tokenizer.json, add_special_tokens=false (bench/tokenizer/make_test_data.js)',
    cases: await encodeAll(Tokenizer.fromFile(qwenPath), texts) }));

  const flagsPath = path.join(out, 'flags_tokenizer.json');
  fs.writeFileSync(flagsPath, JSON.stringify(flagsTokenizer(qwen), null, 1));
  const flagTexts = [' <mask> x', 'a  <mask>', 'a\u00a0\t<mask>b', '<mask><mask>', '  <mask>  [R]  y', '[R]   b',
    '[R]\n\nb', '[R]', 'x[R]\u3000\u3000z', 'cat', 'a cat b', 'concat', 'cats', 'cat.', '(cat)', '猫cat猫', 'é cat',
    'caté', 'éa', 'e\u0301a', 'xe\u0301ay', 'e\u0301<mask>\u0301a', 'think in tin', 'a_x_ _x_ _x__ 1_x_ ._x_.', 'ℓ_x_', '<|a|>', '<|a|>x', '<|a|>y', '<|a|><|a|>x', '<|a|', 'a [B] b',
    'a   [B]   b', '[B][B]', ' [B]<mask>[R] ', 'the cat in the hat', '\u00e9\u0301', 'cat\ncat', "cat's"];
  fs.writeFileSync(path.join(out, 'flags_cases.json'), JSON.stringify({
    description: 'ids from Hugging Face tokenizers for flags_tokenizer.json (bench/tokenizer/make_test_data.js)',
    cases: await encodeAll(Tokenizer.fromFile(flagsPath), flagTexts) }, null, 1));
  const flagsTok = Tokenizer.fromFile(flagsPath);
  const decodes = [];
  for (const ids of [[300, 259, 268, 269], [116, 257, 259, 270], [195, 169, 97]])
    decodes.push({ ids, decoded: await flagsTok.decode(ids, false), decoded_skip_special: await flagsTok.decode(ids, true) });
  fs.writeFileSync(path.join(out, 'flags_decode.json'), JSON.stringify({ cases: decodes }, null, 1));
}

main().catch((e) => { console.error('make_test_data: ' + e.message); process.exit(1); });
