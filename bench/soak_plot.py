"""The soak's series as one PNG: a panel per series, its samples, the line fitted over the second
half (green within its limit, red past it) and the half's start.

With matplotlib (Debian's python3-matplotlib) when the interpreter can import it; otherwise a PNG
drawn here with the standard library (zlib), with a 3x5 pixel font for the labels, so the figure
is there on any python3 (CTest's may not see Debian's packages).
"""
import struct, zlib

# panel: {"name", "unit", "t": [s], "y": [value or None], "fit": (t0, y0, t1, y1) or None, "ok": bool,
#         "label": the line under the name (slope and limit)}


def render_png(path, title, panels):
    """Writes the figure; returns which renderer drew it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        Canvas.figure(title, panels).save(path)
        return "builtin"
    cols = 2
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(12, 2.6 * rows), squeeze=False)
    for ax, p in zip(axes.flat, panels):
        pts = [(t / 60, y) for t, y in zip(p["t"], p["y"]) if y is not None]
        if pts:
            ax.plot(*zip(*pts), ".-", color="#1f5fa8", lw=1, ms=3)
        if p["fit"]:
            t0, y0, t1, y1 = p["fit"]
            ax.plot([t0 / 60, t1 / 60], [y0, y1], "-", lw=2, color="#2a9d3a" if p["ok"] else "#d62728")
            ax.axvline(t0 / 60, color="#999999", lw=0.8, ls="--")
        ax.set_title(f"{p['name']} ({p['unit']}): {p['label']}", fontsize=9, loc="left")
        ax.set_xlabel("minutes", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return "matplotlib"


# 3 columns x 5 rows per glyph, each row's bits left to right.
GLYPHS = {
    "0": (7, 5, 5, 5, 7), "1": (2, 6, 2, 2, 7), "2": (7, 1, 7, 4, 7), "3": (7, 1, 7, 1, 7), "4": (5, 5, 7, 1, 1),
    "5": (7, 4, 7, 1, 7), "6": (7, 4, 7, 5, 7), "7": (7, 1, 1, 2, 2), "8": (7, 5, 7, 5, 7), "9": (7, 5, 7, 1, 7),
    "A": (2, 5, 7, 5, 5), "B": (6, 5, 6, 5, 6), "C": (3, 4, 4, 4, 3), "D": (6, 5, 5, 5, 6), "E": (7, 4, 6, 4, 7),
    "F": (7, 4, 6, 4, 4), "G": (3, 4, 5, 5, 3), "H": (5, 5, 7, 5, 5), "I": (7, 2, 2, 2, 7), "J": (1, 1, 1, 5, 2),
    "K": (5, 5, 6, 5, 5), "L": (4, 4, 4, 4, 7), "M": (5, 7, 7, 5, 5), "N": (6, 5, 5, 5, 5), "O": (2, 5, 5, 5, 2),
    "P": (6, 5, 6, 4, 4), "Q": (2, 5, 5, 6, 3), "R": (6, 5, 6, 5, 5), "S": (3, 4, 2, 1, 6), "T": (7, 2, 2, 2, 2),
    "U": (5, 5, 5, 5, 7), "V": (5, 5, 5, 5, 2), "W": (5, 5, 7, 7, 5), "X": (5, 5, 2, 5, 5), "Y": (5, 5, 2, 2, 2),
    "Z": (7, 1, 2, 4, 7), " ": (0, 0, 0, 0, 0), ".": (0, 0, 0, 0, 2), "-": (0, 0, 7, 0, 0), ":": (0, 2, 0, 2, 0),
    "/": (1, 1, 2, 4, 4), "%": (5, 1, 2, 4, 5), "_": (0, 0, 0, 0, 7), "(": (1, 2, 2, 2, 1), ")": (4, 2, 2, 2, 4),
    ",": (0, 0, 0, 2, 4), "=": (0, 7, 0, 7, 0), "+": (0, 2, 7, 2, 0), "<": (1, 2, 4, 2, 1), ">": (4, 2, 1, 2, 4),
}
BLACK, GREY, LIGHT = (0, 0, 0), (150, 150, 150), (225, 225, 225)
BLUE, GREEN, RED = (31, 95, 168), (42, 157, 58), (214, 39, 40)


class Canvas:
    """An RGB image in memory with lines, rectangles and text; saved as an 8-bit PNG."""

    def __init__(self, width, height):
        self.w, self.h = width, height
        self.px = bytearray(b"\xff" * (width * height * 3))

    def dot(self, x, y, colour):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i:i + 3] = bytes(colour)

    def line(self, x0, y0, x1, y1, colour, width=1, dash=0):
        """Bresenham; `dash` > 0 draws every other run of that many pixels."""
        x0, y0, x1, y1 = int(round(x0)), int(round(y0)), int(round(x1)), int(round(y1))
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err, step = dx + dy, 0
        while True:
            if not dash or (step // dash) % 2 == 0:
                for k in range(width):
                    self.dot(x0, y0 + k, colour)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy
            step += 1

    def rect(self, x0, y0, x1, y1, colour):
        for a, b, c, d in ((x0, y0, x1, y0), (x1, y0, x1, y1), (x1, y1, x0, y1), (x0, y1, x0, y0)):
            self.line(a, b, c, d, colour)

    def text(self, x, y, s, colour=BLACK, scale=2):
        for ch in s.upper():
            for row, bits in enumerate(GLYPHS.get(ch, (7, 1, 2, 0, 2))):
                for col in range(3):
                    if bits & (4 >> col):
                        for a in range(scale):
                            for b in range(scale):
                                self.dot(x + col * scale + a, y + row * scale + b, colour)
            x += 4 * scale

    def save(self, path):
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3]) for y in range(self.h))

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        ihdr = struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)
        with open(path, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) +
                    chunk(b"IEND", b""))

    @classmethod
    def figure(cls, title, panels, cols=2, pw=560, ph=200):
        rows = (len(panels) + cols - 1) // cols
        c = cls(cols * pw + 20, rows * ph + 40)
        c.text(10, 10, title)
        for k, p in enumerate(panels):
            c.panel(10 + (k % cols) * pw, 34 + (k // cols) * ph, pw - 20, ph - 14, p)
        return c

    def panel(self, left, top, width, height, p):
        self.text(left, top, f"{p['name']} ({p['unit']}): {p['label']}")
        x0, y0, x1, y1 = left + 60, top + 16, left + width, top + height - 14  # the plot area
        self.rect(x0, y0, x1, y1, GREY)
        pts = [(t, y) for t, y in zip(p["t"], p["y"]) if y is not None]
        if not pts:
            return
        t_max = max(max(t for t, _ in pts), 1e-9)
        lo, hi = min(y for _, y in pts), max(y for _, y in pts)
        if p["fit"]:
            lo, hi = min(lo, p["fit"][1], p["fit"][3]), max(hi, p["fit"][1], p["fit"][3])
        if hi - lo < 1e-9:
            lo, hi = lo - 1, hi + 1
        pad = (hi - lo) * 0.08
        lo, hi = (lo - pad if lo - pad >= 0 or lo < 0 else 0), hi + pad

        def at(t, y):
            return x0 + (x1 - x0) * t / t_max, y1 - (y1 - y0) * (y - lo) / (hi - lo)
        for frac in (0.25, 0.5, 0.75):
            self.line(x0 + 1, y0 + (y1 - y0) * frac, x1 - 1, y0 + (y1 - y0) * frac, LIGHT)
        self.text(left, y0, short(hi), GREY)
        self.text(left, y1 - 10, short(lo), GREY)
        self.text(x0, y1 + 3, "0", GREY)
        end = f"{t_max / 60:.1f} MIN"
        self.text(x1 - 8 * len(end), y1 + 3, end, GREY)
        for (ta, ya), (tb, yb) in zip(pts, pts[1:]):
            self.line(*at(ta, ya), *at(tb, yb), BLUE)
        for t, y in pts:
            xa, ya = at(t, y)
            self.line(xa - 1, ya - 1, xa - 1, ya + 1, BLUE, width=1)
            self.line(xa + 1, ya - 1, xa + 1, ya + 1, BLUE, width=1)
        if p["fit"]:
            t0, f0, t1, f1 = p["fit"]
            self.line(*at(t0, lo), *at(t0, hi), GREY, dash=3)
            self.line(*at(t0, f0), *at(t1, f1), GREEN if p["ok"] else RED, width=2)


def short(v):
    """A tick label of a few characters."""
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}" if a >= 0.01 or a == 0 else f"{v:.1e}".upper()
