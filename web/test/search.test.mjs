// The Search view's pure parts (web/js/search.js): the request body and its refusals, labels, names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { searchBody, hitLabel, pageFileName, isIndexable, DEFAULT_TOP_K, MAX_TOP_K } from '../js/search.js';

test('searchBody trims, defaults the collection and bounds top_k', () => {
  assert.deepEqual(searchBody('  where is the total?  ', ''), { body: { query: 'where is the total?', collection: 'default', top_k: DEFAULT_TOP_K } });
  assert.deepEqual(searchBody('q', 'docs', 500).body.top_k, MAX_TOP_K);
  assert.deepEqual(searchBody('q', 'docs', 0).body.top_k, DEFAULT_TOP_K);
  assert.deepEqual(searchBody('q', 'docs', 3.7).body.top_k, 3);
});

test('searchBody refuses an empty question and a bad collection name before sending', () => {
  assert.equal(searchBody('   ', 'docs').error, 'Type a question to search for.');
  assert.match(searchBody('q', 'a/b').error, /1-64 letters, digits/);
  assert.match(searchBody('q', 'x'.repeat(65)).error, /1-64/);
});

test('hitLabel names a PDF page and an image', () => {
  assert.equal(hitLabel({ filename: '/home/a/report.pdf', page: 3 }), 'report.pdf · page 3');
  assert.equal(hitLabel({ filename: 'chart.png', page: 1 }), 'chart.png');
});

test('pageFileName is the document and page as a JPEG name', () => {
  assert.equal(pageFileName({ filename: '/x/Annual Report.pdf', page: 12 }), 'Annual Report-p12.jpg');
  assert.equal(pageFileName({ filename: 'scan.png', page: 1 }), 'scan-p1.jpg');
});

test('isIndexable takes PDFs and images by type or name', () => {
  assert.equal(isIndexable({ name: 'a.PDF', type: '' }), true);
  assert.equal(isIndexable({ name: 'x', type: 'image/webp' }), true);
  assert.equal(isIndexable({ name: 'notes.txt', type: 'text/plain' }), false);
});
