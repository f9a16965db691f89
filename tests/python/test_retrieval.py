"""Model.embed and Model.rerank of the Python package (over qvl_embed / qvl_rerank) with the tiny model
used as Qwen3-VL-Embedding / -Reranker, against the golden-embed fixtures (tests/fixtures/golden-embed):
texts, images, mixed inputs and instructions, MRL dimensions, one query against several documents, and
the errors. CTest sets PYTHONPATH, QVL_LIBRARY and QVL_FIXTURES_DIR (tests/python/CMakeLists.txt)."""

import json
import os
import unittest

import qvl

FIXTURES = os.environ.get("QVL_FIXTURES_DIR", os.path.join(os.path.dirname(__file__), "..", "fixtures"))
TINY = os.path.join(FIXTURES, "tiny-qwen3vl")
EMBED = os.path.join(FIXTURES, "golden-embed")

with open(os.path.join(EMBED, "manifest.json"), encoding="utf-8") as f:
    GOLDEN = json.load(f)


def case(kind, name):
    return next(c for c in GOLDEN[kind] if c["name"] == name)


def script_input(raw):
    """A manifest input with its image paths made absolute (they are relative to golden-embed/)."""
    out = dict(raw)
    if "image" in out:
        images = out["image"] if isinstance(out["image"], list) else [out["image"]]
        out["image"] = [os.path.join(EMBED, p) for p in images]
    return out


class RetrievalTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = qvl.Model(TINY, weights="f32", threads=2, ctx_size=4096)

    @classmethod
    def tearDownClass(cls):
        cls.model.close()

    def assertVectorNear(self, got, want, atol=1e-3):
        self.assertEqual(len(got), len(want))
        self.assertLessEqual(max(abs(a - b) for a, b in zip(got, want)), atol)

    def test_embeddings_match_the_goldens_in_one_call(self):
        names = ["query_instruction", "query_default", "image", "image_text", "two_images", "empty"]
        vectors = self.model.embed([script_input(case("embeddings", n)["input"]) for n in names])
        self.assertEqual(len(vectors), len(names))
        for name, v in zip(names, vectors):
            with self.subTest(name):
                self.assertVectorNear(v, case("embeddings", name)["embedding"])

    def test_dimensions_and_a_call_wide_instruction(self):
        c = case("embeddings", "query_instruction")
        [v] = self.model.embed(c["input"]["text"], instruction=c["input"]["instruction"], dimensions=32)
        self.assertVectorNear(v, c["mrl"]["32"])
        self.assertEqual(self.model.hidden_size, 64)

    def test_rerank_sorted_with_the_golden_scores(self):
        cal, pos = case("rerank", "calibrated_text"), case("rerank", "text_text")
        img = case("rerank", "calibrated_image_text")
        docs = [cal["input"]["document"]["text"], pos["input"]["document"]["text"],
                script_input(img["input"]["document"])]
        results = self.model.rerank(cal["input"]["query"]["text"], docs, return_documents=True)
        self.assertEqual([r["index"] for r in results], [1, 0, 2])
        self.assertAlmostEqual(results[1]["relevance_score"], cal["score"], delta=0.025)
        self.assertAlmostEqual(results[1]["logit"], cal["logit_diff"], delta=0.1)
        self.assertAlmostEqual(results[2]["logit"], img["logit_diff"], delta=0.1)
        self.assertEqual(results[1]["document"], docs[0])
        self.assertEqual(len(self.model.rerank("q", ["a", "b", "c"], top_n=2)), 2)

    def test_errors_name_the_field(self):
        with self.assertRaisesRegex(qvl.InvalidArgumentError, r"dimensions: must be in \[1, 64\]"):
            self.model.embed("a", dimensions=65)
        with self.assertRaisesRegex(qvl.InvalidArgumentError, "input"):
            self.model.embed([])
        with self.assertRaisesRegex(qvl.InvalidArgumentError, r"inputs\[0\]\.audio: unknown key"):
            self.model.embed([{"audio": "x.wav"}])
        with self.assertRaisesRegex(qvl.IoError, "nope.png"):
            self.model.embed([{"image": "nope.png"}])


if __name__ == "__main__":
    unittest.main()
