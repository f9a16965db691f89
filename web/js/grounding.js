// Grounding output of Qwen3-VL: boxes ("bbox_2d": [x1, y1, x2, y2]) and points ("point_2d": [x, y]),
// usually as a JSON list inside a ```json fence, e.g.
//   [{"bbox_2d": [139, 768, 315, 954], "label": "cat"}, {"point_2d": [346, 328], "label": "person"}]
//
// Coordinate convention: Qwen3-VL emits RELATIVE coordinates on a 0..1000 scale of the image's width
// and height, whatever the image size (Qwen2.5-VL emitted absolute pixels of the resized input). The
// Qwen3-VL README / cookbooks state: "Qwen3-VL's default coordinate system has been changed from the
// absolute coordinates used in Qwen2.5-VL to relative coordinates ranging from 0 to 1000", and the
// 2-D grounding cookbook (cookbooks/spatial_understanding.ipynb, github.com/QwenLM/Qwen3-VL) converts
// with abs_x = bbox_2d[0] / 1000 * width (quoted in QwenLM/Qwen3-VL issue #1741 and
// modelscope/ms-swift issue #6167). So pixel = value / 1000 * displayed size, on any aspect ratio.

export const SCALE = 1000;

// Returns [{kind: 'box', label, bbox: [x1, y1, x2, y2]} | {kind: 'point', label, point: [x, y]}],
// coordinates on the 0..1000 scale, clamped, box corners ordered. Tolerant by design: the answer may
// still be streaming (unclosed fence, truncated list), may be bare JSON without a fence, or slightly
// malformed (trailing commas, single quotes); each flat {...} object is read on its own, and an
// incomplete last object is skipped until it completes.
export function parseGrounding(text) {
  const found = [];
  const s = String(text);
  const objRe = /\{[^{}]*\}/g;
  let m;
  while ((m = objRe.exec(s)) !== null) {
    const item = readObject(m[0]);
    if (item) found.push(item);
  }
  return found;
}

function readObject(src) {
  if (!/["']?(bbox_2d|point_2d)["']?\s*:/.test(src)) return null;
  let obj = null;
  try {
    obj = JSON.parse(src);
  } catch {
    obj = null;
  }
  const label = obj && typeof obj.label === 'string' ? obj.label : readLabel(src);
  const bbox = obj ? numbers(obj.bbox_2d, 4) : numbers(readArray(src, 'bbox_2d'), 4);
  if (bbox) {
    const [x1, y1, x2, y2] = bbox.map(clamp);
    if (x1 === x2 || y1 === y2) return null;
    return {
      kind: 'box',
      label,
      bbox: [Math.min(x1, x2), Math.min(y1, y2), Math.max(x1, x2), Math.max(y1, y2)],
    };
  }
  const point = obj ? numbers(obj.point_2d, 2) : numbers(readArray(src, 'point_2d'), 2);
  if (point) return { kind: 'point', label, point: point.map(clamp) };
  return null;
}

function readArray(src, key) {
  const m = new RegExp(`["']?${key}["']?\\s*:\\s*\\[([^\\]]*)\\]`).exec(src);
  if (!m) return null;
  return m[1].split(',').filter((x) => x.trim() !== '').map((x) => Number(x.trim()));
}

function readLabel(src) {
  const m = /["']?label["']?\s*:\s*(["'])((?:\\.|(?!\1).)*)\1/.exec(src);
  if (!m) return '';
  return m[2].replace(/\\(.)/g, '$1');
}

function numbers(v, n) {
  if (!Array.isArray(v) || v.length !== n) return null;
  const out = v.map((x) => (typeof x === 'string' ? Number(x) : x));
  return out.every((x) => typeof x === 'number' && Number.isFinite(x)) ? out : null;
}

function clamp(v) {
  return Math.min(SCALE, Math.max(0, v));
}

// Where an image of natural size (nw, nh) is drawn inside a frame (fw, fh) with CSS
// object-fit: contain: centred, scaled by the smaller ratio, letterboxed on the other axis.
export function containRect(nw, nh, fw, fh) {
  const scale = Math.min(fw / nw, fh / nh);
  const w = nw * scale;
  const h = nh * scale;
  return { x: (fw - w) / 2, y: (fh - h) / 2, width: w, height: h };
}

// A 0..1000 box -> pixel rectangle in the frame, given the drawn image rectangle from containRect.
export function placeBox(bbox, rect) {
  const [x1, y1, x2, y2] = bbox;
  return {
    left: rect.x + (x1 / SCALE) * rect.width,
    top: rect.y + (y1 / SCALE) * rect.height,
    width: ((x2 - x1) / SCALE) * rect.width,
    height: ((y2 - y1) / SCALE) * rect.height,
  };
}

export function placePoint(point, rect) {
  return { x: rect.x + (point[0] / SCALE) * rect.width, y: rect.y + (point[1] / SCALE) * rect.height };
}

// A stable colour per label so the same object class keeps its colour across answers.
export function labelHue(label) {
  let h = 0;
  for (const ch of String(label)) h = (h * 31 + ch.codePointAt(0)) >>> 0;
  return (h * 137.508) % 360;
}
