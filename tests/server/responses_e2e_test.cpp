// POST /v1/responses (OpenAI's Responses API) against the real server with
// the tiny fixture model. The route is the chat route with another shape, so
// its greedy answers must equal the chat route's for the same conversation
// (plain, streamed, with an image, continued by previous_response_id, with
// function_call items); constrained output (text.format, tools) must parse
// and validate; bad fields are 400s naming the Responses field.
#include <gtest/gtest.h>

#include <set>

#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;
// Request bodies keep their key order: a tool's definition is rendered as
// sent, so both routes must see the same order.
using ojson = nlohmann::ordered_json;

class Responses : public SharedServerSuite {
 protected:
  static json post(const std::string& path, const ojson& body, int want_status = 200) {
    auto c = server_->client();
    auto r = c.Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r) << path;
    if (!r) return json();
    EXPECT_EQ(r->status, want_status) << path << " " << body.dump().substr(0, 400) << "\n-> " << r->body;
    return json::parse(r->body, nullptr, false);
  }
  static json respond(const ojson& body, int want_status = 200) { return post("/v1/responses", body, want_status); }
  // The chat route's greedy answer to the same conversation.
  static json chat(ojson messages, int max_tokens, ojson extra = ojson::object()) {
    ojson body = {{"messages", std::move(messages)}, {"temperature", 0}, {"max_tokens", max_tokens}};
    body.update(extra);
    return post("/v1/chat/completions", body);
  }
  static std::string chat_text(const json& c) {
    const json& m = c["choices"][0]["message"];
    return m["content"].is_string() ? m["content"].get<std::string>() : "";
  }
};

// The output_text of a Response's message items.
std::string output_text(const json& r) {
  std::string text;
  for (const json& item : r["output"])
    if (item["type"] == "message")
      for (const json& part : item["content"])
        if (part["type"] == "output_text") text += part["text"].get<std::string>();
  return text;
}

std::vector<json> calls_of(const json& r) {
  std::vector<json> calls;
  for (const json& item : r["output"])
    if (item["type"] == "function_call") calls.push_back(item);
  return calls;
}

// The events of a Responses stream: "event: T" then "data: {...type: T...}".
std::vector<json> response_events(const std::string& body) {
  std::vector<json> out;
  std::istringstream in(body);
  std::string line, event;
  while (std::getline(in, line)) {
    if (line.rfind("event: ", 0) == 0) event = line.substr(7);
    if (line.rfind("data: ", 0) != 0) continue;
    json e = json::parse(line.substr(6));
    EXPECT_EQ(e["type"], event) << line;
    out.push_back(std::move(e));
  }
  return out;
}

void expect_error(const json& j, const std::string& param) {
  ASSERT_TRUE(j.contains("error")) << j.dump();
  EXPECT_EQ(j["error"]["type"], "invalid_request_error") << j.dump();
  EXPECT_EQ(j["error"]["param"], param) << j.dump();
  EXPECT_TRUE(j["error"]["message"].is_string());
}

TEST_F(Responses, StringInputEqualsChatAndHasTheResponseShape) {
  const json c = chat({{{"role", "user"}, {"content", "Say hello."}}}, 12);
  const json r = respond({{"model", "m"}, {"input", "Say hello."}, {"temperature", 0}, {"max_output_tokens", 12},
                          {"metadata", {{"k", "v"}}}});
  EXPECT_TRUE(r["id"].get<std::string>().rfind("resp_", 0) == 0) << r["id"];
  EXPECT_EQ(r["object"], "response");
  EXPECT_TRUE(r["created_at"].is_number_integer());
  EXPECT_EQ(r["model"], "tiny-qwen3vl");
  EXPECT_EQ(r["error"], nullptr);
  ASSERT_EQ(r["output"].size(), 1u) << r.dump();
  const json& m = r["output"][0];
  EXPECT_EQ(m["type"], "message");
  EXPECT_TRUE(m["id"].get<std::string>().rfind("msg_", 0) == 0) << m["id"];
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["content"][0]["type"], "output_text");
  EXPECT_EQ(m["content"][0]["annotations"], json::array());
  EXPECT_EQ(output_text(r), chat_text(c));
  EXPECT_EQ(r["output_text"], chat_text(c));
  // Status follows the chat route's finish_reason.
  if (c["choices"][0]["finish_reason"] == "length") {
    EXPECT_EQ(r["status"], "incomplete");
    EXPECT_EQ(m["status"], "incomplete");
    EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
  } else {
    EXPECT_EQ(r["status"], "completed");
    EXPECT_EQ(r["incomplete_details"], nullptr);
  }
  const json& u = r["usage"];
  EXPECT_EQ(u["input_tokens"], c["usage"]["prompt_tokens"]);
  EXPECT_EQ(u["output_tokens"], c["usage"]["completion_tokens"]);
  EXPECT_EQ(u["total_tokens"].get<int>(), u["input_tokens"].get<int>() + u["output_tokens"].get<int>());
  EXPECT_TRUE(u["input_tokens_details"]["cached_tokens"].is_number_integer());
  EXPECT_EQ(u["output_tokens_details"]["reasoning_tokens"], 0);
  // The request fields the SDKs read back.
  EXPECT_EQ(r["max_output_tokens"], 12);
  EXPECT_EQ(r["temperature"], 0);
  EXPECT_EQ(r["metadata"], json({{"k", "v"}}));
  EXPECT_EQ(r["tools"], json::array());
  EXPECT_EQ(r["tool_choice"], "auto");
  EXPECT_EQ(r["parallel_tool_calls"], true);
  EXPECT_EQ(r["text"]["format"]["type"], "text");
  EXPECT_EQ(r["previous_response_id"], nullptr);
  EXPECT_EQ(r["instructions"], nullptr);
}

TEST_F(Responses, MaxOutputTokensMakesAnIncompleteResponse) {
  const json r = respond({{"input", "Tell me a long story."}, {"temperature", 0}, {"max_output_tokens", 2}});
  ASSERT_LE(r["usage"]["output_tokens"].get<int>(), 2);
  if (r["usage"]["output_tokens"] == 2 && r["status"] != "completed") {
    EXPECT_EQ(r["status"], "incomplete");
    EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
    EXPECT_EQ(r["output"][0]["status"], "incomplete");
  }
}

TEST_F(Responses, LogprobsWhenIncluded) {
  const json r = respond({{"input", "Hello"},
                          {"temperature", 0},
                          {"max_output_tokens", 4},
                          {"top_logprobs", 2},
                          {"include", {"message.output_text.logprobs"}}});
  const json& lp = r["output"][0]["content"][0]["logprobs"];
  ASSERT_TRUE(lp.is_array()) << r.dump();
  EXPECT_EQ(lp.size(), r["usage"]["output_tokens"].get<size_t>());
  std::string text;
  for (const json& t : lp) {
    text += t["token"].get<std::string>();
    EXPECT_LE(t["logprob"].get<double>(), 0);
    EXPECT_EQ(t["top_logprobs"].size(), 2u) << t.dump();
    EXPECT_EQ(t["bytes"].size(), t["token"].get<std::string>().size());
  }
  EXPECT_EQ(text, output_text(r));
  // Without include, no logprobs.
  const json plain = respond({{"input", "Hello"}, {"temperature", 0}, {"max_output_tokens", 4}});
  EXPECT_FALSE(plain["output"][0]["content"][0].contains("logprobs"));
}

TEST_F(Responses, InstructionsAndImageItemsEqualChat) {
  const std::string uri = png_data_uri("gradient_320x240");
  const json c = chat({{{"role", "system"}, {"content", "Be brief."}},
                       {{"role", "user"},
                        {"content", {{{"type", "image_url"}, {"image_url", {{"url", uri}}}},
                                     {{"type", "text"}, {"text", "What is in this image?"}}}}}},
                      16);
  const json r = respond(
      {{"instructions", "Be brief."},
       {"input", {{{"role", "user"},
                   {"content", {{{"type", "input_image"}, {"image_url", uri}, {"detail", "auto"}},
                                {{"type", "input_text"}, {"text", "What is in this image?"}}}}}}},
       {"temperature", 0},
       {"max_output_tokens", 16}});
  EXPECT_EQ(output_text(r), chat_text(c));
  EXPECT_EQ(r["usage"]["input_tokens"], c["usage"]["prompt_tokens"]);
  EXPECT_GT(r["usage"]["input_tokens"].get<int>(), 80);  // 80 image tokens for 320x240
  EXPECT_EQ(r["instructions"], "Be brief.");
}

// A clip of the video fixtures (tests/fixtures/video) as a data: URL.
std::string mp4_uri(const std::string& name) {
  return "data:video/mp4;base64," + base64(read_file(kFixtures + "/video/videos/" + name + ".mp4"));
}

TEST_F(Responses, VideoPartsEqualChat) {
  // Qwen's video part with its sampling keys, and vLLM's video_url part with
  // mm_processor_kwargs: chat's part kinds, as they are, on both routes.
  const std::string clip = mp4_uri("long_112x80_24fps");
  const ojson qwen_part = {{"type", "video"}, {"video", clip}, {"max_frames", 6}, {"total_pixels", 40000}};
  const ojson vllm_part = {{"type", "video_url"}, {"video_url", {{"url", clip}}}};
  const ojson kwargs = {{"fps", 1}};
  for (const ojson& part : {qwen_part, vllm_part}) {
    const bool vllm = part["type"] == "video_url";
    const ojson extra = vllm ? ojson{{"mm_processor_kwargs", kwargs}} : ojson::object();
    const json c = chat({{{"role", "user"}, {"content", {part, {{"type", "text"}, {"text", "What happens here?"}}}}}},
                        12, extra);
    ojson body = {{"input", {{{"role", "user"},
                              {"content", {part, {{"type", "input_text"}, {"text", "What happens here?"}}}}}}},
                  {"temperature", 0},
                  {"max_output_tokens", 12}};
    body.update(extra);
    const json r = respond(body);
    EXPECT_EQ(output_text(r), chat_text(c)) << part["type"];
    EXPECT_EQ(r["usage"]["input_tokens"], c["usage"]["prompt_tokens"]) << part["type"];
    // max_frames 6 under 40000 pixels: grid (3, 4, 6), 18 tokens; fps 1 of
    // the 8-s clip: 8 frames, 4 groups of 4x8 patches (video_e2e_test.cpp).
    EXPECT_EQ(c["usage"]["prompt_tokens_details"]["image_tokens"], vllm ? 4 * 8 : 18) << part["type"];
  }
}

TEST_F(Responses, BadVideoFieldsAre400sNamingTheResponsesField) {
  const std::string clip = "data:video/mp4;base64,AAAA";
  auto with_part = [](const ojson& part) {
    return ojson{{"input", {{{"role", "user"}, {"content", {part, {{"type", "input_text"}, {"text", "?"}}}}}}}};
  };
  expect_error(respond(with_part({{"type", "video"}, {"video", clip}, {"nframes", 8}}), 400),
               "input[0].content[0].nframes");
  expect_error(respond(with_part({{"type", "video"}, {"video", clip}, {"fps", 0}}), 400), "input[0].content[0].fps");
  expect_error(respond(with_part({{"type", "video"}, {"video", {clip, clip}}, {"max_frames", 2}}), 400),
               "input[0].content[0].max_frames");
  expect_error(respond(with_part({{"type", "video_url"}, {"video_url", {{"url", clip}, {"detail", "high"}}}}), 400),
               "input[0].content[0].video_url.detail");
  expect_error(respond(with_part({{"type", "video"}}), 400), "input[0].content[0].video");
  ojson body = with_part({{"type", "video"}, {"video", clip}});
  body["mm_processor_kwargs"] = {{"do_sample_frames", false}};
  expect_error(respond(body, 400), "mm_processor_kwargs.do_sample_frames");
  // Remote URLs follow the image rules (off by default): 403 naming the URL.
  const json remote = respond(with_part({{"type", "video"}, {"video", "http://example.com/a.mp4"}}), 403);
  EXPECT_EQ(remote["error"]["param"], "input[0].content[0].video") << remote.dump();
  // A clip that is not one: 400 naming the part, and the server still answers.
  const json bad = respond(with_part({{"type", "video_url"}, {"video_url", {{"url", clip}}}}), 400);
  EXPECT_EQ(bad["error"]["param"], "input[0].content[0]") << bad.dump();
  EXPECT_NE(bad["error"]["message"].get<std::string>().find("the video cannot be used"), std::string::npos);
  // Only in user messages.
  const ojson assistant_video = {{"role", "assistant"}, {"content", {{{"type", "video"}, {"video", clip}}}}};
  expect_error(respond({{"input", {assistant_video}}}, 400), "input[0].content[0].type");
  EXPECT_EQ(respond({{"input", "x"}, {"max_output_tokens", 2}})["object"], "response");
}

TEST_F(Responses, StreamedEventsBuildTheSameAnswer) {
  const ojson body = {{"input", "Count to three."}, {"temperature", 0}, {"max_output_tokens", 20}};
  const json plain = respond(body);
  ojson sbody = body;
  sbody["stream"] = true;
  auto c = server_->client();
  auto res = c.Post("/v1/responses", sbody.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream; charset=utf-8");
  const std::vector<json> ev = response_events(res->body);
  ASSERT_GE(ev.size(), 8u) << res->body;
  for (size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i]["sequence_number"], i) << ev[i].dump();
  EXPECT_EQ(ev[0]["type"], "response.created");
  EXPECT_EQ(ev[0]["response"]["status"], "in_progress");
  EXPECT_EQ(ev[0]["response"]["output"], json::array());
  EXPECT_EQ(ev[1]["type"], "response.in_progress");
  EXPECT_EQ(ev[2]["type"], "response.output_item.added");
  EXPECT_EQ(ev[2]["item"]["type"], "message");
  EXPECT_EQ(ev[3]["type"], "response.content_part.added");
  const std::string item_id = ev[2]["item"]["id"];
  std::string deltas;
  size_t k = 4;
  for (; k < ev.size() && ev[k]["type"] == "response.output_text.delta"; ++k) {
    EXPECT_EQ(ev[k]["item_id"], item_id);
    EXPECT_EQ(ev[k]["output_index"], 0);
    EXPECT_EQ(ev[k]["content_index"], 0);
    deltas += ev[k]["delta"].get<std::string>();
  }
  ASSERT_EQ(ev.size(), k + 4) << res->body;
  EXPECT_EQ(ev[k]["type"], "response.output_text.done");
  EXPECT_EQ(ev[k]["text"], deltas);
  EXPECT_EQ(ev[k + 1]["type"], "response.content_part.done");
  EXPECT_EQ(ev[k + 1]["part"]["text"], deltas);
  EXPECT_EQ(ev[k + 2]["type"], "response.output_item.done");
  EXPECT_EQ(ev[k + 2]["item"]["content"][0]["text"], deltas);
  const json& last = ev[k + 3];
  EXPECT_EQ(last["type"], plain["status"] == "completed" ? "response.completed" : "response.incomplete");
  EXPECT_EQ(deltas, output_text(plain));
  EXPECT_EQ(output_text(last["response"]), deltas);
  EXPECT_EQ(last["response"]["status"], plain["status"]);
  EXPECT_EQ(last["response"]["output"][0]["id"], item_id);
  EXPECT_EQ(last["response"]["usage"]["output_tokens"], plain["usage"]["output_tokens"]);
}

TEST_F(Responses, PreviousResponseIdContinuesTheConversation) {
  const json first = respond({{"input", "My name is Ada."}, {"temperature", 0}, {"max_output_tokens", 8}});
  const std::string answer = output_text(first);
  const json second = respond({{"input", "What is my name?"},
                               {"previous_response_id", first["id"]},
                               {"temperature", 0},
                               {"max_output_tokens", 8}});
  EXPECT_EQ(second["previous_response_id"], first["id"]);
  const json c = chat({{{"role", "user"}, {"content", "My name is Ada."}},
                       {{"role", "assistant"}, {"content", answer}},
                       {{"role", "user"}, {"content", "What is my name?"}}},
                      8);
  EXPECT_EQ(output_text(second), chat_text(c));
  EXPECT_EQ(second["usage"]["input_tokens"], c["usage"]["prompt_tokens"]);
  EXPECT_GT(second["usage"]["input_tokens"].get<int>(), first["usage"]["input_tokens"].get<int>());

  // Stored responses are readable and deletable; store: false keeps nothing.
  auto cl = server_->client();
  auto got = cl.Get(("/v1/responses/" + first["id"].get<std::string>()).c_str());
  ASSERT_TRUE(got);
  ASSERT_EQ(got->status, 200) << got->body;
  EXPECT_EQ(json::parse(got->body)["output"], first["output"]);
  auto del = cl.Delete(("/v1/responses/" + first["id"].get<std::string>()).c_str());
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200);
  expect_error(respond({{"input", "x"}, {"previous_response_id", first["id"]}}, 400), "previous_response_id");
  const json unstored = respond({{"input", "x"}, {"store", false}, {"max_output_tokens", 2}});
  EXPECT_EQ(unstored["store"], false);
  expect_error(respond({{"input", "x"}, {"previous_response_id", unstored["id"]}}, 400), "previous_response_id");
  expect_error(respond({{"input", "x"}, {"previous_response_id", "resp_nope"}}, 400), "previous_response_id");
}

TEST_F(Responses, FunctionCallItemsEqualChatToolMessages) {
  const ojson params = {{"type", "object"},
                       {"properties", {{"city", {{"type", "string"}}}}},
                       {"required", {"city"}}};
  const json c = chat({{{"role", "user"}, {"content", "Weather in Paris?"}},
                       {{"role", "assistant"},
                        {"content", nullptr},
                        {"tool_calls", {{{"id", "call_1"},
                                         {"type", "function"},
                                         {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}}}}}},
                       {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "22 C, sunny"}}},
                      12,
                      {{"tools", {{{"type", "function"},
                                   {"function", {{"name", "get_weather"}, {"description", "Weather"}, {"parameters", params}}}}}},
                       {"tool_choice", "none"}});
  const json r = respond({{"input", {{{"role", "user"}, {"content", "Weather in Paris?"}},
                                     {{"type", "function_call"},
                                      {"call_id", "call_1"},
                                      {"name", "get_weather"},
                                      {"arguments", "{\"city\":\"Paris\"}"}},
                                     {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "22 C, sunny"}}}},
                          {"tools", {{{"type", "function"},
                                      {"name", "get_weather"},
                                      {"description", "Weather"},
                                      {"parameters", params}}}},
                          {"tool_choice", "none"},
                          {"temperature", 0},
                          {"max_output_tokens", 12}});
  EXPECT_EQ(output_text(r), chat_text(c));
  EXPECT_EQ(r["usage"]["input_tokens"], c["usage"]["prompt_tokens"]);
  EXPECT_TRUE(calls_of(r).empty());
  EXPECT_EQ(r["tools"][0]["name"], "get_weather");  // echoed in the Responses form
}

TEST_F(Responses, JsonSchemaFormatGivesJsonThatFitsTheSchema) {
  const ojson schema = {{"type", "object"},
                       {"properties", {{"name", {{"type", "string"}, {"maxLength", 20}}}, {"adult", {{"type", "boolean"}}}}},
                       {"required", {"name", "adult"}},
                       {"additionalProperties", false}};
  const json r = respond({{"input", "Make up a person."},
                          {"text", {{"format", {{"type", "json_schema"}, {"name", "person"}, {"schema", schema}, {"strict", true}}}}},
                          {"temperature", 0},
                          {"max_output_tokens", 300}});
  EXPECT_EQ(r["status"], "completed") << r.dump();
  const json v = json::parse(output_text(r), nullptr, false);
  ASSERT_TRUE(v.is_object()) << "not a JSON object: " << output_text(r);
  EXPECT_EQ(v.size(), 2u) << v.dump();
  EXPECT_TRUE(v["name"].is_string()) << v.dump();
  EXPECT_TRUE(v["adult"].is_boolean()) << v.dump();
  EXPECT_EQ(r["text"]["format"]["name"], "person");

  // json_object bounds no string, so random weights may never close one:
  // the text is an object when complete, and starts as one in any case.
  const json o = respond({{"input", "Any JSON."},
                          {"text", {{"format", {{"type", "json_object"}}}}},
                          {"temperature", 0},
                          {"max_output_tokens", 300}});
  const std::string t = output_text(o);
  EXPECT_EQ(t.substr(0, 1), "{") << t;
  if (o["status"] == "completed") {
    EXPECT_TRUE(json::parse(t, nullptr, false).is_object()) << "not a JSON object: " << t;
  }
}

TEST_F(Responses, RequiredToolChoiceGivesFunctionCallItems) {
  const ojson tools = {{{"type", "function"},
                       {"name", "get_weather"},
                       {"description", "Current weather in a city"},
                       {"parameters", {{"type", "object"},
                                       {"properties", {{"city", {{"type", "string"}, {"maxLength", 24}}}}},
                                       {"required", {"city"}},
                                       {"additionalProperties", false}}},
                       {"strict", true}}};
  const ojson body = {{"input", "Weather in Paris?"},
                     {"tools", tools},
                     {"tool_choice", "required"},
                     {"parallel_tool_calls", false},
                     {"temperature", 0},
                     {"max_output_tokens", 300}};
  const json r = respond(body);
  EXPECT_EQ(r["status"], "completed") << r.dump();
  const auto calls = calls_of(r);
  ASSERT_EQ(calls.size(), 1u) << r.dump();
  EXPECT_TRUE(calls[0]["id"].get<std::string>().rfind("fc_", 0) == 0) << calls[0];
  EXPECT_TRUE(calls[0]["call_id"].get<std::string>().rfind("call_", 0) == 0) << calls[0];
  EXPECT_EQ(calls[0]["name"], "get_weather");
  EXPECT_EQ(calls[0]["status"], "completed");
  const json args = json::parse(calls[0]["arguments"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(args.is_object()) << calls[0]["arguments"];
  EXPECT_TRUE(args["city"].is_string()) << args.dump();
  EXPECT_EQ(args.size(), 1u) << args.dump();

  // Streamed: the same call, its arguments in deltas.
  ojson sbody = body;
  sbody["stream"] = true;
  auto c = server_->client();
  auto res = c.Post("/v1/responses", sbody.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const auto ev = response_events(res->body);
  std::string deltas, done_args;
  std::set<std::string> types;
  for (const json& e : ev) {
    types.insert(e["type"]);
    if (e["type"] == "response.function_call_arguments.delta") deltas += e["delta"].get<std::string>();
    if (e["type"] == "response.function_call_arguments.done") {
      done_args = e["arguments"];
      EXPECT_EQ(e["name"], "get_weather");
    }
  }
  for (const char* t : {"response.created", "response.output_item.added", "response.function_call_arguments.done",
                        "response.output_item.done", "response.completed"})
    EXPECT_TRUE(types.count(t)) << t << " missing in\n" << res->body;
  EXPECT_EQ(deltas, done_args);
  EXPECT_EQ(done_args, calls[0]["arguments"].get<std::string>());
  const auto streamed = calls_of(ev.back()["response"]);
  ASSERT_EQ(streamed.size(), 1u);
  EXPECT_EQ(streamed[0]["arguments"], calls[0]["arguments"]);

  // The call answered: function_call_output continues by previous_response_id.
  const json next = respond({{"previous_response_id", r["id"]},
                             {"input", {{{"type", "function_call_output"}, {"call_id", calls[0]["call_id"]}, {"output", "22 C"}}}},
                             {"tools", tools},
                             {"temperature", 0},
                             {"max_output_tokens", 8}});
  EXPECT_GT(next["usage"]["input_tokens"].get<int>(), r["usage"]["input_tokens"].get<int>());
}

TEST_F(Responses, BadFieldsAre400sNamingTheResponsesField) {
  expect_error(respond({{"temperature", 0}}, 400), "input");
  expect_error(respond({{"input", "x"}, {"frobnicate", 1}}, 400), "frobnicate");
  expect_error(respond({{"input", "x"}, {"messages", json::array()}}, 400), "messages");
  const json effort = respond({{"input", "x"}, {"reasoning", {{"effort", "high"}}}}, 400);
  expect_error(effort, "reasoning.effort");
  EXPECT_NE(effort["error"]["message"].get<std::string>().find("reasoning_budget"), std::string::npos) << effort;
  expect_error(respond({{"input", "x"}, {"background", true}}, 400), "background");
  expect_error(respond({{"input", "x"}, {"truncation", "auto"}}, 400), "truncation");
  expect_error(respond({{"input", "x"}, {"include", {"reasoning.encrypted_content"}}}, 400), "include[0]");
  expect_error(respond({{"input", "x"}, {"tools", {{{"type", "web_search"}}}}}, 400), "tools[0].type");
  expect_error(respond({{"input", "x"}, {"max_output_tokens", 0}}, 400), "max_output_tokens");
  expect_error(respond({{"input", "x"}, {"temperature", 9}}, 400), "temperature");
  expect_error(respond({{"input", {{{"type", "computer_call"}}}}}, 400), "input[0].type");
  expect_error(respond({{"input", {{{"role", "robot"}, {"content", "x"}}}}}, 400), "input[0].role");
  expect_error(respond({{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "data:image/png;base64,AAAA"}}}}}}}},
                       400),
               "input[0].content[0].image_url");
  // input_file takes a PDF's bytes (pdf_e2e_test.cpp); there is no Files API.
  expect_error(respond({{"input", {{{"role", "user"}, {"content", {{{"type", "input_file"}, {"file_id", "f"}}}}}}}}, 400),
               "input[0].content[0].file_id");
  expect_error(respond({{"input", "x"}, {"text", {{"format", {{"type", "json_schema"}, {"name", "x"}}}}}}, 400),
               "text.format.schema");
  expect_error(respond({{"input", {{{"type", "item_reference"}, {"id", "msg_nope"}}}}}, 400), "input[0].id");
  expect_error(respond({{"input", "x"}, {"metadata", {{"k", 1}}}}, 400), "metadata.k");
  // Accepted, changing nothing.
  const json ok = respond({{"input", "x"},
                           {"max_output_tokens", 2},
                           {"store", true},
                           {"user", "u"},
                           {"reasoning", nullptr},
                           {"truncation", "disabled"},
                           {"background", false},
                           {"include", json::array()},
                           {"service_tier", "auto"}});
  EXPECT_EQ(ok["object"], "response");
}

}  // namespace
}  // namespace qvl::test
