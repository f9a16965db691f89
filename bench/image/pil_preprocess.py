"""PIL doing the image processor's work for bench/image_preprocess.cpp:
decode, convert("RGB"), resize(BICUBIC) to the smart_resize target, then
rescale + normalize. numpy is used for the normalisation when installed;
otherwise PIL's float mode does it per band (stated in the output). Neither
path includes the patch reordering qvl's figure includes.
Usage: pil_preprocess.py ITERATIONS MAX_PIXELS FILE... ; prints one JSON line per file."""
import json
import math
import sys
import time

from PIL import Image

try:
    import numpy as np
except ImportError:
    np = None


def smart_resize(h, w, factor=32, min_pixels=65536, max_pixels=16777216):
    hb, wb = round(h / factor) * factor, round(w / factor) * factor
    if hb * wb > max_pixels:
        beta = math.sqrt(h * w / max_pixels)
        hb = max(factor, math.floor(h / beta / factor) * factor)
        wb = max(factor, math.floor(w / beta / factor) * factor)
    elif hb * wb < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        hb, wb = math.ceil(h * beta / factor) * factor, math.ceil(w * beta / factor) * factor
    return hb, wb


def run(path, max_pixels):
    t0 = time.perf_counter()
    im = Image.open(path)
    im = im.convert("RGB")  # forces the full decode
    t1 = time.perf_counter()
    h, w = smart_resize(im.height, im.width, max_pixels=max_pixels)
    im = im.resize((w, h), Image.BICUBIC)
    if np is not None:
        a = np.asarray(im).astype(np.float32) * np.float32(1 / 255)
        a = (a - np.float32(0.5)) / np.float32(0.5)
    else:
        bands = [b.convert("F").point(lambda v: v * (2 / 255) - 1) for b in im.split()]
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3, (w, h)


def main():
    iters, max_pixels = int(sys.argv[1]), int(sys.argv[2])
    for path in sys.argv[3:]:
        runs = sorted((run(path, max_pixels) for _ in range(iters)), key=lambda r: r[0] + r[1])
        dec, pre, size = runs[len(runs) // 2]
        print(json.dumps({"file": path, "decode_ms": dec, "preprocess_ms": pre, "total_ms": dec + pre,
                          "target": size, "normalize": "numpy" if np is not None else "PIL float bands"}))


main()
