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
});

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
