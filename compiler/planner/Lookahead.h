//===- Lookahead.h - the search's next evaluations, computed ahead -*- C++ -*-===//
//
// The planner's search is sequential: whether a candidate is evaluated
// depends on the candidates before it (the incumbent that bounds pipelines
// out, the lighter memory policy that did not fit). Its evaluations are pure
// functions of the candidate, though, so the search can say what it expects
// to need next and worker threads compute it while the search runs: a value
// the search then asks for is taken as computed (or waited for), one it
// asks for that nobody started is computed on the calling thread, and one
// it never asks for is wasted work. The search's decisions, and so the plan,
// are those of the sequential search whatever the workers do; only its time
// changes.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_COMPILER_PLANNER_LOOKAHEAD_H
#define SHARDC_COMPILER_PLANNER_LOOKAHEAD_H

#include <any>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shardc::planner {

class Lookahead {
public:
  using Compute = std::function<std::any()>;
  /// Whether an expected value is still worth computing ahead (checked by a
  /// worker before it starts; the search may still ask for it).
  using Worth = std::function<bool()>;

  /// Values are computed at most `window` expected values ahead of the last
  /// one asked for; by nobody but the asker until start().
  explicit Lookahead(size_t window) : window_(window) {}
  /// Starts `workers` threads that compute expected values ahead.
  void start(unsigned workers);
  /// Waits for the values being computed; drops the rest.
  ~Lookahead();
  Lookahead(const Lookahead &) = delete;
  Lookahead &operator=(const Lookahead &) = delete;

  /// The search expects to ask for `key` after what it already expects.
  /// Of the values in the window the costliest is computed first (`cost`, in
  /// any unit; ties in order): a long one started early ends with the rest.
  void expect(const std::string &key, Compute compute, Worth worth = {}, double cost = 0);
  /// The search moves on: it asks for nothing expected so far that it has
  /// not asked for (the window starts at what is expected next).
  void passed();
  /// `key`'s value: computed before (by a worker, or an earlier ask), waited
  /// for while a worker computes it (computing the next expected values here
  /// meanwhile), or computed here (by the function it was expected with, else
  /// by `compute`).
  std::any need(const std::string &key, const Compute &compute);

  struct Stats {
    size_t ahead = 0; ///< values computed before they were asked for
    size_t used = 0;  ///< of those, asked for (the rest: work wasted so far)
  };
  Stats stats();

private:
  static constexpr size_t kUnexpected = ~size_t(0);
  struct Entry {
    /// Dropped: not worth computing ahead (whoever asks computes it).
    enum class State { Expected, Dropped, Running, Done } state = State::Expected;
    Compute compute;
    Worth worth;
    std::any value;
    size_t position = kUnexpected; ///< in the expected order
    double cost = 0;
  };
  void work();
  /// The costliest expected value in the window nobody computes (and still
  /// worth it), or null.
  std::shared_ptr<Entry> nextInWindow();
  /// Computes `entry` (its state Running) on this thread.
  std::any computeHere(std::unique_lock<std::mutex> &lock, Entry &entry, const Compute &compute);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  std::vector<std::shared_ptr<Entry>> expected_; ///< in order
  size_t asked_ = 0; ///< one past the furthest expected value asked for
  size_t window_;
  bool stopping_ = false;
  Stats stats_;
  std::vector<std::thread> threads_;
};

} // namespace shardc::planner

#endif // SHARDC_COMPILER_PLANNER_LOOKAHEAD_H
