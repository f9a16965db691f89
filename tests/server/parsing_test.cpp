// The request-parsing pieces on their own: base64, JSON limits, address
// classification for remote images, chat body validation.
#include <gtest/gtest.h>

#include "server/requests/api_error.h"
#include "server/media/base64.h"
#include "server/media/chat_media.h"
#include "server/requests/chat_request.h"
#include "server/requests/json_limits.h"
#include "server/media/media.h"

namespace qvl {
namespace {

using json = nlohmann::json;

int status_of(const std::function<void()>& f, std::string* param = nullptr, std::string* code = nullptr) {
  try {
    f();
  } catch (const ApiError& e) {
    if (param) *param = e.param();
    if (code) *code = e.code();
    return e.status();
  }
  return 0;
}

TEST(Base64, DecodesAndRefuses) {
  auto d = base64_decode("aGVsbG8=");
  ASSERT_TRUE(d);
  EXPECT_EQ(std::string(d->begin(), d->end()), "hello");
  d = base64_decode("aGVsbG8");  // padding optional
  ASSERT_TRUE(d);
  EXPECT_EQ(std::string(d->begin(), d->end()), "hello");
  size_t at = 0;
  EXPECT_FALSE(base64_decode("aGV*bG8=", &at));
  EXPECT_EQ(at, 3u);
  EXPECT_FALSE(base64_decode("a"));
  EXPECT_FALSE(base64_decode("aGVsbG8=="));
}

TEST(Base64, EncodesWithPaddingAndRoundTrips) {
  auto enc = [](const std::string& s) {
    return base64_encode({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  };
  EXPECT_EQ(enc(""), "");
  EXPECT_EQ(enc("h"), "aA==");
  EXPECT_EQ(enc("he"), "aGU=");
  EXPECT_EQ(enc("hello"), "aGVsbG8=");
  EXPECT_EQ(enc("hel"), "aGVs");
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[i] = static_cast<uint8_t>(i);
  for (size_t n = 0; n <= all.size(); n += 37) {
    const std::vector<uint8_t> part(all.begin(), all.begin() + n);
    EXPECT_EQ(base64_decode(base64_encode(part)), part) << n;
  }
}

TEST(JsonLimits, DepthAndStrings) {
  JsonLimits l;
  l.max_depth = 8;
  l.max_string_bytes = 10;
  EXPECT_NO_THROW(parse_json_body(R"({"a":[[[1]]],"b":"0123456789"})", l));
  std::string deep(100, '[');
  std::string code;
  EXPECT_EQ(status_of([&] { parse_json_body(deep + std::string(100, ']'), l); }, nullptr, &code), 400);
  EXPECT_EQ(code, "json_too_deep");
  EXPECT_EQ(status_of([&] { parse_json_body(R"({"b":"01234567890"})", l); }, nullptr, &code), 400);
  EXPECT_EQ(code, "string_too_long");
  EXPECT_EQ(status_of([&] { parse_json_body(R"({"a":)", l); }, nullptr, &code), 400);
  EXPECT_EQ(code, "invalid_json");
  // A million nested arrays is refused without recursing a million deep.
  EXPECT_EQ(status_of([&] { parse_json_body(std::string(1'000'000, '['), l); }), 400);
}

TEST(RemoteImages, PrivateAddressesAreRecognised) {
  for (const char* ip : {"127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
                         "0.0.0.0", "100.64.0.1", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fd00::1",
                         "::ffff:127.0.0.1", "::ffff:10.0.0.1", "not-an-ip"})
    EXPECT_TRUE(is_private_address(ip)) << ip;
  for (const char* ip : {"8.8.8.8", "172.32.0.1", "93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8"})
    EXPECT_FALSE(is_private_address(ip)) << ip;
}

ChatLimits limits() {
  ChatLimits l;
  return l;
}

json body(json extra = json::object()) {
  json b = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  for (auto& [k, v] : extra.items()) b[k] = v;
  return b;
}

TEST(ChatRequest, ReadsTheOpenAiFields) {
  ChatRequest r = parse_chat_request(
      body({{"temperature", 0.5}, {"top_p", 0.9}, {"seed", 7}, {"stop", {"a", "b"}}, {"max_completion_tokens", 5},
            {"max_tokens", 9}, {"top_k", 3}, {"min_p", 0.1}, {"repetition_penalty", 1.1}, {"presence_penalty", 0.5},
            {"frequency_penalty", -0.5}, {"stream", true}, {"stream_options", {{"include_usage", true}}},
            {"max_pixels", 1 << 30}, {"n", 1}, {"model", "gpt-4o"}}),
      limits());
  EXPECT_EQ(r.generate.sampling.temperature, 0.5);
  EXPECT_EQ(r.generate.sampling.top_p, 0.9);
  EXPECT_EQ(r.generate.sampling.seed, 7u);
  EXPECT_EQ(r.generate.sampling.top_k, 3);
  EXPECT_EQ(r.generate.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.generate.max_tokens, 5);  // max_completion_tokens wins
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.generate.max_pixels, 1 << 30);  // as sent: the engine clamps it into its range
  EXPECT_EQ(r.model, "gpt-4o");
  ASSERT_EQ(r.generate.messages.size(), 1u);
  EXPECT_EQ(r.generate.messages[0].parts[0].text, "hi");
}

TEST(ChatRequest, RefusesWhatItCannotDo) {
  std::string param;
  EXPECT_EQ(status_of([&] { parse_chat_request(body({{"n", 9}}), limits()); }, &param), 400);
  EXPECT_EQ(param, "n");
  EXPECT_EQ(status_of([&] { parse_chat_request(body({{"temperature", "hot"}}), limits()); }, &param), 400);
  EXPECT_EQ(param, "temperature");
  EXPECT_EQ(status_of([&] { parse_chat_request(body({{"max_tokens", 1.5}}), limits()); }, &param), 400);
  EXPECT_EQ(param, "max_tokens");
  EXPECT_EQ(status_of([&] { parse_chat_request(body({{"stop", {1}}}), limits()); }, &param), 400);
  EXPECT_EQ(param, "stop[0]");
  EXPECT_EQ(status_of([&] { parse_chat_request({{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}, limits()); },
                      &param),
            400);
  EXPECT_EQ(param, "messages[0].role");
  EXPECT_EQ(status_of([&] { parse_chat_request({{"messages", json::array()}}, limits()); }, &param), 400);
  EXPECT_EQ(status_of([&] { parse_chat_request(json::array(), limits()); }), 400);
  EXPECT_EQ(status_of([&] {
              parse_chat_request({{"messages", {{{"role", "user"}, {"content", {{{"type", "audio"}}}}}}}}, limits());
            }, &param),
            400);
  EXPECT_EQ(param, "messages[0].content[0].type");
}

// The parse and the media step after it, as the route runs them.
void read_and_take(const json& body) {
  ChatRequest r = parse_chat_request(body, limits());
  take_chat_media(r, limits(), nullptr);
}

TEST(ChatRequest, ImagesAreDecodedOrRefused) {
  const json bad_b64 = {{"messages", {{{"role", "user"},
                                       {"content", {{{"type", "image_url"},
                                                     {"image_url", {{"url", "data:image/png;base64,@@@@"}}}}}}}}}};
  std::string code;
  EXPECT_EQ(status_of([&] { read_and_take(bad_b64); }, nullptr, &code), 400);
  EXPECT_EQ(code, "invalid_base64");
  const json corrupt = {{"messages", {{{"role", "user"},
                                       {"content", {{{"type", "image_url"},
                                                     {"image_url", {{"url", "data:image/png;base64,iVBORw0KGgoAAAA="}}}}}}}}}};
  EXPECT_EQ(status_of([&] { read_and_take(corrupt); }, nullptr, &code), 400);
  EXPECT_EQ(code, "invalid_image");
  const json file = {{"messages", {{{"role", "user"},
                                    {"content", {{{"type", "image_url"}, {"image_url", {{"url", "/etc/passwd"}}}}}}}}}};
  EXPECT_EQ(status_of([&] { read_and_take(file); }, nullptr, &code), 403);
  EXPECT_EQ(code, "local_files_disabled");
  const json remote = {{"messages", {{{"role", "user"},
                                      {"content", {{{"type", "image_url"},
                                                    {"image_url", {{"url", "http://example.com/a.png"}}}}}}}}}};
  EXPECT_EQ(status_of([&] { read_and_take(remote); }, nullptr, &code), 403);
  EXPECT_EQ(code, "remote_images_disabled");
}

}  // namespace
}  // namespace qvl
