"""The Python package (python/qvl) against the tiny random-weight model, with
Debian's python3 and unittest: the answers, streams, constrained answers and
tool calls, n, logit_bias, logprobs and the repetition guard. CTest sets PYTHONPATH, QVL_LIBRARY, QVL_BINARY
and QVL_FIXTURES_DIR (tests/python/CMakeLists.txt)."""

import json
import os
import shutil
import subprocess
import tempfile
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

    def test_per_request_pixel_range(self):
        class Gray:  # a 1024x768 image: 768 tokens at the model's range (65536 to 16777216 pixels)
            size = (1024, 768)

            def convert(self, mode):
                return self

            def tobytes(self):
                return bytes([128]) * (1024 * 768 * 3)

        def prompt(**kw):
            return self.model.chat("?", images=[Gray()], max_tokens=1, temperature=0, **kw).usage["prompt_tokens"]

        full = prompt()
        self.assertEqual(prompt(max_pixels=512 * 384), full - 768 + 192)  # 16x12 tokens
        self.assertEqual(prompt(max_pixels=1 << 40), full)  # clamped to the model's ceiling
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            prompt(max_pixels=-5)
        self.assertIn("max_pixels", str(cm.exception))

    # n, logit_bias, logprobs, the repetition guard.

    def greedy(self, **kw):
        return self.model.chat("Name three colors.", max_tokens=4, temperature=0, ignore_eos=True, **kw)

    def sampled(self, **kw):
        # Random weights make the next token near certain at temperature 1: 5 spreads the draws.
        return self.model.chat("Tell me a story.", max_tokens=8, temperature=5, seed=42, ignore_eos=True, **kw)

    def test_logit_bias_forces_a_token(self):
        plain = self.greedy(top_logprobs=2)
        # The first step's runner-up: +100 outweighs its gap to the greedy token (random weights'
        # logits spread too far for +100 to force just any token).
        runner_up = plain.logprobs[0]["top_logprobs"][1]
        self.assertGreater(runner_up["logprob"], -50)
        self.assertEqual(self.greedy(logit_bias={runner_up["token_id"]: 100}).token_ids[0], runner_up["token_id"])
        self.assertEqual(self.greedy(logit_bias={str(runner_up["token_id"]): 100}).token_ids[0],
                         runner_up["token_id"])  # OpenAI's JSON keys
        self.assertNotEqual(self.greedy(logit_bias={plain.token_ids[0]: -100}).token_ids[0], plain.token_ids[0])
        self.assertEqual(self.greedy(logit_bias={}).token_ids, plain.token_ids)

    def test_logit_bias_errors_name_it(self):
        for bias in ({"x": 1}, {5: 101}, {5: "1"}, {-1: 1}, {10**7: 1}):
            with self.assertRaises(qvl.InvalidArgumentError, msg=repr(bias)) as cm:
                self.greedy(logit_bias=bias)
            self.assertIn("logit_bias", str(cm.exception))

    def test_n_choices_with_a_seed(self):
        one = self.sampled()
        three = self.sampled(n=3)
        self.assertEqual(len(one.choices), 1)
        self.assertIs(one.choices[0], one)
        self.assertEqual(len(three.choices), 3)
        self.assertEqual([c.index for c in three.choices], [0, 1, 2])
        self.assertEqual(three.token_ids, one.token_ids)  # choice 0 samples with the seed itself
        self.assertEqual(three.text, one.text)
        self.assertEqual(three.choices[0].token_ids, one.token_ids)
        for c in three.choices:
            self.assertEqual(len(c.token_ids), 8)
            self.assertEqual(c.finish_reason, "length")
            self.assertIsNone(c.logprobs)
        self.assertTrue(any(c.token_ids != one.token_ids for c in three.choices[1:]))
        self.assertEqual(three.usage["completion_tokens"], 24)
        self.assertEqual(three.usage["prompt_tokens"], one.usage["prompt_tokens"])

    def test_bad_n_names_it(self):
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            self.greedy(n=0)
        self.assertTrue(str(cm.exception).startswith("n:"), str(cm.exception))
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            self.greedy(n=17)
        self.assertIn("'n'", str(cm.exception))
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            self.greedy(top_logprobs=21)
        self.assertIn("top_logprobs", str(cm.exception))

    def check_logprobs(self, choice, top, greedy):
        self.assertEqual(len(choice.logprobs), len(choice.token_ids))
        for token_id, lp in zip(choice.token_ids, choice.logprobs):
            self.assertEqual(lp["token_id"], token_id)
            self.assertLessEqual(lp["logprob"], 0)
            self.assertEqual(bytes(lp["bytes"]).decode("utf-8", "replace"), lp["token"])
            alternatives = lp["top_logprobs"]
            self.assertEqual(len(alternatives), top)
            self.assertEqual([a["logprob"] for a in alternatives],
                             sorted((a["logprob"] for a in alternatives), reverse=True))
            for a in alternatives:
                self.assertLessEqual(a["logprob"], 0)
                if a["token_id"] == token_id:
                    self.assertEqual(a["logprob"], lp["logprob"])  # one distribution
            if greedy and alternatives:
                self.assertEqual(alternatives[0]["token_id"], token_id)

    def test_top_logprobs(self):
        r = self.greedy(top_logprobs=2)
        self.check_logprobs(r, 2, greedy=True)
        r = self.greedy(logprobs=True)
        self.check_logprobs(r, 0, greedy=True)
        self.assertIsNone(self.greedy().logprobs)
        r = self.sampled(n=2, top_logprobs=20)
        for c in r.choices:
            self.check_logprobs(c, 20, greedy=False)

    def test_repetition_guard(self):
        # A repetition penalty below 1 favours the tokens already seen: random weights loop at once.
        loop = dict(max_tokens=60, temperature=0, ignore_eos=True, repetition_penalty=0.01)
        r = self.model.chat("Name three colors.", repetition_guard=8, repetition_guard_repeats=2, **loop)
        self.assertEqual(r.finish_reason, "repetition")
        self.assertGreaterEqual(r.repetition_period, 1)
        self.assertLess(len(r.token_ids), 60)
        r = self.model.chat("Name three colors.", repetition_guard=0, **loop)
        self.assertEqual((r.finish_reason, len(r.token_ids)), ("length", 60))
        with self.assertRaises(qvl.InvalidArgumentError) as cm:
            self.model.chat("Hi", repetition_guard_repeats=1)
        self.assertIn("repetition_guard_repeats", str(cm.exception))

    def test_json_schema_for_every_choice(self):
        r = self.model.chat("Pick a color and a size.", max_tokens=200, temperature=1, seed=3, n=2,
                            response_format={"type": "json_schema", "json_schema": {"schema": COLOR_SCHEMA}})
        self.assertEqual(len(r.choices), 2)
        for c in r.choices:
            self.assertEqual(c.finish_reason, "stop")
            answer = json.loads(c.text)
            self.assertEqual(sorted(answer), ["color", "size"])
            self.assertIn(answer["color"], ["red", "green"])
            self.assertIn(answer["size"], [1, 2, 3])

    def test_stream_deltas_of_every_choice(self):
        kw = dict(max_tokens=8, temperature=5, seed=7, ignore_eos=True, n=2, logprobs=True)
        r = self.model.chat("Tell me a story.", **kw)
        stream = self.model.chat("Tell me a story.", stream=True, **kw)
        deltas = list(stream.deltas())
        self.assertEqual(len(deltas), 16)  # a delta per token: each carries its logprob
        for c in r.choices:
            mine = [d for d in deltas if d.choice == c.index]
            self.assertEqual("".join(d.text for d in mine), c.text)
            self.assertEqual([d.logprob["token_id"] for d in mine], c.token_ids)
            self.assertEqual(stream.result.choices[c.index].token_ids, c.token_ids)
        # Iterating the stream itself gives choice 0's text.
        pieces = list(self.model.chat("Tell me a story.", stream=True, **kw))
        self.assertEqual("".join(pieces), r.text)


def thinking_model(parent):
    """The tiny model as a Thinking folder (tests/engine/thinking_model.h): its files linked, the Thinking
    chat template in place of its own."""
    folder = os.path.join(parent, "tiny-qwen3vl-thinking")
    os.makedirs(folder)
    for name in os.listdir(TINY):
        if name != "chat_template.json":
            os.symlink(os.path.abspath(os.path.join(TINY, name)), os.path.join(folder, name))
    shutil.copy(os.path.join(FIXTURES, "templates", "qwen3vl_thinking_chat_template.json"),
                os.path.join(folder, "chat_template.json"))
    return folder


class ThinkingTest(unittest.TestCase):
    # "</think>" forced after 3 reasoning tokens: the reasoning comes back apart from the reply, in the
    # Result and the stream's deltas alike; iterating the stream gives the reply only.
    def test_reasoning_apart_from_the_reply(self):
        with tempfile.TemporaryDirectory() as tmp, qvl.Model(thinking_model(tmp), threads=2, ctx_size=1024) as m:
            self.assertTrue(m.thinking)
            kw = dict(max_tokens=12, temperature=0, ignore_eos=True, reasoning_budget=3)
            r = m.chat("What is two plus two?", **kw)
            self.assertEqual(r.reasoning_tokens, 3)
            self.assertIsInstance(r.reasoning, str)
            self.assertNotIn("</think>", r.reasoning + r.text)
            self.assertEqual(len(r.token_ids), 12)
            stream = m.chat("What is two plus two?", stream=True, **kw)
            deltas = list(stream.deltas())
            self.assertEqual("".join(d.reasoning for d in deltas), r.reasoning)
            self.assertEqual("".join(d.text for d in deltas), r.text)
            self.assertEqual("".join(m.chat("What is two plus two?", stream=True, **kw)), r.text)

    def test_an_instruct_model_has_none_and_refuses_a_budget(self):
        with qvl.Model(TINY, weights="q8", threads=2, ctx_size=256) as m:
            self.assertFalse(m.thinking)
            r = m.chat("Hi", max_tokens=2, temperature=0)
            self.assertIsNone(r.reasoning)
            self.assertEqual(r.reasoning_tokens, 0)
            with self.assertRaises(qvl.InvalidArgumentError) as cm:
                m.chat("Hi", max_tokens=2, reasoning_budget=3)
            self.assertIn("reasoning_budget", str(cm.exception))


class DefaultWeightsTest(unittest.TestCase):
    # No format asked for: the rule of qvl run and the C API (docs/weights.md); QVL_MEMORY_BYTES stands
    # in for a machine too small for the 22.5 MB fixture in bf16.
    def test_default_follows_the_one_rule(self):
        with qvl.Model(TINY, threads=2, ctx_size=256) as m:
            self.assertEqual(m.weights, "bf16")
        os.environ["QVL_MEMORY_BYTES"] = "30000000"
        try:
            with qvl.Model(TINY, threads=2, ctx_size=256) as m:
                self.assertEqual(m.weights, "q8")
            run = subprocess.run([QVL_BINARY, "run", "--model", TINY, "--threads", "2", "--prompt", "hi",
                                  "--max-tokens", "1", "--verbose"], check=True, capture_output=True, text=True)
            self.assertIn("(q8", run.stderr)
        finally:
            del os.environ["QVL_MEMORY_BYTES"]
        with qvl.Model(TINY, weights="q4", threads=2, ctx_size=256) as m:
            self.assertEqual(m.weights, "q4")


class MemoryBudgetTest(unittest.TestCase):
    # memory_budget holds the KV caches (ctx_size x 4 layers x K and V x 64 f32 values for the tiny model)
    # from the load on, and a request's decoded media beside them while it is answered.
    KV_1024 = 1024 * 4 * 2 * 64 * 4

    def test_kv_caches_over_the_budget_fail_the_load(self):
        with self.assertRaises(qvl.OutOfMemoryError) as cm:
            qvl.Model(TINY, weights="bf16", threads=1, ctx_size=8192, memory_budget=8 << 20)
        self.assertIsInstance(cm.exception, MemoryError)
        self.assertEqual(cm.exception.status, 6)
        self.assertEqual(str(cm.exception),
                         "the KV caches of --ctx-size 8192 (f32) need 16777216 bytes (16 MiB), over the memory budget "
                         "of 8388608 bytes (--memory-budget); lower --ctx-size, use --kv-type f16, or raise "
                         "--memory-budget (qvl_model_params.memory_budget)")
        with self.assertRaises(qvl.InvalidArgumentError):
            qvl.Model(TINY, memory_budget=1000)

    def test_a_request_over_the_budget_is_refused_and_the_model_answers_on(self):
        class Gray:  # 1024x768: 2359296 bytes of pixels
            size = (1024, 768)

            def convert(self, mode):
                return self

            def tobytes(self):
                return bytes([128]) * (1024 * 768 * 3)

        with qvl.Model(TINY, weights="bf16", threads=1, ctx_size=1024, memory_budget=self.KV_1024 + (1 << 20)) as m:
            with self.assertRaises(qvl.OutOfMemoryError) as cm:
                m.chat("?", images=[Gray()], max_tokens=1)
            self.assertEqual(str(cm.exception),
                             "the request's images and videos take 2359296 bytes decoded, over the 1048576 bytes "
                             "(1 MiB) the memory budget leaves beside the KV caches; send smaller or fewer, or raise "
                             "qvl_model_params.memory_budget")
            r = m.chat("Hi", max_tokens=2, temperature=0, ignore_eos=True)
            self.assertEqual(len(r.token_ids), 2)
        with qvl.Model(TINY, weights="bf16", threads=1, ctx_size=1024, memory_budget=self.KV_1024 + (4 << 20)) as m:
            self.assertEqual(len(m.chat("?", images=[Gray()], max_tokens=1, temperature=0).token_ids), 1)


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
