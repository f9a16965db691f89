"""PDFs the benchmarks write themselves: minimal valid files (header, numbered objects, a
cross-reference table with the true byte offsets, trailer), so a benchmark says exactly what its
input holds and needs no binary fixture. Python's standard library only.

  pdf_of_boxes(2)        two 2 x 2 inch pages with a box each (bench/serve_clients.py)
  document_pdf(10)       a text document of US Letter pages: an invoice, a table, prose, in turn
                         (bench/documents.py)
  png_of_size(w, h)      a grey-ruled white PNG of that size, for a baseline that takes an image
"""
import struct, zlib


def pdf_file(objects):
    """The file of these object bodies (bytes), numbered from 1; object 1 must be the catalog."""
    out, offsets = b"%PDF-1.7\n", []
    for i, body in enumerate(objects):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (i + 1, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)


def pdf_of_boxes(pages):
    """A PDF of `pages` 2 x 2 inch pages with a box each (tests/python/test_media.py makes the same
    file for the Python package)."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Count %d /Kids [%s] >>" % (pages, b" ".join(b"%d 0 R" % (3 + 2 * p)
                                                                          for p in range(pages)))]
    for p in range(pages):
        content = b"0 0 0 rg %d 10 40 40 re f" % (10 + 20 * p)
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 144 144] /Contents %d 0 R >>" % (4 + 2 * p))
        objs.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    return pdf_file(objs)


LETTER = (612, 792)  # points: at 144 dpi 1224 x 1584 px, under qvl serve's default cap 896 x 1152 (1008 tokens)


def _text(x, y, size, line):
    esc = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return "BT /F1 %d Tf %d %d Td (%s) Tj ET" % (size, x, y, esc)


def _invoice(n):
    ops = [_text(72, 720, 22, "INVOICE 2026-%04d" % (40 + n)),
           _text(72, 694, 11, "Northwind Office Supply GmbH, Hafenstrasse 12, 20457 Hamburg"),
           _text(72, 678, 11, "Billed to: Contoso Analytics Ltd., 5 Harbour Road, Dublin"),
           _text(400, 720, 11, "Date: 2026-12-%02d" % (1 + n % 28)),
           _text(400, 704, 11, "Due: 2027-01-%02d" % (1 + n % 28)),
           "0.3 G 1 w 72 650 m 540 650 l S"]
    items = [("Recycled paper A4, 500 sheets", 40, 4.90), ("Ballpoint pens, blue, box of 50", 6, 12.50),
             ("Stapler, heavy duty", 3, 27.00), ("Desk lamp LED", 2, 39.90), ("Archive boxes", 25, 2.10),
             ("Whiteboard markers, 4 colours", 10, 6.75), ("Printer toner, black", 4, 64.00)]
    ops.append(_text(72, 632, 11, "Item"))
    ops.append(_text(360, 632, 11, "Qty"))
    ops.append(_text(420, 632, 11, "Unit"))
    ops.append(_text(490, 632, 11, "Amount"))
    y, total = 610, 0.0
    for k, (name, qty, unit) in enumerate(items[: 4 + n % 4]):
        amount = qty * unit
        total += amount
        ops += [_text(72, y, 11, name), _text(360, y, 11, str(qty)), _text(420, y, 11, "%.2f" % unit),
                _text(490, y, 11, "%.2f" % amount)]
        y -= 20
    vat = round(total * 0.19, 2)
    ops += ["0.3 G 1 w 360 %d m 540 %d l S" % (y + 8, y + 8),
            _text(360, y - 10, 11, "Subtotal"), _text(490, y - 10, 11, "%.2f" % total),
            _text(360, y - 28, 11, "VAT 19%"), _text(490, y - 28, 11, "%.2f" % vat),
            _text(360, y - 50, 13, "Total EUR"), _text(490, y - 50, 13, "%.2f" % (total + vat)),
            _text(72, 120, 9, "Payment by bank transfer within 30 days. IBAN DE89 3704 0044 0532 0130 00."),
            _text(72, 106, 9, "Questions about this invoice: accounts@northwind.example, +49 40 1234567.")]
    return ops


def _table(n):
    ops = [_text(72, 720, 18, "Quarterly figures, region %s" % "NESW"[n % 4]),
           _text(72, 700, 10, "All amounts in thousands of euros; unaudited.")]
    cols = [72, 200, 270, 340, 410, 480]
    heads = ["Product line", "Q1", "Q2", "Q3", "Q4", "Year"]
    rows = ["Paper", "Pens", "Furniture", "Lighting", "Storage", "Toner", "Labels", "Binders", "Software",
            "Service"]
    y = 670
    ops.append("0.85 g 72 %d 468 18 re f 0 g" % (y - 5))
    ops += [_text(x, y, 10, h) for x, h in zip(cols, heads)]
    for r, name in enumerate(rows):
        y -= 22
        q = [(17 * (r + 3) * (n + 2) + 31 * k) % 400 + 20 for k in range(4)]
        cells = [name] + [str(v) for v in q] + [str(sum(q))]
        ops += [_text(x, y, 10, c) for x, c in zip(cols, cells)]
        ops.append("0.6 G 0.5 w 72 %d m 540 %d l S" % (y - 6, y - 6))
    ops += ["0.6 G 0.5 w %d %d m %d 676 l S" % (x - 6, y - 6, x - 6) for x in cols[1:]]
    ops.append(_text(72, y - 40, 10, "Year totals include returns booked in the following quarter."))
    return ops


PROSE = ("The committee met on the second Tuesday of the month to review the progress of the archive "
         "project. Most of the older records have now been scanned, and the remaining boxes are expected "
         "to be finished before the end of the year. Several members asked how the scanned pages would be "
         "searched, since many of them are handwritten or typed on forms with tables and stamps. The "
         "project lead explained that every page is first converted to text with its layout kept, so that "
         "tables stay tables and the fields of a form can be found again by their labels. A sample of two "
         "hundred pages was checked by hand, and the errors found were mostly in faded carbon copies. The "
         "committee agreed to keep the original paper files for another five years and to review the "
         "storage costs at the next meeting. The treasurer noted that the budget for the current year has "
         "not been exceeded, although the cost of the scanner maintenance contract rose by eight percent. ")


def _prose(n):
    ops = [_text(72, 720, 18, "Minutes of the archive committee, part %d" % (n + 1))]
    words = (PROSE * 3).split()
    words = words[n * 7 % 40:] + words[: n * 7 % 40]
    line, y = "", 690
    for w in words:
        if len(line) + len(w) + 1 > 88:
            ops.append(_text(72, y, 11, line))
            line, y = "", y - 16
            if y < 90:
                break
        line = (line + " " + w).strip()
    return ops


def document_pdf(pages):
    """A deterministic text document of `pages` US Letter pages: an invoice, a table and prose in
    turn (Helvetica, not embedded: Poppler substitutes a system font)."""
    makers = [_invoice, _table, _prose]
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", None,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]
    kids = []
    for p in range(pages):
        content = "\n".join(makers[p % 3](p)).encode("latin-1")
        kids.append(len(objs) + 1)
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 3 0 R >> >> "
                    b"/Contents %d 0 R >>" % (LETTER[0], LETTER[1], len(objs) + 2))
        objs.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    objs[1] = b"<< /Type /Pages /Count %d /Kids [%s] >>" % (pages, b" ".join(b"%d 0 R" % k for k in kids))
    return pdf_file(objs)


def png_of_size(width, height):
    """An 8-bit RGB PNG, white with a grey rule every 24 rows (text lines' worth of ink)."""
    white, rule = b"\xff" * (3 * width), b"\x80" * (3 * width)
    raw = b"".join(b"\x00" + (rule if y % 24 == 23 else white) for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
