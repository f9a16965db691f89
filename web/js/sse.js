// Incremental parser for Server-Sent Events (the `stream: true` answers of /v1/chat/completions).
// Feed it decoded text as it arrives; it returns the complete events' data fields. Follows the
// WHATWG event-stream rules that matter here: lines end in \n, \r\n or \r; "data:" lines of one event
// are joined with \n; a blank line ends the event; lines starting with ':' are comments.
export class SseParser {
  constructor() {
    this.buffer = '';
    this.data = [];
  }

  push(text) {
    this.buffer += text;
    const events = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      // A lone '\r' at the very end may be half of '\r\n': wait for the next chunk.
      if (!m || (m[0] === '\r' && m.index === this.buffer.length - 1)) break;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line, events);
    }
    return events;
  }

  // The stream ended: a last event without its blank line still counts.
  end() {
    const events = [];
    if (this.buffer) this.line(this.buffer, events);
    this.buffer = '';
    this.line('', events);
    return events;
  }

  line(line, events) {
    if (line === '') {
      if (this.data.length) events.push(this.data.join('\n'));
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
  }
}

// Interprets one event of an OpenAI chat-completion stream.
// Returns {done} | {error: {message, type, code}} | {delta, reasoning, toolCalls, finishReason, usage, timings};
// reasoning is a Thinking model's delta.reasoning_content ('' if none); toolCalls is the chunk's
// delta.tool_calls (pieces of calls, see tool_calls.js) or null.
export function readChunk(data) {
  if (data.trim() === '[DONE]') return { done: true };
  let obj;
  try {
    obj = JSON.parse(data);
  } catch {
    return { error: { message: `the server sent an unreadable stream event: ${data.slice(0, 80)}` } };
  }
  if (obj && obj.error) return { error: normalizeError(obj.error) };
  const choice = Array.isArray(obj.choices) && obj.choices.length ? obj.choices[0] : null;
  return {
    delta: choice && choice.delta && typeof choice.delta.content === 'string' ? choice.delta.content : '',
    reasoning: choice && choice.delta && typeof choice.delta.reasoning_content === 'string'
      ? choice.delta.reasoning_content : '',
    toolCalls: choice && choice.delta && Array.isArray(choice.delta.tool_calls) ? choice.delta.tool_calls : null,
    finishReason: choice ? choice.finish_reason ?? null : null,
    usage: obj.usage ?? null,
    timings: obj.timings ?? null,
  };
}

function normalizeError(e) {
  if (typeof e === 'string') return { message: e };
  return { message: String(e.message ?? 'unknown error'), type: e.type, code: e.code, param: e.param };
}
