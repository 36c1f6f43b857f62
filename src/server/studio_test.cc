#include "server/studio.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace xpool::server {
namespace {

namespace fs = std::filesystem;

class StudioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xpool-studio-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "assets");
    Write("index.html", "<!doctype html><title>Studio</title>");
    Write("assets/app-1234.js", "console.log(1)");
    Write("assets/app-1234.css", "body{}");
    Write(".secret", "no");
    fs::create_directories(dir_.parent_path() / "outside-xpool");
    std::ofstream(dir_.parent_path() / "outside-xpool" / "x.txt") << "outside";
  }
  void TearDown() override {
    fs::remove_all(dir_);
    fs::remove_all(dir_.parent_path() / "outside-xpool");
  }
  void Write(const std::string& rel, const std::string& body) { std::ofstream(dir_ / rel) << body; }
  static std::string Header(const StudioResponse& r, const std::string& name) {
    for (const auto& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(StudioTest, ServesFilesWithTheirContentType) {
  Studio s(dir_.string());
  ASSERT_TRUE(s.built());
  StudioResponse js = s.Serve("/assets/app-1234.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(js.body, "console.log(1)");
  EXPECT_NE(Header(js, "Cache-Control").find("immutable"), std::string::npos);
  EXPECT_EQ(s.Serve("/assets/app-1234.css").content_type, "text/css; charset=utf-8");
  StudioResponse root = s.Serve("/");
  EXPECT_EQ(root.status, 200);
  EXPECT_EQ(root.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(Header(root, "Cache-Control"), "no-cache");
  EXPECT_NE(Header(root, "Content-Security-Policy").find("default-src 'self'"), std::string::npos);
}

TEST_F(StudioTest, UiRoutesFallBackToIndexButMissingFilesAre404) {
  Studio s(dir_.string());
  StudioResponse page = s.Serve("/jobs/12");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.body, "<!doctype html><title>Studio</title>");
  EXPECT_EQ(s.Serve("/nodes").status, 200);
  EXPECT_EQ(s.Serve("/assets/missing.js").status, 404);
  EXPECT_EQ(s.Serve("/favicon.ico").status, 404);
}

TEST_F(StudioTest, NeverServesOutsideTheDirectoryOrHiddenFiles) {
  Studio s(dir_.string());
  EXPECT_EQ(s.Serve("/../outside-xpool/x.txt").status, 404);
  EXPECT_EQ(s.Serve("/assets/../../outside-xpool/x.txt").status, 404);
  EXPECT_EQ(s.Serve("/.secret").status, 404);
  EXPECT_NE(s.Serve("/..").body, "outside");
}

TEST_F(StudioTest, ARequestPathIsOnlyAKeyIntoTheBundle) {
  Studio s(dir_.string());
  const std::string outside = (dir_.parent_path() / "outside-xpool" / "x.txt").string();
  // An absolute path after the slash ("//tmp/.../x.txt" once the server has decoded %2F) names no bundle file.
  const std::vector<std::string> paths = {"/" + outside, "//" + outside, "/%2e%2e/outside-xpool/x.txt",
                                          "/assets/%2e%2e/%2e%2e/outside-xpool/x.txt", "/assets\\..\\..\\x.txt"};
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    const StudioResponse r = s.Serve(path);
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(r.body.find("outside"), std::string::npos);
  }
  // Without an extension it is a UI route: the index, never the file.
  fs::create_directories(dir_.parent_path() / "outside-xpool" / "plain");
  std::ofstream(dir_.parent_path() / "outside-xpool" / "noext") << "outside";
  const StudioResponse route = s.Serve("/" + (dir_.parent_path() / "outside-xpool" / "noext").string());
  EXPECT_EQ(route.body, "<!doctype html><title>Studio</title>");
}

TEST_F(StudioTest, SymlinksInTheBundleAreNeverFollowed) {
  fs::create_symlink(dir_.parent_path() / "outside-xpool" / "x.txt", dir_ / "assets" / "link.txt");
  fs::create_directory_symlink(dir_.parent_path() / "outside-xpool", dir_ / "assets" / "ext");
  Studio s(dir_.string());
  EXPECT_EQ(s.Serve("/assets/link.txt").status, 404);
  EXPECT_EQ(s.Serve("/assets/ext/x.txt").status, 404);
  EXPECT_EQ(s.Serve("/assets/app-1234.js").status, 200);
}

TEST_F(StudioTest, ARebuiltBundleIsServedWithoutARestart) {
  Studio s(dir_.string());
  EXPECT_EQ(s.Serve("/assets/app-5678.js").status, 404);
  Write("assets/app-5678.js", "console.log(2)");
  // The list changes with index.html (a build writes it last); a file appearing alone is not served.
  EXPECT_EQ(s.Serve("/assets/app-5678.js").status, 404);
  const auto before = fs::last_write_time(dir_ / "index.html");
  Write("index.html", "<!doctype html><title>Studio 2</title>");
  fs::last_write_time(dir_ / "index.html", before + std::chrono::seconds(1));
  EXPECT_EQ(s.Serve("/assets/app-5678.js").body, "console.log(2)");
  EXPECT_EQ(s.Serve("/jobs").body, "<!doctype html><title>Studio 2</title>");
}

TEST_F(StudioTest, NotBuiltSaysSoOnEveryPage) {
  Studio s((dir_ / "nothing-here").string());
  EXPECT_FALSE(s.built());
  for (const char* path : {"/", "/jobs/1", "/assets/app.js"}) {
    StudioResponse r = s.Serve(path);
    EXPECT_EQ(r.status, 503) << path;
    EXPECT_NE(r.body.find("Studio is not built"), std::string::npos) << path;
  }
  EXPECT_FALSE(Studio("").built());
}

TEST(StudioRoutesTest, NeverShadowsTheApiOrOperationsRoutes) {
  EXPECT_TRUE(Studio::Handles("GET", "/"));
  EXPECT_TRUE(Studio::Handles("GET", "/jobs/3"));
  EXPECT_TRUE(Studio::Handles("HEAD", "/assets/app.js"));
  EXPECT_TRUE(Studio::Handles("GET", "/apix"));
  EXPECT_FALSE(Studio::Handles("POST", "/"));
  EXPECT_FALSE(Studio::Handles("GET", "/api"));
  EXPECT_FALSE(Studio::Handles("GET", "/api/v1/jobs"));
  EXPECT_FALSE(Studio::Handles("GET", "/api/v1/openapi.json"));
  EXPECT_FALSE(Studio::Handles("GET", "/metrics"));
  EXPECT_FALSE(Studio::Handles("GET", "/healthz"));
  EXPECT_FALSE(Studio::Handles("GET", "/readyz"));
}

}  // namespace
}  // namespace xpool::server
