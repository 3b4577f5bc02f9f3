#include "batch_producer.h"

namespace gpp::capture {

BatchProducer::BatchProducer(CaptureReader &reader, Allocate allocate, Discard discard,
                             unsigned writer_threads, unsigned depth)
    : reader_(reader), allocate_(std::move(allocate)), discard_(std::move(discard)),
      writers_(writer_threads), depth_(depth ? depth : 1) {}

BatchProducer::~BatchProducer() { stop(); }

void BatchProducer::start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { run(); });
}

void BatchProducer::put(ProducedBatch item) {
  std::lock_guard<std::mutex> guard(mutex_);
  queue_.push_back(std::move(item));
  changed_.notify_all();
}

void BatchProducer::run() {
  BatchPlan plan;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || queue_.size() < depth_; });
      if (stopping_) return;
    }
    const uint64_t first = reader_.records_read();
    const CaptureReader::Step step = reader_.plan(&plan, batch_size_.load(), max_batch_bytes_);
    ProducedBatch item;
    if (step == CaptureReader::Step::End) {
      item.kind = ProducedBatch::Kind::End;
      put(std::move(item));
      return;
    }
    if (step == CaptureReader::Step::Error) {
      item.kind = ProducedBatch::Kind::Error;
      item.error = reader_.error();
      item.last_record = reader_.records_read();
      put(std::move(item));
      return;
    }
    uint8_t *dst = allocate_(plan.size(), &item.memory);
    if (!dst) {
      item.kind = ProducedBatch::Kind::NoMemory;
      put(std::move(item));
      return;
    }
    reader_.write(plan, dst, &writers_);
    item.kind = ProducedBatch::Kind::Batch;
    item.packets = plan.count();
    item.captured_bytes = plan.captured_bytes;
    item.first_record = first;
    item.last_record = reader_.records_read();
    put(std::move(item));
  }
}

ProducedBatch BatchProducer::take() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return interrupted_ || !queue_.empty(); });
  if (interrupted_) return {};
  ProducedBatch item = std::move(queue_.front());
  queue_.pop_front();
  changed_.notify_all();
  return item;
}

void BatchProducer::interrupt() {
  std::lock_guard<std::mutex> guard(mutex_);
  interrupted_ = true;
  changed_.notify_all();
}

void BatchProducer::resume() {
  std::lock_guard<std::mutex> guard(mutex_);
  interrupted_ = false;
}

void BatchProducer::stop() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> guard(mutex_);
  for (ProducedBatch &item : queue_)
    if (item.memory) discard_(item);
  queue_.clear();
}

} // namespace gpp::capture
