// Turns what the server answered into one sentence a person can act on. The server's own message is
// kept (it names the field, the size, the limit); the prefix says what kind of problem it is.

export function describeHttpError(status, body, retryAfter) {
  const serverMsg = body && body.error && body.error.message ? String(body.error.message) : '';
  // The field it refused (e.g. response_format.json_schema.schema.properties.code.pattern), unless
  // the message names it already.
  const param = body && body.error && typeof body.error.param === 'string' ? body.error.param : '';
  const where = param && !serverMsg.includes(param) ? ` (${param})` : '';
  const detail = serverMsg ? `: ${serverMsg}${where}` : '.';
  switch (status) {
    case 400: {
      // The answer format and the tools come from Settings: say where to change them.
      const hint = /^(response_format|tools|tool_choice)\b/.test(param)
        ? ` Change ${param.startsWith('response_format') ? 'the answer format' : 'the tools'} in Settings.` : '';
      return `The server refused the request${detail}${hint}`;
    }
    case 401:
    case 403:
      return `Not authorised${detail} Set the API key in Settings.`;
    case 404:
      return `Not found${detail}`;
    case 413:
      return `Too large for the server${detail} Use a smaller image or fewer images.`;
    case 429: {
      const wait = retryAfter ? ` Try again in ${retryAfter} s.` : ' Try again in a moment.';
      return `The server is busy: its queue is full.${wait}`;
    }
    case 503:
      return `The server is not ready yet${detail}`;
    case 504:
      return `The answer took too long and the server gave up (timeout)${detail}`;
    default:
      if (status >= 500) return `The server failed (HTTP ${status})${detail}`;
      return `Request failed (HTTP ${status})${detail}`;
  }
}

// An error that arrives inside the stream (after HTTP 200): the type/code say which kind.
export function describeStreamError(err) {
  const msg = err && err.message ? err.message : 'unknown error';
  const code = `${err && err.code ? err.code : ''} ${err && err.type ? err.type : ''}`.toLowerCase();
  if (code.includes('timeout')) return `The answer took too long and the server gave up (timeout): ${msg}`;
  return `The server stopped with an error: ${msg}`;
}

export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

// The quiet line under an answer: where the time went, from the API's timings extension.
export function describeTimings(timings, usage) {
  const t = timings || {};
  const parts = [];
  const ms = (v) => (v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`);
  if (t.queue_ms != null) parts.push(`queue ${ms(t.queue_ms)}`);
  if (t.image_ms != null) parts.push(`image ${ms(t.image_ms)}`);
  // An image served from the image-embedding cache costs no vision time: say so.
  if (t.image_cache_hits > 0 && !t.image_cache_misses) parts.push('vision cached');
  else if (t.vision_ms != null) parts.push(`vision ${ms(t.vision_ms)}`);
  if (t.prefill_ms != null) {
    const rate = t.prefill_tok_s != null ? ` (${Math.round(t.prefill_tok_s)} tok/s)` : '';
    parts.push(`prefill ${ms(t.prefill_ms)}${rate}`);
  }
  if (t.decode_tok_s != null) parts.push(`decode ${t.decode_tok_s.toFixed(1)} tok/s`);
  if (usage) {
    if (usage.prompt_tokens != null) {
      const cached = usage.prompt_tokens_details?.cached_tokens;
      parts.push(`${usage.prompt_tokens} prompt tok` + (cached > 0 ? ` (${cached} cached)` : ''));
    }
    if (usage.completion_tokens != null) parts.push(`${usage.completion_tokens} answer tok`);
  }
  return parts.join(' · ');
}
