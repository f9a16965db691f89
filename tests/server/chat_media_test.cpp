// The chat request's media step apart from its parse: parse_chat_request
// does no I/O, take_chat_media fetches and decodes, and what a part is comes
// from its bytes, so a PDF in an image_url is its pages whatever its URL
// (file://, a data: URL with any MIME type) and each kind has its own cap.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../pdf/pdf_writer.h"
#include "server/requests/api_error.h"
#include "server/media/base64.h"
#include "server/media/chat_media.h"
#include "server/requests/chat_request.h"

namespace qvl {
namespace {

using json = nlohmann::ordered_json;
using test::box_page;
using test::pdf_of_pages;

std::string two_page_pdf() { return pdf_of_pages({box_page(320, 240), box_page(320, 240, "10 10 50 50")}); }

std::string fixture(const std::string& path) {
  std::ifstream in(std::string(QVL_FIXTURES_DIR) + "/" + path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string data_url(const std::string& mime, const std::string& bytes) {
  return "data:" + mime + ";base64," +
         base64_encode({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
}

json with_parts(const std::vector<json>& parts) {
  json content = json::array();
  for (const json& p : parts) content.push_back(p);
  content.push_back({{"type", "text"}, {"text", "Read it."}});
  return {{"messages", {{{"role", "user"}, {"content", content}}}}};
}

json image_url(const std::string& url) { return {{"type", "image_url"}, {"image_url", {{"url", url}}}}; }

// A folder of its own (--allowed-media-dir), removed at the end.
struct MediaDir {
  std::string path;
  MediaDir() {
    char tmpl[] = "/tmp/qvl_chat_media_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~MediaDir() { std::filesystem::remove_all(path); }
  std::string put(const std::string& name, const std::string& bytes) const {
    std::ofstream(path + "/" + name, std::ios::binary) << bytes;
    return path + "/" + name;
  }
};

ChatLimits limits(const std::string& media_dir = "") {
  MediaOptions media;
  media.allowed_media_dir = media_dir;
  return request_chat_limits(media, {});
}

ChatRequest taken(const json& body, const ChatLimits& l) {
  ChatRequest r = parse_chat_request(body, l);
  take_chat_media(r, l, nullptr);
  return r;
}

ApiError refusal(const json& body, const ChatLimits& l) {
  try {
    taken(body, l);
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "", "");
}

// The image parts of the request's one user message, as width x height.
std::vector<std::pair<int, int>> images_of(const ChatRequest& r) {
  std::vector<std::pair<int, int>> out;
  for (const MessagePart& p : r.generate.messages.at(0).parts)
    if (p.image) out.emplace_back(p.image->width, p.image->height);
  return out;
}

const std::vector<std::pair<int, int>> kTwoPages = {{640, 480}, {640, 480}};  // 320 x 240 pt at 144 dpi

TEST(ChatMedia, TheParseDoesNoIo) {
  // A local path the server does not allow, a remote URL, and a missing
  // file: the parse only takes the URLs; the media step refuses them.
  const json body = with_parts({image_url("file:///nowhere/a.pdf"), image_url("http://example.com/a.png"),
                                {{"type", "file"}, {"file", {{"file_data", "/etc/passwd"}}}}});
  const ChatRequest r = parse_chat_request(body, limits());
  ASSERT_EQ(r.pending.sources.size(), 3u);
  EXPECT_EQ(r.pending.sources[0].url, "file:///nowhere/a.pdf");
  EXPECT_EQ(r.pending.sources[0].url_param, "messages[0].content[0].image_url.url");
  EXPECT_EQ(r.pending.sources[2].hint, MediaKind::Pdf);
  EXPECT_EQ(r.media, 3);
  for (const MessagePart& p : r.generate.messages[0].parts) EXPECT_FALSE(p.image);
  const ApiError e = refusal(body, limits());
  EXPECT_EQ(e.status(), 403);
  EXPECT_EQ(e.code(), "local_files_disabled");
  EXPECT_EQ(e.param(), "messages[0].content[0].image_url.url");
}

TEST(ChatMedia, APdfFileInAnImageUrlIsItsPages) {
  const MediaDir dir;
  const std::string path = dir.put("doc.pdf", two_page_pdf());
  for (const std::string& url : {"file://" + path, path}) {
    SCOPED_TRACE(url);
    const ChatRequest r = taken(with_parts({image_url(url)}), limits(dir.path));
    EXPECT_EQ(images_of(r), kTwoPages);
    EXPECT_EQ(r.media, 2);
    ASSERT_EQ(r.generate.messages[0].parts.size(), 3u);  // two pages, then the text
    EXPECT_EQ(r.generate.messages[0].parts[2].text, "Read it.");
  }
  // Named anything: the bytes say PDF.
  const std::string odd = dir.put("scan.png", two_page_pdf());
  EXPECT_EQ(images_of(taken(with_parts({image_url("file://" + odd)}), limits(dir.path))), kTwoPages);
}

TEST(ChatMedia, ADataUrlIsWhatItsBytesAreWhateverItsMimeType) {
  EXPECT_EQ(images_of(taken(with_parts({image_url(data_url("image/png", two_page_pdf()))}), limits())), kTwoPages);
  EXPECT_EQ(images_of(taken(with_parts({image_url(data_url("application/pdf", two_page_pdf()))}), limits())), kTwoPages);
  const std::string png = fixture("golden/images/odd_313x97.png");
  ASSERT_FALSE(png.empty());
  const ChatRequest r = taken(with_parts({image_url(data_url("application/pdf", png))}), limits());
  EXPECT_EQ(images_of(r), (std::vector<std::pair<int, int>>{{313, 97}}));
  EXPECT_EQ(r.media, 1);
  // A file part holding an image is the image; PDF fields on it are refused, naming them.
  const json file = {{"type", "file"}, {"file", {{"file_data", data_url("image/png", png)}}}};
  EXPECT_EQ(images_of(taken(with_parts({file}), limits())), (std::vector<std::pair<int, int>>{{313, 97}}));
  const json paged = {{"type", "file"}, {"file", {{"file_data", data_url("image/png", png)}, {"pages", "1"}}}};
  const ApiError e = refusal(with_parts({paged}), limits());
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "messages[0].content[0].file.pages");
}

TEST(ChatMedia, APdfInAnImageUrlCountsItsPagesAndIsRefusedAsAPdf) {
  ChatLimits l = limits();
  l.max_images = 2;
  const json png = image_url(data_url("image/png", fixture("golden/images/odd_313x97.png")));
  ApiError e = refusal(with_parts({png, image_url(data_url("image/png", two_page_pdf()))}), l);
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "too_many_images");
  EXPECT_EQ(std::string(e.what()), "the request has 3 images (2 of them PDF pages), over the limit of 2 per request");
  l = limits();
  l.media.pdf.max_pages = 1;
  e = refusal(with_parts({image_url(data_url("image/png", two_page_pdf()))}), l);
  EXPECT_EQ(e.status(), 413);
  EXPECT_EQ(e.code(), "too_many_pages");
  EXPECT_EQ(e.param(), "messages[0].content[0].image_url.url");
  const std::string text = two_page_pdf();
  e = refusal(with_parts({image_url(data_url("application/pdf", text.substr(0, text.size() / 2)))}), limits());
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "invalid_pdf");
}

TEST(ChatMedia, EachKindHasItsOwnCap) {
  const std::string pdf = two_page_pdf();
  const std::string png = fixture("golden/images/text_400x128.png");
  ChatLimits l = limits();
  // A PDF over the image cap is taken: it is capped by --max-pdf-bytes.
  l.media.max_image_bytes = l.decode.max_encoded_bytes = 100;
  ASSERT_GT(pdf.size(), 100u);
  EXPECT_EQ(images_of(taken(with_parts({image_url(data_url("image/png", pdf))}), l)), kTwoPages);
  ApiError e = refusal(with_parts({image_url(data_url("image/png", png))}), l);
  EXPECT_EQ(e.status(), 413);
  EXPECT_EQ(std::string(e.what()),
            "the image is " + std::to_string(png.size()) + " bytes, over the limit of 100 bytes (--max-image-bytes)");
  // And over --max-pdf-bytes, in a file part or an image_url alike.
  l = limits();
  l.media.pdf.max_bytes = 100;
  for (const json& part : {image_url(data_url("image/png", pdf)),
                           json{{"type", "file"}, {"file", {{"file_data", data_url("application/pdf", pdf)}}}}}) {
    e = refusal(with_parts({part}), l);
    EXPECT_EQ(e.status(), 413);
    EXPECT_EQ(e.code(), "image_too_large");
    EXPECT_EQ(std::string(e.what()),
              "the PDF is " + std::to_string(pdf.size()) + " bytes, over the limit of 100 bytes (--max-pdf-bytes)");
  }
}

}  // namespace
}  // namespace qvl
