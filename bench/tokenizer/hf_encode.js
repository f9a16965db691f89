// Encodes a text file with Hugging Face's Rust tokenizers (Node binding
// @anush008/tokenizers) and prints the single-threaded speed as JSON, the
// counterpart of bench/tokenizer_speed.cpp.
// Usage: node hf_encode.js TOKENIZER_JSON TEXT_FILE [RUNS] [IDS_OUT] [whole|lines]
// `lines` encodes each line (with its newline) as its own input, in one
// encodeBatch call kept on one thread (TOKENIZERS_PARALLELISM=false).
'use strict';

process.env.RAYON_NUM_THREADS = '1';
process.env.TOKENIZERS_PARALLELISM = 'false';
const fs = require('fs');
const { Tokenizer } = require('@anush008/tokenizers');

async function main() {
  const [tokPath, textPath, runsArg, idsOut, modeArg] = process.argv.slice(2);
  const mode = modeArg || 'whole';
  if (!tokPath || !textPath) {
    console.error('usage: node hf_encode.js TOKENIZER_JSON TEXT_FILE [RUNS] [IDS_OUT]');
    process.exit(2);
  }
  const runs = Number(runsArg || 5);
  const tok = Tokenizer.fromFile(tokPath);
  const text = fs.readFileSync(textPath, 'utf8');
  const bytes = Buffer.byteLength(text);
  const opts = { addSpecialTokens: false };
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) || [];
  const encode = async () => {
    if (mode === 'whole') return (await tok.encode(text, null, opts)).getIds();
    const encs = await tok.encodeBatch(lines, opts);
    return encs.flatMap((e) => e.getIds());
  };
  const tc = process.hrtime.bigint();
  let ids = await encode();  // warm-up: fills the word cache; timed as the cold run
  const cold = Number(process.hrtime.bigint() - tc) / 1e9;
  const times = [], cpus = [];
  for (let r = 0; r < runs; r++) {
    // CPU time of the whole process (the encode runs on a libuv worker
    // thread; the main thread only waits): robust when the machine is busy.
    const c0 = process.cpuUsage();
    // Timed: the library's encode call(s); reading the ids back into JS is not.
    const t0 = process.hrtime.bigint();
    const enc = mode === 'whole' ? await tok.encode(text, null, opts) : await tok.encodeBatch(lines, opts);
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
    const dc = process.cpuUsage(c0);
    cpus.push((dc.user + dc.system) / 1e6);
    if (r === 0) ids = mode === 'whole' ? enc.getIds() : enc.flatMap((e) => e.getIds());
  }
  times.sort((a, b) => a - b);
  cpus.sort((a, b) => a - b);
  const cpuMedian = cpus[Math.floor(cpus.length / 2)];
  if (idsOut) fs.writeFileSync(idsOut, JSON.stringify(ids));
  const best = times[0], median = times[Math.floor(times.length / 2)];
  console.log(JSON.stringify({
    library: 'huggingface tokenizers (@anush008/tokenizers ' + require('@anush008/tokenizers/package.json').version + ')',
    mode, bytes, tokens: ids.length, runs, seconds_best: best, seconds_median: median,
    mb_per_s_best: bytes / best / 1e6, mb_per_s_median: bytes / median / 1e6,
    cold_seconds: cold, mb_per_s_cold: bytes / cold / 1e6, cpu_seconds_median: cpuMedian, mb_per_cpu_s_median: bytes / cpuMedian / 1e6,
  }));
}

main().catch((e) => { console.error('hf_encode: ' + e.message); process.exit(1); });
