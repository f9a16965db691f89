// The Search view: drop PDFs or images to index them into a collection, type a question, see the
// ranked pages as thumbnails; "Ask in chat" attaches that page (rendered again by the server) to the
// chat composer. State and DOM of the view; the API and pure parts are in search.js.
import { h } from './view.js';
import { readAsDataUrl } from './attachments.js';
import { DEFAULT_COLLECTION, isIndexable, searchBody, hitLabel, pageFileName, indexFile, listIndex, searchPages,
  fetchPageBlob } from './search.js';

// `apiKey()`: the key from the settings; `openInChat(file)`: attach a page image to the chat and show it.
export function initSearch(root, { apiKey, openInChat, notice }) {
  const collection = root.querySelector('#search-collection');
  const query = root.querySelector('#search-query');
  const status = root.querySelector('#search-status');
  const results = root.querySelector('#search-results');
  const indexed = root.querySelector('#search-indexed');
  const fileInput = root.querySelector('#search-file-input');
  let objectUrls = [];

  const coll = () => collection.value.trim() || DEFAULT_COLLECTION;

  async function refreshList() {
    const r = await listIndex(apiKey(), coll());
    indexed.replaceChildren();
    if (r.error) { indexed.append(h('li', { class: 'search-error', text: r.error })); return; }
    const docs = r.data.data;
    if (!docs.length) indexed.append(h('li', { class: 'muted', text: `Nothing indexed in “${coll()}” yet.` }));
    for (const d of docs) {
      indexed.append(h('li', {}, h('span', { text: String(d.filename).split('/').pop() }),
        h('span', { class: 'muted', text: ` · ${d.pages} ${d.pages === 1 ? 'page' : 'pages'}` })));
    }
  }

  async function indexFiles(files) {
    for (const file of [...files]) {
      if (!isIndexable(file)) { notice(`“${file.name}” is not a PDF or an image: not indexed.`, false, 'info'); continue; }
      status.textContent = `Indexing “${file.name}”… (every page goes through the embedding model)`;
      let dataUrl;
      try {
        dataUrl = await readAsDataUrl(file);
      } catch (e) {
        notice(`Could not read “${file.name}”: ${e.message}`, true);
        continue;
      }
      if (/\.pdf$/i.test(file.name) || file.type === 'application/pdf') {
        dataUrl = dataUrl.replace(/^data:[^;,]*/, 'data:application/pdf');
      }
      const r = await indexFile(apiKey(), dataUrl, file.name || 'upload', coll());
      if (r.error) { status.textContent = ''; notice(`“${file.name}”: ${r.error}`, true); continue; }
      const d = r.data;
      status.textContent = `“${d.filename}”: ${d.outcome} (${d.pages} ${d.pages === 1 ? 'page' : 'pages'}).`;
    }
    refreshList();
  }

  function clearResults() {
    for (const u of objectUrls) URL.revokeObjectURL(u);
    objectUrls = [];
    results.replaceChildren();
  }

  async function runSearch() {
    const b = searchBody(query.value, coll());
    if (b.error) { notice(b.error, false, 'info'); return; }
    status.textContent = 'Searching…';
    const r = await searchPages(apiKey(), b.body);
    clearResults();
    if (r.error) { status.textContent = ''; notice(r.error, true); return; }
    const hits = r.data.data;
    status.textContent = hits.length ? `${hits.length} ${hits.length === 1 ? 'page' : 'pages'}, best first.` : 'No pages.';
    for (const hit of hits) {
      const img = h('img', { alt: hitLabel(hit), loading: 'lazy', class: 'search-thumb' });
      const open = h('button', { type: 'button', class: 'text-btn', text: 'Ask in chat', onclick: async () => {
        open.disabled = true;
        const blob = await fetchPageBlob(apiKey(), hit.image_url);
        open.disabled = false;
        if (!blob) { notice(`The page could not be rendered again (its file changed or is gone).`, true); return; }
        openInChat(new File([blob], pageFileName(hit), { type: 'image/jpeg' }));
      } });
      results.append(h('li', { class: 'search-hit', 'data-page-id': hit.page_id },
        img,
        h('div', { class: 'search-hit-meta' },
          h('span', { class: 'search-rank', text: `#${hit.rank}` }),
          h('span', { class: 'search-label', text: hitLabel(hit) }),
          h('span', { class: 'muted', text: `score ${Number(hit.score).toFixed(3)}` })),
        open));
      fetchPageBlob(apiKey(), hit.thumbnail_url).then((blob) => {
        if (!blob) return;
        const u = URL.createObjectURL(blob);
        objectUrls.push(u);
        img.src = u;
      });
    }
  }

  root.querySelector('#search-form').addEventListener('submit', (e) => { e.preventDefault(); runSearch(); });
  root.querySelector('#search-add-btn').addEventListener('click', () => fileInput.click());
  fileInput.addEventListener('change', () => { indexFiles(fileInput.files); fileInput.value = ''; });
  collection.addEventListener('change', () => { clearResults(); refreshList(); });
  return { indexFiles, refreshList };
}
