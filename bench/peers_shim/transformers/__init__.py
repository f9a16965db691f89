"""The few pieces of `transformers` that llama.cpp's convert_hf_to_gguf.py uses for Qwen3-VL.

Debian has no `transformers` and this machine has no PyPI, so bench/peers.py puts this folder on
PYTHONPATH when it runs the converter. The converter needs:
  - AutoConfig.from_pretrained: refused here, so the converter reads config.json itself (its own
    fallback);
  - AutoTokenizer.from_pretrained(dir): the vocabulary and added tokens, read from tokenizer.json,
    and encode(), which the converter hashes to recognise the pre-tokenizer ("qwen2"). encode() runs
    `qvl tokenize` (the binary named by $QVL_BIN), whose tokenizer is tested against Hugging Face's,
    so a wrong tokenizer would show up as an unknown hash and stop the conversion.
Nothing here is used by qvl itself.
"""
import json
import os
import subprocess
from pathlib import Path

__version__ = "0.0-qvl-shim"


def bytes_to_unicode():
    """GPT-2's byte <-> printable character table (byte-level BPE)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


class AutoConfig:
    @staticmethod
    def from_pretrained(*args, **kwargs):
        raise RuntimeError("transformers shim: no AutoConfig (the converter then reads config.json)")


class _AddedToken:
    def __init__(self, t):
        self.content, self.special, self.normalized = t["content"], t["special"], t["normalized"]


class _Tokenizer:
    def __init__(self, folder):
        self.folder = Path(folder)
        tok = json.loads((self.folder / "tokenizer.json").read_text(encoding="utf-8"))
        if tok["model"]["type"] != "BPE":
            raise ValueError("transformers shim: only byte-level BPE tokenizers")
        self.added_tokens_decoder = {t["id"]: _AddedToken(t) for t in tok["added_tokens"]}
        self._added = {t["content"]: t["id"] for t in tok["added_tokens"]}
        self.vocab = dict(tok["model"]["vocab"])
        self.vocab.update(self._added)
        self._id_to_token = {i: t for t, i in self.vocab.items()}
        self._byte_of = {c: b for b, c in bytes_to_unicode().items()}

    def get_vocab(self):
        return dict(self.vocab)

    def get_added_vocab(self):
        return dict(self._added)

    def convert_tokens_to_ids(self, token):
        return self.vocab[token]

    def encode(self, text, add_special_tokens=True):
        if text in self._added:
            return [self._added[text]]
        qvl = os.environ.get("QVL_BIN")
        if not qvl:
            raise RuntimeError("transformers shim: set QVL_BIN to the qvl binary (encode runs `qvl tokenize`)")
        out = subprocess.run([qvl, "tokenize", "--model", str(self.folder), "--text", text],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)

    def decode(self, ids, **kwargs):
        out = bytearray()
        for i in ids:
            t = self._id_to_token[i]
            if i in self.added_tokens_decoder:
                out += t.encode("utf-8")
            else:
                out += bytes(self._byte_of[c] for c in t)
        return out.decode("utf-8", errors="replace")


class AutoTokenizer:
    @staticmethod
    def from_pretrained(folder, **kwargs):
        return _Tokenizer(folder)
