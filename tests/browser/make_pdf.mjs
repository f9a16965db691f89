// A small valid PDF written by hand, for the browser tests and screenshots: one page per entry, each
// with its own size (points) and lines of Helvetica text; a cross-reference table with the true byte
// offsets, so strict readers (Poppler) open it without repairing it.
//
//   makePdf([{ width: 612, height: 792, lines: ['Page one'] }, { width: 842, height: 595, lines: ['Page two'] }])
//   -> Buffer

const esc = (s) => String(s).replace(/[\\()]/g, (c) => `\\${c}`);

export function makePdf(pages) {
  const objects = [];  // bodies, object number k + 1
  const add = (body) => { objects.push(body); return objects.length; };
  const catalog = add(null);
  const tree = add(null);
  const font = add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  const kids = [];
  for (const p of pages) {
    const ops = ['BT', '/F1 28 Tf', `72 ${p.height - 100} Td`, '34 TL'];
    for (const [k, line] of p.lines.entries()) ops.push(`${k ? "T* " : ''}(${esc(line)}) Tj`);
    ops.push('ET');
    // A ruled box under the text: something to see in the thumbnails.
    ops.push(`0.6 G 2 w 72 ${p.height - 160 - 34 * p.lines.length} ${p.width - 144} 60 re S`);
    const stream = ops.join('\n');
    const content = add(`<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`);
    kids.push(add(`<< /Type /Page /Parent ${tree} 0 R /MediaBox [0 0 ${p.width} ${p.height}] ` +
      `/Resources << /Font << /F1 ${font} 0 R >> >> /Contents ${content} 0 R >>`));
  }
  objects[catalog - 1] = `<< /Type /Catalog /Pages ${tree} 0 R >>`;
  objects[tree - 1] = `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${kids.length} >>`;

  let out = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';
  const offsets = [];
  objects.forEach((body, k) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${k + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const off of offsets) out += `${String(off).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root ${catalog} 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

// The two-page document of the tests: a Letter portrait page and an A4 landscape page.
export const TWO_PAGES = [
  { width: 612, height: 792, lines: ['Page one', 'Invoice 2026-042', 'Total 31.50 EUR'] },
  { width: 842, height: 595, lines: ['Page two', 'Terms and conditions'] },
];
