// POST /v1/embeddings (OpenAI's shape, plus `instruction`, the official
// scripts' multimodal input objects and vLLM's chat-style `messages`) and
// POST /v1/rerank (Jina / Cohere / vLLM: query, documents, top_n,
// return_documents), for a server started with --task embed or --task rerank
// (or on a folder that ships the Qwen3-VL-Embedding / -Reranker script).
//
// Media in the inputs follow the chat rules: each input object becomes a
// one-message chat request (parse_chat_request and take_chat_media fetch and decode its
// images and videos under the same limits and admission), whose refusals are
// renamed after the input's field. The engine runs on the request's thread,
// one call at a time (retrieval_mutex): such a server queues no generation
// (prepare_chat refuses it), so nothing else drives the engine.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "engine/retrieval.h"
#include "server/media/base64.h"
#include "server/media/chat_media.h"
#include "server/requests/request_fields.h"
#include "server/server_core.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qvl {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

const char* use_of(ModelTask t) {
  switch (t) {
    case ModelTask::Chat: return "chat (POST /v1/chat/completions, /v1/responses, /v1/jobs)";
    case ModelTask::Embed: return "embeddings (POST /v1/embeddings)";
    case ModelTask::Rerank: return "reranking (POST /v1/rerank)";
  }
  return "?";
}

// A URL or a list of URLs.
std::vector<const ojson*> values_of(const RequestField& v) {
  std::vector<RequestField> urls;
  if (v.value().is_array()) {
    for (size_t i = 0; i < v.size(); ++i) urls.push_back(v[i]);
  } else {
    urls.push_back(v);
  }
  std::vector<const ojson*> out;
  for (const RequestField& url : urls) {
    if (!url.value().is_string()) url.wrong_type("a string (a URL or a data: URL)");
    out.push_back(&url.value());
  }
  return out;
}

// An input of the official scripts' shape, {"text", "image", "video",
// "instruction"} (each of the first three a value or a list), fetched and
// decoded as a one-message chat request, in the scripts' order.
RetrievalInput object_input(const ojson& item_json, const std::string& param, const ChatLimits& limits,
                            MemoryAdmission* admission, bool with_instruction) {
  const RequestField item(item_json, param);
  if (with_instruction) item.only_keys({"text", "image", "video", "instruction"});
  else item.only_keys({"text", "image", "video"});
  ojson content = ojson::array();
  std::vector<std::string> names;  // the field each content part came from
  if (const auto v = item_json.find("video"); v != item_json.end()) {
    for (const ojson* url : values_of(RequestField(*v, item.path_of("video")))) {
      content.push_back({{"type", "video"}, {"video", *url}});
      names.push_back(v->is_array() ? cat(param, ".video[", names.size(), "]") : param + ".video");
    }
  }
  const size_t videos = names.size();
  if (const auto v = item_json.find("image"); v != item_json.end()) {
    for (const ojson* url : values_of(RequestField(*v, item.path_of("image")))) {
      content.push_back({{"type", "image_url"}, {"image_url", {{"url", *url}}}});
      names.push_back(v->is_array() ? cat(param, ".image[", names.size() - videos, "]") : param + ".image");
    }
  }
  RetrievalInput in;
  if (const auto v = item_json.find("text"); v != item_json.end()) {
    const RequestField text(*v, item.path_of("text"));
    if (v->is_string()) {
      in.texts.push_back(text.string());
    } else if (v->is_array()) {
      for (size_t i = 0; i < v->size(); ++i) in.texts.push_back(text[i].string());
    } else {
      text.wrong_type("a string or an array of strings");
    }
  }
  if (const auto v = item_json.find("instruction"); v != item_json.end())
    in.instruction = RequestField(*v, item.path_of("instruction")).string();
  if (content.empty()) return in;
  ChatRequest cr;
  try {
    cr = parse_chat_request({{"messages", ojson::array({{{"role", "user"}, {"content", content}}})}}, limits);
    take_chat_media(cr, limits, admission);
  } catch (const ApiError& e) {
    // "messages[0].content[k]…" is the input's field k.
    std::string p = e.param();
    const std::string prefix = "messages[0].content[";
    if (p.rfind(prefix, 0) == 0) {
      const size_t close = p.find(']', prefix.size());
      const size_t k = std::stoul(p.substr(prefix.size(), close - prefix.size()));
      p = k < names.size() ? names[k] : param;  // the part's own sub-fields (image_url.url) are the chat shape's
    } else {
      p = param;
    }
    std::string message = e.what();
    for (size_t at; (at = message.find("messages[0].content[")) != std::string::npos;) message.replace(at, 20, "part [");
    throw ApiError(e.status(), e.code(), message, p);
  }
  for (const MessagePart& part : cr.generate.messages.at(0).parts) {
    if (part.video) in.videos.push_back(part.video);
    else if (part.image) in.images.push_back(part.image);
  }
  return in;
}

// A string, a token array (decoded with the model's tokenizer: the text it
// stands for), or an input object.
RetrievalInput one_input(const ojson& item, const std::string& param, const ChatLimits& limits,
                         MemoryAdmission* admission, const Tokenizer& tokenizer) {
  RetrievalInput in;
  if (item.is_string()) {
    if (item.get_ref<const std::string&>().empty())
      bad_request(param, "an input text is empty; give the text to embed", "empty_input");
    in.texts.push_back(item.get<std::string>());
  } else if (item.is_array()) {
    if (item.empty()) bad_request(param, "a token array is empty", "empty_input");
    std::vector<int32_t> ids;
    const RequestField tokens(item, param);
    for (size_t k = 0; k < item.size(); ++k)
      ids.push_back(static_cast<int32_t>(tokens[k].integer(0, int64_t(tokenizer.vocab_size()) - 1)));
    in.texts.push_back(tokenizer.decode(ids));
  } else if (item.is_object()) {
    in = object_input(item, param, limits, admission, true);
  } else {
    RequestField(item, param).wrong_type("a string, an array of token ids or an object {text, image, video, instruction}");
  }
  return in;
}

std::vector<RetrievalInput> embedding_inputs(const ojson& input, const ChatLimits& limits, MemoryAdmission* admission,
                                             const Tokenizer& tokenizer, int max_inputs) {
  if (input.is_string() || input.is_object()) return {one_input(input, "input", limits, admission, tokenizer)};
  if (!input.is_array())
    RequestField(input, "input").wrong_type("a string, an array of strings or token arrays, or input objects");
  if (input.empty()) bad_request("input", "'input' is empty: give at least one input", "empty_input");
  // An array of integers is one token array (OpenAI's shape); otherwise each element is an input.
  if (std::all_of(input.begin(), input.end(), [](const ojson& x) { return x.is_number(); }))
    return {one_input(input, "input", limits, admission, tokenizer)};
  if (static_cast<int64_t>(input.size()) > max_inputs)
    throw ApiError(413, "too_many_inputs",
                   cat("'input' has ", input.size(), " items, over the server's limit of ", max_inputs,
                       " (--max-embedding-inputs)"),
                   "input");
  std::vector<RetrievalInput> out;
  for (size_t i = 0; i < input.size(); ++i)
    out.push_back(one_input(input[i], cat("input[", i, "]"), limits, admission, tokenizer));
  return out;
}

// Little-endian float32 bytes, base64 (OpenAI's encoding_format "base64").
std::string base64_floats(const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());  // x86-64 and arm64 are little-endian
  return base64_encode(bytes);
}

// The retrieval routes' handlers, over the core they read the engine and
// the limits from.
class RetrievalRoutes {
 public:
  explicit RetrievalRoutes(ServerCore& core) : core_(core) {}

  // POST /v1/embeddings: one vector per input, or one for a chat's messages.
  void embeddings(HttpRequest& req, HttpResponse& res) const;
  // POST /v1/rerank: the documents scored against the query, best first.
  void reranking(HttpRequest& req, HttpResponse& res) const;

 private:
  ServerCore& core_;
};

void RetrievalRoutes::embeddings(HttpRequest& req, HttpResponse& res) const {
  auto rec = core_.record(req);
  const ojson body_json = core_.parse_body(req);
  const RequestField body(body_json);
  body.object();
  core_.require_task(ModelTask::Embed);
  body.only_keys({"model", "input", "messages", "dimensions", "encoding_format", "instruction", "user",
                  "add_generation_prompt"});
  const bool has_input = body.has("input"), has_messages = body.has("messages");
  if (has_input == has_messages)
    bad_request(has_input ? "messages" : "input", "give exactly one of 'input' and 'messages'",
                has_input ? "invalid_value" : "missing_field");
  EmbedOptions eo;
  if (const std::optional<RequestField> dims = body.find("dimensions")) {
    eo.dimensions = dims->integer(INT64_MIN, INT64_MAX);
    if (eo.dimensions < 1 || eo.dimensions > core_.engine->info().hidden_size)
      dims->refuse(cat("'dimensions' must be in [1, ", core_.engine->info().hidden_size,
                       "] for this model (its hidden size), got ", eo.dimensions));
  }
  std::string format = "float";
  if (const std::string* f = body.optional_string("encoding_format")) {
    format = *f;
    if (format != "float" && format != "base64")
      bad_request("encoding_format", cat("'encoding_format' must be \"float\" or \"base64\", got \"",
                                         format.substr(0, 40), "\""));
  }
  if (const std::string* i = body.optional_string("instruction")) eo.instruction = *i;
  if (auto a = body.find("add_generation_prompt"); a && a->value() != true)
    a->refuse("the embedding is the state after the generation prompt (the official scripts' pooling); only true "
              "is honoured");
  const std::string* model = body.optional_string("model");
  body.optional_string("user");

  std::vector<std::vector<float>> vectors;
  std::vector<int64_t> tokens;
  try {
    if (has_messages) {
      if (eo.instruction) bad_request("instruction", "'instruction' goes with 'input'; with 'messages' the "
                                                          "system message is the instruction");
      ChatRequest cr = parse_chat_request({{"messages", body_json.at("messages")}}, core_.chat_limits);
      take_chat_media(cr, core_.chat_limits, &core_.memory_admission);
      PoolRequest pool;
      pool.prompts.push_back(std::move(cr.generate.messages));
      pool.min_pixels = kRetrievalMinPixels;
      pool.max_pixels = kRetrievalMaxPixels;
      std::lock_guard lock(core_.retrieval_mutex);
      const PoolResult r = core_.engine->last_hidden_states(pool);
      vectors.push_back(normalized_prefix(r.state(0), eo.dimensions));
      tokens = r.prompt_tokens;
    } else {
      const std::vector<RetrievalInput> inputs = embedding_inputs(body_json.at("input"), core_.chat_limits,
                                                                  &core_.memory_admission, core_.engine->tokenizer(),
                                                                  core_.options.max_embedding_inputs);
      std::lock_guard lock(core_.retrieval_mutex);
      EmbedResult r = embed(*core_.engine, inputs, eo);
      vectors = std::move(r.embeddings);
      tokens = std::move(r.prompt_tokens);
    }
  } catch (const FieldError& e) {
    throw ApiError(400, "invalid_value", e.what(), has_messages && e.field() == "input" ? "messages" : e.field());
  } catch (const Error& e) {
    // The prompt or an image the processor refuses (an extreme aspect ratio).
    throw ApiError(400, "invalid_input", e.what(), has_messages ? "messages" : "input");
  }
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    json item = {{"object", "embedding"}, {"index", i}};
    if (format == "base64") item["embedding"] = base64_floats(vectors[i]);
    else item["embedding"] = vectors[i];
    data.push_back(std::move(item));
  }
  const int64_t total = std::accumulate(tokens.begin(), tokens.end(), int64_t{0});
  {
    std::lock_guard lock(rec->mutex);
    rec->fields["inputs"] = vectors.size();
    rec->fields["prompt_tokens"] = total;
  }
  reply_json(res, 200,
             {{"object", "list"},
              {"data", std::move(data)},
              {"model", model ? *model : core_.model_name},
              {"usage", {{"prompt_tokens", total}, {"total_tokens", total}}}});
}

void RetrievalRoutes::reranking(HttpRequest& req, HttpResponse& res) const {
  auto rec = core_.record(req);
  const ojson body_json = core_.parse_body(req);
  const RequestField body(body_json);
  body.object();
  core_.require_task(ModelTask::Rerank);
  body.only_keys({"model", "query", "documents", "instruction", "top_n", "return_documents", "user"});
  const RequestField query_field = body.at("query");
  const ojson& docs = body.at("documents").array().value();
  if (docs.empty()) bad_request("documents", "'documents' is empty: give at least one document", "empty_input");
  if (static_cast<int64_t>(docs.size()) > core_.options.max_rerank_documents)
    throw ApiError(413, "too_many_documents",
                   cat("'documents' has ", docs.size(), " items, over the server's limit of ",
                       core_.options.max_rerank_documents, " (--max-rerank-documents)"),
                   "documents");
  RerankOptions ro;
  if (const std::string* i = body.optional_string("instruction")) ro.instruction = *i;
  int64_t top_n = static_cast<int64_t>(docs.size());
  if (const std::optional<RequestField> n = body.find("top_n")) {
    top_n = n->integer(INT64_MIN, INT64_MAX);
    if (top_n < 1) n->refuse(cat("'top_n' must be at least 1, got ", top_n));
    top_n = std::min<int64_t>(top_n, docs.size());
  }
  const bool return_documents = body.boolean("return_documents", false);
  const std::string* model = body.optional_string("model");
  body.optional_string("user");
  auto side = [&](const RequestField& v) {
    RetrievalInput in;
    if (v.value().is_string()) in.texts.push_back(v.string());
    else if (v.value().is_object())
      in = object_input(v.value(), v.path(), core_.chat_limits, &core_.memory_admission, false);
    else v.wrong_type("a string or an object {text, image, video}");
    return in;
  };
  const RetrievalInput query = side(query_field);
  std::vector<RetrievalInput> documents;
  for (size_t i = 0; i < docs.size(); ++i) documents.push_back(side(body.at("documents")[i]));
  RerankResult r;
  try {
    std::lock_guard lock(core_.retrieval_mutex);
    r = rerank(*core_.engine, query, documents, ro);
  } catch (const FieldError& e) {
    throw ApiError(400, "invalid_value", e.what(), e.field() == "input" ? "documents" : e.field());
  } catch (const Error& e) {
    throw ApiError(400, "invalid_input", e.what(), "documents");
  }
  std::vector<size_t> order(r.scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return r.scores[a].score > r.scores[b].score; });
  order.resize(top_n);
  json results = json::array();
  for (size_t i : order) {
    json item = {{"index", i}, {"relevance_score", r.scores[i].score}};
    if (return_documents) item["document"] = docs[i].is_string() ? json{{"text", docs[i]}} : json(docs[i]);
    results.push_back(std::move(item));
  }
  int64_t total = 0;
  for (const RerankScore& s : r.scores) total += s.prompt_tokens;
  {
    std::lock_guard lock(rec->mutex);
    rec->fields["documents"] = docs.size();
    rec->fields["prompt_tokens"] = total;
  }
  reply_json(res, 200,
             {{"id", "rerank-" + rec->id},
              {"model", model ? *model : core_.model_name},
              {"results", std::move(results)},
              {"usage", {{"prompt_tokens", total}, {"total_tokens", total}}}});
}

}  // namespace

void ServerCore::require_task(ModelTask wanted) const {
  if (task == wanted) return;
  throw ApiError(400, "wrong_task",
                 cat("this server serves ", use_of(task), " (--task ", task_name(task), "), not ", use_of(wanted),
                     "; start a server with --task ", task_name(wanted), " and a ",
                     wanted == ModelTask::Embed    ? "Qwen3-VL-Embedding"
                     : wanted == ModelTask::Rerank ? "Qwen3-VL-Reranker"
                                                   : "Qwen3-VL chat",
                     " model for that"));
}

void ServerCore::register_retrieval_routes(HttpRouter& router) {
  const RetrievalRoutes routes(*this);
  router.post("/v1/embeddings", [routes](HttpRequest& req, HttpResponse& res) { routes.embeddings(req, res); });
  // /v1/rerank (Jina, vLLM), /rerank (vLLM), /v2/rerank (Cohere's v2 client).
  for (const char* path : {"/v1/rerank", "/rerank", "/v2/rerank"})
    router.post(path, [routes](HttpRequest& req, HttpResponse& res) { routes.reranking(req, res); });
}

}  // namespace qvl
