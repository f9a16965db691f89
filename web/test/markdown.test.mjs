import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseMarkdown, toHtml, toDom, safeHref } from '../js/markdown.js';

const html = (md) => toHtml(parseMarkdown(md));

// A minimal stand-in for `document` that records what toDom builds. It has no innerHTML at all: the
// renderer may only create elements and text nodes and set attributes.
function fakeDocument() {
  const node = (props) => ({ children: [], appendChild(c) {
    if (c.fragment) this.children.push(...c.children); else this.children.push(c);
    return c;
  }, ...props });
  return {
    createElement: (tag) => node({ tag, attrs: {}, setAttribute(n, v) { this.attrs[n] = String(v); },
      getAttribute(n) { return this.attrs[n] ?? null; } }),
    createTextNode: (text) => ({ text }),
    createDocumentFragment: () => node({ fragment: true }),
  };
}
function serialize(n) {
  if ('text' in n) return n.text;
  const inner = n.children.map(serialize).join('');
  if (n.fragment) return inner;
  const attrs = Object.entries(n.attrs).map(([k, v]) => ` ${k}=${JSON.stringify(v)}`).join('');
  return `<${n.tag}${attrs}>${inner}</${n.tag}>`;
}

test('paragraphs, line breaks, emphasis, inline code', () => {
  assert.equal(html('Hello **bold**, *it*, _it_, ~~gone~~ and `a<b`.\nNext line\n\nPara 2'),
    '<p>Hello <strong>bold</strong>, <em>it</em>, <em>it</em>, <del>gone</del> and <code>a&lt;b</code>.' +
    '<br>Next line</p><p>Para 2</p>');
  assert.equal(html('snake_case_name and 2 * 3 * 4 stay as they are'),
    '<p>snake_case_name and 2 * 3 * 4 stay as they are</p>');
  assert.equal(html('``code with ` tick``'), '<p><code>code with ` tick</code></p>');
  assert.equal(html('\\*not em\\*'), '<p>*not em*</p>');
  assert.equal(html('a.__b = 1 and c.__d = 2'), '<p>a.__b = 1 and c.__d = 2</p>');
  assert.equal(html('__strong__ and **also**'), '<p><strong>strong</strong> and <strong>also</strong></p>');
});

test('headings, rules, block quotes', () => {
  assert.equal(html('# One\n### Three ###\n---\n> quoted\n> text'),
    '<h1>One</h1><h3>Three</h3><hr><blockquote><p>quoted<br>text</p></blockquote>');
});

test('lists: unordered, ordered with start, nested, loose', () => {
  assert.equal(html('- a\n- b\n  - c\n  - d\n- e'),
    '<ul><li>a</li><li>b<ul><li>c</li><li>d</li></ul></li><li>e</li></ul>');
  assert.equal(html('3. three\n4. four'), '<ol start="3"><li>three</li><li>four</li></ol>');
  assert.equal(html('1. **Name**: value\n2. other'),
    '<ol><li><strong>Name</strong>: value</li><li>other</li></ol>');
  assert.equal(html('- a\n\n- b'), '<ul><li><p>a</p></li><li><p>b</p></li></ul>');
  assert.equal(html('Intro:\n- x\n- y'), '<p>Intro:</p><ul><li>x</li><li>y</li></ul>');
});

test('fenced code blocks keep their text verbatim, even unclosed (streaming)', () => {
  assert.equal(html('```python\nif a < b:\n    print("<b>")\n```\nafter'),
    '<pre><code class="lang-python">if a &lt; b:\n    print(&quot;&lt;b&gt;&quot;)</code></pre><p>after</p>');
  assert.equal(html('~~~\n**not bold**'), '<pre><code>**not bold**</code></pre>');
});

test('GFM tables with alignment, inline markup, escaped pipes, short rows', () => {
  assert.equal(html('| Item | Qty | Note |\n|:-----|----:|:---:|\n| `a|b` | 2 | **x** |\n| c \\| d | 3 |'),
    '<table><thead><tr><th class="al-l">Item</th><th class="al-r">Qty</th><th class="al-c">Note</th></tr>' +
    '</thead><tbody><tr><td class="al-l"><code>a|b</code></td><td class="al-r">2</td>' +
    '<td class="al-c"><strong>x</strong></td></tr><tr><td class="al-l">c | d</td><td class="al-r">3</td>' +
    '<td class="al-c"></td></tr></tbody></table>');
  assert.equal(html('a | b\n--|--\n1 | 2'),
    '<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table>');
});

test('links: only http(s), with rel=noopener, autolinks', () => {
  assert.equal(html('[site](https://example.com/a_(b)) and <http://x.org> and see https://q.io/p.'),
    '<p><a href="https://example.com/a_(b)" rel="noopener noreferrer nofollow" target="_blank">site</a> and ' +
    '<a href="http://x.org/" rel="noopener noreferrer nofollow" target="_blank">http://x.org</a> and see ' +
    '<a href="https://q.io/p" rel="noopener noreferrer nofollow" target="_blank">https://q.io/p</a>.</p>');
  assert.equal(safeHref('javascript:alert(1)'), null);
  assert.equal(safeHref(' JAVASCRIPT:alert(1)'), null);
  assert.equal(safeHref('data:text/html,<script>'), null);
  assert.equal(safeHref('/relative'), null);
  assert.equal(safeHref('HTTPS://Example.com'), 'https://example.com/');
});

test('injection: raw HTML is text everywhere', () => {
  assert.equal(html('<script>alert(1)</script>'), '<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
  assert.equal(html('<img src=x onerror="alert(1)">'),
    '<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>');
  assert.equal(html('[click](javascript:alert(1))'), '<p>click</p>');
  assert.equal(html('[x](  javascript:alert(1)  )'), '<p>x</p>');
  assert.equal(html('![pic](javascript:alert(1))'), '<p>pic</p>');
  assert.equal(html('| a |\n|---|\n| <b onmouseover=alert(1)>x</b> |'),
    '<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>&lt;b onmouseover=alert(1)&gt;x&lt;/b&gt;' +
    '</td></tr></tbody></table>');
  assert.equal(html('# <iframe src="ftp://evil">'), '<h1>&lt;iframe src=&quot;ftp://evil&quot;&gt;</h1>');
  assert.equal(html('```"><script>x</script>\ncode\n```'),
    '<pre><code>code</code></pre>');  // the info string cannot smuggle an attribute
});

test('toDom builds elements and text nodes only, re-checking tags and attributes', () => {
  const doc = fakeDocument();
  const tree = parseMarkdown('Hi <b>there</b> [a](https://a.io) | x |\n\n- **y**');
  assert.equal(serialize(toDom(tree, doc)),
    '<p>Hi <b>there</b> <a href="https://a.io/" rel="noopener noreferrer nofollow" target="_blank">a</a>' +
    ' | x |</p><ul><li><strong>y</strong></li></ul>');
  // "<b>" above is a text node, not an element: the only elements are p, a, ul, li, strong.
  const tags = [];
  (function walk(n) { if (n.tag) tags.push(n.tag); (n.children || []).forEach(walk); })(toDom(tree, doc));
  assert.deepEqual(tags.sort(), ['a', 'li', 'p', 'strong', 'ul']);
  // A hand-made tree with a forbidden tag, event handler and javascript: link is neutralised.
  const evil = [{ tag: 'script', attrs: {}, children: ['alert(1)'] },
    { tag: 'p', attrs: { onclick: 'alert(1)', style: 'x' }, children: ['ok'] },
    { tag: 'a', attrs: { href: 'javascript:alert(1)' }, children: ['link'] }];
  assert.equal(serialize(toDom(evil, doc)), '<p>ok</p>link');
  assert.equal(toHtml(evil), '<p>ok</p>link');
});
