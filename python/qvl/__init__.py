"""qvl from Python: Qwen3-VL on the CPU, over libqvl.so (include/qvl.h) with ctypes.

    import qvl
    with qvl.Model("Qwen/Qwen3-VL-2B-Instruct") as model:
        r = model.chat([{"role": "user", "content": "What is in the picture?"}], images=["cat.jpg"])
        print(r.text)
        r = model.chat("What happens?", videos=["clip.mp4"])  # a file, its bytes, or (frames, fps)
        for piece in model.chat("Tell me a story.", stream=True):
            print(piece, end="", flush=True)
        r = model.chat("Name a color.", n=3, seed=1, logprobs=True, top_logprobs=2)
        print([c.text for c in r.choices], r.logprobs[0]["top_logprobs"])

libqvl.so is found through $QVL_LIBRARY, next to this package, in the
repository's build/ folder, or on the linker's path. No compiler is needed.
"""

import ctypes
import json
import math
import os
import queue
import threading

from . import _capi

__all__ = [
    "Model", "Result", "Choice", "Stream", "Delta", "Error",
    "InvalidArgumentError", "IoError", "ModelError", "UnsupportedError",
    "CancelledError", "OutOfMemoryError", "version",
]

_lib = None
_lib_lock = threading.Lock()


def _library():
    global _lib
    with _lib_lock:
        if _lib is None:
            _lib = _capi.load_library()
        return _lib


class Error(Exception):
    """A failed qvl call; `status` is the C API's qvl_status, str(e) the engine's message."""

    def __init__(self, message, status=_capi.QVL_ERR_INTERNAL):
        super().__init__(message)
        self.message = message
        self.status = status


class InvalidArgumentError(Error, ValueError):
    """A bad parameter or request field (the message names it)."""


class IoError(Error, OSError):
    """A model folder or media file (image, video, PDF) that cannot be found or read, or a failed download."""


class ModelError(Error):
    """The model cannot be loaded, or cannot answer the request."""


class UnsupportedError(Error):
    """Something qvl does not do."""


class CancelledError(Error):
    """The request was cancelled."""


class OutOfMemoryError(Error, MemoryError):
    """The model's memory budget cannot hold what was asked (its KV caches at load; a request's media)."""


_ERRORS = {
    _capi.QVL_ERR_INVALID_ARGUMENT: InvalidArgumentError,
    _capi.QVL_ERR_IO: IoError,
    _capi.QVL_ERR_MODEL: ModelError,
    _capi.QVL_ERR_UNSUPPORTED: UnsupportedError,
    _capi.QVL_ERR_CANCELLED: CancelledError,
    _capi.QVL_ERR_OUT_OF_MEMORY: OutOfMemoryError,
}


def _check(status):
    # qvl_last_error is thread-local: read on the thread of the failed call.
    if status != _capi.QVL_OK:
        message = (_library().qvl_last_error() or b"").decode("utf-8", "replace")
        raise _ERRORS.get(status, Error)(message, status)


def version():
    """The library's version ("0.6.0")."""
    return _library().qvl_version().decode()


def _b(s):
    return None if s is None else str(s).encode("utf-8")


def _token_logprob(t):
    """A qvl_token_logprob as OpenAI's logprobs.content entry (with the token id besides)."""

    def entry(e):
        raw = ctypes.string_at(e.bytes, e.n_bytes) if e.bytes else b""
        return {"token": raw.decode("utf-8", "replace"), "token_id": e.token_id, "logprob": e.logprob,
                "bytes": list(raw)}

    out = entry(t.token)
    out["top_logprobs"] = [entry(t.top[k]) for k in range(t.n_top)]
    return out


class Choice:
    """One answer to the prompt: index, text, finish_reason ("stop", "length", "tool_calls", "cancelled",
    "repetition"), token_ids, tool_calls (OpenAI-style dicts), logprobs (with logprobs=True: one dict per
    token, {"token", "token_id", "logprob", "bytes", "top_logprobs": [...]}, else None),
    repetition_period (the loop's period in tokens when finish_reason is "repetition") and, of a Thinking
    model, reasoning (the text before "</think>"; `text` is the reply after it) and reasoning_tokens
    (None and 0 for other models)."""

    def __init__(self, index, c):
        self.index = index
        self.text = ctypes.string_at(c.text, c.text_len).decode("utf-8", "replace") if c.text else ""
        self.finish_reason = (c.finish_reason or b"").decode()
        self.token_ids = [c.token_ids[i] for i in range(c.n_token_ids)]
        self.tool_calls = json.loads(c.tool_calls_json.decode()) if c.tool_calls_json else []
        self.logprobs = [_token_logprob(c.logprobs[i]) for i in range(c.n_logprobs)] if c.logprobs else None
        self.repetition_period = c.repetition_period
        self.reasoning = ctypes.string_at(c.reasoning, c.reasoning_len).decode("utf-8", "replace") if c.reasoning else None
        self.reasoning_tokens = c.reasoning_tokens

    def __repr__(self):
        return (f"Choice(index={self.index}, text={self.text!r}, finish_reason={self.finish_reason!r}, "
                f"tool_calls={self.tool_calls!r})")


class Result(Choice):
    """The answer: choice 0's fields (a Choice's), every choice in `choices` (n of them; choices[0] is
    this one), and usage (completion_tokens over every choice) and timings."""

    def __init__(self, c, lib):
        def choice(i):
            return lib.qvl_result_choice(ctypes.byref(c), i).contents

        super().__init__(0, choice(0))
        self.choices = [self] + [Choice(i, choice(i)) for i in range(1, c.n_choices)]
        self.usage = {
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "total_tokens": c.prompt_tokens + c.completion_tokens,
            "cached_tokens": c.cached_tokens,
        }
        self.timings = {"prefill_ms": c.prefill_ms, "decode_ms": c.decode_ms}

    def __repr__(self):
        more = f", choices={len(self.choices)}" if len(self.choices) > 1 else ""
        return (f"Result(text={self.text!r}, finish_reason={self.finish_reason!r}, "
                f"tool_calls={self.tool_calls!r}{more})")


class Delta:
    """What one decided token adds to choice `choice`: `text` (may be empty; with tools, the raw text,
    <tool_call> blocks included), of a Thinking model's answer `reasoning` (the reasoning's piece; `text`
    is then the reply's, each "" where the token adds none) and, with logprobs=True, the token's
    `logprob` dict (else None)."""

    __slots__ = ("choice", "text", "logprob", "reasoning")

    def __init__(self, choice, text, logprob, reasoning=""):
        self.choice, self.text, self.logprob, self.reasoning = choice, text, logprob, reasoning

    def __repr__(self):
        more = f", reasoning={self.reasoning!r}" if self.reasoning else ""
        return f"Delta(choice={self.choice}, text={self.text!r}{more}, logprob={self.logprob!r})"


# The sampling keys of a video part (qvl serve's and qwen-vl-utils'), as qvl_video_params.
_VIDEO_KEYS = ("fps", "min_frames", "max_frames", "min_pixels", "max_pixels", "total_pixels")


def _is_pil(x):
    return hasattr(x, "convert") and hasattr(x, "tobytes") and hasattr(x, "size")


def _encoded(x, where):
    """An encoded image or clip given as bytes or a path, as bytes."""
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    path = os.fspath(x)
    if path.startswith("file://"):
        path = path[len("file://"):]
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise IoError(f"{where} {path}: {e.strerror or e}", _capi.QVL_ERR_IO) from None


class _Request:
    """A qvl_request built from OpenAI-style messages; freed by close()."""

    def __init__(self, lib, params, messages, images, videos, stop, logit_bias):
        self._lib = lib
        self.handle = ctypes.c_void_p()
        _check(lib.qvl_request_init(ctypes.byref(params), ctypes.byref(self.handle)))
        try:
            if messages is not None:  # None: the caller adds the messages (retrieval inputs)
                self._add_messages(messages, list(images or []), list(videos or []))
            for s in stop or []:
                _check(lib.qvl_request_add_stop(self.handle, _b(s)))
            for token_id, bias in logit_bias:
                _check(lib.qvl_request_add_logit_bias(self.handle, token_id, bias))
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.handle:
            self._lib.qvl_request_free(self.handle)
            self.handle = ctypes.c_void_p()

    def cancel(self):
        if self.handle:
            self._lib.qvl_request_cancel(self.handle)

    def _add_messages(self, messages, images, videos):
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        messages = list(messages)
        if not messages:
            raise InvalidArgumentError("messages: at least one message is needed", _capi.QVL_ERR_INVALID_ARGUMENT)
        # images= then videos=: placed before the text of the last user message (as `qvl run --image` does).
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
        if (images or videos) and last_user is None:
            raise InvalidArgumentError(f"{'images' if images else 'videos'}: there is no user message to attach "
                                       "them to", _capi.QVL_ERR_INVALID_ARGUMENT)
        lib, h = self._lib, self.handle
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or "role" not in m:
                raise InvalidArgumentError(f"messages[{i}]: must be a dict with a 'role'", _capi.QVL_ERR_INVALID_ARGUMENT)
            _check(lib.qvl_request_add_message(h, _b(m["role"]), None))
            if i == last_user:
                for image in images:
                    self._add_image(image, "images")
                for k, video in enumerate(videos):
                    part = video if isinstance(video, dict) else {"video": video}
                    self._add_video(part, f"videos[{k}]")
            content = m.get("content")
            if content is None:
                pass
            elif isinstance(content, str):
                _check(lib.qvl_request_add_text(h, _b(content)))
            else:
                for k, part in enumerate(content):
                    self._add_part(part, f"messages[{i}].content[{k}]")
            for call in m.get("tool_calls") or []:
                fn = call.get("function", call)
                args = fn.get("arguments", "{}")
                if not isinstance(args, str):
                    args = json.dumps(args)
                _check(lib.qvl_request_add_tool_call(h, _b(call.get("id", "")), _b(fn.get("name")), _b(args)))

    def _add_part(self, part, where):
        if isinstance(part, str):
            _check(self._lib.qvl_request_add_text(self.handle, _b(part)))
            return
        kind = part.get("type")
        if kind == "text":
            _check(self._lib.qvl_request_add_text(self.handle, _b(part.get("text", ""))))
        elif kind in ("image", "input_image", "image_url"):
            image = part.get("image", part.get("image_url"))
            if isinstance(image, dict):
                image = image.get("url")
            if image is None:
                raise InvalidArgumentError(f"{where}: an image part needs 'image' (a path, bytes or a PIL image)",
                                           _capi.QVL_ERR_INVALID_ARGUMENT)
            self._add_image(image, where)
        elif kind == "video":
            self._add_video({k: v for k, v in part.items() if k != "type"}, where)
        elif kind == "pdf":
            self._add_pdf(part, where)
        else:
            raise InvalidArgumentError(f"{where}.type: unsupported part type {kind!r} (text, image, video and pdf are)",
                                       _capi.QVL_ERR_INVALID_ARGUMENT)

    def _add_video(self, part, where):
        """A video part's fields: "video" (a path, encoded bytes, a list of frames, or (frames, fps)),
        "sample_fps" (a list's rate, default 2) and the sampling keys."""
        lib, h = self._lib, self.handle
        video = part.get("video")
        if video is None:
            raise InvalidArgumentError(f"{where}: a video part needs 'video' (a path, bytes, or frames with their "
                                       "fps)", _capi.QVL_ERR_INVALID_ARGUMENT)
        p = lib.qvl_video_default_params()
        for key, value in part.items():
            if key in ("video", "sample_fps") or value is None:
                continue
            if key not in _VIDEO_KEYS:
                raise InvalidArgumentError(f"{where}.{key}: unknown video option ({', '.join(_VIDEO_KEYS)} and "
                                           "sample_fps are)", _capi.QVL_ERR_INVALID_ARGUMENT)
            setattr(p, key, float(value) if key == "fps" else int(value))
        fps = part.get("sample_fps")
        if isinstance(video, tuple):
            if len(video) != 2:
                raise InvalidArgumentError(f"{where}: a video as a tuple is (frames, fps)", _capi.QVL_ERR_INVALID_ARGUMENT)
            video, fps = video
        if isinstance(video, (bytes, bytearray, memoryview)):
            data = bytes(video)
            _check(lib.qvl_request_add_video(h, data, len(data), ctypes.byref(p)))
        elif isinstance(video, (str, os.PathLike)):
            path = os.fspath(video)
            if path.startswith("file://"):
                path = path[len("file://"):]
            _check(lib.qvl_request_add_video_file(h, _b(path), ctypes.byref(p)))
        elif isinstance(video, (list, tuple)):
            self._add_frames(list(video), 2.0 if fps is None else float(fps), p, where)
        else:
            raise InvalidArgumentError(f"{where}: a video must be a path, bytes, or a list of frames with their fps, "
                                       f"not {type(video).__name__}", _capi.QVL_ERR_INVALID_ARGUMENT)

    def _add_frames(self, frames, fps, p, where):
        """Frames as PIL images (RGB), or as encoded images (bytes or paths); one kind per video."""
        lib, h, n = self._lib, self.handle, len(frames)
        if n and all(_is_pil(f) for f in frames):
            rgb = [f.convert("RGB") for f in frames]
            w, h_px = rgb[0].size
            for k, f in enumerate(rgb):
                if tuple(f.size) != (w, h_px):
                    raise InvalidArgumentError(f"{where}: frame {k} is {f.size[0]}x{f.size[1]}, frame 0 {w}x{h_px}; "
                                               "a video's frames are all one size", _capi.QVL_ERR_INVALID_ARGUMENT)
            data = [f.tobytes() for f in rgb]
            _check(lib.qvl_request_add_video_rgb(h, (_capi.c_char_p * n)(*data), n, w, h_px, 3 * w, fps,
                                                 ctypes.byref(p)))
        elif all(isinstance(f, (bytes, bytearray, memoryview, str, os.PathLike)) for f in frames):
            data = [_encoded(f, f"{where} frame") for f in frames]
            _check(lib.qvl_request_add_video_frames(h, (_capi.c_char_p * n)(*data),
                                                    (_capi.c_size_t * n)(*[len(d) for d in data]), n, fps,
                                                    ctypes.byref(p)))
        else:
            raise InvalidArgumentError(f"{where}: a video's frames must all be PIL images, or all encoded images "
                                       "(bytes or paths)", _capi.QVL_ERR_INVALID_ARGUMENT)

    def _add_pdf(self, part, where):
        """{"type": "pdf", "pdf": path | bytes, "pages": "1-3,7" (default every page), "dpi": 144}."""
        lib, h = self._lib, self.handle
        pdf, pages, dpi = part.get("pdf"), _b(part.get("pages")), float(part.get("dpi") or 0)
        for key in part:
            if key not in ("type", "pdf", "pages", "dpi"):
                raise InvalidArgumentError(f"{where}.{key}: unknown pdf field (pdf, pages and dpi are)",
                                           _capi.QVL_ERR_INVALID_ARGUMENT)
        if isinstance(pdf, (bytes, bytearray, memoryview)):
            data = bytes(pdf)
            _check(lib.qvl_request_add_pdf(h, data, len(data), pages, dpi))
        elif isinstance(pdf, (str, os.PathLike)):
            _check(lib.qvl_request_add_pdf_file(h, _b(os.fspath(pdf)), pages, dpi))
        else:
            raise InvalidArgumentError(f"{where}: a pdf part needs 'pdf' (a path or bytes)",
                                       _capi.QVL_ERR_INVALID_ARGUMENT)

    def _add_image(self, image, where):
        lib, h = self._lib, self.handle
        if isinstance(image, (bytes, bytearray, memoryview)):
            data = bytes(image)
            _check(lib.qvl_request_add_image(h, data, len(data)))
        elif isinstance(image, (str, os.PathLike)):
            path = os.fspath(image)
            if path.startswith("file://"):
                path = path[len("file://"):]
            _check(lib.qvl_request_add_image_file(h, _b(path)))
        elif hasattr(image, "convert") and hasattr(image, "tobytes") and hasattr(image, "size"):  # PIL, duck-typed
            rgb = image.convert("RGB")
            w, h_px = rgb.size
            _check(lib.qvl_request_add_image_rgb(h, rgb.tobytes(), w, h_px, 3 * w))
        else:
            raise InvalidArgumentError(f"{where}: an image must be a path, bytes or a PIL image, not "
                                       f"{type(image).__name__}", _capi.QVL_ERR_INVALID_ARGUMENT)


class Stream:
    """The answer's text pieces as they are decided, from a generation running on its own
    thread. Iterate it for choice 0's text (a Thinking model's reply only), or iterate deltas()
    for every choice's Delta (a Thinking model's reasoning too)
    (one per token, with its logprob when asked for); one or the other. close() (or leaving
    a `with` block) before the end cancels the generation and waits for it. After the last
    piece, `result` holds the Result."""

    _DONE = object()

    def __init__(self, model, request):
        self._request = request
        self._queue = queue.Queue()
        self._error = None
        self.result = None
        self._callback = _capi.DELTA_CALLBACK(self._on_delta)  # kept alive for the C side
        self._thread = threading.Thread(target=self._run, args=(model,), daemon=True)
        self._thread.start()

    def _on_delta(self, delta, _user_data):
        d = delta.contents
        text = ctypes.string_at(d.text, d.text_len).decode("utf-8", "replace") if d.text_len else ""
        reasoning = ctypes.string_at(d.reasoning, d.reasoning_len).decode("utf-8", "replace") if d.reasoning_len else ""
        self._queue.put(Delta(d.choice, text, _token_logprob(d.logprob.contents) if d.logprob else None, reasoning))
        return 0

    def _run(self, model):
        try:
            self.result = model._generate(self._request, self._callback)
        except BaseException as e:  # re-raised on the consumer's thread
            self._error = e
        finally:
            self._queue.put(self._DONE)

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            d = self._next_delta()
            if d.choice == 0 and d.text:
                return d.text

    def deltas(self):
        """Every choice's Delta as it is decided, in the order the tokens were."""
        while True:
            try:
                yield self._next_delta()
            except StopIteration:
                return

    def _next_delta(self):
        if self._thread is None:
            raise StopIteration
        item = self._queue.get()
        if item is self._DONE:
            self._finish()
            if self._error is not None:
                raise self._error
            raise StopIteration
        return item

    def _finish(self):
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            self._request.close()

    def close(self):
        """Stops the generation (if still running) and waits for it to end."""
        if self._thread is not None:
            self._request.cancel()
            self._finish()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _nan(x):
    return math.nan if x is None else float(x)


class Model:
    """A loaded model: a local folder or a Hugging Face repo id (downloaded into the HF cache).

    weights: "auto" (default: bf16 if the checkpoint takes at most half the machine's memory, else q8 if
    that does, else q4, the rule of qvl run and qvl serve too; the weights property tells which), "bf16",
    "f32", "q8" or "q4"; threads: 0 for the physical cores; memory_budget: bytes for decoded media and the KV
    caches together (0: the KV caches plus 1 GiB), beyond which loading or a request raises OutOfMemoryError."""

    def __init__(self, path_or_repo, weights="auto", threads=0, ctx_size=8192, min_pixels=0, max_pixels=0,
                 image_cache_mb=256, revision=None, offline=False, progress=True, memory_budget=0):
        lib = _library()
        self._lib = lib
        self._handle = ctypes.c_void_p()
        if weights not in _capi.WEIGHTS:
            raise InvalidArgumentError(f"weights: {weights!r} is not one of {', '.join(_capi.WEIGHTS)}",
                                       _capi.QVL_ERR_INVALID_ARGUMENT)
        p = lib.qvl_model_default_params()
        p.weights = _capi.WEIGHTS[weights]
        p.threads = int(threads)
        p.ctx_size = int(ctx_size)
        p.min_pixels = int(min_pixels)
        p.max_pixels = int(max_pixels)
        p.image_cache_bytes = int(image_cache_mb) << 20
        revision_b = _b(revision)
        p.revision = revision_b
        p.offline = 1 if offline else 0
        p.progress = 1 if progress else 0
        p.memory_budget = int(memory_budget)
        _check(lib.qvl_model_load(_b(os.fspath(path_or_repo)), ctypes.byref(p), ctypes.byref(self._handle)))

    @property
    def weights(self):
        """The weight format the model was loaded in ("bf16", "f32", "q8" or "q4")."""
        code = self._lib.qvl_model_weights(self._handle)
        return next(name for name, c in _capi.WEIGHTS.items() if c == code)

    @property
    def thinking(self):
        """Whether the model's chat template is a Thinking one: every answer starts with reasoning
        (Result.reasoning), which "</think>" ends."""
        return bool(self._lib.qvl_model_thinking(self._handle))

    def close(self):
        """Frees the model (its weights and caches). Idempotent."""
        if getattr(self, "_handle", None):
            self._lib.qvl_model_free(self._handle)
            self._handle = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def chat(self, messages, images=None, videos=None, stream=False, max_tokens=0, temperature=None, top_p=None, top_k=None,
             min_p=None, seed=None, repetition_penalty=None, presence_penalty=None, frequency_penalty=None,
             stop=None, ignore_eos=False, response_format=None, tools=None, tool_choice=None,
             parallel_tool_calls=True, n=1, logit_bias=None, logprobs=False, top_logprobs=None,
             repetition_guard=None, repetition_guard_repeats=None, min_pixels=None, max_pixels=None,
             reasoning_budget=None):
        """Answers OpenAI-style messages ({"role": ..., "content": str or [{"type": "text", "text": ...},
        {"type": "image", "image": path | bytes | PIL image}, {"type": "video", "video": ...},
        {"type": "pdf", "pdf": path | bytes, "pages": "1-3", "dpi": 144}]}); `messages` may also be one
        user string. `images`, then `videos`, are placed before the text of the last user message. Unset
        sampling options take the model's generation_config; temperature 0 is greedy.

        A video (qwen-vl-utils' part): "video" is a file path, an encoded clip's bytes (MP4/MOV, WebM/MKV,
        AVI, GIF), a list of frames (PIL images, or encoded images as bytes or paths) taken at
        "sample_fps" (default 2), or a (frames, fps) tuple; "fps", "min_frames", "max_frames" sample a
        clip, "min_pixels", "max_pixels" (per frame) and "total_pixels" size it. `videos` takes the same
        values as "video", or such part dicts.

        response_format: None, "json_object", {"type": "json_object"}, {"type": "json_schema",
        "json_schema": {"schema": {...}}} or a JSON Schema dict. tools: OpenAI-style tool dicts;
        tool_choice: "auto", "none", "required", a function name or {"type": "function", "function":
        {"name": ...}}.

        n: answers to the prompt (1..16), decoded together; with a seed, choice i samples with seed + i,
        so choice 0 is the n=1 answer. logit_bias: {token_id: bias in [-100, 100]} added to the logits.
        logprobs=True: each token's logprob in Result.logprobs (and each Choice's); top_logprobs=k (0..20,
        implies logprobs) adds the k likeliest tokens of each step. repetition_guard: the shortest looping
        tail (tokens) that stops an answer with finish_reason "repetition" (default 400, 0 off);
        repetition_guard_repeats: how many periods it must hold (default 3). min_pixels/max_pixels: this
        request's image area after resizing (default: the model's range, into which they are clamped).
        reasoning_budget: a Thinking model's reasoning is cut after this many tokens ("</think>" forced,
        so the reply starts); None: no limit. A model without a Thinking template refuses it.

        Returns a Result; with stream=True, a Stream of text pieces (its `result` is set at the end)."""
        if not self._handle:
            raise Error("the model is closed", _capi.QVL_ERR_INVALID_ARGUMENT)
        lib = self._lib
        p = lib.qvl_request_default_params()
        p.temperature = _nan(temperature)
        p.top_p = _nan(top_p)
        p.min_p = _nan(min_p)
        p.top_k = -1 if top_k is None else int(top_k)
        p.repetition_penalty = _nan(repetition_penalty)
        p.presence_penalty = _nan(presence_penalty)
        p.frequency_penalty = _nan(frequency_penalty)
        p.seed = -1 if seed is None else int(seed)
        p.max_tokens = int(max_tokens or 0)
        p.ignore_eos = 1 if ignore_eos else 0
        keep = []  # the encoded strings, alive until qvl_request_init has copied them
        fmt, schema = _response_format(response_format)
        p.response_format = fmt
        if schema is not None:
            keep.append(_b(schema))
            p.json_schema = keep[-1]
        if tools:
            keep.append(_b(tools if isinstance(tools, str) else json.dumps(list(tools))))
            p.tools_json = keep[-1]
        choice, name = _tool_choice(tool_choice)
        p.tool_choice = choice
        if name is not None:
            keep.append(_b(name))
            p.tool_choice_name = keep[-1]
        p.parallel_tool_calls = 1 if parallel_tool_calls else 0
        p.n = int(n)
        p.top_logprobs = int(top_logprobs) if top_logprobs is not None else 0 if logprobs else -1
        p.repetition_guard = -1 if repetition_guard is None else int(repetition_guard)
        p.repetition_guard_repeats = -1 if repetition_guard_repeats is None else int(repetition_guard_repeats)
        p.min_pixels = int(min_pixels or 0)
        p.max_pixels = int(max_pixels or 0)
        p.reasoning_budget = -1 if reasoning_budget is None else int(reasoning_budget)
        if isinstance(stop, str):
            stop = [stop]
        request = _Request(lib, p, messages, images, videos, stop, _logit_bias(logit_bias))
        if stream:
            return Stream(self, request)
        try:
            return self._generate(request, _capi.DELTA_CALLBACK())
        finally:
            request.close()

    @property
    def hidden_size(self):
        """The text decoder's width: the length of a full embedding."""
        return int(self._lib.qvl_model_hidden_size(self._handle))

    def _retrieval_request(self, item, where):
        """One input of the official scripts' shape as a qvl_request: a string (a text) or a dict
        {"text", "image", "video", "pdf", "instruction"}, each of text/image/video/pdf a value or a list
        (images as paths, bytes or PIL images; videos as for chat; a pdf as a path or bytes, every page)."""
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict):
            raise InvalidArgumentError(f"{where}: an input is a string or a dict with text, image, video, pdf and "
                                       "instruction", _capi.QVL_ERR_INVALID_ARGUMENT)
        unknown = set(item) - {"text", "image", "video", "pdf", "instruction"}
        if unknown:
            raise InvalidArgumentError(f"{where}.{sorted(unknown)[0]}: unknown key (text, image, video, pdf and "
                                       "instruction are)", _capi.QVL_ERR_INVALID_ARGUMENT)

        def values(key):
            v = item.get(key)
            return [] if v is None else list(v) if isinstance(v, (list, tuple)) else [v]

        lib = self._lib
        r = _Request(lib, lib.qvl_request_default_params(), None, None, None, None, [])
        try:
            if item.get("instruction") is not None:
                _check(lib.qvl_request_add_message(r.handle, b"system", _b(item["instruction"])))
            _check(lib.qvl_request_add_message(r.handle, b"user", None))
            for k, image in enumerate(values("image")):
                r._add_image(image, f"{where}.image[{k}]")
            for k, pdf in enumerate(values("pdf")):
                r._add_pdf({"type": "pdf", "pdf": pdf}, f"{where}.pdf[{k}]")
            for k, video in enumerate(values("video")):
                r._add_video(video if isinstance(video, dict) else {"video": video}, f"{where}.video[{k}]")
            for text in values("text"):
                _check(lib.qvl_request_add_text(r.handle, _b(text)))
        except BaseException:
            r.close()
            raise
        return r

    def _retrieval_requests(self, items, where):
        if isinstance(items, (str, dict)):
            items = [items]
        requests = []
        try:
            for i, item in enumerate(items):
                requests.append(self._retrieval_request(item, f"{where}[{i}]"))
        except BaseException:
            for r in requests:
                r.close()
            raise
        return requests

    def embed(self, inputs, instruction=None, dimensions=None):
        """Unit-length embeddings (Qwen3-VL-Embedding), one list of floats per input, computed in one
        batched call. `inputs`: one input or a list of them, each a string or a dict {"text", "image",
        "video", "pdf", "instruction"} as the official scripts take (an input with several parts is one
        vector; a pdf's pages are images of that input). `instruction`: for inputs without their own
        (default "Represent the user's input."). `dimensions`: keep the first N components, normalised
        again (MRL)."""
        if not self._handle:
            raise Error("the model is closed", _capi.QVL_ERR_INVALID_ARGUMENT)
        lib = self._lib
        requests = self._retrieval_requests(inputs, "inputs")
        try:
            n = len(requests)
            p = lib.qvl_embed_default_params()
            keep = _b(instruction)
            p.instruction = keep
            p.dimensions = int(dimensions or 0)
            dims = p.dimensions if p.dimensions > 0 else self.hidden_size
            out = (_capi.c_float * max(1, n * dims))()
            handles = (_capi.c_void_p * max(1, n))(*[r.handle for r in requests])
            _check(lib.qvl_embed(self._handle, handles, n, ctypes.byref(p), out, n * dims, None))
            return [list(out[i * dims:(i + 1) * dims]) for i in range(n)]
        finally:
            for r in requests:
                r.close()

    def rerank(self, query, documents, instruction=None, top_n=None, return_documents=False):
        """Scores documents against a query (Qwen3-VL-Reranker), in one batched call. `query` and each
        document: a string or a dict {"text", "image", "video", "pdf"}. Returns a list of dicts {"index",
        "relevance_score", "logit"} (and "document" with return_documents) sorted by relevance_score, the
        best `top_n` when given. relevance_score = sigmoid(logit), logit = logit(yes) - logit(no)."""
        if not self._handle:
            raise Error("the model is closed", _capi.QVL_ERR_INVALID_ARGUMENT)
        lib = self._lib
        if isinstance(documents, (str, dict)):
            documents = [documents]
        documents = list(documents)
        q = self._retrieval_request(query, "query")
        try:
            docs = self._retrieval_requests(documents, "documents")
            try:
                n = len(docs)
                scores = (_capi.c_double * max(1, n))()
                logits = (_capi.c_double * max(1, n))()
                handles = (_capi.c_void_p * max(1, n))(*[r.handle for r in docs])
                _check(lib.qvl_rerank(self._handle, q.handle, handles, n, _b(instruction), scores, logits))
            finally:
                for r in docs:
                    r.close()
        finally:
            q.close()
        results = [{"index": i, "relevance_score": scores[i], "logit": logits[i]} for i in range(n)]
        if return_documents:
            for r in results:
                r["document"] = documents[r["index"]]
        results.sort(key=lambda r: -r["relevance_score"])
        return results[:top_n] if top_n else results

    def _generate(self, request, callback):
        c = _capi.Result()
        status = self._lib.qvl_generate_deltas(self._handle, request.handle, callback, None, ctypes.byref(c))
        try:
            if status == _capi.QVL_ERR_CANCELLED:  # a closed Stream: the partial answer
                return Result(c, self._lib)
            _check(status)
            return Result(c, self._lib)
        finally:
            self._lib.qvl_result_free(ctypes.byref(c))


def _logit_bias(lb):
    """{token_id: bias} (ids may be strings of digits, as in OpenAI's JSON) as (int, float) pairs."""
    if not lb:
        return []
    if not isinstance(lb, dict):
        raise InvalidArgumentError("logit_bias: must be a dict of token ids to biases", _capi.QVL_ERR_INVALID_ARGUMENT)
    out = []
    for key, bias in lb.items():
        try:
            token_id = int(key)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"logit_bias: key {key!r} is not a token id",
                                       _capi.QVL_ERR_INVALID_ARGUMENT) from None
        if not -2**31 <= token_id < 2**31:
            raise InvalidArgumentError(f"logit_bias: token id {token_id} is out of range",
                                       _capi.QVL_ERR_INVALID_ARGUMENT)
        if isinstance(bias, bool) or not isinstance(bias, (int, float)):
            raise InvalidArgumentError(f"logit_bias: the bias of token {token_id} must be a number, not "
                                       f"{type(bias).__name__}", _capi.QVL_ERR_INVALID_ARGUMENT)
        out.append((token_id, float(bias)))
    return out


def _response_format(rf):
    if rf is None or rf == "text":
        return _capi.FORMAT_TEXT, None
    if rf in ("json_object", "json"):
        return _capi.FORMAT_JSON_OBJECT, None
    if isinstance(rf, str):
        return _capi.FORMAT_JSON_SCHEMA, rf  # JSON Schema text
    if not isinstance(rf, dict):
        raise InvalidArgumentError("response_format: must be None, 'json_object' or a dict",
                                   _capi.QVL_ERR_INVALID_ARGUMENT)
    kind = rf.get("type")
    if kind == "text":
        return _capi.FORMAT_TEXT, None
    if kind == "json_object":
        return _capi.FORMAT_JSON_OBJECT, None
    if kind == "json_schema":
        js = rf.get("json_schema", {})
        schema = js.get("schema", js) if isinstance(js, dict) else js
        return _capi.FORMAT_JSON_SCHEMA, schema if isinstance(schema, str) else json.dumps(schema)
    return _capi.FORMAT_JSON_SCHEMA, json.dumps(rf)  # the schema itself


def _tool_choice(tc):
    if tc is None:
        return _capi.TOOL_CHOICE["auto"], None
    if isinstance(tc, str):
        if tc in ("auto", "none", "required"):
            return _capi.TOOL_CHOICE[tc], None
        return _capi.TOOL_CHOICE["function"], tc
    if isinstance(tc, dict):
        fn = tc.get("function", tc)
        return _capi.TOOL_CHOICE["function"], fn.get("name")
    raise InvalidArgumentError("tool_choice: must be 'auto', 'none', 'required', a name or a dict",
                               _capi.QVL_ERR_INVALID_ARGUMENT)
