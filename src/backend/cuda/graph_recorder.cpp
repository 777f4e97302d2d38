#include "backend/cuda/graph_recorder.h"

#include <cstring>

#include "util/error.h"

namespace ct::cuda {

void Signature::mix(uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    hash_ ^= (v >> (8 * i)) & 0xffu;
    hash_ *= 1099511628211ull;
  }
}

Signature& Signature::tensor(const Tensor& t) {
  mix(reinterpret_cast<uintptr_t>(t.data));
  mix(static_cast<uint64_t>(t.dtype));
  mix(static_cast<uint64_t>(t.shape.ndim));
  for (int i = 0; i < t.shape.ndim; ++i) mix(static_cast<uint64_t>(t.shape[i]));
  return *this;
}

Signature& Signature::integer(int64_t v) {
  mix(static_cast<uint64_t>(v));
  return *this;
}

Signature& Signature::real(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  mix(bits);
  return *this;
}

GraphRecorder::Mode GraphRecorder::begin(const std::string& name) {
  check(!name.empty(), "begin_graph: the region needs a name");
  check(mode_ == Mode::eager, "begin_graph('", name, "'): region '", open_, "' is still open (regions do not nest)");
  auto found = regions_.find(name);
  if (found != regions_.end() && found->second.complete) {
    mode_ = Mode::replaying;
  } else {
    Region region;
    region.name = name;
    regions_[name] = std::move(region);
    mode_ = Mode::recording;
  }
  open_ = name;
  next_call_ = 0;
  return mode_;
}

GraphRecorder::Region& GraphRecorder::open_region_ref() { return regions_.at(open_); }

GraphRecorder::Slots GraphRecorder::on_call(const std::string& op, uint64_t signature, int scalars,
                                            const std::vector<const void*>& allocations, size_t upload_bytes) {
  Slots slots;
  if (mode_ == Mode::eager) return slots;
  Region& region = open_region_ref();
  if (mode_ == Mode::recording) {
    check(region.scalar_count + scalars <= kScalarsPerRegion, "graph region '", open_, "': more than ",
          kScalarsPerRegion, " scalar arguments (split the region)");
    Call call;
    call.op = op;
    call.signature = signature;
    call.first_scalar = region.scalar_count;
    call.scalars = scalars;
    if (upload_bytes > 0) {
      call.upload = static_cast<int>(region.upload_bytes.size());
      region.upload_bytes.push_back(upload_bytes);
    }
    region.scalar_count += scalars;
    for (const void* base : allocations)
      if (base) region.allocations.insert(base);
    region.calls.push_back(call);
    slots.launch = true;
    slots.first_scalar = call.first_scalar;
    slots.upload = call.upload;
    slots.call_index = static_cast<int>(region.calls.size() - 1);
    return slots;
  }
  // replaying: the call must be the recorded one
  const size_t index = next_call_++;
  check(index < region.calls.size(), "graph region '", open_, "': call #", index + 1, " (", op,
        ") is past the end of the recording (", region.calls.size(),
        " calls); the sequence of ops changed: reset_graph('", open_, "') to record it again");
  const Call& recorded = region.calls[index];
  check(recorded.op == op && recorded.signature == signature, "graph region '", open_, "': call #", index + 1, " is ",
        op, recorded.op == op ? " with other tensors or arguments than" : " but the recording has ", recorded.op,
        " there", recorded.op == op ? " in the recording" : "",
        " (same ops on the same memory, shapes and non-scalar arguments are required); reset_graph('", open_,
        "') to record it again");
  check(recorded.scalars == scalars && (recorded.upload >= 0) == (upload_bytes > 0) &&
            (recorded.upload < 0 || region.upload_bytes[static_cast<size_t>(recorded.upload)] == upload_bytes),
        "graph region '", open_, "': call #", index + 1, " (", op, ") differs from the recording in its arguments");
  slots.launch = false;
  slots.first_scalar = recorded.first_scalar;
  slots.upload = recorded.upload;
  slots.call_index = static_cast<int>(index);
  return slots;
}

GraphRecorder::Region& GraphRecorder::end() {
  check(mode_ != Mode::eager, "end_graph: no region is open");
  Region& region = open_region_ref();
  const Mode mode = mode_;
  const size_t made = next_call_;
  mode_ = Mode::eager;
  const std::string name = open_;
  open_.clear();
  if (mode == Mode::replaying) {
    check(made == region.calls.size(), "graph region '", name, "': the replay made ", made, " calls but the recording has ",
          region.calls.size(), "; reset_graph('", name, "') to record it again");
  } else {
    region.complete = true;
  }
  return region;
}

void GraphRecorder::abandon() {
  if (mode_ == Mode::eager) return;
  if (mode_ == Mode::recording) regions_.erase(open_);
  mode_ = Mode::eager;
  open_.clear();
}

bool GraphRecorder::reset(const std::string& name) {
  check(open_ != name, "reset_graph('", name, "'): the region is open");
  return regions_.erase(name) > 0;
}

std::vector<std::string> GraphRecorder::regions_using(const void* base) const {
  std::vector<std::string> names;
  for (const auto& [name, region] : regions_)
    if (region.allocations.count(base)) names.push_back(name);
  return names;
}

const GraphRecorder::Region* GraphRecorder::find(const std::string& name) const {
  auto found = regions_.find(name);
  return found == regions_.end() ? nullptr : &found->second;
}

}  // namespace ct::cuda
