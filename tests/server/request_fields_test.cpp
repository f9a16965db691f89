// RequestField (server/requests/request_fields.h): the one reader of request bodies.
// Every refusal is a 400 whose param is the field's full dotted path and
// whose message names it, in one form per fault.
#include <gtest/gtest.h>

#include <limits>

#include "server/requests/api_error.h"
#include "server/requests/request_fields.h"
#include "refusal.h"

namespace qvl {
namespace {

using ojson = nlohmann::ordered_json;
using test::refusal;

const ojson kBody = ojson::parse(R"({
  "model": "m", "stream": "yes", "n": 2.0, "half": 2.5, "big": 18446744073709551615, "temperature": 9,
  "nothing": null, "stop": ["a", 3],
  "messages": [{"role": "user"}, {"role": "user", "content": [
    {"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": 7}}]}],
  "stream_options": {"include_usage": true, "chunk_size": 3}
})");

void expect_refused(const std::function<void()>& f, const std::string& param, const std::string& code,
                    const std::string& message) {
  const ApiError e = refusal(f);
  EXPECT_EQ(e.status(), 400) << param;
  EXPECT_EQ(e.param(), param);
  EXPECT_EQ(e.code(), code) << param;
  EXPECT_EQ(std::string(e.what()), message);
}

TEST(RequestFields, PathsNameKeysAndElementsBelowTheBody) {
  const RequestField body(kBody);
  const RequestField url = body.at("messages")[1].at("content")[1].at("image_url").at("url");
  EXPECT_EQ(url.path(), "messages[1].content[1].image_url.url");
  EXPECT_EQ(body.path_of("model"), "model");
  EXPECT_EQ(body.at("stream_options").path_of("include_usage"), "stream_options.include_usage");
  // A value named as a whole keeps its own name for everything below it.
  const RequestField stored = RequestField::whole(kBody.at("messages"), "previous_response_id");
  EXPECT_EQ(stored[1].at("content")[0].at("text").path(), "previous_response_id");
  EXPECT_EQ(stored[1].at("content")[0].at("text").string(), "hi");
}

TEST(RequestFields, NullIsNotSentAndMissingKeysAreRequired) {
  const RequestField body(kBody);
  EXPECT_FALSE(body.find("nothing"));
  EXPECT_FALSE(body.has("absent"));
  EXPECT_TRUE(body.has("model"));
  EXPECT_EQ(body.boolean("nothing", true), true);
  EXPECT_EQ(body.number("nothing", 0, 1), std::nullopt);
  EXPECT_EQ(body.optional_string("nothing"), nullptr);
  EXPECT_EQ(*body.optional_string("model"), "m");
  expect_refused([&] { body.at("messages")[0].at("content"); }, "messages[0].content", "missing_field",
                 "'messages[0].content' is required");
  expect_refused([&] { body.at("nothing"); }, "nothing", "missing_field", "'nothing' is required");
}

TEST(RequestFields, EachWrongTypeSaysWhatItMustBeAndWhatItIs) {
  const RequestField body(kBody);
  expect_refused([&] { body.boolean("stream", false); }, "stream", "invalid_type",
                 "'stream' must be a boolean, not a string");
  expect_refused([&] { body.at("messages")[1].at("content")[1].at("image_url").at("url").string(); },
                 "messages[1].content[1].image_url.url", "invalid_type",
                 "'messages[1].content[1].image_url.url' must be a string, not an integer");
  expect_refused([&] { body.at("stop")[1].string(); }, "stop[1]", "invalid_type", "'stop[1]' must be a string, not an integer");
  expect_refused([&] { body.integer("half", 0, 10); }, "half", "invalid_type", "'half' must be an integer, not a number");
  expect_refused([&] { body.number("model", 0, 10); }, "model", "invalid_type", "'model' must be a number, not a string");
  expect_refused([&] { body.at("stop").object(); }, "stop", "invalid_type", "'stop' must be an object, not an array");
  expect_refused([&] { body.at("stream_options").array(); }, "stream_options", "invalid_type",
                 "'stream_options' must be an array, not an object");
  expect_refused([&] { body.at("model").wrong_type("a list of URLs"); }, "model", "invalid_type",
                 "'model' must be a list of URLs, not a string");
  // The body itself has no name.
  const ojson list = ojson::array();
  expect_refused([&] { RequestField(list).object(); }, "", "invalid_type",
                 "the request body must be an object, not an array");
}

TEST(RequestFields, NumbersAreRangedOnTheValueAsSent) {
  const RequestField body(kBody);
  EXPECT_EQ(body.integer("n", 1, 8), 2);  // 2.0 is 2 (JavaScript has only doubles)
  EXPECT_DOUBLE_EQ(*body.number("half", 0, 10), 2.5);
  EXPECT_DOUBLE_EQ(*body.number("n", 0, 10), 2.0);
  expect_refused([&] { body.number("temperature", 0, 2); }, "temperature", "invalid_value",
                 "'temperature' must be in [0, 2], got 9");
  expect_refused([&] { body.integer("n", 3, 8); }, "n", "invalid_value", "'n' must be in [3, 8], got 2.0");
  // UINT64_MAX never wraps to -1.
  expect_refused([&] { body.integer("big", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()); },
                 "big", "invalid_value",
                 "'big' must be in [-9223372036854775808, 9223372036854775807], got 18446744073709551615");
}

TEST(RequestFields, UnknownKeysAreRefusedByPath) {
  const RequestField body(kBody);
  expect_refused([&] { body.at("stream_options").only_keys({"include_usage"}); }, "stream_options.chunk_size",
                 "unsupported_parameter", "unknown field 'chunk_size' in 'stream_options'");
  body.at("stream_options").only_keys({"include_usage", "chunk_size"});
  expect_refused([&] { body.only_keys({"model"}); }, "stream", "unsupported_parameter",
                 "unknown field 'stream'");
}

TEST(RequestFields, RefusalsNameTheValue) {
  const RequestField n = RequestField(kBody).at("n");
  expect_refused([&] { n.refuse("too many"); }, "n", "invalid_value", "too many");
  expect_refused([&] { n.unsupported("not here"); }, "n", "unsupported_parameter", "not here");
}

}  // namespace
}  // namespace qvl
