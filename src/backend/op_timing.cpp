#include "backend/op_timing.h"

#include <algorithm>
#include <map>

namespace ct::op_timing {

namespace {

struct State {
  bool enabled = false;
  int depth = 0;  // ops open on the calling thread
  std::map<std::string, Row> table;
  std::function<void()> synchronizer;
};

State& state() {
  static State s;
  return s;
}

}  // namespace

void set_enabled(bool enabled) { state().enabled = enabled; }
bool enabled() { return state().enabled; }
void reset() { state().table.clear(); }
void set_synchronizer(std::function<void()> wait) { state().synchronizer = std::move(wait); }

std::vector<Row> rows() {
  std::vector<Row> out;
  for (const auto& [key, row] : state().table) out.push_back(row);
  std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return a.seconds > b.seconds; });
  return out;
}

void Scope::open(std::string key) {
  State& s = state();
  nested_ = true;
  outermost_ = s.depth++ == 0;
  if (!outermost_) return;
  key_ = std::move(key);
  if (s.synchronizer) s.synchronizer();  // the work queued before this op is not its time
  start_ = std::chrono::steady_clock::now();
}

Scope::~Scope() {
  if (!nested_) return;
  State& s = state();
  --s.depth;
  if (!outermost_) return;
  if (s.synchronizer) {
    try {
      s.synchronizer();
    } catch (...) {
      // a device error surfaces at the next op or wait; a destructor must not throw
    }
  }
  Row& row = s.table[key_];
  row.op = key_;
  row.calls += 1;
  row.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

}  // namespace ct::op_timing
