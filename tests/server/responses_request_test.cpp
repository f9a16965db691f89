// parse_responses_request on its own: a Responses body makes the same
// ChatRequest its chat-completions twin makes (messages, tool calls and
// results, reasoning, tools as the template renders them, the schema,
// sampling), and every refusal names the Responses field, down to a part of
// an item. The media step (take_chat_media) runs after each parse, as the
// route runs it. The route and its streaming are in responses_e2e_test.cpp.
#include <gtest/gtest.h>

#include "image/encode.h"
#include "refusal.h"
#include "server/media/base64.h"
#include "server/media/chat_media.h"
#include "server/requests/chat_request.h"
#include "server/requests/responses_request.h"

namespace qvl {
namespace {

using ojson = nlohmann::ordered_json;
using test::refusal;

ChatLimits limits() { return ChatLimits{}; }

// A body parsed, then its media taken, as POST /v1/responses does.
ResponsesRequest parse_and_take(const ojson& body, const ResponseStore& store) {
  ResponsesRequest r = parse_responses_request(body, store, limits());
  try {
    take_chat_media(r.chat, limits(), nullptr);
  } catch (const ApiError& e) {
    throw responses_error(e);
  }
  return r;
}

ChatRequest chat_with_media(const ojson& body) {
  ChatRequest r = parse_chat_request(body, limits());
  take_chat_media(r, limits(), nullptr);
  return r;
}

// A 4x4 grey JPEG as a data: URL.
std::string jpeg_url() {
  Image im;
  im.width = im.height = 4;
  im.rgb.assign(4 * 4 * 3, 128);
  return "data:image/jpeg;base64," + base64_encode(encode_jpeg(im));
}

void expect_same(const ChatRequest& a, const ChatRequest& b) {
  const GenerateRequest& x = a.generate;
  const GenerateRequest& y = b.generate;
  ASSERT_EQ(x.messages.size(), y.messages.size());
  for (size_t i = 0; i < x.messages.size(); ++i) {
    const Message& m = x.messages[i];
    const Message& n = y.messages[i];
    EXPECT_EQ(m.role, n.role) << i;
    EXPECT_EQ(m.reasoning, n.reasoning) << i;
    ASSERT_EQ(m.parts.size(), n.parts.size()) << i;
    for (size_t k = 0; k < m.parts.size(); ++k) {
      EXPECT_EQ(m.parts[k].text, n.parts[k].text) << i << " " << k;
      ASSERT_EQ(m.parts[k].image != nullptr, n.parts[k].image != nullptr) << i << " " << k;
      if (m.parts[k].image) {
        EXPECT_EQ(m.parts[k].image->rgb, n.parts[k].image->rgb);
      }
    }
    ASSERT_EQ(m.tool_calls.size(), n.tool_calls.size()) << i;
    for (size_t k = 0; k < m.tool_calls.size(); ++k) {
      EXPECT_EQ(m.tool_calls[k].id, n.tool_calls[k].id);
      EXPECT_EQ(m.tool_calls[k].name, n.tool_calls[k].name);
      EXPECT_EQ(m.tool_calls[k].arguments, n.tool_calls[k].arguments);
    }
  }
  ASSERT_EQ(x.tools.size(), y.tools.size());
  for (size_t i = 0; i < x.tools.size(); ++i) {
    EXPECT_EQ(x.tools[i].name, y.tools[i].name);
    EXPECT_EQ(x.tools[i].definition, y.tools[i].definition);  // what the template renders
    EXPECT_EQ(x.tools[i].parameters, y.tools[i].parameters);
  }
  EXPECT_EQ(x.tool_choice, y.tool_choice);
  EXPECT_EQ(x.tool_choice_name, y.tool_choice_name);
  EXPECT_EQ(x.parallel_tool_calls, y.parallel_tool_calls);
  EXPECT_EQ(x.response_format.type, y.response_format.type);
  EXPECT_EQ(x.response_format.schema, y.response_format.schema);
  EXPECT_EQ(x.sampling.temperature, y.sampling.temperature);
  EXPECT_EQ(x.sampling.top_k, y.sampling.top_k);
  EXPECT_EQ(x.sampling.seed, y.sampling.seed);
  EXPECT_EQ(x.stop, y.stop);
  EXPECT_EQ(x.max_tokens, y.max_tokens);
  EXPECT_EQ(x.top_logprobs, y.top_logprobs);
  EXPECT_EQ(x.max_pixels, y.max_pixels);
  EXPECT_EQ(a.logprobs, b.logprobs);
  EXPECT_EQ(a.media, b.media);
}

TEST(ResponsesRequest, MakesTheRequestItsChatTwinMakes) {
  const std::string url = jpeg_url();
  const ojson params = {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}};
  const ojson schema = {{"type", "object"}, {"properties", {{"ok", {{"type", "boolean"}}}}}};
  const ojson responses = {
      {"instructions", "Be brief."},
      {"input",
       {{{"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "Weather here?"}},
                                        {{"type", "input_image"}, {"image_url", url}}}}},
        {{"type", "reasoning"}, {"content", {{{"type", "reasoning_text"}, {"text", "Ask the tool."}}}}},
        {{"type", "function_call"}, {"call_id", "call_1"}, {"name", "weather"}, {"arguments", "{\"city\":\"Oslo\"}"}},
        {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "3 C"}},
        {{"role", "assistant"}, {"content", {{{"type", "output_text"}, {"text", "It is 3 C."}}}}},
        {{"role", "user"}, {"content", "And tomorrow?"}}}},
      {"tools", {{{"type", "function"}, {"name", "weather"}, {"description", "Now"}, {"parameters", params}}}},
      {"tool_choice", {{"type", "function"}, {"name", "weather"}}},
      {"text", {{"format", {{"type", "json_schema"}, {"name", "answer"}, {"schema", schema}, {"strict", true}}}}},
      {"temperature", 0.5}, {"top_k", 7}, {"seed", 3}, {"stop", "END"}, {"max_output_tokens", 40},
      {"top_logprobs", 2}, {"max_pixels", 200000}};
  const ojson chat = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}},
        {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Weather here?"}},
                                        {{"type", "image_url"}, {"image_url", {{"url", url}}}}}}},
        {{"role", "assistant"}, {"content", nullptr}, {"reasoning_content", "Ask the tool."},
         {"tool_calls", {{{"id", "call_1"}, {"type", "function"},
                          {"function", {{"name", "weather"}, {"arguments", "{\"city\":\"Oslo\"}"}}}}}}},
        {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "3 C"}},
        {{"role", "assistant"}, {"content", {{{"type", "text"}, {"text", "It is 3 C."}}}}},
        {{"role", "user"}, {"content", "And tomorrow?"}}}},
      {"tools", {{{"type", "function"}, {"function", {{"name", "weather"}, {"description", "Now"}, {"parameters", params}}}}}},
      {"tool_choice", {{"type", "function"}, {"function", {{"name", "weather"}}}}},
      {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "answer"}, {"schema", schema}, {"strict", true}}}}},
      {"temperature", 0.5}, {"top_k", 7}, {"seed", 3}, {"stop", "END"}, {"max_completion_tokens", 40},
      {"logprobs", true}, {"top_logprobs", 2}, {"max_pixels", 200000}};
  const MemoryResponseStore store;
  const ResponsesRequest r = parse_and_take(responses, store);
  expect_same(r.chat, chat_with_media(chat));
  EXPECT_EQ(r.chat.media, 1);
  EXPECT_EQ(r.items.size(), 6u);
  EXPECT_EQ(r.echo["instructions"], "Be brief.");
  EXPECT_EQ(r.echo["tools"], responses["tools"]);
}

TEST(ResponsesRequest, RefusalsNameTheResponsesField) {
  MemoryResponseStore store;
  auto refused = [&](const ojson& body) { return refusal([&] { parse_and_take(body, store); }); };
  auto user = [](const ojson& content) { return ojson{{"input", {{{"role", "user"}, {"content", content}}}}}; };

  ApiError e = refused(user({{{"type", "input_text"}, {"text", 5}}}));
  EXPECT_EQ(e.param(), "input[0].content[0].text");
  EXPECT_EQ(e.code(), "invalid_type");
  EXPECT_EQ(std::string(e.what()), "'input[0].content[0].text' must be a string, not an integer");
  // An image URL is the part's image_url string, refused when it is no image.
  e = refused(user({{{"type", "input_image"}, {"image_url", "data:image/png;base64,AAAA"}}}));
  EXPECT_EQ(e.param(), "input[0].content[0].image_url");
  EXPECT_EQ(e.code(), "invalid_image");
  // A PDF part's own fields are the part's.
  e = refused(user({{{"type", "input_file"}, {"file_data", "data:application/pdf;base64,AAAA"}, {"dpi", 5000}}}));
  EXPECT_EQ(e.param(), "input[0].content[0].dpi");
  e = refused(user({{{"type", "input_file"}, {"filedata", "x"}}}));
  EXPECT_EQ(e.param(), "input[0].content[0].filedata");
  EXPECT_NE(std::string(e.what()).find("in 'input[0].content[0]'"), std::string::npos) << e.what();
  // Media only in user messages.
  e = refused({{"input", {{{"role", "system"}, {"content", {{{"type", "input_image"}, {"image_url", jpeg_url()}}}}}}}});
  EXPECT_EQ(e.param(), "input[0].content[0].type");
  // A result that answers no call, and one whose id answers none.
  e = refused({{"input", {{{"type", "function_call_output"}, {"call_id", "c"}, {"output", "x"}}}}});
  EXPECT_EQ(e.param(), "input[0]");
  e = refused({{"input", {{{"type", "function_call"}, {"call_id", "a"}, {"name", "f"}, {"arguments", "{}"}},
                          {{"type", "function_call_output"}, {"call_id", "b"}, {"output", "x"}}}}});
  EXPECT_EQ(e.param(), "input[1].call_id");
  // Flat tools and text.format.
  const ojson tool = {{"type", "function"}, {"name", "f"}};
  e = refused({{"input", "x"}, {"tools", {tool, tool}}});
  EXPECT_EQ(e.param(), "tools[1].name");
  EXPECT_EQ(e.code(), "duplicate_tool_name");
  e = refused({{"input", "x"}, {"tools", {{{"type", "function"}, {"name", "f"}, {"parameters", "{}"}}}}});
  EXPECT_EQ(e.param(), "tools[0].parameters");
  e = refused({{"input", "x"}, {"text", {{"format", {{"type", "json_schema"}, {"name", "a b"}, {"schema", ojson::object()}}}}}});
  EXPECT_EQ(e.param(), "text.format.name");
  e = refused({{"input", "x"}, {"max_output_tokens", 0}});
  EXPECT_EQ(std::string(e.what()), "'max_output_tokens' must be in [1, 16777216], got 0");
  e = refused({{"input", "x"}, {"instructions", 3}});
  EXPECT_EQ(e.param(), "instructions");

  // A stored conversation is named by the id it came by.
  ResponseStore::Entry entry;
  entry.id = "resp_1";
  entry.items = ojson::array({{{"type", "message"}, {"role", "user"}, {"content", {{{"type", "input_text"}, {"text", 1}}}}}});
  store.put(entry);
  e = refused({{"previous_response_id", "resp_1"}, {"input", "x"}});
  EXPECT_EQ(e.param(), "previous_response_id");
}

TEST(ResponsesRequest, TheEnginesChatNamesBecomeResponsesNames) {
  EXPECT_EQ(responses_param("messages"), "input");
  EXPECT_EQ(responses_param("tools[2].function.parameters.properties.x"), "tools[2].parameters.properties.x");
  EXPECT_EQ(responses_param("response_format.json_schema.schema.items"), "text.format.schema.items");
  EXPECT_EQ(responses_param("tool_choice"), "tool_choice");
  const ApiError e = responses_error(ApiError(400, "unsupported_value", "'tools[0].function.parameters' is bad",
                                              "tools[0].function.parameters"));
  EXPECT_EQ(e.param(), "tools[0].parameters");
  EXPECT_EQ(std::string(e.what()), "'tools[0].parameters' is bad");
}

}  // namespace
}  // namespace qvl
