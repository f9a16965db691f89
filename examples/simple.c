/* simple: the C API in one page. Loads a model, asks one question (about an
 * image, if given) and streams the answer to stdout.
 *
 *   simple MODEL [-i IMAGE] [-p PROMPT] [-n MAX_TOKENS] [-t TEMPERATURE] [-v]
 *
 * MODEL is a model folder or a Hugging Face repo id. -v prints the token ids
 * and the finish reason on stderr after the answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qvl.h"

static int print_piece(const char* piece, size_t len, void* user_data) {
  (void)user_data;
  fwrite(piece, 1, len, stdout);
  fflush(stdout);
  return 0; /* non-zero would stop the answer */
}

static void usage(const char* argv0) {
  fprintf(stderr,
          "usage: %s MODEL [-i IMAGE] [-p PROMPT] [-n MAX_TOKENS] [-t TEMPERATURE] [-v]\n"
          "  MODEL  a model folder or a Hugging Face repo id (Qwen/Qwen3-VL-2B-Instruct)\n"
          "  -i     an image file (JPEG, PNG, WebP, BMP, GIF)\n"
          "  -p     the question (default: \"Describe the image.\" with -i, else \"Hello!\")\n"
          "  -n     most tokens to answer with (default 256)\n"
          "  -t     sampling temperature (default 0: greedy)\n"
          "  -v     token ids and finish reason on stderr\n"
          "libqvl %s\n",
          argv0, qvl_version());
}

static int fail(const char* what, qvl_status status) {
  fprintf(stderr, "%s: %s: %s\n", what, qvl_status_name(status), qvl_last_error());
  return 1;
}

int main(int argc, char** argv) {
  const char* model_path = NULL;
  const char* image = NULL;
  const char* prompt = NULL;
  long max_tokens = 256;
  double temperature = 0;
  int verbose = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(argv[0]);
      return 0;
    } else if (strcmp(a, "-v") == 0) {
      verbose = 1;
    } else if (a[0] == '-' && a[1] && !a[2] && strchr("ipnt", a[1]) && i + 1 < argc) {
      const char* v = argv[++i];
      if (a[1] == 'i') image = v;
      else if (a[1] == 'p') prompt = v;
      else if (a[1] == 'n') max_tokens = strtol(v, NULL, 10);
      else temperature = strtod(v, NULL);
    } else if (a[0] != '-' && !model_path) {
      model_path = a;
    } else {
      usage(argv[0]);
      return 2;
    }
  }
  if (!model_path) {
    usage(argv[0]);
    return 2;
  }
  if (!prompt) prompt = image ? "Describe the image." : "Hello!";

  qvl_model_params mp = qvl_model_default_params();
  qvl_model* model = NULL;
  qvl_status st = qvl_model_load(model_path, &mp, &model);
  if (st != QVL_OK) return fail("load", st);

  qvl_request_params rp = qvl_request_default_params();
  rp.temperature = temperature;
  rp.max_tokens = max_tokens;
  qvl_request* req = NULL;
  if ((st = qvl_request_init(&rp, &req)) != QVL_OK ||
      (st = qvl_request_add_message(req, "user", NULL)) != QVL_OK ||
      (image && (st = qvl_request_add_image_file(req, image)) != QVL_OK) ||
      (st = qvl_request_add_text(req, prompt)) != QVL_OK) {
    qvl_request_free(req);
    qvl_model_free(model);
    return fail("request", st);
  }

  qvl_result res;
  st = qvl_generate(model, req, print_piece, NULL, &res);
  if (st != QVL_OK) {
    qvl_request_free(req);
    qvl_model_free(model);
    return fail("generate", st);
  }
  fputc('\n', stdout);
  if (verbose) {
    fprintf(stderr, "token ids:");
    for (size_t i = 0; i < res.n_token_ids; ++i) fprintf(stderr, " %d", (int)res.token_ids[i]);
    fprintf(stderr, "\nfinish reason: %s\nprompt tokens: %lld, completion tokens: %lld\n", res.finish_reason,
            (long long)res.prompt_tokens, (long long)res.completion_tokens);
  }
  qvl_result_free(&res);
  qvl_request_free(req);
  qvl_model_free(model);
  return 0;
}
