// Encoding throughput of a trained tokenizer on a text file, with 1 thread and with all threads:
//
//   tokenizer_bench --tokenizer DIR --text FILE [--threads N] [--repeats R]
//
// The text is cut into one slice per thread (at line breaks); each thread encodes its slice with
// encode_append. Prints, for each repeat, MB/s (10^6 bytes of text per second of wall time) and MB
// per CPU-second (which a busy, shared machine distorts less), and the same for the pre-tokenizer
// alone. bench/tokenizer.sh runs it on corpus text.
#include <omp.h>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_main.h"
#include "text/pretokenizer.h"
#include "text/tokenizer.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/files.h"
#include "util/threads.h"

namespace {

// CPU seconds used by the whole process: on a shared machine, wall time also counts the time other
// programs held the cores, CPU time does not.
double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Timing {
  double wall = 0, cpu = 0;
};

std::vector<std::string_view> slices(const std::string& text, int n) {
  std::vector<std::string_view> out;
  size_t begin = 0;
  for (int i = 0; i < n; ++i) {
    size_t end = i + 1 == n ? text.size() : std::max(begin, text.size() * (i + 1) / n);
    while (end < text.size() && text[end - 1] != '\n') ++end;
    out.emplace_back(text.data() + begin, end - begin);
    begin = end;
  }
  return out;
}

// Wall seconds for every thread to encode its slice; the token count through `tokens`.
Timing encode_seconds(const ct::Tokenizer& tokenizer, const std::vector<std::string_view>& parts, size_t& tokens) {
  std::vector<size_t> counts(parts.size());
  const double cpu0 = process_cpu_seconds();
  ct::Stopwatch watch;
#pragma omp parallel for schedule(static, 1) num_threads(static_cast<int>(parts.size()))
  for (size_t i = 0; i < parts.size(); ++i) {
    std::vector<int32_t> ids;
    ids.reserve(parts[i].size() / 3);
    tokenizer.encode_append(parts[i], ids);
    counts[i] = ids.size();
  }
  const Timing t{watch.seconds(), process_cpu_seconds() - cpu0};
  tokens = 0;
  for (size_t c : counts) tokens += c;
  return t;
}

Timing pretokenize_seconds(const std::vector<std::string_view>& parts, size_t& chunks) {
  std::vector<size_t> counts(parts.size());
  const double cpu0 = process_cpu_seconds();
  ct::Stopwatch watch;
#pragma omp parallel for schedule(static, 1) num_threads(static_cast<int>(parts.size()))
  for (size_t i = 0; i < parts.size(); ++i) {
    size_t n = 0;
    ct::pretokenize(parts[i], [&](std::string_view) { ++n; });
    counts[i] = n;
  }
  const Timing t{watch.seconds(), process_cpu_seconds() - cpu0};
  chunks = 0;
  for (size_t c : counts) chunks += c;
  return t;
}

int run(int argc, char** argv) {
  std::string tokenizer_dir, text_path;
  int threads = 0, repeats = 3;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      ct::check(i + 1 < argc, arg, ": needs a value");
      return argv[++i];
    };
    if (arg == "--tokenizer") tokenizer_dir = value();
    else if (arg == "--text") text_path = value();
    else if (arg == "--threads") threads = std::stoi(value());
    else if (arg == "--repeats") repeats = std::stoi(value());
    else ct::fail("unknown argument ", arg, " (usage: tokenizer_bench --tokenizer DIR --text FILE [--threads N] [--repeats R])");
  }
  ct::check(!tokenizer_dir.empty() && !text_path.empty(), "usage: tokenizer_bench --tokenizer DIR --text FILE [--threads N] [--repeats R]");
  if (threads <= 0) threads = ct::available_cores();
  const ct::Tokenizer tokenizer = ct::Tokenizer::load(tokenizer_dir);
  const std::string text = ct::read_file(text_path);
  const double megabytes = double(text.size()) / 1e6;
  std::printf("text %s: %.1f MB; tokenizer %s: vocab %d\n", text_path.c_str(), megabytes, tokenizer_dir.c_str(),
              tokenizer.vocab_size());
  std::vector<int> thread_counts{1};
  if (threads > 1) thread_counts.push_back(threads);
  for (int n : thread_counts) {
    const auto parts = slices(text, n);
    for (int r = 0; r < repeats; ++r) {
      size_t chunks = 0, tokens = 0;
      const Timing pre = pretokenize_seconds(parts, chunks);
      const Timing enc = encode_seconds(tokenizer, parts, tokens);
      std::printf(
          "threads %d  repeat %d  encode %6.1f MB/s wall, %6.1f MB per CPU-second (%.2f s wall, %.2f s CPU)  "
          "pre-tokenize alone %6.1f MB/s wall, %6.1f MB per CPU-second  %zu tokens, %.3f bytes/token\n",
          n, r + 1, megabytes / enc.wall, megabytes / enc.cpu, enc.wall, enc.cpu, megabytes / pre.wall,
          megabytes / pre.cpu, tokens, double(text.size()) / double(tokens));
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ct::bench::guarded_main("tokenizer_bench", [&] { return run(argc, argv); });
}
