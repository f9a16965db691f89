/* The C API from C99 against the tiny random-weight model: errors carry a
 * status and a message naming what failed, cancel works from another thread,
 * a JSON-schema answer and a required tool call come back complete.
 *
 *   test_capi FIXTURES_DIR
 */
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

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FIXTURES_DIR\n", argv[0]);
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/tiny-qwen3vl", argv[1]);
  CHECK(strlen(qvl_version()) > 0);
  CHECK(strcmp(qvl_status_name(QVL_ERR_IO), "QVL_ERR_IO") == 0);

  test_errors(argv[1]);
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
  qvl_model_free(model);
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  else printf("all C API checks passed\n");
  return failures ? 1 : 0;
}
