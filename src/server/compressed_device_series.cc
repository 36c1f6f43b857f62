#include "server/compressed_device_series.h"

#include <algorithm>
#include <utility>

namespace xpool::server {

CompressedDeviceSeries::CompressedDeviceSeries(Render render, Options options)
    : render_(std::move(render)), options_(options), thread_([this] { Run(); }) {}

CompressedDeviceSeries::~CompressedDeviceSeries() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::shared_ptr<const http::DeflatedText> CompressedDeviceSeries::Get() {
  const SteadyTime asked = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    last_scrape_ = asked;
    if (latest_ != nullptr && active_) return latest_;
  }
  Refresh(asked);
  std::lock_guard lock(mu_);
  active_ = true;
  wake_.notify_all();
  return latest_;
}

int64_t CompressedDeviceSeries::renders() const {
  std::lock_guard lock(mu_);
  return renders_;
}

void CompressedDeviceSeries::Refresh(SteadyTime unless_since) {
  std::lock_guard refresh_lock(refresh_mu_);
  {
    std::lock_guard lock(mu_);
    if (latest_ != nullptr && latest_done_ >= unless_since) return;  // another caller's render covers this one
  }
  const SteadyTime began = std::chrono::steady_clock::now();
  std::string text;
  render_(&text);
  auto deflated = std::make_shared<const http::DeflatedText>(http::DeflateText(text));
  std::lock_guard lock(mu_);
  latest_ = std::move(deflated);
  latest_done_ = std::chrono::steady_clock::now();
  render_time_ = latest_done_ - began;
  renders_++;
}

void CompressedDeviceSeries::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (!active_) {
      wake_.wait(lock, [this] { return stop_ || active_; });
      continue;
    }
    const auto pause = std::max<std::chrono::steady_clock::duration>(options_.refresh, 10 * render_time_);
    wake_.wait_for(lock, pause, [this] { return stop_; });
    if (stop_) break;
    const SteadyTime now = std::chrono::steady_clock::now();
    if (now - last_scrape_ > options_.idle_after) {
      active_ = false;
      continue;
    }
    lock.unlock();
    Refresh(now);
    lock.lock();
  }
}

}  // namespace xpool::server
