"""Videos and PDFs through the Python package, against the tiny random-weight model in bf16: the
reference's greedy tokens for the video goldens (tests/fixtures/video) with the lossless clip as a
path, as bytes, as a part or in videos=, and the frame list as paths, bytes and RGB frames; hostile
clips refused with one line and the model still answering; a PDF's pages as images. CTest sets
PYTHONPATH, QVL_LIBRARY and QVL_FIXTURES_DIR (tests/python/CMakeLists.txt)."""

import json
import os
import struct
import unittest

import qvl

FIXTURES = os.environ.get("QVL_FIXTURES_DIR", os.path.join(os.path.dirname(__file__), "..", "fixtures"))
TINY = os.path.join(FIXTURES, "tiny-qwen3vl")
VIDEO = os.path.join(FIXTURES, "video")
CLIP = os.path.join(VIDEO, "videos", "long_112x80_24fps.mp4")
FRAMES = [os.path.join(VIDEO, "videos", "frames_150x100_x6", f"frame_{k:03d}.png") for k in range(6)]

with open(os.path.join(VIDEO, "manifest.json")) as f:
    GOLDEN = {p["name"]: p for p in json.load(f)["prompts"]}


def read(path):
    with open(path, "rb") as f:
        return f.read()


class RgbFrame:
    """What the package asks of a PIL image: size, convert("RGB") and tobytes()."""

    def __init__(self, width, height, rgb):
        self.size, self._rgb = (width, height), rgb

    def convert(self, mode):
        assert mode == "RGB"
        return self

    def tobytes(self):
        return self._rgb


def golden_rgb_frames():
    """frames_rgb of video_frames_150x100_x6.safetensors (uint8 [6, 100, 150, 3]): the PNG frames decoded."""
    data = read(os.path.join(VIDEO, "video_frames_150x100_x6.safetensors"))
    (n,) = struct.unpack("<Q", data[:8])
    entry = json.loads(data[8:8 + n])["frames_rgb"]
    frames, h, w, _ = entry["shape"]
    begin = 8 + n + entry["data_offsets"][0]
    size = h * w * 3
    return [RgbFrame(w, h, data[begin + k * size:begin + (k + 1) * size]) for k in range(frames)]


def pdf_of_boxes(pages):
    """A PDF of `pages` 2 x 2 inch pages with a box each: objects, an xref with their true offsets."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Count %d /Kids [%s] >>" % (pages, b" ".join(b"%d 0 R" % (3 + 2 * p)
                                                                          for p in range(pages)))]
    for p in range(pages):
        content = b"0 0 0 rg %d 10 40 40 re f" % (10 + 20 * p)
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 144 144] /Contents %d 0 R >>" % (4 + 2 * p))
        objs.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    out, offsets = b"%PDF-1.7\n", []
    for i, body in enumerate(objs):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (i + 1, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)


class MediaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = qvl.Model(TINY, weights="bf16", threads=2, ctx_size=4096)

    @classmethod
    def tearDownClass(cls):
        cls.model.close()

    def greedy(self, messages, **kw):
        return self.model.chat(messages, max_tokens=16, temperature=0, ignore_eos=True, **kw)

    def assert_golden(self, r, name):
        g = GOLDEN[name]
        self.assertEqual(r.token_ids, g["generated_ids"])
        self.assertEqual(r.usage["prompt_tokens"], g["num_tokens"])

    def test_video_question_as_path_bytes_part_and_videos(self):
        question = "What happens in this video?"
        self.assert_golden(self.greedy(question, videos=[CLIP]), "video_question")
        self.assert_golden(self.greedy(question, videos=[read(CLIP)]), "video_question")
        part = [{"type": "video", "video": CLIP}, {"type": "text", "text": question}]
        self.assert_golden(self.greedy([{"role": "user", "content": part}]), "video_question")

    def test_two_turn_video(self):
        g = GOLDEN["two_turn_video"]
        messages = json.loads(json.dumps(g["messages"]))
        messages[1]["content"][0]["video"] = os.path.join(VIDEO, messages[1]["content"][0]["video"])
        self.assert_golden(self.greedy(messages), "two_turn_video")

    def test_frame_list_as_paths_bytes_and_rgb(self):
        question = "What is written here?"
        part = {"type": "video", "video": FRAMES, "sample_fps": 2.0}
        self.assert_golden(self.greedy([{"role": "user", "content": [part, {"type": "text", "text": question}]}]),
                           "frame_list_video")
        self.assert_golden(self.greedy(question, videos=[([read(p) for p in FRAMES], 2.0)]), "frame_list_video")
        self.assert_golden(self.greedy(question, videos=[(golden_rgb_frames(), 2.0)]), "frame_list_video")

    def test_sampling_options(self):
        # The reference case long_112x80_24fps@max6_px40000: 3 groups of 6 tokens instead of 8 groups of 8.
        full = self.model.chat("Hi", videos=[CLIP], max_tokens=1, temperature=0).usage["prompt_tokens"]
        small = self.model.chat("Hi", videos=[{"video": CLIP, "max_frames": 6, "total_pixels": 40000}], max_tokens=1,
                                temperature=0).usage["prompt_tokens"]
        self.assertGreater(full - small, 64 - 18)
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            self.model.chat("Hi", videos=[{"video": CLIP, "nframes": 8}])
        self.assertIn("videos[0].nframes", str(cm.exception))
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            self.model.chat("Hi", videos=[{"video": CLIP, "fps": 100}])
        self.assertIn("fps must be", str(cm.exception))
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            self.model.chat("Hi", videos=[{"video": FRAMES, "max_frames": 4}])
        self.assertIn("a list of frames is used whole", str(cm.exception))

    def test_hostile_clips_leave_the_model_usable(self):
        clip = read(os.path.join(VIDEO, "videos", "stripes_96x64_24fps.mp4"))
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            self.model.chat("Hi", videos=[clip[:len(clip) * 6 // 10]])
        self.assertIn("video is truncated or damaged", str(cm.exception))
        self.assertNotIn("\n", str(cm.exception))
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            self.model.chat("Hi", videos=[b"\x17" * 5000])
        self.assertIn("not a supported container", str(cm.exception))
        with self.assertRaises(qvl.IoError) as cm:
            self.model.chat("Hi", videos=["/nonexistent/clip.mp4"])
        self.assertIn("/nonexistent/clip.mp4", str(cm.exception))
        r = self.model.chat("Hi", videos=[clip], max_tokens=2, temperature=0, ignore_eos=True)
        self.assertEqual(len(r.token_ids), 2)

    def test_pdf_pages_are_images(self):
        pdf = pdf_of_boxes(3)

        def tokens(**part):
            content = [dict({"type": "pdf", "pdf": pdf}, **part), {"type": "text", "text": "Read it."}]
            return self.model.chat([{"role": "user", "content": content}], max_tokens=1).usage["prompt_tokens"]

        one, two, every = tokens(pages="2"), tokens(pages="1,3"), tokens()
        self.assertGreater(two, one)
        self.assertEqual(every - two, two - one)  # same-size pages, the same tokens each
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            tokens(pages="2-4")
        self.assertIn("past the end (the document has 3 pages)", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
