#pragma once
// CompressedDeviceSeries: the per-device metric series (ControlPlane::AppendDeviceMetrics: four families × every
// device, ~10 MB at 1,500 nodes × 8 devices) kept rendered and deflated for the scrapes that take gzip, so such a
// scrape sends ~0.8 MB it did not have to render or compress (docs/api.md, "Metrics").
//
// The first such scrape renders and compresses at once; from then on the object's own thread does it every
// `refresh`, or every 10 renders' time when a render takes longer than a tenth of that (so the thread never takes
// more than a tenth of a core: ~52 ms per render at 1,500 nodes, BM_ApiRoutesDeviceSeriesRefresh), so the series a
// gzip scrape gets are at most about that old (plus one render). The thread stops refreshing after `idle_after`
// without a gzip scrape; the next one renders at once again.
//
// Owned by the Server; `render` must stay callable until the destructor returns (it joins the thread).
// Thread-safe: Get() is called from many HTTP workers at once.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "http/gzip.h"

namespace xpool::server {

class CompressedDeviceSeries {
 public:
  using Render = std::function<void(std::string* out)>;  // appends the series' exposition text
  struct Options {
    std::chrono::milliseconds refresh{1000};
    std::chrono::milliseconds idle_after{std::chrono::minutes(5)};
  };

  CompressedDeviceSeries(Render render, Options options);
  ~CompressedDeviceSeries();
  CompressedDeviceSeries(const CompressedDeviceSeries&) = delete;
  CompressedDeviceSeries& operator=(const CompressedDeviceSeries&) = delete;

  // The latest compressed series; rendered now when there are none yet or the thread had gone idle.
  std::shared_ptr<const http::DeflatedText> Get();

  // How many times the series were rendered (tests; the refresh thread's work is observable through it).
  int64_t renders() const;

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  void Run();
  // Renders and compresses unless a render finished at or after `unless_since` (concurrent scrapes share one).
  void Refresh(SteadyTime unless_since);

  const Render render_;
  const Options options_;
  std::mutex refresh_mu_;  // one render at a time; taken before mu_, never inside it
  mutable std::mutex mu_;  // guards the fields below
  std::condition_variable wake_;
  std::shared_ptr<const http::DeflatedText> latest_;
  SteadyTime latest_done_{};                           // when `latest_` was compressed
  std::chrono::steady_clock::duration render_time_{};  // what the last render and compression took
  SteadyTime last_scrape_{};
  int64_t renders_ = 0;
  bool active_ = false;  // the thread refreshes every options_.refresh
  bool stop_ = false;
  std::thread thread_;  // last: started when everything above is set
};

}  // namespace xpool::server
