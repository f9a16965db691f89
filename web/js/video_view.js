// DOM for videos: the card of the attached video in the composer (the strip of the frames qvl samples,
// each with its time, and the clip's token cost), the strip in a sent turn, and the time mentions of
// an answer turned into buttons that jump the strip to the nearest sampled frame. Model output is
// only ever split into text nodes and buttons here (textContent), never innerHTML.
import { h, icon } from './view.js';
import { formatBytes } from './errors.js';
import { findTimeMentions, nearestFrame, formatTime, withinClip } from './video.js';

const fmt = (n) => n.toLocaleString('en-US');

// "16 frames · 64 video tokens · 8.0 s · 112×80".
export function videoSummary(video) {
  if (video.status !== 'ready') return formatBytes(video.bytes);
  const i = video.info;
  const n = i.frames.length;
  return [`${n} ${n === 1 ? 'frame' : 'frames'}`, `${fmt(i.video_tokens)} video tokens`, formatTime(i.duration),
    `${i.width}×${i.height}`].join(' · ');
}

// The sampled frames as a horizontal strip: each thumbnail with its time (index / fps) and, as its
// title, the prompt text of its temporal group. Returns {root, jump(seconds)}: jump highlights the
// frame nearest to `seconds` and scrolls it into view; it returns that frame's position.
export function videoStrip(info, label) {
  const items = info.frames.map((f, k) => {
    const group = info.groups[f.group];
    const time = formatTime(f.time);
    return h('li', { class: 'video-frame', 'data-frame': k, 'data-index': f.index, 'data-time': f.time,
      title: `Frame ${fmt(f.index)} at ${time}${group ? `; the prompt says ${group.text}` : ''}` },
    f.thumbnail ? h('img', { src: f.thumbnail, alt: `Frame at ${time}` })
      : h('span', { class: 'no-thumb', text: String(k + 1) }),
    h('span', { class: 'frame-time', text: time }));
  });
  const root = h('ol', { class: 'video-strip', 'aria-label': label }, items);
  function jump(seconds) {
    const k = nearestFrame(info.frames, seconds);
    items.forEach((li, j) => {
      li.classList.toggle('current', j === k);
      if (j === k) li.setAttribute('aria-current', 'true');
      else li.removeAttribute('aria-current');
    });
    if (k >= 0) items[k].scrollIntoView({ block: 'nearest', inline: 'center' });
    return k;
  }
  return { root, jump };
}

// The attached video, in the composer. Handlers: onRemove().
export function videoCard(video, { onRemove }) {
  const head = h('div', { class: 'doc-head' },
    h('span', { class: 'doc-badge video-badge', 'aria-hidden': 'true', text: 'VIDEO' }),
    h('div', { class: 'doc-title' },
      h('span', { class: 'doc-name', title: video.name, text: video.name }),
      h('span', { class: 'doc-sum video-sum', 'aria-live': 'polite', text: videoSummary(video) })),
    h('button', { type: 'button', class: 'chip-remove', 'aria-label': `Remove ${video.name}`, title: 'Remove',
      onclick: onRemove }, icon('x')));
  if (video.status !== 'ready') {
    return h('section', { class: 'video-card', 'data-state': video.status, 'aria-label': `Video ${video.name}` }, head,
      h('div', { class: 'doc-loading' }, h('span', { class: 'typing', 'aria-hidden': 'true' }, h('i'), h('i'), h('i')),
        h('span', { text: 'Sampling the frames…' })));
  }
  return h('section', { class: 'video-card', 'data-state': 'ready', 'aria-label': `Video ${video.name}` }, head,
    videoStrip(video.info, 'Frames the model will see').root);
}

// The video in a sent turn: its strip (what the answer's times jump to), the name and the cost.
export function videoTurn(video) {
  const strip = videoStrip(video.info, `Frames of ${video.name}`);
  const root = h('div', { class: 'user-video' }, strip.root,
    h('span', { class: 'user-doc-meta',
      text: `${video.name} · ${videoSummary({ status: 'ready', info: video.info })}` }));
  return { root, jump: strip.jump };
}

// Turns the time mentions in the text of `container` (a rendered answer) into buttons that call
// `onJump(seconds)`; mentions past the clip's end stay text. Text already in a button is left alone.
export function linkTimes(container, info, onJump) {
  const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT);
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.parentElement.closest('button')) nodes.push(n);
  }
  for (const node of nodes) {
    const text = node.textContent;
    const mentions = findTimeMentions(text).filter((m) => withinClip(info, m.seconds));
    if (!mentions.length) continue;
    const parts = [];
    let at = 0;
    for (const m of mentions) {
      if (m.start > at) parts.push(text.slice(at, m.start));
      parts.push(h('button', { type: 'button', class: 'time-link', 'data-seconds': m.seconds,
        title: `Show the frame nearest ${formatTime(m.seconds)}`, onclick: () => onJump(m.seconds), text: m.text }));
      at = m.end;
    }
    if (at < text.length) parts.push(text.slice(at));
    node.replaceWith(...parts);
  }
}
