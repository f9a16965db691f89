"""bench/peers.py's pure parts: the timing lines it reads from llama-mtmd-cli and the PyTorch
baseline, the PNGs it writes, and the transformers stand-in (bench/peers_shim) that lets llama.cpp's
converter read qvl's tokenizer. CTest sets QVL_BINARY and QVL_FIXTURES_DIR (tests/python/CMakeLists.txt)."""

import os
import struct
import sys
import unittest
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "bench", "peers_shim")]

import peers  # noqa: E402
import transformers  # noqa: E402  (the stand-in in bench/peers_shim)

FIXTURES = os.environ.get("QVL_FIXTURES_DIR", os.path.join(ROOT, "tests", "fixtures"))
QVL_BINARY = os.environ.get("QVL_BINARY", os.path.join(ROOT, "build", "qvl"))

# llama-mtmd-cli's stderr (llama.cpp 82bb48500a9a), cut to the lines peers.py reads and a few around them.
MTMD_LOG = """\
0.05.419.326 I main: loading model: /work/peers/gguf/random-2b-Q8_0.gguf
0.13.392.524 I encoding mtmd batch, n_chunks = 1 (done = 1, total = 3)
0.35.517.391 I mtmd batch encoding done in 22124 ms
0.35.517.497 I decoding image batch 1/1, n_tokens_batch = 196
0.52.176.462 I image decoded (batch 1/1) in 16659 ms
1.03.376.613 I llama_perf_context_print:        load time =    4736.59 ms
1.03.376.615 I llama_perf_context_print: prompt eval time =   50707.36 ms /   212 tokens (  239.19 ms per token,     4.18 tokens per second)
1.03.376.617 I llama_perf_context_print:        eval time =    3818.61 ms /     3 runs   ( 1272.87 ms per token,     0.79 tokens per second)
1.03.376.617 I llama_perf_context_print:       total time =   57408.48 ms /   215 tokens
1.03.376.618 I llama_perf_context_print:    graphs reused =          3
"""


class MtmdTimings(unittest.TestCase):
    def test_reads_encode_prompt_eval_and_eval(self):
        t = peers.parse_mtmd_timings(MTMD_LOG)
        self.assertEqual(t["vision_ms"], 22124.0)
        self.assertEqual(t["image_decode_ms"], 16659.0)
        self.assertEqual((t["prompt_eval_ms"], t["prompt_tokens"]), (50707.36, 212))
        self.assertEqual((t["eval_ms"], t["eval_runs"]), (3818.61, 3))  # not the prompt eval line
        self.assertEqual(t["load_ms"], 4736.59)
        self.assertEqual(t["image_tokens_first_batch"], 196)
        self.assertEqual(t["media_chunks"], 1)
        video = MTMD_LOG.replace("n_chunks = 1", "n_chunks = 2") + "I encoding mtmd batch, n_chunks = 3 (done = 2)\n"
        self.assertEqual(peers.parse_mtmd_timings(video)["media_chunks"], 5)  # a video: one per frame group

    def test_first_token_is_the_prompt_span_when_it_covers_the_encoder(self):
        t = peers.parse_mtmd_timings(MTMD_LOG)
        self.assertEqual(peers.mtmd_first_token_ms(t), (50707.36, True))
        short = dict(t, prompt_eval_ms=17000.0)  # a build that synchronizes before encoding
        self.assertEqual(peers.mtmd_first_token_ms(short), (22124.0 + 17000.0, False))

    def test_older_builds_print_only_the_slice_line(self):
        t = peers.parse_mtmd_timings("image slice encoded in 700 ms\nimage slice encoded in 300 ms\n"
                                     "mtmd batch encoding done\n")
        self.assertEqual(t["vision_ms"], 1000.0)

    def test_missing_lines_give_no_figures(self):
        self.assertEqual(peers.parse_mtmd_timings("error: no model\n"), {})

    def test_gguf_family_from_file_name(self):
        self.assertEqual(peers.gguf_family("/x/random-2b-Q8_0.gguf"), "Q8_0")
        self.assertEqual(peers.gguf_family("model-q4_k_m.gguf"), "Q4_K_M")
        self.assertEqual(peers.gguf_family("m-BF16.gguf"), "BF16")
        self.assertEqual(peers.gguf_family("weights.gguf"), "weights")


class TorchBench(unittest.TestCase):
    def test_last_json_line(self):
        out = "grid (1, 28, 28) load 1.0 [...]\n{'load_s': 1.0}\n{\"load_s\": 1.0, \"vision_s\": [2.0, 1.5]}\n"
        self.assertEqual(peers.parse_torch_bench(out)["vision_s"], [2.0, 1.5])
        with self.assertRaises(RuntimeError):
            peers.parse_torch_bench("Traceback ...\n")


class Png(unittest.TestCase):
    def read(self, path):
        with open(path, "rb") as f:
            data = f.read()
        self.assertEqual(data[:8], b"\x89PNG\r\n\x1a\n")
        n, kind = struct.unpack(">I4s", data[8:16])
        self.assertEqual(kind, b"IHDR")
        w, h = struct.unpack(">II", data[16:24])
        idat_len = struct.unpack(">I", data[33:37])[0]
        raw = zlib.decompress(data[41:41 + idat_len])
        self.assertEqual(len(raw), h * (1 + 3 * w))
        return w, h, data

    def test_sizes_and_determinism(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            a, b, p = (os.path.join(d, n) for n in ("a.png", "b.png", "p.png"))
            peers.write_png(a, 64, 48, page=False)
            peers.write_png(b, 64, 48, page=False)
            peers.write_png(p, 96, 160, page=True)
            wa, ha, da = self.read(a)
            self.assertEqual((wa, ha), (64, 48))
            self.assertEqual(da, self.read(b)[2])
            self.assertEqual(self.read(p)[:2], (96, 160))


class TransformersStandIn(unittest.TestCase):
    """What llama.cpp's converter asks of AutoTokenizer, on the tiny model's (real Qwen) tokenizer."""

    @classmethod
    def setUpClass(cls):
        os.environ["QVL_BIN"] = QVL_BINARY
        cls.tok = transformers.AutoTokenizer.from_pretrained(os.path.join(FIXTURES, "tiny-qwen3vl"))

    def test_vocabulary_and_added_tokens(self):
        t = self.tok
        self.assertEqual(t.vocab["<|im_start|>"], 151644)
        self.assertEqual(t.get_added_vocab()["<|image_pad|>"], 151655)
        self.assertTrue(t.added_tokens_decoder[151645].special)
        self.assertEqual(t.encode("<|im_end|>", add_special_tokens=False), [151645])

    def test_encode_is_qvl_and_decode_inverts_it(self):
        if not os.access(QVL_BINARY, os.X_OK):
            self.skipTest("no qvl binary")
        text = "Describe this image in detail. héllo 🚀 我想在apple工作"
        ids = self.tok.encode(text)
        self.assertEqual(ids[:6], [74785, 419, 2168, 304, 7716, 13])
        self.assertEqual(self.tok.decode(ids), text)

    def test_auto_config_refuses_so_the_converter_reads_config_json(self):
        with self.assertRaises(RuntimeError):
            transformers.AutoConfig.from_pretrained("any")


if __name__ == "__main__":
    unittest.main()
