// Writes the tokenizer benchmark text to stdout: ~1 MB of mixed English
// prose, Chinese prose and source code, generated deterministically (fixed
// seed, word lists below) so every run and every machine encodes the same
// bytes. Usage: node make_corpus.js [bytes]
'use strict';

const target = Number(process.argv[2] || 1 << 20);

let state = 0x9e3779b9;
function rand() {  // mulberry32
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const int = (n) => Math.floor(rand() * n);

const nouns = ('model image token layer engine server request answer picture table chart window ' +
  'document student teacher river mountain city market garden kitchen library museum network signal ' +
  'memory thread queue camera pixel vector matrix kernel weight cache budget report meeting project ' +
  'question problem result system language computer keyboard screen bridge harbor forest island ' +
  'winter summer morning evening history science music painting village station factory doctor').split(' ');
const verbs = ('reads writes builds measures explains describes compares finds opens closes moves ' +
  'carries shows returns computes checks sends receives draws counts improves reduces collects ' +
  'follows answers repeats changes holds keeps starts stops').split(' ');
const adjs = ('small large quick slow bright dark careful simple complex ancient modern quiet noisy ' +
  'warm cold green blue red golden empty crowded narrow wide early late useful strange ' +
  'accurate robust efficient private public').split(' ');
const advs = 'quickly slowly carefully rarely often always never suddenly quietly clearly'.split(' ');
const starts = ['The', 'A', 'Every', 'This', 'That', 'Our', 'Their', 'One'];
const names = ['Alice', 'Bob', "O'Neil", 'Zhang Wei', 'Maria', 'Dr. Smith', 'the team', "it's"];

function english() {
  const parts = [];
  const n = 2 + int(5);
  for (let k = 0; k < n; k++) {
    let s = `${pick(starts)} ${pick(adjs)} ${pick(nouns)} ${pick(advs)} ${pick(verbs)} the ${pick(nouns)}`;
    if (rand() < 0.4) s += ` of ${pick(names)}`;
    if (rand() < 0.3) s += ` in ${1900 + int(125)}`;
    if (rand() < 0.2) s += `, and ${pick(nouns)}s don't ${pick(verbs).replace(/s$/, '')} ${int(1000)} times`;
    parts.push(s + pick(['.', '.', '.', '!', '?', ';']));
  }
  return parts.join(' ') + pick(['\n', '\n\n', ' ']);
}

// Common Chinese words; sentences are sequences of them with punctuation.
const zhWords = ('我们 你们 他们 今天 明天 昨天 时间 问题 世界 中国 北京 上海 学生 老师 学校 图片 模型 语言 ' +
  '计算机 网络 数据 系统 服务器 请求 回答 城市 河流 山脉 天气 很好 非常 已经 可以 需要 因为 所以 但是 ' +
  '然后 如果 没有 知道 认为 发现 研究 发展 经济 社会 文化 历史 科学 技术 工作 生活 朋友 家庭 孩子 ' +
  '音乐 电影 图书馆 博物馆 火车站 医院 早上 晚上 春天 夏天 秋天 冬天 美丽 安静 热闹 重要 简单 复杂 ' +
  '表格 图表 文字 识别 理解 描述 比较 计算 速度 内存 线程 队列').split(' ');
function chinese() {
  let s = '';
  const n = 8 + int(20);
  for (let k = 0; k < n; k++) {
    s += pick(zhWords);
    if (rand() < 0.15) s += pick(['，', '，', '、', '。', '：', '；', '（' + int(100) + '）']);
  }
  return s + pick(['。', '！', '？']) + pick(['\n', '', '\n\n']);
}

const idents = ['count', 'total', 'buffer', 'image', 'tokens', 'result', 'index', 'value', 'width',
  'height', 'offset', 'scale', 'queue', 'request', 'cache', 'layer', 'weights', 'pixels'];
const ident = () => pick(idents) + (rand() < 0.5 ? '_' + pick(idents) : rand() < 0.5 ? String(int(10)) : '');
const camel = () => { const a = pick(idents), b = pick(idents); return a + b[0].toUpperCase() + b.slice(1); };
function code() {
  const kind = int(4);
  const a = ident(), b = ident(), c = camel(), n = int(4096);
  if (kind === 0) {
    return `def ${a}(${b}, scale=${(rand() * 4).toFixed(3)}):\n    """Return the ${pick(adjs)} ${pick(nouns)}."""\n` +
      `    if ${b} is None:\n        return []\n    return [x * scale for x in ${b}[:${n}]]  # ${pick(advs)}\n\n`;
  }
  if (kind === 1) {
    return `static int ${c}(const float* ${a}, size_t n) {\n  int acc = 0;\n` +
      `  for (size_t i = 0; i < n; ++i) {\n    if (${a}[i] > ${(rand()).toFixed(2)}f) acc += ${int(9) + 1};\n  }\n` +
      `  return acc >> ${int(8)};  // ${pick(nouns)}\n}\n\n`;
  }
  if (kind === 2) {
    return `const ${c} = async (${a}) => {\n\tconst res = await fetch(\`/api/v1/${pick(nouns)}s/\${${a}.id}\`);\n` +
      `\tif (!res.ok) throw new Error("${pick(nouns)} failed: " + res.status);\n\treturn res.json();\n};\n\n`;
  }
  return `{"${a}": ${n}, "${b}": [${int(100)}, ${int(100)}, ${(rand() * 100).toFixed(2)}], ` +
    `"name": "${pick(names).replace("'", '')}", "ok": ${rand() < 0.5}}\n`;
}

let out = '';
while (Buffer.byteLength(out) < target) {
  const r = rand();
  const chunk = r < 0.45 ? english() : r < 0.75 ? chinese() : code();
  out += chunk;
}
process.stdout.write(out);
