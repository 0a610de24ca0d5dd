//===- LookaheadTest.cpp - the planner's evaluations computed ahead -------===//
//
// compiler/planner/Lookahead.h: values expected next are computed by the
// workers (or by the asker while it waits) and handed over when asked for;
// values never expected, or not worth it, are computed by the asker; a value
// is computed once; the window bounds how far ahead the workers run.

#include "compiler/planner/Lookahead.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

using shardc::planner::Lookahead;

namespace {

/// A value and which thread computed it.
struct Made {
  int value;
  std::thread::id by;
};

Lookahead::Compute make(int value, std::atomic<int> &calls) {
  return [value, &calls] {
    ++calls;
    return std::any(Made{value, std::this_thread::get_id()});
  };
}

TEST(Lookahead, WithoutWorkersTheAskerComputesEachValueOnce) {
  std::atomic<int> calls{0};
  Lookahead ahead(4);
  ahead.expect("a", make(1, calls));
  EXPECT_EQ(calls.load(), 0); // nothing runs ahead before start()
  Made a = std::any_cast<Made>(ahead.need("a", make(1, calls)));
  EXPECT_EQ(a.value, 1);
  EXPECT_EQ(a.by, std::this_thread::get_id());
  Made again = std::any_cast<Made>(ahead.need("a", make(99, calls)));
  EXPECT_EQ(again.value, 1); // computed once
  Made b = std::any_cast<Made>(ahead.need("b", make(2, calls)));
  EXPECT_EQ(b.value, 2);
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(ahead.stats().ahead, 0u);
}

TEST(Lookahead, WorkersComputeTheExpectedValuesAhead) {
  std::atomic<int> calls{0};
  Lookahead ahead(2);
  for (int i = 0; i < 8; ++i)
    ahead.expect("v" + std::to_string(i), make(i, calls));
  ahead.start(1);
  for (int i = 0; i < 8; ++i) {
    Made m = std::any_cast<Made>(ahead.need("v" + std::to_string(i), make(-1, calls)));
    EXPECT_EQ(m.value, i); // the expected function, wherever it ran
  }
  EXPECT_EQ(calls.load(), 8);
  Lookahead::Stats s = ahead.stats();
  EXPECT_EQ(s.used, s.ahead); // every value computed ahead was asked for
}

TEST(Lookahead, TheWindowBoundsTheWorkAhead) {
  std::atomic<int> calls{0};
  {
    Lookahead ahead(2);
    for (int i = 0; i < 6; ++i)
      ahead.expect("v" + std::to_string(i), make(i, calls));
    ahead.start(2);
    // Nothing asked: the workers take at most the first two.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_LE(calls.load(), 2);
    EXPECT_EQ(std::any_cast<Made>(ahead.need("v0", make(-1, calls))).value, 0);
  }
  EXPECT_LE(calls.load(), 3); // v0 asked: the window was v1, v2
}

TEST(Lookahead, ValuesNotWorthItAndPassedOnesAreLeftToTheAsker) {
  std::atomic<int> calls{0};
  std::atomic<bool> worth{false};
  Lookahead ahead(8);
  ahead.expect("skip", make(1, calls), [&] { return worth.load(); });
  ahead.expect("passed", make(2, calls));
  ahead.passed(); // the search asks for neither of them as expected
  ahead.expect("next", make(3, calls));
  ahead.start(1);
  EXPECT_EQ(std::any_cast<Made>(ahead.need("next", make(-1, calls))).value, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(calls.load(), 1);
  Made s = std::any_cast<Made>(ahead.need("skip", make(10, calls)));
  EXPECT_EQ(s.value, 1); // computed here, by the function it was expected with
  EXPECT_EQ(s.by, std::this_thread::get_id());
  Made p = std::any_cast<Made>(ahead.need("passed", make(20, calls)));
  EXPECT_EQ(p.value, 2);
  EXPECT_EQ(p.by, std::this_thread::get_id());
  EXPECT_EQ(calls.load(), 3);
}

TEST(Lookahead, AnAskerWaitingForAWorkerComputesTheNextValue) {
  std::atomic<int> calls{0};
  std::atomic<bool> release{false};
  Lookahead ahead(3);
  ahead.expect("slow", [&] {
    while (!release.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++calls;
    return std::any(Made{0, std::this_thread::get_id()});
  });
  ahead.expect("next", make(1, calls));
  ahead.start(1);
  while (ahead.stats().ahead == 0) // the worker has taken "slow"
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread unblock([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release = true;
  });
  Made slow = std::any_cast<Made>(ahead.need("slow", make(-1, calls)));
  unblock.join();
  EXPECT_EQ(slow.value, 0);
  EXPECT_NE(slow.by, std::this_thread::get_id());
  Made next = std::any_cast<Made>(ahead.need("next", make(-1, calls)));
  EXPECT_EQ(next.value, 1);
  EXPECT_EQ(next.by, std::this_thread::get_id()); // computed while waiting
  EXPECT_EQ(calls.load(), 2);
}

TEST(Lookahead, TheCostliestValueInTheWindowStartsFirst) {
  std::atomic<int> calls{0};
  std::vector<int> order;
  std::mutex mutex;
  auto logged = [&](int value) {
    return [&, value] {
      std::lock_guard<std::mutex> lock(mutex);
      order.push_back(value);
      ++calls;
      return std::any(Made{value, std::this_thread::get_id()});
    };
  };
  Lookahead ahead(3);
  ahead.expect("a", logged(0), {}, 1);
  ahead.expect("b", logged(1), {}, 1);
  ahead.expect("c", logged(2), {}, 5);
  ahead.start(1);
  while (calls.load() == 0) // the worker's first value is made
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(order.front(), 2);
  }
  for (const char *k : {"a", "b", "c"})
    std::any_cast<Made>(ahead.need(k, make(-1, calls)));
  EXPECT_EQ(calls.load(), 3);
}

} // namespace
