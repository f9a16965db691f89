/* The C API from C99 against the tiny random-weight model: errors carry a
 * status and a message naming what failed, cancel works from another thread,
 * a JSON-schema answer and a required tool call come back complete, and n,
 * logit_bias, logprobs, the repetition guard and per-choice streaming do
 * what qvl.h says. Videos (a file, its bytes, a list of frames encoded or
 * RGB) give the reference's greedy tokens (tests/fixtures/video), hostile
 * clips are refused with one line and leave the model usable, and a PDF's
 * pages come in as images. The memory budget refuses a context whose KV
 * caches do not fit it at load, and a request whose images do not fit beside
 * them with QVL_ERR_OUT_OF_MEMORY.
 *
 * A Thinking model's reasoning comes apart from its reply in results and
 * streams.
 *
 *   test_capi FIXTURES_DIR THINKING_MODEL_DIR
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qvl.h"

static int failures = 0;

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                        \
    }                                                                    \
  } while (0)

#define CHECK_STATUS(call, want)                                                                  \
  do {                                                                                            \
    qvl_status got_ = (call);                                                                     \
    if (got_ != (want)) {                                                                         \
      fprintf(stderr, "%s:%d: %s returned %s, want %s (%s)\n", __FILE__, __LINE__, #call,        \
              qvl_status_name(got_), qvl_status_name(want), qvl_last_error());                   \
      ++failures;                                                                                 \
    }                                                                                             \
  } while (0)

static qvl_model* model;

static qvl_request* user_request(qvl_request_params* p, const char* text) {
  qvl_request* r = NULL;
  CHECK_STATUS(qvl_request_init(p, &r), QVL_OK);
  CHECK_STATUS(qvl_request_add_message(r, "user", text), QVL_OK);
  return r;
}

static void test_errors(const char* fixtures) {
  qvl_model_params mp = qvl_model_default_params();
  mp.offline = 1;
  qvl_model* m = (qvl_model*)1;
  CHECK_STATUS(qvl_model_load("/nonexistent/qvl-model-dir", &mp, &m), QVL_ERR_IO);
  CHECK(m == NULL);
  CHECK(strstr(qvl_last_error(), "/nonexistent/qvl-model-dir") != NULL);

  /* A folder that is not a model: the fixtures folder has no config.json. */
  qvl_status st = qvl_model_load(fixtures, &mp, &m);
  CHECK(st == QVL_ERR_MODEL || st == QVL_ERR_IO);
  CHECK(strstr(qvl_last_error(), fixtures) != NULL);
  if (st == QVL_OK) qvl_model_free(m);

  /* qvl_request_init checks the params. */
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = -1;
  qvl_request* r = NULL;
  CHECK_STATUS(qvl_request_init(&rp, &r), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "temperature") != NULL);
  rp = qvl_request_default_params();
  rp.tools_json = "[{\"type\": \"code_interpreter\"}]";
  CHECK_STATUS(qvl_request_init(&rp, &r), QVL_ERR_UNSUPPORTED);
  rp.tools_json = "not json";
  CHECK_STATUS(qvl_request_init(&rp, &r), QVL_ERR_INVALID_ARGUMENT);

  /* A part before any message, an unknown role, undecodable image bytes. */
  CHECK_STATUS(qvl_request_init(NULL, &r), QVL_OK);
  CHECK_STATUS(qvl_request_add_text(r, "x"), QVL_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(qvl_request_add_message(r, "robot", "x"), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "robot") != NULL);
  CHECK_STATUS(qvl_request_add_message(r, "user", "x"), QVL_OK);
  const uint8_t junk[] = {1, 2, 3, 4, 5, 6, 7, 8};
  CHECK_STATUS(qvl_request_add_image(r, junk, sizeof junk), QVL_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(qvl_request_add_image_file(r, "/nonexistent/cat.jpg"), QVL_ERR_IO);
  CHECK(strstr(qvl_last_error(), "/nonexistent/cat.jpg") != NULL);
  qvl_request_free(r);
}

/* ---- media ---- */

/* A whole file in memory (NUL-terminated besides); NULL when unreadable. */
static uint8_t* read_all(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* buf = (uint8_t*)malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) buf[n] = 0;
  *len = (size_t)n;
  return buf;
}

/* One golden prompt of tests/fixtures/video/manifest.json: its greedy ids
 * and prompt token count, read from the JSON text (the prompts come after
 * every "name" of the same value in "videos"; "generated_ids" and
 * "num_tokens" follow within the prompt's object). */
struct golden_prompt {
  int32_t ids[64];
  size_t n_ids;
  int64_t num_tokens;
};

static int read_golden(const char* manifest, const char* name, struct golden_prompt* g) {
  char key[128];
  snprintf(key, sizeof key, "\"name\": \"%s\"", name);
  const char* prompts = strstr(manifest, "\"prompts\"");
  const char* at = prompts ? strstr(prompts, key) : NULL;
  if (!at) return 0;
  const char* ids = strstr(at, "\"generated_ids\": [");
  const char* tokens = strstr(at, "\"num_tokens\": ");
  if (!ids || !tokens) return 0;
  g->num_tokens = strtoll(tokens + strlen("\"num_tokens\": "), NULL, 10);
  g->n_ids = 0;
  char* p = (char*)strchr(ids, '[') + 1;
  while (g->n_ids < 64) {
    while (*p == ' ' || *p == '\n' || *p == ',') ++p;
    if (*p == ']') break;
    g->ids[g->n_ids++] = (int32_t)strtol(p, &p, 10);
  }
  return g->n_ids > 0;
}

static qvl_request_params greedy16(void) {
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 0;
  rp.max_tokens = 16;
  rp.ignore_eos = 1;
  return rp;
}

/* Generates `r` and checks its tokens against the golden; frees `r`. */
static void expect_golden(qvl_request* r, const struct golden_prompt* g, const char* what) {
  qvl_result res;
  qvl_status st = qvl_generate(model, r, NULL, NULL, &res);
  if (st != QVL_OK) {
    fprintf(stderr, "%s: %s (%s)\n", what, qvl_status_name(st), qvl_last_error());
    ++failures;
    qvl_request_free(r);
    return;
  }
  int same = res.n_token_ids == g->n_ids;
  for (size_t i = 0; same && i < g->n_ids; ++i) same = res.token_ids[i] == g->ids[i];
  if (!same) {
    fprintf(stderr, "%s: the greedy ids differ from the golden:", what);
    for (size_t i = 0; i < res.n_token_ids; ++i) fprintf(stderr, " %d", res.token_ids[i]);
    fprintf(stderr, "\n");
    ++failures;
  }
  if (res.prompt_tokens != g->num_tokens) {
    fprintf(stderr, "%s: %lld prompt tokens, the golden has %lld\n", what, (long long)res.prompt_tokens,
            (long long)g->num_tokens);
    ++failures;
  }
  qvl_result_free(&res);
  qvl_request_free(r);
}

/* The frames of the golden frame list (frames_rgb of
 * video_frames_150x100_x6.safetensors: uint8 [6, 100, 150, 3]), from the
 * safetensors header's data_offsets. */
static uint8_t* golden_frames_rgb(const char* video_dir, size_t* offset) {
  char path[4096 + 64];
  snprintf(path, sizeof path, "%s/video_frames_150x100_x6.safetensors", video_dir);
  size_t len = 0;
  uint8_t* file = read_all(path, &len);
  if (!file || len < 8) return NULL;
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | file[i];
  char* text = (char*)malloc(header + 1);
  memcpy(text, file + 8, header);
  text[header] = 0;
  const char* entry = strstr(text, "\"frames_rgb\"");
  const char* offsets = entry ? strstr(entry, "\"data_offsets\":") : NULL;
  if (!offsets) {
    free(text);
    free(file);
    return NULL;
  }
  *offset = 8 + header + (size_t)strtoull(strchr(offsets, '[') + 1, NULL, 10);
  free(text);
  return file;
}

static void test_video_goldens(const char* fixtures) {
  char dir[2048], path[4096];
  snprintf(dir, sizeof dir, "%s/video", fixtures);
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  size_t len = 0;
  char* manifest = (char*)read_all(path, &len);
  CHECK(manifest != NULL);
  if (!manifest) return;
  struct golden_prompt question, two_turn, frame_list;
  CHECK(read_golden(manifest, "video_question", &question));
  CHECK(read_golden(manifest, "two_turn_video", &two_turn));
  CHECK(read_golden(manifest, "frame_list_video", &frame_list));
  free(manifest);
  qvl_request_params rp = greedy16();

  /* The lossless 8-s clip as a file, then as bytes. */
  snprintf(path, sizeof path, "%s/videos/long_112x80_24fps.mp4", dir);
  qvl_request* r = user_request(&rp, NULL);
  CHECK_STATUS(qvl_request_add_video_file(r, path, NULL), QVL_OK);
  CHECK_STATUS(qvl_request_add_text(r, "What happens in this video?"), QVL_OK);
  expect_golden(r, &question, "video_question (file)");
  uint8_t* clip = read_all(path, &len);
  CHECK(clip != NULL);
  r = user_request(&rp, NULL);
  qvl_video_params vp = qvl_video_default_params();
  CHECK_STATUS(qvl_request_add_video(r, clip, len, &vp), QVL_OK);
  CHECK_STATUS(qvl_request_add_text(r, "What happens in this video?"), QVL_OK);
  expect_golden(r, &question, "video_question (bytes)");
  free(clip);

  /* A system message, a video turn, an answer and a text turn. */
  snprintf(path, sizeof path, "%s/videos/portrait_120x216_10fps.mp4", dir);
  CHECK_STATUS(qvl_request_init(&rp, &r), QVL_OK);
  CHECK_STATUS(qvl_request_add_message(r, "system", "You are a helpful assistant."), QVL_OK);
  CHECK_STATUS(qvl_request_add_message(r, "user", NULL), QVL_OK);
  CHECK_STATUS(qvl_request_add_video_file(r, path, NULL), QVL_OK);
  CHECK_STATUS(qvl_request_add_text(r, "Describe the motion."), QVL_OK);
  CHECK_STATUS(qvl_request_add_message(r, "assistant", "Coloured rings expand from a drifting centre."), QVL_OK);
  CHECK_STATUS(qvl_request_add_message(r, "user", "How many seconds is it?"), QVL_OK);
  expect_golden(r, &two_turn, "two_turn_video");

  /* Six PNG frames at 2 fps: encoded, then as the RGB they decode to. */
  uint8_t* pngs[6];
  size_t lens[6];
  for (int k = 0; k < 6; ++k) {
    snprintf(path, sizeof path, "%s/videos/frames_150x100_x6/frame_%03d.png", dir, k);
    pngs[k] = read_all(path, &lens[k]);
    CHECK(pngs[k] != NULL);
  }
  r = user_request(&rp, NULL);
  CHECK_STATUS(qvl_request_add_video_frames(r, (const uint8_t* const*)pngs, lens, 6, 2.0, NULL), QVL_OK);
  CHECK_STATUS(qvl_request_add_text(r, "What is written here?"), QVL_OK);
  expect_golden(r, &frame_list, "frame_list_video (encoded frames)");
  for (int k = 0; k < 6; ++k) free(pngs[k]);

  size_t offset = 0;
  uint8_t* st = golden_frames_rgb(dir, &offset);
  CHECK(st != NULL);
  if (st) {
    const uint8_t* frames[6];
    for (int k = 0; k < 6; ++k) frames[k] = st + offset + (size_t)k * 100 * 150 * 3;
    r = user_request(&rp, NULL);
    CHECK_STATUS(qvl_request_add_video_rgb(r, frames, 6, 150, 100, 150 * 3, 2.0, NULL), QVL_OK);
    CHECK_STATUS(qvl_request_add_text(r, "What is written here?"), QVL_OK);
    expect_golden(r, &frame_list, "frame_list_video (RGB frames)");
    /* A list of frames is not sampled: fps in its params is refused, naming it. */
    r = user_request(&rp, NULL);
    vp = qvl_video_default_params();
    vp.fps = 1;
    CHECK_STATUS(qvl_request_add_video_rgb(r, frames, 6, 150, 100, 150 * 3, 2.0, &vp), QVL_ERR_INVALID_ARGUMENT);
    CHECK(strstr(qvl_last_error(), "fps") != NULL);
    CHECK_STATUS(qvl_request_add_video_rgb(r, frames, 6, 150, 100, 150 * 3, 0, NULL), QVL_ERR_INVALID_ARGUMENT);
    CHECK(strstr(qvl_last_error(), "video: fps must be in") != NULL);
    qvl_request_free(r);
    free(st);
  }
}

/* Sampling params change the frames: max_frames 6 under 40000 total pixels
 * is the reference case long_112x80_24fps@max6_px40000, grid (3, 4, 6): 18
 * video tokens where the defaults give 64; out-of-range params name the key. */
static void test_video_params(const char* fixtures) {
  char path[4096];
  snprintf(path, sizeof path, "%s/video/videos/long_112x80_24fps.mp4", fixtures);
  qvl_request_params rp = greedy16();
  rp.max_tokens = 1;
  int64_t tokens[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    qvl_video_params vp = qvl_video_default_params();
    if (k == 1) {
      vp.max_frames = 6;
      vp.total_pixels = 40000;
    }
    qvl_request* r = user_request(&rp, NULL);
    CHECK_STATUS(qvl_request_add_video_file(r, path, &vp), QVL_OK);
    CHECK_STATUS(qvl_request_add_text(r, "Hi"), QVL_OK);
    qvl_result res;
    CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
    tokens[k] = res.prompt_tokens;
    qvl_result_free(&res);
    qvl_request_free(r);
  }
  /* 8 groups of 8 tokens against 3 groups of 6, each group with its "<t seconds>" text and delimiters. */
  CHECK(tokens[0] - tokens[1] > 64 - 18);
  qvl_request* r = user_request(&rp, NULL);
  qvl_video_params vp = qvl_video_default_params();
  vp.fps = 100;
  CHECK_STATUS(qvl_request_add_video_file(r, path, &vp), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "fps must be") != NULL);
  vp = qvl_video_default_params();
  vp.min_frames = 10;
  vp.max_frames = 6;
  CHECK_STATUS(qvl_request_add_video_file(r, path, &vp), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "min_frames (10) exceeds max_frames (6)") != NULL);
  qvl_request_free(r);
}

/* Hostile or broken clips: one line each, the request left as it was, and
 * the model answering after them. */
static void test_hostile_video(const char* fixtures) {
  char path[4096];
  snprintf(path, sizeof path, "%s/video/videos/stripes_96x64_24fps.mp4", fixtures);
  size_t len = 0;
  uint8_t* clip = read_all(path, &len);
  CHECK(clip != NULL);
  if (!clip) return;
  qvl_request_params rp = greedy16();
  rp.max_tokens = 2;
  qvl_request* r = user_request(&rp, NULL);
  CHECK_STATUS(qvl_request_add_video(r, clip, len * 6 / 10, NULL), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "video: video is truncated or damaged") != NULL);
  CHECK(strchr(qvl_last_error(), '\n') == NULL);
  uint8_t noise[5000];
  memset(noise, 0x17, sizeof noise);
  CHECK_STATUS(qvl_request_add_video(r, noise, sizeof noise, NULL), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "not a supported container") != NULL);
  /* An MP4 whose header declares what its bytes do not hold: the first 4 KB. */
  CHECK_STATUS(qvl_request_add_video(r, clip, 4096, NULL), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strncmp(qvl_last_error(), "video: ", 7) == 0);
  /* An image is not a video, and a video not an image. */
  CHECK_STATUS(qvl_request_add_image(r, clip, len), QVL_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(qvl_request_add_video_file(r, "/nonexistent/clip.mp4", NULL), QVL_ERR_IO);
  CHECK(strstr(qvl_last_error(), "/nonexistent/clip.mp4") != NULL);
  CHECK_STATUS(qvl_request_add_video(r, NULL, 0, NULL), QVL_ERR_INVALID_ARGUMENT);
  /* Nothing was added: the request is the text turn it was, and answers. */
  CHECK_STATUS(qvl_request_add_text(r, "Hi"), QVL_OK);
  qvl_result res;
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
  CHECK(res.prompt_tokens < 20);
  qvl_result_free(&res);
  qvl_request_free(r);
  /* The same model still takes a good clip. */
  r = user_request(&rp, NULL);
  CHECK_STATUS(qvl_request_add_video(r, clip, len, NULL), QVL_OK);
  CHECK_STATUS(qvl_request_add_text(r, "Hi"), QVL_OK);
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
  CHECK(res.n_token_ids == 2);
  qvl_result_free(&res);
  qvl_request_free(r);
  free(clip);
}

/* A PDF of `pages` 2 x 2 inch pages (288 x 288 px at 144 dpi), each with a
 * filled box: header, objects, a cross-reference table with their true
 * offsets, trailer. */
static size_t write_pdf(char* out, size_t cap, int pages) {
  size_t offsets[64];
  int n = 0;
  size_t at = (size_t)snprintf(out, cap, "%%PDF-1.7\n");
  offsets[n++] = at;
  at += (size_t)snprintf(out + at, cap - at, "1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n");
  offsets[n++] = at;
  at += (size_t)snprintf(out + at, cap - at, "2 0 obj\n<< /Type /Pages /Count %d /Kids [", pages);
  for (int p = 0; p < pages; ++p) at += (size_t)snprintf(out + at, cap - at, " %d 0 R", 3 + 2 * p);
  at += (size_t)snprintf(out + at, cap - at, " ] >>\nendobj\n");
  for (int p = 0; p < pages; ++p) {
    char content[64];
    const int clen = snprintf(content, sizeof content, "0 0 0 rg %d 10 40 40 re f", 10 + 20 * p);
    offsets[n++] = at;
    at += (size_t)snprintf(out + at, cap - at,
                           "%d 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 144 144] /Contents %d 0 R >>\nendobj\n",
                           3 + 2 * p, 4 + 2 * p);
    offsets[n++] = at;
    at += (size_t)snprintf(out + at, cap - at, "%d 0 obj\n<< /Length %d >>\nstream\n%s\nendstream\nendobj\n",
                           4 + 2 * p, clen, content);
  }
  const size_t xref = at;
  at += (size_t)snprintf(out + at, cap - at, "xref\n0 %d\n0000000000 65535 f \n", n + 1);
  for (int i = 0; i < n; ++i) at += (size_t)snprintf(out + at, cap - at, "%010zu 00000 n \n", offsets[i]);
  at += (size_t)snprintf(out + at, cap - at, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%zu\n%%%%EOF\n", n + 1,
                         xref);
  return at;
}

static int64_t pdf_prompt_tokens(const char* pdf, size_t len, const char* pages) {
  qvl_request_params rp = greedy16();
  rp.max_tokens = 1;
  qvl_request* r = user_request(&rp, NULL);
  CHECK_STATUS(qvl_request_add_pdf(r, (const uint8_t*)pdf, len, pages, 0), QVL_OK);
  CHECK_STATUS(qvl_request_add_text(r, "Read the document."), QVL_OK);
  qvl_result res;
  int64_t tokens = -1;
  if (qvl_generate(model, r, NULL, NULL, &res) == QVL_OK) tokens = res.prompt_tokens;
  qvl_result_free(&res);
  qvl_request_free(r);
  return tokens;
}

static void test_pdf(void) {
  static char pdf[8192];
  const size_t len = write_pdf(pdf, sizeof pdf, 3);
  /* Each page is the same size: each adds the same image tokens. */
  const int64_t one = pdf_prompt_tokens(pdf, len, "2"), two = pdf_prompt_tokens(pdf, len, "1,3"),
                all = pdf_prompt_tokens(pdf, len, NULL);
  CHECK(one > 0 && two > one);
  CHECK(all - two == two - one);
  qvl_request_params rp = greedy16();
  qvl_request* r = user_request(&rp, NULL);
  CHECK_STATUS(qvl_request_add_pdf(r, (const uint8_t*)pdf, len, "2-4", 0), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "page 4 in '2-4' is past the end (the document has 3 pages)") != NULL);
  CHECK_STATUS(qvl_request_add_pdf(r, (const uint8_t*)pdf, len / 2, NULL, 0), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strncmp(qvl_last_error(), "PDF: ", 5) == 0);
  CHECK_STATUS(qvl_request_add_pdf(r, (const uint8_t*)pdf, len, NULL, 5000), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "dpi") != NULL);
  CHECK_STATUS(qvl_request_add_pdf_file(r, "/nonexistent/doc.pdf", NULL, 0), QVL_ERR_IO);
  CHECK(strstr(qvl_last_error(), "/nonexistent/doc.pdf") != NULL);
  qvl_request_free(r);
}

static void test_unsupported_schema_keyword(void) {
  qvl_request_params rp = qvl_request_default_params();
  rp.response_format = QVL_FORMAT_JSON_SCHEMA;
  rp.json_schema = "{\"type\":\"object\",\"properties\":{\"zip\":{\"type\":\"string\",\"pattern\":\"^[0-9]{5}$\"}}}";
  qvl_request* r = user_request(&rp, "Where?");
  qvl_result res;
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "pattern") != NULL);
  CHECK(res.text == NULL);
  qvl_request_free(r);
}

static void test_rgb_image(void) {
  enum { W = 40, H = 30, STRIDE = W * 3 + 8 };
  static uint8_t rgb[H * STRIDE];
  for (int i = 0; i < H * STRIDE; ++i) rgb[i] = (uint8_t)(i * 7);
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 0;
  rp.max_tokens = 3;
  qvl_request* r = user_request(&rp, NULL);
  CHECK_STATUS(qvl_request_add_image_rgb(r, rgb, W, H, STRIDE), QVL_OK);
  CHECK_STATUS(qvl_request_add_image_rgb(r, rgb, W, H, W), QVL_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(qvl_request_add_text(r, "What is this?"), QVL_OK);
  qvl_result res;
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
  CHECK(res.n_token_ids >= 1 && res.n_token_ids <= 3);
  CHECK(res.prompt_tokens > 20); /* the image's tokens */
  qvl_result_free(&res);
  qvl_request_free(r);
}

/* ---- cancel ---- */

struct cancel_state {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int pieces;
  qvl_request* request;
  qvl_status status;
  qvl_result result;
};

static int count_piece(const char* piece, size_t len, void* user_data) {
  struct cancel_state* s = (struct cancel_state*)user_data;
  (void)piece;
  (void)len;
  pthread_mutex_lock(&s->mu);
  ++s->pieces;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return 0;
}

static void* generate_thread(void* arg) {
  struct cancel_state* s = (struct cancel_state*)arg;
  s->status = qvl_generate(model, s->request, count_piece, s, &s->result);
  return NULL;
}

static void test_cancel(void) {
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 0;
  rp.ignore_eos = 1;
  rp.max_tokens = 3000;
  struct cancel_state s;
  memset(&s, 0, sizeof s);
  pthread_mutex_init(&s.mu, NULL);
  pthread_cond_init(&s.cv, NULL);
  s.request = user_request(&rp, "Count to a million.");
  pthread_t t;
  CHECK(pthread_create(&t, NULL, generate_thread, &s) == 0);
  pthread_mutex_lock(&s.mu);
  while (s.pieces < 2) pthread_cond_wait(&s.cv, &s.mu);
  pthread_mutex_unlock(&s.mu);
  qvl_request_cancel(s.request); /* from this thread, while the other decodes */
  pthread_join(t, NULL);
  CHECK_STATUS(s.status, QVL_ERR_CANCELLED);
  CHECK(s.result.finish_reason != NULL && strcmp(s.result.finish_reason, "cancelled") == 0);
  CHECK(s.result.n_token_ids >= 2 && s.result.n_token_ids < 3000);
  qvl_result_free(&s.result);
  qvl_request_free(s.request);
}

static int stop_at_once(const char* piece, size_t len, void* user_data) {
  (void)piece;
  (void)len;
  (void)user_data;
  return 1;
}

static void test_callback_stop(void) {
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 0;
  rp.ignore_eos = 1;
  rp.max_tokens = 200;
  qvl_request* r = user_request(&rp, "Count.");
  qvl_result res;
  CHECK_STATUS(qvl_generate(model, r, stop_at_once, NULL, &res), QVL_OK);
  CHECK(res.finish_reason && strcmp(res.finish_reason, "cancelled") == 0);
  CHECK(res.n_token_ids < 200);
  qvl_result_free(&res);
  qvl_request_free(r);
}

/* ---- constrained answers ---- */

static void test_json_schema(void) {
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 0;
  rp.max_tokens = 200;
  rp.response_format = QVL_FORMAT_JSON_SCHEMA;
  rp.json_schema =
      "{\"type\":\"object\",\"properties\":{\"color\":{\"enum\":[\"red\",\"green\"]},\"size\":{\"enum\":[1,2,3]}},"
      "\"required\":[\"color\",\"size\"],\"additionalProperties\":false}";
  qvl_request* r = user_request(&rp, "Pick a color and a size.");
  qvl_result res;
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
  if (res.text) {
    CHECK(strcmp(res.finish_reason, "stop") == 0);
    CHECK(res.text_len == strlen(res.text));
    CHECK(res.text[0] == '{' && res.text[res.text_len - 1] == '}');
    CHECK(strstr(res.text, "\"color\"") != NULL && strstr(res.text, "\"size\"") != NULL);
    CHECK(strstr(res.text, "\"red\"") != NULL || strstr(res.text, "\"green\"") != NULL);
    CHECK(strcmp(res.tool_calls_json, "[]") == 0);
  }
  qvl_result_free(&res);
  qvl_request_free(r);
}

static void test_required_tool_call(void) {
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 0;
  rp.max_tokens = 300;
  rp.tools_json =
      "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"The weather in a city\","
      "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"enum\":[\"Paris\",\"Rome\"]}},"
      "\"required\":[\"city\"],\"additionalProperties\":false}}}]";
  rp.tool_choice = QVL_TOOL_CHOICE_REQUIRED;
  rp.parallel_tool_calls = 0;
  qvl_request* r = user_request(&rp, "What is the weather in Paris?");
  qvl_result res;
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
  if (res.text) {
    CHECK(strcmp(res.finish_reason, "tool_calls") == 0);
    CHECK(strstr(res.tool_calls_json, "\"name\":\"get_weather\"") != NULL);
    CHECK(strstr(res.tool_calls_json, "\"id\":\"call_") != NULL);
    CHECK(strstr(res.tool_calls_json, "city") != NULL);
  }
  qvl_result_free(&res);
  qvl_request_free(r);

  /* The call replayed in the history, with the tool's answer. */
  rp.tool_choice = QVL_TOOL_CHOICE_AUTO;
  rp.max_tokens = 4;
  r = user_request(&rp, "What is the weather in Paris?");
  CHECK_STATUS(qvl_request_add_message(r, "assistant", NULL), QVL_OK);
  CHECK_STATUS(qvl_request_add_tool_call(r, "call_1", "get_weather", "{\"city\":\"Paris\"}"), QVL_OK);
  CHECK_STATUS(qvl_request_add_message(r, "tool", "{\"sky\":\"clear\"}"), QVL_OK);
  CHECK_STATUS(qvl_request_add_tool_call(r, "call_2", "get_weather", "{}"), QVL_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
  qvl_result_free(&res);
  qvl_request_free(r);
}

/* ---- n, logit_bias, logprobs, the repetition guard, deltas ---- */

static int same_tokens(const int32_t* a, size_t na, const int32_t* b, size_t nb) {
  return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

static void test_request_params_errors(void) {
  qvl_request_params rp = qvl_request_default_params();
  CHECK(rp.n == 1 && rp.top_logprobs == -1 && rp.repetition_guard == -1 && rp.repetition_guard_repeats == -1);
  qvl_request* r = NULL;
  rp.n = 0;
  CHECK_STATUS(qvl_request_init(&rp, &r), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strncmp(qvl_last_error(), "n:", 2) == 0);
  rp = qvl_request_default_params();
  rp.top_logprobs = -2;
  CHECK_STATUS(qvl_request_init(&rp, &r), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "top_logprobs") != NULL);
  rp = qvl_request_default_params();
  rp.repetition_guard_repeats = 1;
  CHECK_STATUS(qvl_request_init(&rp, &r), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "repetition_guard_repeats") != NULL);

  /* What only the model can check fails in qvl_generate, naming the field. */
  qvl_result res;
  rp = qvl_request_default_params();
  rp.n = 17;
  r = user_request(&rp, "Hi");
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "'n'") != NULL);
  CHECK(res.text == NULL && res.n_choices == 0 && qvl_result_choice(&res, 0) == NULL);
  qvl_request_free(r);
  rp = qvl_request_default_params();
  rp.top_logprobs = 21;
  r = user_request(&rp, "Hi");
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "top_logprobs") != NULL);
  qvl_request_free(r);

  r = user_request(NULL, "Hi");
  CHECK_STATUS(qvl_request_add_logit_bias(r, -1, 1), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "logit_bias") != NULL);
  CHECK_STATUS(qvl_request_add_logit_bias(r, 5, 101), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "logit_bias") != NULL);
  CHECK_STATUS(qvl_request_add_logit_bias(r, 5, NAN), QVL_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(qvl_request_add_logit_bias(r, 10000000, 1), QVL_OK); /* the vocabulary is the model's */
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "logit_bias") != NULL && strstr(qvl_last_error(), "10000000") != NULL);
  qvl_request_free(r);
}

/* Four greedy tokens of "Name three colors." (with each step's two
 * likeliest tokens), with a bias on each of `n` tokens. */
static void greedy_with_bias(const int32_t* tokens, const float* biases, size_t n, qvl_result* res) {
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 0;
  rp.max_tokens = 4;
  rp.ignore_eos = 1;
  rp.top_logprobs = 2;
  qvl_request* r = user_request(&rp, "Name three colors.");
  for (size_t i = 0; i < n; ++i) CHECK_STATUS(qvl_request_add_logit_bias(r, tokens[i], biases[i]), QVL_OK);
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, res), QVL_OK);
  qvl_request_free(r);
}

static void test_logit_bias(void) {
  qvl_result plain, res;
  greedy_with_bias(NULL, NULL, 0, &plain);
  CHECK(plain.n_token_ids == 4 && plain.n_choices == 1);
  if (plain.n_token_ids != 4) return;
  /* The first step's runner-up, forced: +100 outweighs its gap to the greedy token (random weights' logits
   * spread too far for +100 to force just any token). */
  const qvl_token_logprob* first = &qvl_result_choice(&plain, 0)->logprobs[0];
  CHECK(first->n_top == 2 && first->top[1].logprob > -50);
  const int32_t greedy = plain.token_ids[0], second = first->top[1].token_id;
  const float up = 100, down = -100, none = 0;
  greedy_with_bias(&second, &up, 1, &res);
  CHECK(res.n_token_ids == 4 && res.token_ids[0] == second);
  qvl_result_free(&res);
  greedy_with_bias(&greedy, &down, 1, &res);
  CHECK(res.n_token_ids == 4 && res.token_ids[0] != greedy);
  qvl_result_free(&res);
  /* A second bias for the same id replaces the first. */
  const int32_t twice[2] = {second, second};
  const float then_none[2] = {up, none};
  greedy_with_bias(twice, then_none, 2, &res);
  CHECK(same_tokens(res.token_ids, res.n_token_ids, plain.token_ids, plain.n_token_ids));
  qvl_result_free(&res);
  qvl_result_free(&plain);
}

/* A repetition penalty below 1 favours the tokens already seen, so random
 * weights fall into a loop at once; the guard (a window of 8) stops it, and
 * with the guard off the loop runs to max_tokens. */
static void test_repetition_guard(void) {
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 0;
  rp.max_tokens = 60;
  rp.ignore_eos = 1;
  rp.repetition_penalty = 0.01;
  rp.repetition_guard = 8;
  rp.repetition_guard_repeats = 2;
  qvl_request* r = user_request(&rp, "Name three colors.");
  qvl_result res;
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
  const qvl_choice* c = qvl_result_choice(&res, 0);
  CHECK(strcmp(res.finish_reason, "repetition") == 0 && res.n_token_ids >= 8 && res.n_token_ids < 60);
  CHECK(c && c->repetition_period >= 1 && strcmp(c->finish_reason, "repetition") == 0);
  qvl_result_free(&res);
  qvl_request_free(r);

  rp.repetition_guard = 0;
  rp.repetition_guard_repeats = -1;
  r = user_request(&rp, "Name three colors.");
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
  CHECK(strcmp(res.finish_reason, "length") == 0 && res.n_token_ids == 60);
  qvl_result_free(&res);
  qvl_request_free(r);
}

/* Random weights make the next token near certain at temperature 1: 5 spreads the draws. */
static qvl_result sampled(int32_t n, int32_t top_logprobs) {
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 5;
  rp.seed = 42;
  rp.max_tokens = 8;
  rp.ignore_eos = 1;
  rp.n = n;
  rp.top_logprobs = top_logprobs;
  qvl_request* r = user_request(&rp, "Tell me a story.");
  qvl_result res;
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
  qvl_request_free(r);
  return res;
}

static void test_n_choices(void) {
  qvl_result one = sampled(1, -1), three = sampled(3, -1);
  CHECK(one.n_choices == 1 && three.n_choices == 3);
  const qvl_choice* c0 = qvl_result_choice(&one, 0);
  CHECK(c0 != NULL && qvl_result_choice(&one, 1) == NULL);
  if (c0) {
    CHECK(same_tokens(c0->token_ids, c0->n_token_ids, one.token_ids, one.n_token_ids));
    CHECK(c0->text_len == one.text_len && strcmp(c0->text, one.text) == 0);
    CHECK(strcmp(c0->finish_reason, one.finish_reason) == 0 && strcmp(c0->tool_calls_json, "[]") == 0);
    CHECK(c0->logprobs == NULL && c0->n_logprobs == 0 && c0->repetition_period == 0);
  }
  /* Choice 0 of n = 3 is the n = 1 answer at that seed; the others are further draws. */
  CHECK(same_tokens(three.token_ids, three.n_token_ids, one.token_ids, one.n_token_ids));
  CHECK(strcmp(three.text, one.text) == 0);
  CHECK(three.completion_tokens == 24);
  CHECK(three.prompt_tokens == one.prompt_tokens);
  int differ = 0;
  for (size_t i = 0; i < 3; ++i) {
    const qvl_choice* c = qvl_result_choice(&three, i);
    CHECK(c != NULL);
    if (!c) continue;
    CHECK(c->n_token_ids == 8 && strcmp(c->finish_reason, "length") == 0);
    CHECK(c->text_len == strlen(c->text));
    if (i > 0) differ += !same_tokens(c->token_ids, c->n_token_ids, one.token_ids, one.n_token_ids);
  }
  CHECK(differ > 0);
  CHECK(qvl_result_choice(&three, 3) == NULL);
  qvl_result_free(&one);
  qvl_result_free(&three);
  CHECK(three.choices == NULL && qvl_result_choice(&three, 0) == NULL);
}

static void check_logprobs(const qvl_choice* c, size_t top, int greedy) {
  CHECK(c->logprobs != NULL && c->n_logprobs == c->n_token_ids);
  if (!c->logprobs) return;
  for (size_t i = 0; i < c->n_logprobs; ++i) {
    const qvl_token_logprob* t = &c->logprobs[i];
    CHECK(t->token.token_id == c->token_ids[i]);
    CHECK(t->token.logprob <= 0 && isfinite(t->token.logprob));
    CHECK(t->token.bytes != NULL && t->token.bytes[t->token.n_bytes] == '\0');
    CHECK(t->n_top == top);
    double mass = 0;
    int chosen_seen = 0;
    for (size_t k = 0; k < t->n_top; ++k) {
      const qvl_logprob* a = &t->top[k];
      CHECK(a->logprob <= 0);
      CHECK(k == 0 || a->logprob <= t->top[k - 1].logprob);
      CHECK(a->bytes != NULL && a->bytes[a->n_bytes] == '\0');
      mass += exp(a->logprob);
      if (a->token_id == t->token.token_id) {
        chosen_seen = 1;
        CHECK(a->logprob == t->token.logprob); /* one distribution */
      }
    }
    CHECK(mass <= 1.0 + 1e-4);
    if (greedy && t->n_top > 0) CHECK(t->top[0].token_id == t->token.token_id && chosen_seen);
  }
}

static void test_logprobs(void) {
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 0;
  rp.max_tokens = 6;
  rp.ignore_eos = 1;
  rp.top_logprobs = 2;
  qvl_request* r = user_request(&rp, "Name three colors.");
  qvl_result res;
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
  const qvl_choice* c = qvl_result_choice(&res, 0);
  CHECK(c != NULL && c->n_token_ids == 6);
  if (c) check_logprobs(c, 2, 1);
  qvl_result_free(&res);
  qvl_request_free(r);

  /* top_logprobs 0: the chosen token's logprob alone; sampled, for every choice. */
  res = sampled(2, 0);
  for (size_t i = 0; i < res.n_choices; ++i) check_logprobs(qvl_result_choice(&res, i), 0, 0);
  qvl_result_free(&res);
  res = sampled(2, 20);
  for (size_t i = 0; i < res.n_choices; ++i) check_logprobs(qvl_result_choice(&res, i), 20, 0);
  qvl_result_free(&res);
}

/* What qvl_generate_deltas delivered, per choice. */
struct deltas {
  char text[3][4096];
  size_t len[3];
  size_t logprobs[3];
  int32_t tokens[3][64];
  int bad;
};

static int collect_delta(const qvl_delta* d, void* user_data) {
  struct deltas* s = (struct deltas*)user_data;
  if (d->choice < 0 || d->choice >= 3 || s->len[d->choice] + d->text_len >= sizeof s->text[0]) {
    s->bad = 1;
    return 1;
  }
  memcpy(s->text[d->choice] + s->len[d->choice], d->text, d->text_len);
  s->len[d->choice] += d->text_len;
  if (d->logprob) {
    if (s->logprobs[d->choice] < 64) s->tokens[d->choice][s->logprobs[d->choice]] = d->logprob->token.token_id;
    ++s->logprobs[d->choice];
    if (d->logprob->n_top != 1 || d->logprob->top[0].logprob > 0) s->bad = 1;
  }
  return 0;
}

static void test_deltas(void) {
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 5;
  rp.seed = 42;
  rp.max_tokens = 8;
  rp.ignore_eos = 1;
  rp.n = 3;
  rp.top_logprobs = 1;
  qvl_request* r = user_request(&rp, "Tell me a story.");
  static struct deltas s;
  memset(&s, 0, sizeof s);
  qvl_result res;
  CHECK_STATUS(qvl_generate_deltas(model, r, collect_delta, &s, &res), QVL_OK);
  CHECK(!s.bad && res.n_choices == 3);
  for (size_t i = 0; i < res.n_choices && i < 3; ++i) {
    const qvl_choice* c = qvl_result_choice(&res, i);
    /* Every token came with its logprob; the pieces make up the text. */
    CHECK(s.logprobs[i] == c->n_token_ids && same_tokens(s.tokens[i], s.logprobs[i], c->token_ids, c->n_token_ids));
    CHECK(s.len[i] == c->text_len && memcmp(s.text[i], c->text, c->text_len) == 0);
  }
  qvl_result_free(&res);
  CHECK_STATUS(qvl_generate_deltas(model, r, NULL, NULL, &res), QVL_OK); /* no callback */
  CHECK(res.n_choices == 3);
  qvl_result_free(&res);
  qvl_request_free(r);
}

static int stop_second_choice(const qvl_delta* d, void* user_data) {
  (void)user_data;
  return d->choice == 1;
}

static void test_delta_stop(void) {
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 1;
  rp.seed = 1;
  rp.max_tokens = 200;
  rp.ignore_eos = 1;
  rp.n = 2;
  rp.top_logprobs = 0; /* a delta for every token, text or not */
  qvl_request* r = user_request(&rp, "Count.");
  qvl_result res;
  CHECK_STATUS(qvl_generate_deltas(model, r, stop_second_choice, NULL, &res), QVL_OK);
  CHECK(res.n_choices == 2 && strcmp(res.finish_reason, "cancelled") == 0);
  CHECK(res.completion_tokens < 400);
  qvl_result_free(&res);
  qvl_request_free(r);
}

static void test_json_schema_choices(void) {
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 1;
  rp.seed = 5;
  rp.max_tokens = 200;
  rp.n = 2;
  rp.response_format = QVL_FORMAT_JSON_SCHEMA;
  rp.json_schema =
      "{\"type\":\"object\",\"properties\":{\"color\":{\"enum\":[\"red\",\"green\"]}},"
      "\"required\":[\"color\"],\"additionalProperties\":false}";
  qvl_request* r = user_request(&rp, "Pick a color.");
  qvl_result res;
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
  CHECK(res.n_choices == 2);
  for (size_t i = 0; i < res.n_choices; ++i) {
    const qvl_choice* c = qvl_result_choice(&res, i);
    CHECK(strcmp(c->finish_reason, "stop") == 0);
    CHECK(c->text[0] == '{' && c->text[c->text_len - 1] == '}' && strstr(c->text, "\"color\"") != NULL);
    CHECK(strstr(c->text, "\"red\"") != NULL || strstr(c->text, "\"green\"") != NULL);
  }
  qvl_result_free(&res);
  qvl_request_free(r);
}

/* No format asked for: the rule qvl run applies too (docs/weights.md), bf16
 * for the 22.5 MB fixture unless the memory is small; QVL_MEMORY_BYTES stands
 * in for a small machine. */
static void test_default_weights(const char* path) {
  qvl_model_params mp = qvl_model_default_params();
  qvl_model* m = NULL;
  CHECK(mp.weights == QVL_WEIGHTS_AUTO);
  mp.threads = 2;
  mp.ctx_size = 256;
  CHECK_STATUS(qvl_model_load(path, &mp, &m), QVL_OK);
  CHECK(qvl_model_weights(m) == QVL_WEIGHTS_BF16);
  qvl_model_free(m);
  setenv("QVL_MEMORY_BYTES", "30000000", 1);
  CHECK_STATUS(qvl_model_load(path, &mp, &m), QVL_OK);
  CHECK(qvl_model_weights(m) == QVL_WEIGHTS_Q8);
  qvl_model_free(m);
  unsetenv("QVL_MEMORY_BYTES");
  mp.weights = QVL_WEIGHTS_Q4;
  CHECK_STATUS(qvl_model_load(path, &mp, &m), QVL_OK);
  CHECK(qvl_model_weights(m) == QVL_WEIGHTS_Q4);
  qvl_model_free(m);
  CHECK(qvl_model_weights(NULL) == QVL_WEIGHTS_AUTO);
}

/* A Thinking model's answer, streamed: the reasoning and the reply apart. */
struct split {
  char reasoning[8192], text[8192];
  size_t reasoning_len, text_len;
  int bad;
};

static void append(char* to, size_t* len, const char* piece, size_t n, int* bad) {
  if (*len + n >= 8192) {
    *bad = 1;
    return;
  }
  memcpy(to + *len, piece, n);
  *len += n;
}

static int collect_split(const qvl_delta* d, void* user_data) {
  struct split* s = (struct split*)user_data;
  if (d->choice != 0 || (d->reasoning_len > 0 && !d->reasoning)) s->bad = 1;
  append(s->text, &s->text_len, d->text, d->text_len, &s->bad);
  if (d->reasoning_len) append(s->reasoning, &s->reasoning_len, d->reasoning, d->reasoning_len, &s->bad);
  return 0;
}

static int collect_text(const char* piece, size_t len, void* user_data) {
  struct split* s = (struct split*)user_data;
  append(s->text, &s->text_len, piece, len, &s->bad);
  return 0;
}

static void test_reasoning(const char* thinking_path) {
  /* An Instruct model: no reasoning, and a budget is refused by name. */
  CHECK(!qvl_model_thinking(model));
  qvl_request_params rp = greedy16();
  rp.max_tokens = 4;
  qvl_request* r = user_request(&rp, "Hello.");
  qvl_result res;
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_OK);
  CHECK(res.reasoning == NULL && res.reasoning_len == 0 && res.reasoning_tokens == 0);
  CHECK(qvl_result_choice(&res, 0)->reasoning == NULL);
  qvl_result_free(&res);
  qvl_request_free(r);
  rp.reasoning_budget = 3;
  r = user_request(&rp, "Hello.");
  CHECK_STATUS(qvl_generate(model, r, NULL, NULL, &res), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "reasoning_budget") != NULL);
  qvl_request_free(r);
  rp.reasoning_budget = -2;
  r = NULL;
  CHECK_STATUS(qvl_request_init(&rp, &r), QVL_ERR_INVALID_ARGUMENT);
  CHECK(r == NULL && strstr(qvl_last_error(), "reasoning_budget") != NULL);

  /* A Thinking model: "</think>" forced after 3 reasoning tokens, then the
   * reply. The result holds the two apart, the deltas stream each on its
   * side, and on_text gets the reply only, as result.text holds it. */
  qvl_model_params mp = qvl_model_default_params();
  mp.threads = 2;
  mp.ctx_size = 1024;
  qvl_model* thinking = NULL;
  CHECK_STATUS(qvl_model_load(thinking_path, &mp, &thinking), QVL_OK);
  if (!thinking) return;
  CHECK(qvl_model_thinking(thinking));
  rp = greedy16();
  rp.max_tokens = 12;
  rp.reasoning_budget = 3;
  r = user_request(&rp, "What is two plus two?");
  static struct split s;
  memset(&s, 0, sizeof s);
  CHECK_STATUS(qvl_generate_deltas(thinking, r, collect_split, &s, &res), QVL_OK);
  CHECK(!s.bad);
  CHECK(res.reasoning != NULL && res.reasoning_tokens == 3);
  CHECK(res.n_token_ids == 12);
  if (res.reasoning) {
    CHECK(strlen(res.reasoning) == res.reasoning_len && strstr(res.reasoning, "</think>") == NULL);
    CHECK(s.reasoning_len == res.reasoning_len && memcmp(s.reasoning, res.reasoning, res.reasoning_len) == 0);
  }
  CHECK(strstr(res.text, "</think>") == NULL);
  CHECK(s.text_len == res.text_len && memcmp(s.text, res.text, res.text_len) == 0);
  const qvl_choice* c = qvl_result_choice(&res, 0);
  CHECK(c && c->reasoning_tokens == 3 && c->reasoning_len == res.reasoning_len);
  if (c && c->reasoning && res.reasoning) CHECK(memcmp(c->reasoning, res.reasoning, res.reasoning_len) == 0);
  char text[8192];
  const size_t text_len = res.text_len < sizeof text ? res.text_len : sizeof text - 1;
  memcpy(text, res.text, text_len);
  qvl_result_free(&res);

  memset(&s, 0, sizeof s);
  CHECK_STATUS(qvl_generate(thinking, r, collect_text, &s, &res), QVL_OK);
  CHECK(!s.bad && s.text_len == text_len && memcmp(s.text, text, text_len) == 0);
  CHECK(res.text_len == text_len && res.reasoning_tokens == 3);
  qvl_result_free(&res);
  qvl_request_free(r);
  qvl_model_free(thinking);
}

/* qvl_embed and qvl_rerank (0.5) with the tiny model used as Qwen3-VL-Embedding
 * / -Reranker: components of the golden vectors and the golden reranker logit
 * (tests/fixtures/golden-embed/manifest.json: query_default, query_instruction
 * and its mrl.16, calibrated_text), the per-input instruction as a system
 * message, and the errors. */
static void test_retrieval(void) {
  static const char* kQuery = "A woman playing with her dog on a beach at sunset.";
  static const float kDefault[4] = {0.11906742f, -0.06644130f, -0.26109821f, 0.04906538f};
  static const float kInstructionMrl16[4] = {0.20914462f, 0.20873556f, -0.19732839f, -0.35594591f};
  CHECK(qvl_model_hidden_size(model) == 64);
  qvl_request_params rp = qvl_request_default_params();
  qvl_request* inputs[2];
  inputs[0] = user_request(&rp, kQuery);
  CHECK_STATUS(qvl_request_init(&rp, &inputs[1]), QVL_OK);
  CHECK_STATUS(qvl_request_add_message(inputs[1], "system", "Retrieve images or text relevant to the user's query"),
               QVL_OK);
  CHECK_STATUS(qvl_request_add_message(inputs[1], "user", kQuery), QVL_OK);
  float out[2 * 64];
  int64_t tokens[2] = {0, 0};
  qvl_embed_params ep = qvl_embed_default_params();
  CHECK_STATUS(qvl_embed(model, inputs, 2, &ep, out, 2 * 64, tokens), QVL_OK);
  for (int i = 0; i < 4; ++i) CHECK(fabsf(out[i] - kDefault[i]) <= 1e-3f);
  CHECK(tokens[0] == 31 && tokens[1] == 36);
  ep.dimensions = 16;
  CHECK_STATUS(qvl_embed(model, inputs + 1, 1, &ep, out, 16, NULL), QVL_OK);
  for (int i = 0; i < 4; ++i) CHECK(fabsf(out[i] - kInstructionMrl16[i]) <= 1e-3f);
  CHECK_STATUS(qvl_embed(model, inputs, 2, &ep, out, 31, NULL), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "out_len") != NULL);
  ep.dimensions = 65;
  CHECK_STATUS(qvl_embed(model, inputs, 1, &ep, out, 2 * 64, NULL), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "dimensions") != NULL);

  qvl_request* doc = user_request(&rp, "A dog plays near the shore at dusk.");
  double score = 0, logit = 0;
  CHECK_STATUS(qvl_rerank(model, inputs[0], &doc, 1, NULL, &score, &logit), QVL_OK);
  CHECK(fabs(logit - -0.56478) <= 0.1);
  CHECK(fabs(score - 0.36244) <= 0.025);
  CHECK_STATUS(qvl_rerank(model, inputs[0], &doc, 0, NULL, &score, NULL), QVL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(qvl_last_error(), "documents") != NULL);
  qvl_request_free(doc);
  qvl_request_free(inputs[0]);
  qvl_request_free(inputs[1]);
}

/* memory_budget: the tiny model's KV caches are ctx_size x 4 layers x K and V
 * x 64 f32 values (2 MiB at 1024); a 1024x768 image holds 2359296 bytes. */
static void test_memory_budget(const char* path) {
  enum { W = 1024, H = 768, KV_1024 = 1024 * 4 * 2 * 64 * 4 };
  qvl_model_params mp = qvl_model_default_params();
  qvl_model* m = NULL;
  CHECK(mp.memory_budget == 0);
  mp.weights = QVL_WEIGHTS_BF16;
  mp.threads = 1;
  mp.ctx_size = 8192;
  mp.memory_budget = 8 << 20;
  CHECK_STATUS(qvl_model_load(path, &mp, &m), QVL_ERR_OUT_OF_MEMORY);
  CHECK(m == NULL);
  CHECK(strcmp(qvl_last_error(),
               "the KV caches of --ctx-size 8192 (f32) need 16777216 bytes (16 MiB), over the memory budget of "
               "8388608 bytes (--memory-budget); lower --ctx-size, use --kv-type f16, or raise --memory-budget "
               "(qvl_model_params.memory_budget)") == 0);
  mp.memory_budget = 1000;
  CHECK_STATUS(qvl_model_load(path, &mp, &m), QVL_ERR_INVALID_ARGUMENT);

  mp.ctx_size = 1024;
  mp.memory_budget = KV_1024 + (1 << 20);
  CHECK_STATUS(qvl_model_load(path, &mp, &m), QVL_OK);
  if (!m) return;
  uint8_t* rgb = calloc((size_t)W * H * 3, 1);
  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = 0;
  rp.max_tokens = 1;
  qvl_request* r = user_request(&rp, NULL);
  CHECK_STATUS(qvl_request_add_image_rgb(r, rgb, W, H, W * 3), QVL_OK);
  CHECK_STATUS(qvl_request_add_text(r, "What is this?"), QVL_OK);
  qvl_result res;
  CHECK_STATUS(qvl_generate(m, r, NULL, NULL, &res), QVL_ERR_OUT_OF_MEMORY);
  CHECK(strcmp(qvl_last_error(),
               "the request's images and videos take 2359296 bytes decoded, over the 1048576 bytes (1 MiB) the "
               "memory budget leaves beside the KV caches; send smaller or fewer, or raise "
               "qvl_model_params.memory_budget") == 0);
  CHECK(res.text == NULL);
  qvl_request_free(r);
  /* n = 16 choices of up to 200 tokens: 15 more KV caches, each over 2048 bytes a position, over 1 MiB. */
  rp.n = 16;
  rp.max_tokens = 200;
  r = user_request(&rp, "Hi");
  CHECK_STATUS(qvl_generate(m, r, NULL, NULL, &res), QVL_ERR_OUT_OF_MEMORY);
  CHECK(strncmp(qvl_last_error(), "n: the KV caches of the 15 choices after the first need up to ", 62) == 0);
  CHECK(strstr(qvl_last_error(), "(qvl_model_params.memory_budget)") != NULL);
  qvl_request_free(r);
  rp.n = 1;
  rp.max_tokens = 1;
  /* The model answers on. */
  r = user_request(&rp, "Hi");
  CHECK_STATUS(qvl_generate(m, r, NULL, NULL, &res), QVL_OK);
  qvl_result_free(&res);
  qvl_request_free(r);
  qvl_model_free(m);
  free(rgb);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s FIXTURES_DIR THINKING_MODEL_DIR\n", argv[0]);
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/tiny-qwen3vl", argv[1]);
  CHECK(strlen(qvl_version()) > 0);
  CHECK(strcmp(qvl_status_name(QVL_ERR_IO), "QVL_ERR_IO") == 0);

  test_errors(argv[1]);
  test_default_weights(path);
  test_memory_budget(path);
  qvl_model_params mp = qvl_model_default_params();
  mp.threads = 2;
  mp.ctx_size = 4096;
  CHECK_STATUS(qvl_model_load(path, &mp, &model), QVL_OK);
  if (!model) return 1;
  test_unsupported_schema_keyword();
  test_rgb_image();
  test_cancel();
  test_callback_stop();
  test_json_schema();
  test_required_tool_call();
  test_request_params_errors();
  test_logit_bias();
  test_repetition_guard();
  test_n_choices();
  test_logprobs();
  test_deltas();
  test_delta_stop();
  test_json_schema_choices();
  test_video_goldens(argv[1]);
  test_video_params(argv[1]);
  test_hostile_video(argv[1]);
  test_pdf();
  test_reasoning(argv[2]);
  test_retrieval();
  qvl_model_free(model);
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  else printf("all C API checks passed\n");
  return failures ? 1 : 0;
}
