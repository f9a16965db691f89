// API key on and off, CORS only when asked, local files only inside
// --allowed-media-dir, remote images only when allowed and never from
// private addresses unless that too is allowed.
#include <filesystem>
#include <thread>

#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

TEST(Security, ApiKeyRequiredExceptForHealth) {
  ServerProcess s({"--api-key", "s3cret"});
  auto c = s.client();
  EXPECT_EQ(c.Get("/health")->status, 200);
  auto none = c.Get("/v1/models");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(json::parse(none->body)["error"]["type"], "authentication_error");
  EXPECT_EQ(c.Get("/v1/models", {{"Authorization", "Bearer s3creT"}})->status, 401);
  EXPECT_EQ(c.Get("/v1/models", {{"Authorization", "Bearer s3cret-and-more"}})->status, 401);
  EXPECT_EQ(c.Get("/v1/models", {{"Authorization", "Bearer s3cret"}})->status, 200);
  EXPECT_EQ(post_json(c, "/v1/chat/completions", chat_body("hi", "", 2))->status, 401);
  EXPECT_EQ(post_json(c, "/v1/chat/completions", chat_body("hi", "", 2), {{"Authorization", "Bearer s3cret"}})->status,
            200);
  EXPECT_EQ(c.Get("/metrics")->status, 401);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Security, ApiKeyFromEnvironment) {
  ServerProcess s({}, {"QVL_API_KEY=from-env"});
  auto c = s.client();
  EXPECT_EQ(c.Get("/v1/models")->status, 401);
  EXPECT_EQ(c.Get("/v1/models", {{"Authorization", "Bearer from-env"}})->status, 200);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Security, NoKeyMeansOpen) {
  ServerProcess s;
  EXPECT_EQ(s.client().Get("/v1/models")->status, 200);
  auto pre = s.client().Options("/v1/chat/completions", {{"Origin", "http://evil.example"}});
  ASSERT_TRUE(pre);
  EXPECT_FALSE(pre->has_header("Access-Control-Allow-Origin"));
  EXPECT_EQ(s.stop(), 0);
}

TEST(Security, CorsOnlyForTheGivenOrigin) {
  ServerProcess s({"--cors-origin", "http://app.example"});
  auto c = s.client();
  auto ok = c.Get("/v1/models", {{"Origin", "http://app.example"}});
  EXPECT_EQ(ok->get_header_value("Access-Control-Allow-Origin"), "http://app.example");
  auto other = c.Get("/v1/models", {{"Origin", "http://evil.example"}});
  EXPECT_FALSE(other->has_header("Access-Control-Allow-Origin"));
  auto pre = c.Options("/v1/chat/completions", {{"Origin", "http://app.example"}});
  EXPECT_EQ(pre->status, 204);
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Headers").find("Authorization"), std::string::npos);
  // The page's conversation id (deploy/nginx/qvl.conf hashes on it) may be sent cross-origin too.
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Headers").find("X-Session-Id"), std::string::npos);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Security, LocalFilesOnlyInsideTheAllowedFolder) {
  const std::string images = kFixtures + "/golden/images";
  ServerProcess s({"--allowed-media-dir", images});
  auto c = s.client();
  auto in = post_json(c, "/v1/chat/completions", chat_body("hi", images + "/gradient_320x240.png", 2));
  EXPECT_EQ(in->status, 200) << in->body;
  auto uri = post_json(c, "/v1/chat/completions", chat_body("hi", "file://" + images + "/tiny_40x36.png", 2));
  EXPECT_EQ(uri->status, 200) << uri->body;
  auto out = post_json(c, "/v1/chat/completions", chat_body("hi", images + "/../manifest.json", 2));
  EXPECT_EQ(out->status, 403);
  EXPECT_EQ(json::parse(out->body)["error"]["code"], "path_not_allowed");
  // Errors never echo where files live on the server.
  EXPECT_EQ(out->body.find(kFixtures), std::string::npos);
  // A missing file answers as one outside does (media_file.h): nothing leaks.
  auto missing = post_json(c, "/v1/chat/completions", chat_body("hi", images + "/none.png", 2));
  EXPECT_EQ(missing->status, 403);
  EXPECT_EQ(json::parse(missing->body)["error"]["message"], json::parse(out->body)["error"]["message"]);
  EXPECT_EQ(s.stop(), 0);
}

// A local HTTP server standing in for a remote image host.
class ImageHost {
 public:
  ImageHost() {
    http_.Get("/img.png", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(read_file(kFixtures + "/golden/images/gradient_320x240.png"), "image/png");
    });
    http_.Get("/big.png", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(3 << 20, 'x'), "image/png");
    });
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
  }
  ~ImageHost() {
    http_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

 private:
  httplib::Server http_;
  int port_ = 0;
  std::thread thread_;
};

TEST(Security, RemoteImagesOffByDefaultAndNeverPrivateUnlessAllowed) {
  ImageHost host;
  {
    ServerProcess s;
    auto r = post_json(*std::make_unique<httplib::Client>(s.client()), "/v1/chat/completions",
                       chat_body("hi", host.url("/img.png"), 2));
    EXPECT_EQ(r->status, 403);
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "remote_images_disabled");
    EXPECT_EQ(s.stop(), 0);
  }
  {
    ServerProcess s({"--allow-remote-images"});
    auto c = s.client();
    auto r = post_json(c, "/v1/chat/completions", chat_body("hi", host.url("/img.png"), 2));
    EXPECT_EQ(r->status, 403);
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "address_not_allowed");
    EXPECT_EQ(s.stop(), 0);
  }
  {
    ServerProcess s({"--allow-remote-images", "--allow-private-remote-images", "--max-image-bytes", "1000000"});
    auto c = s.client();
    auto r = post_json(c, "/v1/chat/completions", chat_body("hi", host.url("/img.png"), 2));
    EXPECT_EQ(r->status, 200) << r->body;
    auto big = post_json(c, "/v1/chat/completions", chat_body("hi", host.url("/big.png"), 2));
    EXPECT_EQ(big->status, 413) << big->body;
    // The size the host declared and the limit, not a bound.
    EXPECT_EQ(json::parse(big->body)["error"]["message"],
              "the image is 3145728 bytes, over the limit of 1000000 bytes (--max-image-bytes)")
        << big->body;
    EXPECT_EQ(s.stop(), 0);
  }
}

}  // namespace
}  // namespace qvl::test
