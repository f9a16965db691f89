"""ctypes declarations of include/qvl.h and where libqvl.so is found."""

import ctypes
import ctypes.util
import glob
import os

c_int32, c_int64, c_size_t = ctypes.c_int32, ctypes.c_int64, ctypes.c_size_t
c_float, c_double = ctypes.c_float, ctypes.c_double
c_char_p, c_void_p = ctypes.c_char_p, ctypes.c_void_p

QVL_OK = 0
QVL_ERR_INVALID_ARGUMENT = 1
QVL_ERR_IO = 2
QVL_ERR_MODEL = 3
QVL_ERR_UNSUPPORTED = 4
QVL_ERR_CANCELLED = 5
QVL_ERR_OUT_OF_MEMORY = 6
QVL_ERR_INTERNAL = 7

WEIGHTS = {"bf16": 0, "f32": 1, "q8": 2, "q4": 3, "auto": 4}
FORMAT_TEXT, FORMAT_JSON_OBJECT, FORMAT_JSON_SCHEMA = 0, 1, 2
TOOL_CHOICE = {"auto": 0, "none": 1, "required": 2, "function": 3}


class ModelParams(ctypes.Structure):
    _fields_ = [
        ("weights", c_int32),
        ("threads", c_int32),
        ("ctx_size", c_int64),
        ("min_pixels", c_int64),
        ("max_pixels", c_int64),
        ("image_cache_bytes", c_int64),
        ("revision", c_char_p),
        ("offline", c_int32),
        ("progress", c_int32),
        ("memory_budget", c_int64),  # since 0.6
    ]


class EmbedParams(ctypes.Structure):
    _fields_ = [
        ("instruction", c_char_p),
        ("dimensions", c_int64),
    ]


class RequestParams(ctypes.Structure):
    _fields_ = [
        ("temperature", c_double),
        ("top_p", c_double),
        ("min_p", c_double),
        ("top_k", c_int32),
        ("repetition_penalty", c_double),
        ("presence_penalty", c_double),
        ("frequency_penalty", c_double),
        ("seed", c_int64),
        ("max_tokens", c_int64),
        ("ignore_eos", c_int32),
        ("response_format", c_int32),
        ("json_schema", c_char_p),
        ("tools_json", c_char_p),
        ("tool_choice", c_int32),
        ("tool_choice_name", c_char_p),
        ("parallel_tool_calls", c_int32),
        ("n", c_int32),
        ("top_logprobs", c_int32),
        ("repetition_guard", c_int64),
        ("repetition_guard_repeats", c_int32),
        ("min_pixels", c_int64),
        ("max_pixels", c_int64),
        ("reasoning_budget", c_int64),
    ]


class VideoParams(ctypes.Structure):
    _fields_ = [
        ("fps", c_double),
        ("min_frames", c_int32),
        ("max_frames", c_int32),
        ("min_pixels", c_int64),
        ("max_pixels", c_int64),
        ("total_pixels", c_int64),
    ]


class Result(ctypes.Structure):
    _fields_ = [
        ("text", c_void_p),
        ("text_len", c_size_t),
        ("finish_reason", c_char_p),
        ("token_ids", ctypes.POINTER(c_int32)),
        ("n_token_ids", c_size_t),
        ("tool_calls_json", c_char_p),
        ("prompt_tokens", c_int64),
        ("cached_tokens", c_int64),
        ("completion_tokens", c_int64),
        ("prefill_ms", c_double),
        ("decode_ms", c_double),
        ("n_choices", c_size_t),
        ("choices", c_void_p),
        ("reasoning", c_void_p),
        ("reasoning_len", c_size_t),
        ("reasoning_tokens", c_int64),
    ]


class Logprob(ctypes.Structure):
    _fields_ = [
        ("token_id", c_int32),
        ("logprob", c_float),
        ("bytes", c_void_p),
        ("n_bytes", c_size_t),
    ]


class TokenLogprob(ctypes.Structure):
    _fields_ = [
        ("token", Logprob),
        ("top", ctypes.POINTER(Logprob)),
        ("n_top", c_size_t),
    ]


class Choice(ctypes.Structure):
    _fields_ = [
        ("text", c_void_p),
        ("text_len", c_size_t),
        ("finish_reason", c_char_p),
        ("token_ids", ctypes.POINTER(c_int32)),
        ("n_token_ids", c_size_t),
        ("tool_calls_json", c_char_p),
        ("logprobs", ctypes.POINTER(TokenLogprob)),
        ("n_logprobs", c_size_t),
        ("repetition_period", c_int64),
        ("reasoning", c_void_p),
        ("reasoning_len", c_size_t),
        ("reasoning_tokens", c_int64),
    ]


class Delta(ctypes.Structure):
    _fields_ = [
        ("choice", c_int32),
        ("text", c_void_p),
        ("text_len", c_size_t),
        ("logprob", ctypes.POINTER(TokenLogprob)),
        ("reasoning", c_void_p),
        ("reasoning_len", c_size_t),
    ]


TEXT_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, c_void_p, c_size_t, c_void_p)
DELTA_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Delta), c_void_p)


def _candidates():
    env = os.environ.get("QVL_LIBRARY")
    if env:
        return [env]  # asked for: that file or nothing
    here = os.path.dirname(os.path.abspath(__file__))
    out = sorted(glob.glob(os.path.join(here, "libqvl.so*")))
    for build in (os.path.join(here, "..", "..", "build"), os.path.join(os.getcwd(), "build")):
        out += sorted(glob.glob(os.path.join(build, "libqvl.so*")))
    found = ctypes.util.find_library("qvl")
    if found:
        out.append(found)
    return out


def load_library():
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        _declare(lib)
        return lib
    raise OSError(
        "libqvl.so not found: build it (cmake --build build --target qvl_shared), set QVL_LIBRARY to its path, "
        "or copy it next to the qvl package" + (f"; tried {', '.join(tried)}" if tried else "")
    )


def _declare(lib):
    def fn(name, restype, *argtypes):
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = list(argtypes)

    P = ctypes.POINTER
    fn("qvl_version", c_char_p)
    fn("qvl_last_error", c_char_p)
    fn("qvl_status_name", c_char_p, ctypes.c_int)
    fn("qvl_model_default_params", ModelParams)
    fn("qvl_model_load", ctypes.c_int, c_char_p, P(ModelParams), P(c_void_p))
    fn("qvl_model_free", None, c_void_p)
    fn("qvl_model_weights", ctypes.c_int, c_void_p)
    fn("qvl_model_thinking", ctypes.c_int, c_void_p)
    fn("qvl_request_default_params", RequestParams)
    fn("qvl_request_init", ctypes.c_int, P(RequestParams), P(c_void_p))
    fn("qvl_request_free", None, c_void_p)
    fn("qvl_request_add_message", ctypes.c_int, c_void_p, c_char_p, c_char_p)
    fn("qvl_request_add_text", ctypes.c_int, c_void_p, c_char_p)
    fn("qvl_request_add_image", ctypes.c_int, c_void_p, c_char_p, c_size_t)
    fn("qvl_request_add_image_file", ctypes.c_int, c_void_p, c_char_p)
    fn("qvl_request_add_image_rgb", ctypes.c_int, c_void_p, c_char_p, c_int32, c_int32, c_int32)
    fn("qvl_video_default_params", VideoParams)
    fn("qvl_request_add_video", ctypes.c_int, c_void_p, c_char_p, c_size_t, P(VideoParams))
    fn("qvl_request_add_video_file", ctypes.c_int, c_void_p, c_char_p, P(VideoParams))
    fn("qvl_request_add_video_frames", ctypes.c_int, c_void_p, P(c_char_p), P(c_size_t), c_size_t, c_double,
       P(VideoParams))
    fn("qvl_request_add_video_rgb", ctypes.c_int, c_void_p, P(c_char_p), c_size_t, c_int32, c_int32, c_int32,
       c_double, P(VideoParams))
    fn("qvl_request_add_pdf", ctypes.c_int, c_void_p, c_char_p, c_size_t, c_char_p, c_double)
    fn("qvl_request_add_pdf_file", ctypes.c_int, c_void_p, c_char_p, c_char_p, c_double)
    fn("qvl_request_add_tool_call", ctypes.c_int, c_void_p, c_char_p, c_char_p, c_char_p)
    fn("qvl_request_add_stop", ctypes.c_int, c_void_p, c_char_p)
    fn("qvl_request_add_logit_bias", ctypes.c_int, c_void_p, c_int32, c_float)
    fn("qvl_request_cancel", None, c_void_p)
    fn("qvl_generate", ctypes.c_int, c_void_p, c_void_p, TEXT_CALLBACK, c_void_p, P(Result))
    fn("qvl_generate_deltas", ctypes.c_int, c_void_p, c_void_p, DELTA_CALLBACK, c_void_p, P(Result))
    fn("qvl_result_choice", P(Choice), P(Result), c_size_t)
    fn("qvl_result_free", None, P(Result))
    fn("qvl_embed_default_params", EmbedParams)
    fn("qvl_model_hidden_size", c_int64, c_void_p)
    fn("qvl_embed", ctypes.c_int, c_void_p, P(c_void_p), c_size_t, P(EmbedParams), P(c_float), c_size_t, P(c_int64))
    fn("qvl_rerank", ctypes.c_int, c_void_p, c_void_p, P(c_void_p), c_size_t, c_char_p, P(c_double), P(c_double))
