/* qvl.h: the C API of qvl, a Qwen3-VL engine for CPUs.
 *
 * Two handles (a model, a request) and a result struct:
 *
 *   qvl_model_params mp = qvl_model_default_params();
 *   qvl_model* model;
 *   if (qvl_model_load("Qwen/Qwen3-VL-2B-Instruct", &mp, &model) != QVL_OK)
 *     fprintf(stderr, "%s\n", qvl_last_error());
 *
 *   qvl_request_params rp = qvl_request_default_params();
 *   rp.temperature = 0;  rp.max_tokens = 64;
 *   qvl_request* req;
 *   qvl_request_init(&rp, &req);
 *   qvl_request_add_message(req, "user", NULL);
 *   qvl_request_add_image_file(req, "cat.jpg");   (or a video, a PDF's pages)
 *   qvl_request_add_text(req, "What is in the picture?");
 *
 *   qvl_result res;
 *   qvl_generate(model, req, on_text, NULL, &res);  (on_text may be NULL)
 *   ... res.text, res.finish_reason, res.token_ids, res.tool_calls_json ...
 *   ... with rp.n > 1 or rp.top_logprobs >= 0: qvl_result_choice(&res, i) ...
 *   qvl_result_free(&res);
 *   qvl_request_free(req);
 *   qvl_model_free(model);
 *
 * Errors: every function that can fail returns a qvl_status; the message
 * (one line naming what failed: the path, the request field) is in
 * qvl_last_error(), which is thread-local: it belongs to the calling thread
 * and holds the last failure of a qvl_* call on that thread. Nothing else is
 * global state.
 *
 * Threads: one qvl_model answers one request at a time; concurrent
 * qvl_generate calls on the same model wait for each other. Different models
 * are independent. qvl_request_cancel may be called from any thread.
 *
 * Strings are UTF-8 and NUL-terminated unless a length is given; every
 * string passed in is copied, so the caller's buffers may be freed after the
 * call returns.
 *
 * ABI: the structs grow at their end, and only with a new minor version,
 * which is also the .so's version (libqvl.so.0.6): a program runs with the
 * library it was built against. Start params from qvl_*_default_params() so
 * a rebuild picks up the new fields' defaults.
 */
#ifndef QVL_H
#define QVL_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  define QVL_API __declspec(dllexport)
#else
#  define QVL_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qvl_status {
  QVL_OK = 0,
  QVL_ERR_INVALID_ARGUMENT = 1, /* a bad parameter or request field (the message names it) */
  QVL_ERR_IO = 2,               /* a file or folder that cannot be found or read; a failed download */
  QVL_ERR_MODEL = 3,            /* the model cannot be loaded, or cannot answer this request */
  QVL_ERR_UNSUPPORTED = 4,      /* something qvl does not do (a tool type other than "function") */
  QVL_ERR_CANCELLED = 5,        /* qvl_request_cancel stopped the request (the result holds the partial answer) */
  QVL_ERR_OUT_OF_MEMORY = 6,
  QVL_ERR_INTERNAL = 7          /* a bug: please report the message */
} qvl_status;

/* Weight format in memory. */
typedef enum qvl_weights {
  QVL_WEIGHTS_BF16 = 0, /* as stored, zero-copy */
  QVL_WEIGHTS_F32 = 1,
  QVL_WEIGHTS_Q8 = 2,   /* 8-bit, about half the memory of bf16 and faster decoding */
  QVL_WEIGHTS_Q4 = 3,
  /* bf16 if the checkpoint takes at most half the machine's memory (an FP8
   * checkpoint starts at q8), else q8 if that does, else q4: the rule qvl run
   * and qvl serve apply too (docs/weights.md). qvl_model_weights tells which
   * it chose. */
  QVL_WEIGHTS_AUTO = 4
} qvl_weights;

typedef enum qvl_response_format {
  QVL_FORMAT_TEXT = 0,
  QVL_FORMAT_JSON_OBJECT = 1, /* any JSON object (constrained decoding) */
  QVL_FORMAT_JSON_SCHEMA = 2  /* JSON valid against qvl_request_params.json_schema */
} qvl_response_format;

typedef enum qvl_tool_choice {
  QVL_TOOL_CHOICE_AUTO = 0,     /* the model decides */
  QVL_TOOL_CHOICE_NONE = 1,     /* tools are shown, never called */
  QVL_TOOL_CHOICE_REQUIRED = 2, /* at least one call and nothing else */
  QVL_TOOL_CHOICE_FUNCTION = 3  /* exactly the function tool_choice_name */
} qvl_tool_choice;

typedef struct qvl_model qvl_model;
typedef struct qvl_request qvl_request;

/* "0.6.0": the library's version (0.2 added n, logit_bias, logprobs, the
 * repetition guard's params and qvl_generate_deltas; 0.3 videos and PDFs;
 * 0.4 a Thinking model's reasoning apart from its reply; 0.5 qvl_embed and
 * qvl_rerank; 0.6 the memory budget). */
QVL_API const char* qvl_version(void);
/* The message of the calling thread's last failed qvl_* call ("" if none).
 * Valid until the next failing call on this thread. */
QVL_API const char* qvl_last_error(void);
/* "QVL_ERR_IO" etc. */
QVL_API const char* qvl_status_name(qvl_status status);

/* ---- model ---- */

typedef struct qvl_model_params {
  int32_t weights;            /* qvl_weights; default QVL_WEIGHTS_AUTO */
  int32_t threads;            /* compute threads; 0: physical cores */
  int64_t ctx_size;           /* KV cache capacity in tokens; default 8192 */
  int64_t min_pixels;         /* image area bounds after resizing; 0: the model's */
  int64_t max_pixels;
  int64_t image_cache_bytes;  /* cache of image embeddings (a repeated image skips the vision encoder); 0: off */
  /* A repo id ("Qwen/Qwen3-VL-2B-Instruct") resolves to the Hugging Face
   * cache, downloading what is missing: */
  const char* revision;       /* branch, tag or commit; NULL: "main" */
  int32_t offline;            /* non-zero: never use the network (the cache or nothing) */
  int32_t progress;           /* non-zero: download progress lines on stderr; default 1 */
  /* Since 0.6: the model's memory budget in bytes, for decoded media and the
   * KV caches together (qvl serve's and qvl run's --memory-budget). The KV
   * caches of ctx_size are reserved from it at load (a budget too small for
   * them fails qvl_model_load with QVL_ERR_OUT_OF_MEMORY), and qvl_generate
   * refuses a request whose decoded images, videos and PDF pages do not fit
   * beside them with QVL_ERR_OUT_OF_MEMORY and one line saying so, before it
   * allocates anything for them. 0 (the default): the KV caches plus 1 GiB. */
  int64_t memory_budget;
} qvl_model_params;

QVL_API qvl_model_params qvl_model_default_params(void);
/* `path_or_repo`: a local model folder (config.json, *.safetensors,
 * tokenizer.json, ...) or a hub repo id. On failure *out is NULL and the
 * status is QVL_ERR_IO (no such folder, download failed) or QVL_ERR_MODEL. */
QVL_API qvl_status qvl_model_load(const char* path_or_repo, const qvl_model_params* params, qvl_model** out);
QVL_API void qvl_model_free(qvl_model* model); /* NULL is fine */
/* The weight format the model was loaded in (QVL_WEIGHTS_AUTO resolved). */
QVL_API qvl_weights qvl_model_weights(const qvl_model* model);
/* Since 0.4: non-zero when the model's chat template is a Thinking one
 * (Qwen3-VL-*-Thinking): every answer starts with reasoning, which
 * "</think>" ends; results carry it apart from the reply (qvl_result.reasoning). */
QVL_API int qvl_model_thinking(const qvl_model* model);

/* ---- request ---- */

/* Floating-point fields set to NAN and integers set to -1 mean "unset": the
 * model's generation_config, then the engine's default. */
typedef struct qvl_request_params {
  double temperature;         /* 0: greedy */
  double top_p;
  double min_p;
  int32_t top_k;              /* 0: off */
  double repetition_penalty;
  double presence_penalty;
  double frequency_penalty;
  int64_t seed;               /* -1: random */
  int64_t max_tokens;         /* 0: the model's max_new_tokens, else until the context is full */
  int32_t ignore_eos;         /* non-zero: keep going past the end-of-sequence token */
  int32_t response_format;    /* qvl_response_format */
  const char* json_schema;    /* JSON Schema text for QVL_FORMAT_JSON_SCHEMA */
  /* Tools: a JSON array of OpenAI-style tools,
   * [{"type": "function", "function": {"name", "description", "parameters"}}]. */
  const char* tools_json;
  int32_t tool_choice;        /* qvl_tool_choice */
  const char* tool_choice_name;  /* QVL_TOOL_CHOICE_FUNCTION */
  int32_t parallel_tool_calls;   /* 0: at most one call per answer; default 1 */
  /* Since 0.2: */
  int32_t n;                  /* answers to the prompt, prefilled once and decoded together
                               * (choice i samples with seed + i); 1..16, default 1 */
  int32_t top_logprobs;       /* -1: no logprobs (default); 0..20: each answer token's logprob and
                               * that many of the likeliest alternatives (qvl_choice.logprobs) */
  /* The repetition guard stops an answer caught in a loop (finish_reason
   * "repetition"): the looping tail is at least `repetition_guard` tokens
   * long and holds `repetition_guard_repeats` periods. */
  int64_t repetition_guard;         /* -1: the default (400); 0: off */
  int32_t repetition_guard_repeats; /* -1: the default (3); else 2..1000 */
  /* This request's image area after resizing, in pixels; 0: the model's
   * range (qvl_model_params.min_pixels/max_pixels). Clamped into it. */
  int64_t min_pixels;
  int64_t max_pixels;
  /* Since 0.4: a Thinking model's reasoning is cut after this many tokens
   * by forcing "</think>", so the reply starts. -1: no limit (default); any
   * other value on a model without a Thinking template is
   * QVL_ERR_INVALID_ARGUMENT from qvl_generate. */
  int64_t reasoning_budget;
} qvl_request_params;

QVL_API qvl_request_params qvl_request_default_params(void);
/* Checks and copies the params (tools_json must parse). */
QVL_API qvl_status qvl_request_init(const qvl_request_params* params, qvl_request** out);
QVL_API void qvl_request_free(qvl_request* request); /* NULL is fine */

/* Starts a new message: role "system", "user", "assistant" or "tool";
 * `text` (may be NULL) becomes its first part. */
QVL_API qvl_status qvl_request_add_message(qvl_request* request, const char* role, const char* text);
/* Parts appended to the last message, in order. */
QVL_API qvl_status qvl_request_add_text(qvl_request* request, const char* text);
/* An encoded image (JPEG, PNG, WebP, BMP, GIF first frame), decoded now. */
QVL_API qvl_status qvl_request_add_image(qvl_request* request, const uint8_t* bytes, size_t len);
QVL_API qvl_status qvl_request_add_image_file(qvl_request* request, const char* path);
/* 8-bit RGB pixels, row r at rgb + r * stride (stride >= 3 * width). */
QVL_API qvl_status qvl_request_add_image_rgb(qvl_request* request, const uint8_t* rgb, int32_t width, int32_t height,
                                             int32_t stride);

/* Since 0.3: videos and PDFs. Every medium is decoded when it is added, the
 * way qvl serve and qvl run decode it (one media intake), with the same caps
 * (a request meets its model's memory budget in qvl_generate). What a
 * medium is comes from its bytes, as in qvl serve; each call takes its own
 * kind, and bytes that are another (a clip given to qvl_request_add_image)
 * are refused naming the call that takes them. A medium that cannot be used is QVL_ERR_INVALID_ARGUMENT with one line
 * saying why, and the request stays as it was. */

/* How a video is sampled and sized: the keys of qvl serve's video parts
 * (qwen-vl-utils'). 0 means the video processor's default. */
typedef struct qvl_video_params {
  double fps;                 /* frames sampled per second of video, 0.01..60; 0: 2 */
  int32_t min_frames;         /* 1..768; 0: 4 */
  int32_t max_frames;         /* 1..768; 0: 768 */
  int64_t min_pixels;         /* each frame's area after resizing; 0: the model's range */
  int64_t max_pixels;
  int64_t total_pixels;       /* all sampled frames' area together; 0: the model's */
} qvl_video_params;

QVL_API qvl_video_params qvl_video_default_params(void);
/* An encoded video (MP4/MOV, WebM/MKV, AVI, animated GIF), read from memory
 * only; just the sampled frames are kept. `params` may be NULL (defaults). */
QVL_API qvl_status qvl_request_add_video(qvl_request* request, const uint8_t* bytes, size_t len,
                                         const qvl_video_params* params);
QVL_API qvl_status qvl_request_add_video_file(qvl_request* request, const char* path, const qvl_video_params* params);
/* A video given as its frames (at most 768), every one used, frame k taken
 * at k / fps seconds (qwen-vl-utils' list of frames with sample_fps): each an
 * encoded image of lens[k] bytes (as qvl_request_add_image takes), or for
 * _rgb 8-bit RGB (row r at frames[k] + r * stride). Only the pixel fields of
 * `params` apply (fps, min_frames and max_frames sample a video file). */
QVL_API qvl_status qvl_request_add_video_frames(qvl_request* request, const uint8_t* const* frames, const size_t* lens,
                                                size_t n_frames, double fps, const qvl_video_params* params);
QVL_API qvl_status qvl_request_add_video_rgb(qvl_request* request, const uint8_t* const* frames, size_t n_frames,
                                             int32_t width, int32_t height, int32_t stride, double fps,
                                             const qvl_video_params* params);
/* A PDF's pages as images, in order: `pages` chooses them ("1-3,7"; NULL or
 * "": every page, at most 32), rendered at `dpi` (0: 144). */
QVL_API qvl_status qvl_request_add_pdf(qvl_request* request, const uint8_t* bytes, size_t len, const char* pages,
                                       double dpi);
QVL_API qvl_status qvl_request_add_pdf_file(qvl_request* request, const char* path, const char* pages, double dpi);

/* A call the assistant made earlier (history replay; arguments is JSON text). */
QVL_API qvl_status qvl_request_add_tool_call(qvl_request* request, const char* id, const char* name,
                                             const char* arguments);
/* A stop string: the answer ends before it. */
QVL_API qvl_status qvl_request_add_stop(qvl_request* request, const char* stop);
/* Adds `bias` (-100..100) to token `token_id`'s logit before sampling, after
 * the penalties (OpenAI's logit_bias: -100 in effect bans a token, +100 in
 * effect forces it); a second call for the same id replaces its bias. The
 * id is checked against the model's vocabulary by qvl_generate. */
QVL_API qvl_status qvl_request_add_logit_bias(qvl_request* request, int32_t token_id, float bias);
/* From any thread: the running (or next) qvl_generate of this request stops
 * before its next token and returns QVL_ERR_CANCELLED. Stays set. */
QVL_API void qvl_request_cancel(qvl_request* request);

/* ---- generation ---- */

/* A piece of the answer (UTF-8 complete, `len` bytes, not NUL-terminated):
 * of a Thinking model's answer, the reply only (qvl_generate_deltas streams
 * the reasoning too); return non-zero to stop (finish_reason "cancelled",
 * status QVL_OK). */
typedef int (*qvl_text_callback)(const char* piece, size_t len, void* user_data);

/* A token with its log-probability (natural log, <= 0) under the
 * distribution it was drawn from: the logits after the penalties,
 * logit_bias and the output constraint, divided by the temperature (1 when
 * greedy); top-k/top-p/min-p do not cut it. */
typedef struct qvl_logprob {
  int32_t token_id;
  float logprob;
  const char* bytes;          /* the bytes the token stands for (NUL-terminated; a token may
                               * hold part of a UTF-8 character) */
  size_t n_bytes;
} qvl_logprob;

/* One answer token, and the likeliest tokens at its step (the constraint's
 * allowed ones), most likely first: `top_logprobs` of them, fewer only when
 * fewer are allowed. */
typedef struct qvl_token_logprob {
  qvl_logprob token;
  const qvl_logprob* top;     /* [n_top] */
  size_t n_top;
} qvl_token_logprob;

typedef struct qvl_result {
  char* text;                 /* the answer (NUL-terminated; with tools, the text around the calls) */
  size_t text_len;
  char* finish_reason;        /* "stop", "length", "tool_calls", "cancelled" or "repetition" */
  int32_t* token_ids;         /* the completion's tokens (EOS excluded) */
  size_t n_token_ids;
  /* JSON array, "[]" when none:
   * [{"id": "call_…", "type": "function", "function": {"name": "…", "arguments": "{…}"}}] */
  char* tool_calls_json;
  int64_t prompt_tokens;
  int64_t cached_tokens;      /* prompt tokens reused from the previous request */
  int64_t completion_tokens;  /* over every choice */
  double prefill_ms;
  double decode_ms;
  /* Since 0.2: */
  size_t n_choices;           /* the request's n; the fields above are choice 0's */
  struct qvl_result_choices* choices; /* private: read with qvl_result_choice */
  /* Since 0.4: a Thinking model's reasoning (the text before "</think>",
   * NUL-terminated; `text` is then the reply after it) and its token count;
   * NULL and 0 for other models. Choice 0's. */
  char* reasoning;
  size_t reasoning_len;
  int64_t reasoning_tokens;
} qvl_result;

/* Choice i of a result: its own copy of the fields above and its logprobs.
 * The pointers belong to the result (valid until qvl_result_free). */
typedef struct qvl_choice {
  const char* text;
  size_t text_len;
  const char* finish_reason;
  const int32_t* token_ids;
  size_t n_token_ids;
  const char* tool_calls_json;
  const qvl_token_logprob* logprobs; /* [n_logprobs]: one per token id when top_logprobs >= 0 (else NULL) */
  size_t n_logprobs;
  int64_t repetition_period;  /* finish_reason "repetition": the loop's period in tokens; else 0 */
  /* Since 0.4: as qvl_result.reasoning, for this choice. */
  const char* reasoning;
  size_t reasoning_len;
  int64_t reasoning_tokens;
} qvl_choice;

/* NULL when `i` >= n_choices (or the result is empty). Library-owned, so a
 * later version may add fields at the end. */
QVL_API const qvl_choice* qvl_result_choice(const qvl_result* result, size_t i);

/* Renders the messages with the model's chat template and answers them.
 * `on_text` (choice 0's text as it is decided) may be NULL. `out` is filled
 * on QVL_OK and QVL_ERR_CANCELLED (and zeroed otherwise); free it with
 * qvl_result_free. A request may be generated again (a conversation that
 * extends it reuses the cached prefix). What needs the model is checked
 * here, as QVL_ERR_INVALID_ARGUMENT naming the field: n's upper bound,
 * logit_bias ids against the vocabulary, json_schema and the tools'
 * parameters (a keyword qvl cannot enforce). */
QVL_API qvl_status qvl_generate(qvl_model* model, qvl_request* request, qvl_text_callback on_text, void* user_data,
                                qvl_result* out);

/* What one decided token adds to one choice: the text it makes safe to show
 * (UTF-8 complete, clear of stop strings; may be empty, and with tools it
 * is the raw text, <tool_call> blocks included) and, when top_logprobs >= 0,
 * the token's logprob (valid during the call). Of a Thinking model's answer,
 * `text` is the reply's and `reasoning` the reasoning's, each empty where the
 * token adds none ("</think>" itself adds neither). Library-owned (a later
 * version may add fields at the end). */
typedef struct qvl_delta {
  int32_t choice;             /* 0 .. n-1 */
  const char* text;           /* not NUL-terminated */
  size_t text_len;
  const qvl_token_logprob* logprob; /* NULL without top_logprobs */
  /* Since 0.4: */
  const char* reasoning;      /* not NUL-terminated; NULL when reasoning_len is 0 */
  size_t reasoning_len;
} qvl_delta;
/* Return non-zero to stop the whole request (status QVL_OK; the unfinished
 * choices end "cancelled"). */
typedef int (*qvl_delta_callback)(const qvl_delta* delta, void* user_data);

/* qvl_generate with every choice streamed token by token (a call per token
 * that adds text or carries a logprob). `on_delta` may be NULL. */
QVL_API qvl_status qvl_generate_deltas(qvl_model* model, qvl_request* request, qvl_delta_callback on_delta,
                                       void* user_data, qvl_result* out);
QVL_API void qvl_result_free(qvl_result* result);

/* ---- retrieval (0.5): Qwen3-VL-Embedding and Qwen3-VL-Reranker ----
 *
 * An input (a text, an image, a PDF's pages, a video, or a mix) is a
 * qvl_request used as a container: one "user" message holding its parts
 * (qvl_request_add_message(req, "user", text), qvl_request_add_image_file,
 * qvl_request_add_pdf_file, ...) and, for an embedding, optionally a "system"
 * message whose text is this input's own instruction. The parts are put in
 * the order the official scripts use (videos, then images, then texts), the
 * request's sampling fields are ignored. Images are resized within the
 * scripts' 4096 ... 1843200 pixels, not the model's min/max_pixels. Inputs
 * of one call are batched through the model together. */

typedef struct qvl_embed_params {
  /* The instruction of every input without its own; NULL or blank: "Represent
   * the user's input.". Stripped, and a "." is added unless it ends in
   * punctuation (the official rule). */
  const char* instruction;
  /* The vector's length: 0 for the model's hidden size, or 1 ... hidden size:
   * its first `dimensions` components, normalised again (MRL). */
  int64_t dimensions;
} qvl_embed_params;

QVL_API qvl_embed_params qvl_embed_default_params(void);
/* The model's hidden size: the length of a full embedding. 0 for NULL. */
QVL_API int64_t qvl_model_hidden_size(const qvl_model* model);
/* Unit-length embeddings of `n` inputs, written to `out` as n rows of
 * `dimensions` (or hidden size) floats; `out_len` is out's capacity in
 * floats (too small: QVL_ERR_INVALID_ARGUMENT, nothing written).
 * `prompt_tokens` (NULL or n entries) receives each input's prompt length. */
QVL_API qvl_status qvl_embed(qvl_model* model, qvl_request* const* inputs, size_t n, const qvl_embed_params* params,
                             float* out, size_t out_len, int64_t* prompt_tokens);

/* Scores of `n` documents against one query (a qvl_request as above), in the
 * documents' order: scores[i] = sigmoid(logit), logits[i] (NULL to skip) =
 * logit(yes) - logit(no) at the prompt's last token. `instruction`: NULL or
 * "" for "Given a search query, retrieve relevant candidates that answer the
 * query.", else verbatim. A checkpoint without an output head (untied, no
 * lm_head.weight) is QVL_ERR_MODEL. */
QVL_API qvl_status qvl_rerank(qvl_model* model, qvl_request* query, qvl_request* const* documents, size_t n,
                              const char* instruction, double* scores, double* logits);

#ifdef __cplusplus
}
#endif

#endif /* QVL_H */
