// Tool calls in an answer, and the JSON formatting used to show them. Pure functions, no DOM.
//
// A streamed answer carries its calls in pieces, exactly as OpenAI streams them: the first delta of
// a call has its index, id, type and function name (arguments ""), the later ones only the index
// and a piece of the arguments text, to be concatenated:
//   {"index": 0, "id": "call_ab", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
//   {"index": 0, "function": {"arguments": "{\"city\": "}}
//   {"index": 0, "function": {"arguments": "\"Paris\"}"}}
// A complete (non-streamed) message's tool_calls fold in the same way, each as one delta.

// Folds deltas (a chunk's delta.tool_calls) into calls [{index, id, type, name, arguments}], sorted
// by index. Returns a new array; the calls given are not changed.
export function accumulateToolCalls(calls, deltas) {
  const out = calls.map((c) => ({ ...c }));
  if (!Array.isArray(deltas)) return out;
  for (const [k, d] of deltas.entries()) {
    if (!d || typeof d !== 'object') continue;
    // OpenAI always sends the index; without one, a new id starts a call and anything else
    // continues the latest (a non-streamed message's calls have no index: their position is).
    let index = Number.isInteger(d.index) && d.index >= 0 ? d.index : null;
    if (index == null) {
      const last = out[out.length - 1];
      index = !last || (d.id && d.id !== last.id) ? (last ? last.index + 1 : k) : last.index;
    }
    let call = out.find((c) => c.index === index);
    if (!call) {
      call = { index, id: '', type: 'function', name: '', arguments: '' };
      out.push(call);
    }
    if (typeof d.id === 'string' && d.id && !call.id) call.id = d.id;
    if (typeof d.type === 'string' && d.type) call.type = d.type;
    const fn = d.function && typeof d.function === 'object' ? d.function : {};
    // The name comes once, with the first delta; a repeat of it is not appended.
    if (typeof fn.name === 'string' && fn.name && !call.name) call.name = fn.name;
    if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
    // Some clients and servers send the arguments object itself rather than its text.
    else if (fn.arguments && typeof fn.arguments === 'object') call.arguments += JSON.stringify(fn.arguments);
  }
  return out.sort((a, b) => a.index - b.index);
}

// The calls in the API's shape, to send back as an assistant message's tool_calls in later turns.
export function toApiToolCalls(calls) {
  return calls.map((c) => ({ id: c.id, type: c.type || 'function',
    function: { name: c.name, arguments: c.arguments } }));
}

// Indents JSON text two spaces a level, as JSON.stringify(value, null, 2) would, but works on any
// prefix of it: the arguments of a call are shown formatted while they stream in. The text inside
// strings, numbers and literals is kept as the model wrote it; whitespace between tokens is
// replaced. Text that is not JSON comes out readable, not necessarily pretty.
export function formatJsonText(text) {
  let out = '';
  let depth = 0;
  let inString = false;
  let escaped = false;
  let pendingOpen = false;  // after '{' or '[': a newline, unless the container is empty
  const newline = () => `\n${'  '.repeat(Math.max(0, depth))}`;
  for (const ch of String(text)) {
    if (inString) {
      out += ch;
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') continue;
    const closes = ch === '}' || ch === ']';
    if (pendingOpen) {
      pendingOpen = false;
      if (closes) { depth--; out += ch; continue; }
      out += newline();
    }
    if (ch === '{' || ch === '[') {
      out += ch;
      depth++;
      pendingOpen = true;
    } else if (closes) {
      depth--;
      out += newline() + ch;
    } else if (ch === ',') {
      out += `,${newline()}`;
    } else if (ch === ':') {
      out += ': ';
    } else {
      if (ch === '"') inString = true;
      out += ch;
    }
  }
  return out;
}

// Whether text is complete, valid JSON.
export function isJson(text) {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

// Whether an answer looks like JSON at all (what a response_format answer should be). Used to pick
// the code view over the Markdown renderer; an answer that does not start like JSON is left as text.
export function looksLikeJson(text) {
  return /^\s*[[{"\-\d]|^\s*(true|false|null)\b/.test(text);
}
