//===- Lookahead.cpp - the search's next evaluations, computed ahead ------===//

#include "compiler/planner/Lookahead.h"

using namespace shardc::planner;

void Lookahead::start(unsigned workers) {
  for (unsigned i = 0; i < workers; ++i)
    threads_.emplace_back([this] { work(); });
}

Lookahead::~Lookahead() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (std::thread &t : threads_)
    t.join();
}

void Lookahead::expect(const std::string &key, Compute compute, Worth worth, double cost) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.count(key))
    return;
  auto entry = std::make_shared<Entry>();
  entry->compute = std::move(compute);
  entry->worth = std::move(worth);
  entry->position = expected_.size();
  entry->cost = cost;
  expected_.push_back(entry);
  entries_[key] = entry;
  changed_.notify_all();
}

Lookahead::Stats Lookahead::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void Lookahead::passed() {
  std::lock_guard<std::mutex> lock(mutex_);
  asked_ = expected_.size();
}

std::any Lookahead::computeHere(std::unique_lock<std::mutex> &lock, Entry &entry,
                                const Compute &compute) {
  entry.state = Entry::State::Running;
  lock.unlock();
  std::any value = compute();
  lock.lock();
  entry.value = value;
  entry.state = Entry::State::Done;
  entry.compute = nullptr;
  entry.worth = nullptr;
  changed_.notify_all();
  return value;
}

std::any Lookahead::need(const std::string &key, const Compute &compute) {
  std::unique_lock<std::mutex> lock(mutex_);
  std::shared_ptr<Entry> &slot = entries_[key];
  if (!slot)
    slot = std::make_shared<Entry>();
  std::shared_ptr<Entry> entry = slot; // held while unlocked
  if (entry->state == Entry::State::Done || entry->state == Entry::State::Running)
    ++stats_.used;
  if (entry->position != kUnexpected && entry->position + 1 > asked_) {
    asked_ = entry->position + 1; // the window moves on
    changed_.notify_all();
  }
  switch (entry->state) {
  case Entry::State::Done:
    return entry->value;
  case Entry::State::Running:
    // A worker computes it: meanwhile compute what comes next.
    while (entry->state != Entry::State::Done) {
      if (std::shared_ptr<Entry> next = nextInWindow()) {
        Compute ahead = next->compute;
        ++stats_.ahead;
        computeHere(lock, *next, ahead);
        continue;
      }
      changed_.wait(lock);
    }
    return entry->value;
  case Entry::State::Expected:
  case Entry::State::Dropped:
    break;
  }
  // Expected (its own function) or not (the asker's).
  Compute mine = entry->compute ? entry->compute : compute;
  return computeHere(lock, *entry, mine);
}

std::shared_ptr<Lookahead::Entry> Lookahead::nextInWindow() {
  std::shared_ptr<Entry> best;
  for (size_t i = asked_; i < expected_.size() && i < asked_ + window_; ++i) {
    const std::shared_ptr<Entry> &e = expected_[i];
    if (e->state != Entry::State::Expected)
      continue;
    if (e->worth && !e->worth()) {
      e->state = Entry::State::Dropped;
      continue;
    }
    if (!best || e->cost > best->cost)
      best = e;
  }
  return best;
}

void Lookahead::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    std::shared_ptr<Entry> next;
    changed_.wait(lock, [&] { return stopping_ || (next = nextInWindow()); });
    if (stopping_)
      return;
    Compute compute = next->compute;
    ++stats_.ahead;
    computeHere(lock, *next, compute);
  }
}
