// Starts the real `qvl serve` (QVL_BINARY, else build/qvl) with the tiny fixture model on a free port,
// as tests/openai_sdk/sdk.test.mjs does, and stops it with SIGTERM, which must exit 0.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, '../..');
export const MODEL_DIR = path.join(ROOT, 'tests/fixtures/tiny-qwen3vl');
export const MODEL = 'tiny-qwen3vl';  // the name the server gives the fixture model
export const API_KEY = 'clients-test-key';

export function imageDataUri(name = 'gradient_320x240') {
  const file = path.join(ROOT, `tests/fixtures/golden/images/${name}.png`);
  return `data:image/png;base64,${readFileSync(file).toString('base64')}`;
}

export async function startQvl(extraArgs = []) {
  const binary = process.env.QVL_BINARY || path.join(ROOT, 'build/qvl');
  assert.ok(existsSync(binary), `qvl binary not found at ${binary} (build it, or set QVL_BINARY)`);
  // Two slots so a test's concurrent requests (n, parallel SDK calls) do not queue behind each other.
  const args = ['serve', '--model', MODEL_DIR, '--port', '0', '--threads', '1', '--parallel', '2',
    '--api-key', API_KEY, '--jobs-db', 'memory', ...extraArgs];
  const proc = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(log);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', (code) => reject(new Error(`qvl serve exited with ${code}:\n${log}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/health`)).ok) break;
    } catch { /* not yet */ }
    if (i > 600) throw new Error(`qvl serve not ready:\n${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    baseURL: `${base}/v1`,
    apiKey: API_KEY,
    log: () => log,
    async stop() {
      if (proc.exitCode != null) return;
      const exited = new Promise((r) => proc.once('exit', (code) => r(code)));
      proc.kill('SIGTERM');
      assert.equal(await exited, 0, `qvl serve did not exit 0 on SIGTERM:\n${log}`);
    },
  };
}

// Runs `fn`; on failure, says what `what` was and adds the server's log tail, so a failing
// client-library call names the server's side of it.
export async function explain(what, server, fn) {
  try {
    return await fn();
  } catch (e) {
    const tail = server.log().split('\n').slice(-15).join('\n');
    e.message = `${what}: ${e.message}\n--- qvl serve log (tail) ---\n${tail}`;
    throw e;
  }
}

// A fetch that records every request a library sends and what the server answers, so a failing
// test can show both: log.fetch goes in the client's options, log.exchanges holds the records.
export function exchangeLog() {
  const exchanges = [];
  const fetchAndLog = async (url, init) => {
    const entry = { url: String(url), request: init?.body ? String(init.body) : null };
    exchanges.push(entry);
    const res = await fetch(url, init);
    entry.status = res.status;
    if (!res.ok || !String(res.headers.get('content-type')).includes('event-stream')) {
      entry.response = await res.clone().text();
    }
    return res;
  };
  const last = (n = 3) => exchanges.slice(-n)
    .map((e) => `> ${e.url}\n> ${e.request}\n< ${e.status} ${e.response ?? '(stream)'}`).join('\n');
  // explain() with the last requests appended to a failure.
  const explainWith = async (what, server, fn) => {
    try {
      return await explain(what, server, fn);
    } catch (e) {
      e.message += `\n--- last requests ---\n${last()}`;
      throw e;
    }
  };
  return { fetch: fetchAndLog, exchanges, last, explain: explainWith };
}
