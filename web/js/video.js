// Videos on the page: which files are videos, the checks before reading one, the chat part that
// carries it, and the time mentions of an answer (`<12.5 seconds>`, `12.5 s`, `12 seconds`, 0:12,
// 01:05, 1:02:03) with the sampled frame each one points at. Pure functions, no DOM; the DOM is in
// video_view.js.
//
// The frames and their times are the server's (POST /v1/qvl/videos/frames: the engine's own sampling,
// docs/api.md "Video frames"); the page never decodes a video to guess them.
import { formatBytes } from './errors.js';

const VIDEO_EXT = /\.(mp4|m4v|mov|webm|mkv|avi)$/i;
const MIME_BY_EXT = { mp4: 'video/mp4', m4v: 'video/mp4', mov: 'video/quicktime', webm: 'video/webm',
  mkv: 'video/x-matroska', avi: 'video/x-msvideo' };

// A dropped, pasted or picked file is a video by its type or, when the browser gives none, by its name.
// An animated GIF stays an image (the server reads it as one unless it is sent as a video).
export function isVideoFile(file) {
  if (file.type && file.type.startsWith('video/')) return true;
  return VIDEO_EXT.test(file.name || '') && (!file.type || file.type === 'application/octet-stream');
}

// The data: URL's type for a video file (FileReader labels unknown types application/octet-stream).
export function videoMime(file) {
  if (file.type && file.type.startsWith('video/')) return file.type;
  const ext = (file.name || '').split('.').pop().toLowerCase();
  return MIME_BY_EXT[ext] || 'video/mp4';
}

// A clip is capped by the server's --max-video-bytes, and its data: URL (a third larger) must fit in a
// request body. Error sentence or null.
export function checkVideo(file, config) {
  const name = file.name || 'video';
  if (file.size === 0) return `“${name}” is empty.`;
  if (file.size > config.max_video_bytes) {
    return `“${name}” is ${formatBytes(file.size)}; the server accepts videos up to ` +
      `${formatBytes(config.max_video_bytes)}. Trim or compress it first.`;
  }
  const dataUrlBytes = Math.ceil(file.size / 3) * 4 + 64;
  if (dataUrlBytes > config.max_body_bytes) {
    return `“${name}” is ${formatBytes(file.size)}; sent as text it would be ${formatBytes(dataUrlBytes)}, ` +
      `over the server's request limit of ${formatBytes(config.max_body_bytes)}. Trim or compress it first.`;
  }
  return null;
}

// The chat-content part that carries the video: vLLM's video_url part (the server samples it as the
// frames request did: both use its defaults).
export function videoPart(video) {
  return { type: 'video_url', video_url: { url: video.dataUrl } };
}

// "7.5 s", "1:05.0": a frame's time on its thumbnail.
export function formatTime(seconds) {
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const m = Math.floor(seconds / 60);
  const s = seconds - m * 60;
  return `${m}:${s < 10 ? '0' : ''}${s.toFixed(1)}`;
}

// Time mentions, in the order tried at each position: the prompt's own `<t seconds>`, h:mm:ss and
// (m)m:ss (with optional fractions), then a number with a unit. A bare "s" needs a space before it
// ("12.5 s") so "1990s" or "3s" in code is no time; "sec", "secs", "second(s)" may follow directly.
const MENTION = new RegExp([
  String.raw`<\s*(\d+(?:\.\d+)?)\s*seconds?\s*>`,
  String.raw`(?<![\w.:])(\d{1,2}):([0-5]\d):([0-5]\d(?:\.\d+)?)(?![\w:]|\.\d)`,
  String.raw`(?<![\w.:])(\d{1,3}):([0-5]\d(?:\.\d+)?)(?![\w:]|\.\d)`,
  String.raw`(?<![\w.])(\d+(?:\.\d+)?)(?:\s?(?:secs?|seconds?)|\ss)\b`,
].join('|'), 'g');

// [{start, end, text, seconds}] of every time mention in `text`, in order.
export function findTimeMentions(text) {
  const out = [];
  for (const m of String(text).matchAll(MENTION)) {
    let seconds;
    if (m[1] !== undefined) seconds = Number(m[1]);
    else if (m[2] !== undefined) seconds = Number(m[2]) * 3600 + Number(m[3]) * 60 + Number(m[4]);
    else if (m[5] !== undefined) seconds = Number(m[5]) * 60 + Number(m[6]);
    else seconds = Number(m[7]);
    if (Number.isFinite(seconds)) out.push({ start: m.index, end: m.index + m[0].length, text: m[0], seconds });
  }
  return out;
}

// The position in `frames` ([{time}], increasing) of the frame nearest to `seconds`; the earlier one
// on a tie. -1 for no frames.
export function nearestFrame(frames, seconds) {
  let best = -1;
  for (let k = 0; k < frames.length; k++) {
    if (best < 0 || Math.abs(frames[k].time - seconds) < Math.abs(frames[best].time - seconds)) best = k;
  }
  return best;
}

// Whether a mention can be about this clip: within its length, with a second's slack for rounding
// ("<8.0 seconds>" of an 7.96-s clip). Mentions past the end stay text.
export function withinClip(info, seconds) {
  return seconds >= 0 && seconds <= (Number(info.duration) || 0) + 1;
}
