#include "server/compressed_device_series.h"

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
  std::string text;
  render_(&text);
  auto deflated = std::make_shared<const http::DeflatedText>(http::DeflateText(text));
  std::lock_guard lock(mu_);
  latest_ = std::move(deflated);
  latest_done_ = std::chrono::steady_clock::now();
  renders_++;
}

void CompressedDeviceSeries::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (!active_) {
      wake_.wait(lock, [this] { return stop_ || active_; });
      continue;
    }
    wake_.wait_for(lock, options_.refresh, [this] { return stop_; });
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
