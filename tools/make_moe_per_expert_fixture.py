#!/usr/bin/python3
"""Per-expert variants of the tiny Qwen3-VL MoE fixture (tests/fixtures/tiny-qwen3vl-moe).

The bf16 masters of Qwen's MoE models fuse each layer's experts
(mlp.experts.gate_up_proj [E, H, 2I], mlp.experts.down_proj [E, I, H], x @ W),
while its FP8 releases store them one by one as nn.Linear weights
(mlp.experts.N.{gate,up}_proj.weight [I, H], mlp.experts.N.down_proj.weight [H, I],
each F8_E4M3 with a weight_scale_inv of 128x128 blocks). This writes:

  tiny-qwen3vl-moe-experts/  the same weights split per expert, bf16 (bit for bit)
  tiny-qwen3vl-moe-fp8/      the experts split and quantized to FP8 E4M3 with
                             block scales as transformers' Fp8Quantize does
                             (scale = 448 / amax of the block, codes = round(w * scale)
                             clamped to +-448, weight_scale_inv = 1 / scale); the
                             scales of layer 0 stored as BF16 (as Qwen), layer 1
                             as F16, layer 2 as F32, layer 3 as BF16, so all
                             three are read; plus experts_dequant.safetensors:
                             the dequantized experts in F32, in the fused layout.

Both hold config.json (the FP8 one with a quantization_config), an index, a new
second shard, and relative symlinks to the source's first shard (embeddings and
lm_head) and tokenizer files, so they stay small. Needs numpy (Debian's
python3-numpy); no torch (Debian's 1.13 has no float8 type).

usage: tools/make_moe_per_expert_fixture.py [tests/fixtures]
"""
import json
import os
import struct
import sys

import numpy as np

SHARD1 = "model-00001-of-00002.safetensors"
SHARD2 = "model-00002-of-00002.safetensors"
LINKED = ["chat_template.json", "generation_config.json", "preprocessor_config.json", "tokenizer.json",
          "tokenizer_config.json", "video_preprocessor_config.json", SHARD1]
SCALE_DTYPE_BY_LAYER = {0: "BF16", 1: "F16", 2: "F32", 3: "BF16"}
BLOCK = 128


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        out[name] = (e["dtype"], e["shape"], body[b:end])
    return out


def write_safetensors(path, tensors):
    """tensors: name -> (dtype, shape, bytes), written in name order."""
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)  # keeps the data 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def bf16_to_f32(raw, shape):
    u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    return u.view(np.float32).reshape(shape)


def f32_to_bf16_bits(x):
    """Round to nearest even, as torch does (the values here are finite)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def e4m3_table():
    """The 256 E4M3 (e4m3fn) values; NaN at 0x7F and 0xFF."""
    t = np.zeros(256, dtype=np.float64)
    for v in range(256):
        sign = -1.0 if v & 0x80 else 1.0
        e, m = (v >> 3) & 0xF, v & 7
        if (v & 0x7F) == 0x7F:
            t[v] = np.nan
        elif e == 0:
            t[v] = sign * m * 2.0 ** -9
        else:
            t[v] = sign * (1 + m / 8) * 2.0 ** (e - 7)
    return t


TABLE = e4m3_table()
POSITIVE = TABLE[:0x7F]  # codes 0x00..0x7E: 0 .. 448, increasing


def to_e4m3(x):
    """x (|x| <= 448) -> E4M3 codes, rounded to nearest, ties to the even code."""
    a = np.abs(x).astype(np.float64)
    hi = np.clip(np.searchsorted(POSITIVE, a, side="left"), 0, len(POSITIVE) - 1)
    lo = np.maximum(hi - 1, 0)
    d_lo, d_hi = a - POSITIVE[lo], POSITIVE[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    code = np.where(pick_hi, hi, lo).astype(np.uint8)
    return np.where((x < 0) & (code != 0), code | 0x80, code).astype(np.uint8)


def quantize(w, scale_dtype):
    """w [rows, cols] f32 -> (codes, scale_inv stored bytes, scale_inv as f32)."""
    rows, cols = w.shape
    sr, sc = -(-rows // BLOCK), -(-cols // BLOCK)
    codes = np.zeros((rows, cols), dtype=np.uint8)
    inv = np.zeros((sr, sc), dtype=np.float32)
    for i in range(sr):
        for j in range(sc):
            blk = w[i * BLOCK:(i + 1) * BLOCK, j * BLOCK:(j + 1) * BLOCK]
            amax = max(float(np.abs(blk).max()), 1e-12)
            scale = np.float32(448.0 / amax)
            codes[i * BLOCK:(i + 1) * BLOCK, j * BLOCK:(j + 1) * BLOCK] = to_e4m3(
                np.clip(blk * scale, -448, 448))
            inv[i, j] = np.float32(1.0) / scale
    if scale_dtype == "BF16":
        bits = f32_to_bf16_bits(inv)
        stored, as_f32 = bits.tobytes(), bf16_to_f32(bits.tobytes(), inv.shape)
    elif scale_dtype == "F16":
        h = inv.astype("<f2")
        stored, as_f32 = h.tobytes(), h.astype(np.float32)
    else:
        stored, as_f32 = inv.astype("<f4").tobytes(), inv
    return codes, stored, as_f32


def dequantize(codes, inv):
    scale = np.repeat(np.repeat(inv, BLOCK, axis=0), BLOCK, axis=1)[:codes.shape[0], :codes.shape[1]]
    return (TABLE[codes].astype(np.float32) * scale).astype(np.float32)


def per_expert(src, fp8):
    """The second shard with its fused experts replaced by per-expert tensors."""
    out, dequant = {}, {}
    for name, (dtype, shape, raw) in src.items():
        if not name.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj")):
            out[name] = (dtype, shape, raw)
            continue
        assert dtype == "BF16", name
        prefix = name[:name.index("mlp.experts.") + len("mlp.experts.")]
        layer = int(name.split("layers.")[1].split(".")[0])
        w = bf16_to_f32(raw, shape)  # [E, H, 2I] or [E, I, H], x @ W
        if name.endswith("gate_up_proj"):
            inter = shape[2] // 2
            parts = {"gate_proj": lambda e: w[e, :, :inter].T, "up_proj": lambda e: w[e, :, inter:].T}
        else:
            parts = {"down_proj": lambda e: w[e].T}
        fused = np.zeros(shape, dtype=np.float32)
        for e in range(shape[0]):
            for part, get in parts.items():
                lin = np.ascontiguousarray(get(e))  # nn.Linear [out, in]
                key = f"{prefix}{e}.{part}.weight"
                if not fp8:
                    out[key] = ("BF16", lin.shape, f32_to_bf16_bits(lin).tobytes())
                    continue
                sdt = SCALE_DTYPE_BY_LAYER[layer]
                codes, stored, inv = quantize(lin, sdt)
                out[key] = ("F8_E4M3", lin.shape, codes.tobytes())
                out[key + "_scale_inv"] = (sdt, inv.shape, stored)
                deq = dequantize(codes, inv)
                if part == "gate_proj":
                    fused[e, :, :inter] = deq.T
                elif part == "up_proj":
                    fused[e, :, inter:] = deq.T
                else:
                    fused[e] = deq.T
        if fp8:
            dequant[name] = ("F32", shape, fused.astype("<f4").tobytes())
    return out, dequant


def write_variant(fixtures, name, fp8):
    src_dir = os.path.join(fixtures, "tiny-qwen3vl-moe")
    dst = os.path.join(fixtures, name)
    os.makedirs(dst, exist_ok=True)
    shard, dequant = per_expert(read_safetensors(os.path.join(src_dir, SHARD2)), fp8)
    write_safetensors(os.path.join(dst, SHARD2), shard)
    if dequant:
        write_safetensors(os.path.join(dst, "experts_dequant.safetensors"), dequant)
    index = json.load(open(os.path.join(src_dir, "model.safetensors.index.json")))
    weight_map = {k: v for k, v in index["weight_map"].items() if v == SHARD1}
    weight_map.update({k: SHARD2 for k in shard})
    index["weight_map"] = dict(sorted(weight_map.items()))
    json.dump(index, open(os.path.join(dst, "model.safetensors.index.json"), "w"), indent=2)
    config = json.load(open(os.path.join(src_dir, "config.json")))
    if fp8:
        layers = config["text_config"]["num_hidden_layers"]
        config["quantization_config"] = {
            "activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128],
            # As Qwen's FP8 MoE releases: attention, routers, embeddings, lm_head and the vision tower stay bf16
            # (only the experts are quantized here, to keep the comparison with the fused model about them).
            "modules_to_not_convert": ["lm_head", "model.language_model.embed_tokens", "model.visual"] +
            [f"model.language_model.layers.{i}.{m}" for i in range(layers)
             for m in ("mlp.gate", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj")]}
    json.dump(config, open(os.path.join(dst, "config.json"), "w"), indent=2)
    for f in LINKED:
        link = os.path.join(dst, f)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.join("..", "tiny-qwen3vl-moe", f), link)


def main():
    fixtures = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
    write_variant(fixtures, "tiny-qwen3vl-moe-experts", fp8=False)
    write_variant(fixtures, "tiny-qwen3vl-moe-fp8", fp8=True)


if __name__ == "__main__":
    main()
