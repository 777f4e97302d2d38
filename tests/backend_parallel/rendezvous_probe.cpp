// One process of a rendezvous, placed by its launcher's variables (launch.h): it offers 16 bytes made
// from its rank, takes part in exchange_id and prints "rank R of W got HEX" (the bytes every rank
// should end with: rank 0's). rendezvous_test.cpp runs it under a real torchrun when one is installed.
#include <cstdio>
#include <exception>
#include <vector>

#include "backend/parallel/launch.h"
#include "backend/parallel/rendezvous.h"

int main() {
  try {
    const ct::LaunchEnvironment env = ct::launch_environment_from_process();
    std::vector<uint8_t> id(16);
    for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<uint8_t>(0x40 + env.rank * 16 + i);
    const std::vector<uint8_t> got = ct::exchange_id(env, id);
    std::printf("rank %d of %d got ", env.rank, env.world_size);
    for (uint8_t b : got) std::printf("%02x", b);
    std::printf("\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rendezvous_probe: %s\n", e.what());
    return 1;
  }
}
