// Settings the page remembers in localStorage. Every value is checked on load, so a stale or
// hand-edited entry cannot break the page; out-of-range numbers fall back to the default.

export const STORAGE_KEY = 'qvl.settings.v1';

export const DEFAULTS = Object.freeze({
  system: '',
  maxTokens: 0,      // 0 = the server's default_max_tokens
  temperature: 0.7,  // Qwen3-VL's generation_config default; 0 = greedy
  maxPixels: 0,      // 0 = the server's cap
  apiKey: '',
  theme: '',         // '' = follow the system, 'light', 'dark'
  answerFormat: 'text',  // 'text', 'json_object' or 'json_schema' (sent as response_format)
  jsonSchema: '',    // the schema's JSON text, kept as typed (checked when a request is built)
  tools: '',         // a JSON array of OpenAI tool definitions, as typed; '' = no tools
  toolChoice: 'auto',  // 'auto', 'required' or 'none' (sent with the tools)
});

export const ANSWER_FORMATS = Object.freeze(['text', 'json_object', 'json_schema']);
export const TOOL_CHOICES = Object.freeze(['auto', 'required', 'none']);
const CHOICES = { answerFormat: ANSWER_FORMATS, toolChoice: TOOL_CHOICES };
const MAX_JSON_TEXT = 100000;

const LIMITS = {
  maxTokens: [0, 1 << 20],
  temperature: [0, 2],
  maxPixels: [0, 1 << 30],
};

export function sanitizeSettings(raw) {
  const s = { ...DEFAULTS };
  if (!raw || typeof raw !== 'object') return s;
  if (typeof raw.system === 'string') s.system = raw.system.slice(0, 20000);
  if (typeof raw.apiKey === 'string') s.apiKey = raw.apiKey.slice(0, 512);
  if (raw.theme === 'light' || raw.theme === 'dark' || raw.theme === '') s.theme = raw.theme;
  for (const [key, allowed] of Object.entries(CHOICES)) if (allowed.includes(raw[key])) s[key] = raw[key];
  // The JSON texts are kept even when they do not parse: the user is still typing them.
  if (typeof raw.jsonSchema === 'string') s.jsonSchema = raw.jsonSchema.slice(0, MAX_JSON_TEXT);
  if (typeof raw.tools === 'string') s.tools = raw.tools.slice(0, MAX_JSON_TEXT);
  for (const [key, [lo, hi]] of Object.entries(LIMITS)) {
    const v = Number(raw[key]);
    if (raw[key] !== '' && raw[key] != null && Number.isFinite(v) && v >= lo && v <= hi) {
      s[key] = key === 'temperature' ? v : Math.round(v);
    }
  }
  return s;
}

export function loadSettings(storage) {
  try {
    return sanitizeSettings(JSON.parse(storage.getItem(STORAGE_KEY) || 'null'));
  } catch {
    return { ...DEFAULTS };
  }
}

export function saveSettings(storage, settings) {
  try {
    storage.setItem(STORAGE_KEY, JSON.stringify(sanitizeSettings(settings)));
    return true;
  } catch {
    return false;  // private mode or storage full: settings last for this visit only
  }
}
