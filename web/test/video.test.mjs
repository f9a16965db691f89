import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isVideoFile, videoMime, checkVideo, videoPart, formatTime, findTimeMentions, nearestFrame, withinClip }
  from '../js/video.js';
import { buildMessages } from '../js/request.js';

const CONFIG = { max_video_bytes: 64 << 20, max_body_bytes: 64 << 20 };
const seconds = (text) => findTimeMentions(text).map((m) => m.seconds);
const texts = (text) => findTimeMentions(text).map((m) => m.text);

test('video files by type, or by name when the browser gives no type; a GIF stays an image', () => {
  assert.ok(isVideoFile({ name: 'clip.bin', type: 'video/webm' }));
  assert.ok(isVideoFile({ name: 'clip.MP4', type: '' }));
  assert.ok(isVideoFile({ name: 'clip.mkv', type: 'application/octet-stream' }));
  assert.ok(!isVideoFile({ name: 'anim.gif', type: 'image/gif' }));
  assert.ok(!isVideoFile({ name: 'clip.mp4.png', type: 'image/png' }));
  assert.equal(videoMime({ name: 'a.mov', type: '' }), 'video/quicktime');
  assert.equal(videoMime({ name: 'a', type: '' }), 'video/mp4');
});

test('a clip over the video limit, or whose data: URL would not fit a request, is refused before reading', () => {
  assert.equal(checkVideo({ name: 'a.mp4', size: 1000 }, CONFIG), null);
  assert.match(checkVideo({ name: 'a.mp4', size: 0 }, CONFIG), /empty/);
  assert.match(checkVideo({ name: 'a.mp4', size: (64 << 20) + 1 }, CONFIG), /accepts videos up to 64/);
  // 60 MB is under the video limit, but its base64 (80 MB) is over the 64-MB body limit.
  assert.match(checkVideo({ name: 'a.mp4', size: 60 << 20 }, CONFIG), /request limit/);
});

test('the chat part is vLLM\'s video_url; a turn sends images, then the video, then the text', () => {
  const video = { dataUrl: 'data:video/mp4;base64,AAAA' };
  assert.deepEqual(videoPart(video), { type: 'video_url', video_url: { url: video.dataUrl } });
  const turn = { text: 'What happens?', images: [{ dataUrl: 'data:image/png;base64,BBBB' }], video,
    answer: { text: '', toolCalls: [] } };
  assert.deepEqual(buildMessages('', [turn])[0].content.map((p) => p.type), ['image_url', 'video_url', 'text']);
});

test('time mentions: the prompt\'s own, numbers with a unit, mm:ss and h:mm:ss', () => {
  assert.deepEqual(seconds('At <12.5 seconds> the ball drops.'), [12.5]);
  assert.deepEqual(seconds('between 12.5 s and 14 seconds, then 3 sec, 1 second'), [12.5, 14, 3, 1]);
  assert.deepEqual(seconds('at 0:12, 01:05 and 1:02:03; also 2:07.5'), [12, 65, 3723, 127.5]);
  assert.deepEqual(texts('Look at <2.4 seconds>, (0:07).'), ['<2.4 seconds>', '0:07']);
  // Offsets cut the text exactly.
  const text = 'x 12 seconds y';
  const [m] = findTimeMentions(text);
  assert.equal(text.slice(m.start, m.end), '12 seconds');
});

test('no time where there is none: 1990s, 3s, 16:9, ratios, versions, words after a number', () => {
  assert.deepEqual(seconds('the 1990s'), []);
  assert.deepEqual(seconds('sleep 3s'), []);
  assert.deepEqual(seconds('aspect 16:9, 4:3'), []);
  assert.deepEqual(seconds('version 1.2.30 s3 12 sheep 5 sets'), []);
  assert.deepEqual(seconds('a:12 12:345 1:60'), []);
});

test('the nearest sampled frame, the earlier one on a tie; mentions past the clip stay text', () => {
  // long_112x80_24fps: frame indices 0, 13, 25, 38, ... at 24 fps.
  const frames = [0, 13, 25, 38, 51, 64].map((i) => ({ time: i / 24 }));
  assert.equal(nearestFrame(frames, 2.4), 5);    // 64/24 = 2.667 beats 51/24 = 2.125
  assert.equal(nearestFrame(frames, 0.3), 1);    // 0.542 beats 0
  assert.equal(nearestFrame(frames, 99), 5);
  assert.equal(nearestFrame([{ time: 0 }, { time: 1 }], 0.5), 0);
  assert.equal(nearestFrame([], 1), -1);
  assert.ok(withinClip({ duration: 8 }, 8.9));
  assert.ok(!withinClip({ duration: 8 }, 9.5));
});

test('frame times on thumbnails', () => {
  assert.equal(formatTime(0), '0.0 s');
  assert.equal(formatTime(7.958), '8.0 s');
  assert.equal(formatTime(65.25), '1:05.3');
  assert.equal(formatTime(601), '10:01.0');
});
