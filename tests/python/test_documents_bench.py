"""bench/documents.py end to end on the tiny model: a few pages of a few tokens through `qvl run
--per-page` and the server's per-page batch, no PyTorch; the report's fields, and every page forced
to exactly --tokens tokens. Also the document it writes, and the check that stops a wrong figure.

  QVL_BINARY=build/qvl QVL_FIXTURES_DIR=tests/fixtures python3 -m unittest -v test_documents_bench
"""
import json, os, subprocess, sys, tempfile, unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import documents  # noqa: E402
from pdf_writer import document_pdf, pdf_of_boxes  # noqa: E402

QVL = os.environ.get("QVL_BINARY", os.path.join(ROOT, "build/qvl"))
MODEL = os.path.join(os.environ.get("QVL_FIXTURES_DIR", os.path.join(ROOT, "tests/fixtures")), "tiny-qwen3vl")
PAGES, TOKENS = 2, 7
FIELDS = ["pages", "first_token_s", "seconds_per_page", "wall_s", "pages_per_minute", "completion_tokens",
          "decode_tok_s", "peak_rss_mb", "page_list", "load_s"]


class DocumentsBench(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        out, pdf = os.path.join(cls.tmp.name, "report.json"), os.path.join(cls.tmp.name, "document.pdf")
        cls.proc = subprocess.run(
            [sys.executable, os.path.join(ROOT, "bench/documents.py"), "--qvl", QVL, "--model", MODEL,
             "--pages", str(PAGES), "--tokens", str(TOKENS), "--threads", "2", "--skip-pytorch", "--json", out,
             "--pdf-out", pdf], capture_output=True, text=True, timeout=300)
        cls.report, cls.pdf = None, b""
        if cls.proc.returncode == 0:
            with open(out) as f:
                cls.report = json.load(f)
            with open(pdf, "rb") as f:
                cls.pdf = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_both_paths_report_every_figure(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        r = self.report
        self.assertEqual((r["pages"], r["tokens"], r["page_size"]), (PAGES, TOKENS, "896x1152"))
        self.assertNotIn("pytorch", r)
        self.assertTrue(r["same_prompts"])
        for path in ("cli", "server"):
            with self.subTest(path=path):
                f = r[path]
                self.assertEqual(sorted(f), sorted(FIELDS + (["poll_s"] if path == "server" else [])))
                self.assertEqual(f["pages"], PAGES)
                self.assertGreater(f["first_token_s"], 0)
                self.assertGreaterEqual(f["wall_s"], f["first_token_s"])
                self.assertAlmostEqual(f["seconds_per_page"], f["wall_s"] / PAGES, delta=0.002)
                self.assertAlmostEqual(f["pages_per_minute"], 60 * PAGES / f["wall_s"], delta=0.01 * f["pages_per_minute"])
                self.assertGreater(f["decode_tok_s"], 0)
                self.assertGreater(f["peak_rss_mb"], 10)
                self.assertEqual(f["completion_tokens"], PAGES * TOKENS)

    def test_every_page_got_exactly_the_forced_tokens(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        for path in ("cli", "server"):
            pages = self.report[path]["page_list"]
            self.assertEqual([p["page"] for p in pages], list(range(1, PAGES + 1)))
            for p in pages:
                with self.subTest(path=path, page=p["page"]):
                    self.assertEqual(p["completion_tokens"], TOKENS)
                    self.assertEqual(p["finish_reason"], "length")
                    # A Letter page at qvl serve's default cap: 1008 image tokens and the prompt's text.
                    self.assertGreater(p["prompt_tokens"], 1008)
                    self.assertLess(p["prompt_tokens"], 1008 + 40)
                    self.assertLessEqual(p["first_token_s"], p["end_s"])
        self.assertIn("cli ", self.proc.stdout)
        self.assertIn("server ", self.proc.stdout)

    def test_the_document_is_deterministic_text_pages(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertEqual(self.pdf, document_pdf(PAGES))
        three = document_pdf(3)
        self.assertIn(b"/Count 3", three)
        self.assertEqual(three.count(b"/MediaBox [0 0 612 792]"), 3)
        for text in (b"(INVOICE 2026-0040) Tj", b"(Quarterly figures, region E) Tj",
                     b"(Minutes of the archive committee, part 3) Tj"):
            self.assertIn(text, three)
        self.assertTrue(pdf_of_boxes(2).startswith(b"%PDF-1.7\n"))

    def test_a_page_not_forced_to_the_tokens_stops_the_bench(self):
        pages = [{"page": 1, "completion_tokens": 7, "finish_reason": "length"},
                 {"page": 2, "completion_tokens": 3, "finish_reason": "stop"}]
        with self.assertRaises(SystemExit) as e:
            documents.check_pages("qvl run", pages, 7)
        self.assertEqual(str(e.exception), "documents.py: qvl run: pages not forced to 7 tokens: page 2: 3 tokens (stop)")

    def test_union_of_decode_spans(self):
        self.assertEqual(documents.union_seconds([(0, 2), (1, 3), (5, 6)]), 4)
        self.assertEqual(documents.union_seconds([(4, 5), (0, 1)]), 2)


if __name__ == "__main__":
    unittest.main()
