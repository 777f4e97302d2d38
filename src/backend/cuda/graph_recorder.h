#pragma once
// The bookkeeping of graph regions (backend.h "graph regions"), without CUDA: which region is open,
// whether it records or replays, the signature of every call in order, the scalar slots and upload
// buffers each call owns, and which allocations a recording touches (so that freeing one drops the
// recording). CudaBackend pairs it with CUDA stream capture and graph launches (cuda_graphs.cpp).
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/tensor.h"

namespace ct::cuda {

// FNV-1a over everything that must match between a recording and a replay.
class Signature {
 public:
  Signature& tensor(const Tensor& t);  // address, dtype, shape (an empty tensor mixes a marker)
  Signature& integer(int64_t v);
  Signature& real(double v);  // the bits: a replay must pass exactly the same value
  uint64_t value() const { return hash_; }

 private:
  void mix(uint64_t v);
  uint64_t hash_ = 1469598103934665603ull;
};

class GraphRecorder {
 public:
  enum class Mode { eager, recording, replaying };
  static constexpr int kScalarsPerRegion = 16384;

  struct Call {
    std::string op;
    uint64_t signature = 0;
    int first_scalar = 0;  // slots [first_scalar, first_scalar + scalars)
    int scalars = 0;
    int upload = -1;  // index into Region::upload_bytes, or -1
  };
  struct Region {
    std::string name;
    std::vector<Call> calls;
    std::vector<size_t> upload_bytes;  // one entry per upload call, in order
    std::set<const void*> allocations;  // bases of the allocations the recording reads or writes
    int scalar_count = 0;
    bool complete = false;  // recorded to the end
  };
  // What on_call tells the caller to do.
  struct Slots {
    bool launch = true;     // false while replaying: the recording already holds the work
    int first_scalar = 0;   // meaningful when recording or replaying
    int upload = -1;        // upload index (recording or replaying an upload call)
    int call_index = -1;
  };

  Mode mode() const { return mode_; }
  bool active() const { return mode_ != Mode::eager; }
  const std::string& open_region() const { return open_; }

  // Opens `name`: replaying when a complete recording exists, recording otherwise. Nested regions
  // are an error.
  Mode begin(const std::string& name);
  // One op call inside the open region (eager: returns launch = true and nothing else).
  // `allocations`: the bases of the allocations the call touches.
  Slots on_call(const std::string& op, uint64_t signature, int scalars, const std::vector<const void*>& allocations,
                size_t upload_bytes = 0);
  // Closes the region: a replay must have made exactly the recorded calls. Returns the region.
  Region& end();
  // Drops the open region's recording after a failure inside it (the region is closed).
  void abandon();
  // Drops a complete recording; false when there was none.
  bool reset(const std::string& name);
  // Regions whose recording touches the allocation `base` (their recordings must go when it is freed).
  std::vector<std::string> regions_using(const void* base) const;
  const Region* find(const std::string& name) const;

 private:
  Region& open_region_ref();
  std::map<std::string, Region> regions_;
  Mode mode_ = Mode::eager;
  std::string open_;
  size_t next_call_ = 0;  // replay position
};

}  // namespace ct::cuda
