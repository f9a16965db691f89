import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseGrounding, containRect, placeBox, placePoint, labelHue } from '../js/grounding.js';

test('fenced json block with boxes', () => {
  const text = 'Here you go:\n```json\n[\n  {"bbox_2d": [139, 768, 315, 954], "label": "cat"},\n' +
    '  {"bbox_2d": [366, 679, 536, 849], "label": "dog"}\n]\n```\nDone.';
  assert.deepEqual(parseGrounding(text), [
    { kind: 'box', label: 'cat', bbox: [139, 768, 315, 954] },
    { kind: 'box', label: 'dog', bbox: [366, 679, 536, 849] },
  ]);
});

test('bare JSON array and a single object', () => {
  assert.deepEqual(parseGrounding('[{"bbox_2d":[1,2,3,4],"label":"a"}]'),
    [{ kind: 'box', label: 'a', bbox: [1, 2, 3, 4] }]);
  assert.deepEqual(parseGrounding('{"bbox_2d": [135, 114, 1016, 672]}'),
    [{ kind: 'box', label: '', bbox: [135, 114, 1000, 672] }]);  // clamped to the 0..1000 scale
});

test('points, alone and mixed with boxes', () => {
  const text = '[{"point_2d": [346, 328], "label": "person"}, {"point_2d": [238, 158], "label": "person"},' +
    ' {"bbox_2d": [10, 20, 30, 40], "label": "ball"}]';
  assert.deepEqual(parseGrounding(text), [
    { kind: 'point', label: 'person', point: [346, 328] },
    { kind: 'point', label: 'person', point: [238, 158] },
    { kind: 'box', label: 'ball', bbox: [10, 20, 30, 40] },
  ]);
});

test('streaming: unclosed fence and a truncated last object', () => {
  const text = '```json\n[\n {"bbox_2d": [100, 100, 200, 200], "label": "cup"},\n {"bbox_2d": [300, 3';
  assert.deepEqual(parseGrounding(text), [{ kind: 'box', label: 'cup', bbox: [100, 100, 200, 200] }]);
});

test('malformed JSON: trailing comma, single quotes, unquoted keys, string numbers', () => {
  assert.deepEqual(parseGrounding('[{"bbox_2d": [1, 2, 3, 4], "label": "x",},]'),
    [{ kind: 'box', label: 'x', bbox: [1, 2, 3, 4] }]);
  assert.deepEqual(parseGrounding("{'bbox_2d': [5, 6, 7, 8], 'label': 'it\\'s'}"),
    [{ kind: 'box', label: "it's", bbox: [5, 6, 7, 8] }]);
  assert.deepEqual(parseGrounding('{bbox_2d: [9, 10, 11, 12], label: "y"}'),
    [{ kind: 'box', label: 'y', bbox: [9, 10, 11, 12] }]);
  assert.deepEqual(parseGrounding('{"bbox_2d": ["1", "2", "3", "4"], "label": "s"}'),
    [{ kind: 'box', label: 's', bbox: [1, 2, 3, 4] }]);
});

test('rejects wrong arity, non-numbers, empty boxes; orders swapped corners', () => {
  assert.deepEqual(parseGrounding('{"bbox_2d": [1, 2, 3], "label": "a"}'), []);
  assert.deepEqual(parseGrounding('{"bbox_2d": [1, "x", 3, 4]}'), []);
  assert.deepEqual(parseGrounding('{"bbox_2d": [5, 5, 5, 9]}'), []);
  assert.deepEqual(parseGrounding('{"point_2d": [1]}'), []);
  assert.deepEqual(parseGrounding('no boxes here {"label": "a"}'), []);
  assert.deepEqual(parseGrounding('{"bbox_2d": [300, 400, 100, 200], "label": "r"}'),
    [{ kind: 'box', label: 'r', bbox: [100, 200, 300, 400] }]);
});

test('placement: the frame has the image aspect ratio', () => {
  const rect = containRect(800, 600, 400, 300);
  assert.deepEqual(rect, { x: 0, y: 0, width: 400, height: 300 });
  assert.deepEqual(placeBox([250, 500, 750, 1000], rect), { left: 100, top: 150, width: 200, height: 150 });
  assert.deepEqual(placePoint([500, 500], rect), { x: 200, y: 150 });
});

test('placement: wide image letterboxed in a square frame', () => {
  // 1000x250 in 400x400: scale 0.4 -> 400x100, centred with 150 px bands above and below.
  const rect = containRect(1000, 250, 400, 400);
  assert.deepEqual(rect, { x: 0, y: 150, width: 400, height: 100 });
  assert.deepEqual(placeBox([0, 0, 1000, 1000], rect), { left: 0, top: 150, width: 400, height: 100 });
  assert.deepEqual(placeBox([100, 200, 300, 600], rect), { left: 40, top: 170, width: 80, height: 40 });
});

test('placement: tall image pillarboxed in a wide frame; relative, not pixel, coordinates', () => {
  // 120x600 in 500x300: scale 0.5 -> 60x300, centred with 220 px bands left and right.
  const rect = containRect(120, 600, 500, 300);
  assert.deepEqual(rect, { x: 220, y: 0, width: 60, height: 300 });
  const b = placeBox([500, 500, 1000, 1000], rect);
  assert.deepEqual(b, { left: 250, top: 150, width: 30, height: 150 });
  // The same 0..1000 box covers the same fraction of any image, whatever its pixel size.
  const small = placeBox([500, 500, 1000, 1000], containRect(12, 60, 12, 60));
  assert.deepEqual(small, { left: 6, top: 30, width: 6, height: 30 });
});

test('label colours are stable and spread', () => {
  assert.equal(labelHue('cat'), labelHue('cat'));
  assert.notEqual(labelHue('cat'), labelHue('dog'));
  assert.ok(labelHue('x') >= 0 && labelHue('x') < 360);
});
