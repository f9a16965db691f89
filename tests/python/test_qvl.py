"""The Python package (python/qvl) against the tiny random-weight model, with
Debian's python3 and unittest. CTest sets PYTHONPATH, QVL_LIBRARY, QVL_BINARY
and QVL_FIXTURES_DIR (tests/python/CMakeLists.txt)."""

import json
import os
import subprocess
import unittest

import qvl

FIXTURES = os.environ.get("QVL_FIXTURES_DIR", os.path.join(os.path.dirname(__file__), "..", "fixtures"))
TINY = os.path.join(FIXTURES, "tiny-qwen3vl")
QVL_BINARY = os.environ.get("QVL_BINARY", os.path.join(os.path.dirname(__file__), "..", "..", "build", "qvl"))

COLOR_SCHEMA = {
    "type": "object",
    "properties": {"color": {"enum": ["red", "green"]}, "size": {"enum": [1, 2, 3]}},
    "required": ["color", "size"],
    "additionalProperties": False,
}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"enum": ["Paris", "Rome"]}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


class ModelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = qvl.Model(TINY, weights="q8", threads=2, ctx_size=4096)

    @classmethod
    def tearDownClass(cls):
        cls.model.close()

    def test_version(self):
        self.assertRegex(qvl.version(), r"^\d+\.\d+\.\d+$")

    def test_greedy_tokens_match_qvl_run(self):
        prompt = "Name three colors."
        run = subprocess.run(
            [QVL_BINARY, "run", "--model", TINY, "--weights", "q8", "--threads", "2", "--prompt", prompt,
             "--temperature", "0", "--max-tokens", "12", "--output-format", "json"],
            check=True, capture_output=True, text=True)
        want = json.loads(run.stdout)
        r = self.model.chat([{"role": "user", "content": prompt}], max_tokens=12, temperature=0)
        self.assertEqual(r.token_ids, want["token_ids"])
        self.assertEqual(r.text, want["text"])
        self.assertEqual(r.finish_reason, want["finish_reason"])
        self.assertEqual(r.usage["prompt_tokens"], want["usage"]["prompt_tokens"])
        self.assertEqual(r.usage["completion_tokens"], len(r.token_ids))

    def test_stream_concatenates_to_the_text(self):
        messages = [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": [{"type": "text", "text": "Tell me a story."}]}]
        r = self.model.chat(messages, max_tokens=20, temperature=0, ignore_eos=True)
        stream = self.model.chat(messages, max_tokens=20, temperature=0, ignore_eos=True, stream=True)
        pieces = list(stream)
        self.assertGreater(len(pieces), 1)
        self.assertEqual("".join(pieces), r.text)
        self.assertEqual(stream.result.token_ids, r.token_ids)

    def test_closing_a_stream_cancels_it(self):
        stream = self.model.chat("Count to a million.", max_tokens=3000, temperature=0, ignore_eos=True,
                                 stream=True)
        with stream:
            next(stream)
            next(stream)
        self.assertEqual(stream.result.finish_reason, "cancelled")
        self.assertLess(len(stream.result.token_ids), 3000)
        self.assertEqual(list(stream), [])

    def test_json_schema_answer_parses(self):
        r = self.model.chat("Pick a color and a size.", max_tokens=200, temperature=0,
                            response_format={"type": "json_schema",
                                             "json_schema": {"name": "pick", "schema": COLOR_SCHEMA}})
        self.assertEqual(r.finish_reason, "stop")
        answer = json.loads(r.text)
        self.assertIn(answer["color"], ["red", "green"])
        self.assertIn(answer["size"], [1, 2, 3])

    def test_unsupported_schema_keyword_names_it(self):
        schema = {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}}}
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            self.model.chat("Where?", response_format=schema)
        self.assertIn("pattern", str(cm.exception))
        self.assertIsInstance(cm.exception, ValueError)

    def test_required_tool_call(self):
        r = self.model.chat("What is the weather in Paris?", max_tokens=300, temperature=0,
                            tools=[WEATHER_TOOL], tool_choice="required", parallel_tool_calls=False)
        self.assertEqual(r.finish_reason, "tool_calls")
        self.assertEqual(len(r.tool_calls), 1)
        call = r.tool_calls[0]
        self.assertEqual(call["function"]["name"], "get_weather")
        self.assertIn(json.loads(call["function"]["arguments"])["city"], ["Paris", "Rome"])
        # The call replayed with the tool's answer.
        history = [{"role": "user", "content": "What is the weather in Paris?"},
                   {"role": "assistant", "content": None, "tool_calls": r.tool_calls},
                   {"role": "tool", "tool_call_id": call["id"], "content": '{"sky": "clear"}'}]
        r2 = self.model.chat(history, max_tokens=4, temperature=0, tools=[WEATHER_TOOL], tool_choice="none")
        self.assertEqual(r2.tool_calls, [])

    def test_images_as_bytes_and_rgb(self):
        class FakePil:  # what the package asks of a PIL image
            size = (16, 12)

            def convert(self, mode):
                assert mode == "RGB"
                return self

            def tobytes(self):
                return bytes(range(256)) * 2 + bytes(16 * 12 * 3 - 512)

        r = self.model.chat("What is this?", images=[FakePil()], max_tokens=2, temperature=0)
        self.assertGreater(r.usage["prompt_tokens"], 10)
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            self.model.chat([{"role": "user", "content": [{"type": "image", "image": b"not an image"},
                                                          {"type": "text", "text": "?"}]}])
        self.assertIn("image", str(cm.exception))
        with self.assertRaises(qvl.IoError) as cm:
            self.model.chat("?", images=["/nonexistent/cat.jpg"])
        self.assertIn("/nonexistent/cat.jpg", str(cm.exception))


class ErrorTest(unittest.TestCase):
    def test_bad_path_names_it(self):
        with self.assertRaises(qvl.IoError) as cm:
            qvl.Model("/nonexistent/qvl-model-dir", offline=True)
        self.assertIn("/nonexistent/qvl-model-dir", str(cm.exception))
        self.assertIsInstance(cm.exception, qvl.Error)
        self.assertEqual(cm.exception.status, 2)

    def test_bad_weights(self):
        with self.assertRaises(qvl.InvalidArgumentError):
            qvl.Model(TINY, weights="q3")

    def test_context_manager_closes(self):
        with qvl.Model(TINY, weights="bf16", threads=1, ctx_size=512) as m:
            r = m.chat("Hi", max_tokens=2, temperature=0, ignore_eos=True)
            self.assertEqual(len(r.token_ids), 2)
        with self.assertRaises(qvl.Error):
            m.chat("Hi")


if __name__ == "__main__":
    unittest.main()
