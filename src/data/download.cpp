#include "data/download.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>

#include "util/clock.h"
#include "util/error.h"
#include "util/files.h"
#include "util/json.h"
#include "util/progress.h"
#include "util/sha256.h"
#include "util/text_format.h"

namespace ct {

namespace fs = std::filesystem;

std::string file_name_of_url(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("?#"));
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

namespace {

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
  ~CurlGlobal() { curl_global_cleanup(); }
};

// One file's transfer: NAME.partial, appended to from `offset` (a resumed transfer asks for the
// rest with a Range request).
struct Transfer {
  size_t item = 0;
  fs::path partial;
  FILE* file = nullptr;
  CURL* easy = nullptr;
  uint64_t offset = 0;         // bytes of .partial kept from before this attempt
  uint64_t received = 0;       // bytes written by this attempt
  std::string error;           // a reason set by the write callback
  char curl_error[CURL_ERROR_SIZE] = {0};
};

size_t write_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  if (std::fwrite(data, 1, bytes, t->file) != bytes) {
    t->error = "write error (disk full?)";
    return 0;  // aborts the transfer
  }
  t->received += bytes;
  return bytes;
}

// Per-item state across attempts.
struct ItemState {
  int attempts = 0;
  double ready_at = 0;  // monotonic time before which a retry waits (backoff)
  std::string last_error;
  bool done = false, failed = false;
  DownloadRecord record;
};

// A 4xx answer (other than 408 Request Timeout and 429 Too Many Requests) will not change on retry.
bool permanent_http_error(long code) { return code >= 400 && code < 500 && code != 408 && code != 429 && code != 416; }

std::map<std::string, Json> load_download_manifest(const fs::path& path) {
  std::map<std::string, Json> entries;
  if (!fs::exists(path)) return entries;
  try {
    Json manifest = read_json_file(path);
    for (const Json& entry : manifest.at("files")) entries[entry.at("file").get<std::string>()] = entry;
  } catch (const std::exception& e) {
    fail(path.string(), ": not a download manifest (", e.what(), "); move it away to start a new one");
  }
  return entries;
}

void save_download_manifest(const fs::path& path, const std::map<std::string, Json>& entries) {
  Json files = Json::array();
  for (const auto& [name, entry] : entries) files.push_back(entry);
  write_file_atomic(path, Json{{"format", "clocktrain-download-manifest"}, {"version", 1}, {"files", files}}.dump(2) + "\n");
}

std::string human_mb(double bytes) { return format_fixed(bytes / 1e6, 1) + " MB"; }

}  // namespace

std::vector<DownloadRecord> download_files(const std::vector<DownloadItem>& items, const DownloadSettings& settings) {
  check(settings.parallel >= 1, "--parallel: expected at least 1, got ", settings.parallel);
  check(settings.attempts >= 1, "--attempts: expected at least 1, got ", settings.attempts);
  ensure_directory(settings.out_dir);
  const fs::path manifest_path = settings.out_dir / kDownloadManifestName;
  std::map<std::string, Json> manifest = load_download_manifest(manifest_path);
  {
    std::map<std::string, std::string> urls_of_names;
    for (const auto& item : items) {
      check(!item.name.empty() && item.name.find('/') == std::string::npos && item.name != "." && item.name != "..",
            item.url, ": no usable file name (got \"", item.name, "\")");
      auto [at, inserted] = urls_of_names.emplace(item.name, item.url);
      check(inserted || at->second == item.url, item.url, " and ", at->second, ": both would be saved as ", item.name);
    }
  }

  std::vector<ItemState> states(items.size());
  std::deque<size_t> queue;
  for (size_t i = 0; i < items.size(); ++i) {
    const fs::path final_path = settings.out_dir / items[i].name;
    states[i].record.url = items[i].url;
    states[i].record.name = items[i].name;
    if (fs::exists(final_path)) {
      // Complete already (only complete files carry the final name); with an expected checksum, it
      // must match, else the file is fetched again.
      const std::string sha = sha256_file(final_path);
      if (items[i].sha256.empty() || items[i].sha256 == sha) {
        auto& r = states[i].record;
        r.sha256 = sha;
        r.bytes = fs::file_size(final_path);
        r.skipped = true;
        auto known = manifest.find(items[i].name);
        r.fetched_at = known != manifest.end() && known->second.value("sha256", "") == sha
                           ? known->second.value("fetched_at", "")
                           : utc_text(unix_seconds(), "%Y-%m-%dT%H:%M:%SZ");
        states[i].done = true;
        continue;
      }
    }
    queue.push_back(i);
  }

  static CurlGlobal curl_global;
  std::unique_ptr<CURLM, decltype(&curl_multi_cleanup)> multi(curl_multi_init(), &curl_multi_cleanup);
  check(multi != nullptr, "download: cannot start libcurl");
  std::map<CURL*, std::unique_ptr<Transfer>> running;
  ProgressLine progress;
  Stopwatch clock;
  uint64_t finished_bytes = 0;
  size_t finished_files = 0;
  for (const auto& s : states) finished_files += s.done ? 1 : 0;

  auto start = [&](size_t i) {
    auto t = std::make_unique<Transfer>();
    t->item = i;
    t->partial = settings.out_dir / (items[i].name + ".partial");
    std::error_code ec;
    t->offset = fs::exists(t->partial, ec) ? fs::file_size(t->partial, ec) : 0;
    t->file = std::fopen(t->partial.c_str(), "ab");
    check(t->file != nullptr, t->partial.string(), ": cannot open for writing");
    CURL* easy = curl_easy_init();
    check(easy != nullptr, "download: cannot start a libcurl transfer");
    t->easy = easy;
    curl_easy_setopt(easy, CURLOPT_URL, items[i].url.c_str());
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);  // Hugging Face's resolve/ URLs redirect to a CDN
    curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(easy, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t->curl_error);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(settings.connect_timeout_seconds * 1000));
    // A stall: under 1 byte/s for the stall timeout.
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, std::max(1L, std::lround(settings.stall_timeout_seconds)));
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "clocktrain-data-download");
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    if (t->offset > 0) curl_easy_setopt(easy, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(t->offset));
    curl_multi_add_handle(multi.get(), easy);
    ++states[i].attempts;
    running.emplace(easy, std::move(t));
  };

  // A failed attempt: retried after a backoff, or, out of attempts (or a permanent error), the
  // item fails and its .partial is removed, so that nothing half-written stays in the folder.
  auto give_up_or_retry = [&](size_t i, const std::string& reason, bool permanent, bool keep_partial) {
    ItemState& s = states[i];
    s.last_error = reason;
    const fs::path partial = settings.out_dir / (items[i].name + ".partial");
    if (!keep_partial) fs::remove(partial);
    if (permanent || s.attempts >= settings.attempts) {
      s.failed = true;
      fs::remove(partial);
      return;
    }
    s.ready_at = monotonic_seconds() + settings.backoff_seconds * std::pow(2.0, s.attempts - 1);
    queue.push_back(i);
  };

  auto finish = [&](std::unique_ptr<Transfer> t, CURLcode result) {
    const size_t i = t->item;
    curl_off_t announced = -1;
    curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced);
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    const bool flushed = std::fflush(t->file) == 0 && ::fsync(::fileno(t->file)) == 0;
    std::fclose(t->file);
    curl_multi_remove_handle(multi.get(), t->easy);
    curl_easy_cleanup(t->easy);
    const std::string& url = items[i].url;
    if (result != CURLE_OK) {
      std::string reason = !t->error.empty() ? t->error : (t->curl_error[0] ? t->curl_error : curl_easy_strerror(result));
      if (result == CURLE_RANGE_ERROR) {
        // The server answered the Range request with the whole file: the next attempt starts over.
        give_up_or_retry(i, reason, false, false);
      } else if (result == CURLE_HTTP_RETURNED_ERROR && code == 416) {
        // The partial file is not a prefix the server can continue (longer than the file): start over.
        give_up_or_retry(i, "HTTP 416 (range not satisfiable) for the partial file", false, false);
      } else if (result == CURLE_HTTP_RETURNED_ERROR) {
        give_up_or_retry(i, str("HTTP ", code), permanent_http_error(code), true);
      } else {
        // Cut connections, stalls, a short body: the bytes received stay and the next attempt resumes.
        give_up_or_retry(i, reason, false, true);
      }
      return;
    }
    const fs::path partial = settings.out_dir / (items[i].name + ".partial");
    if (!flushed) {
      give_up_or_retry(i, "cannot write " + partial.string(), false, false);
      return;
    }
    const uint64_t size = fs::file_size(partial);
    // The size the server announced for this response, counted from where it started.
    if (announced >= 0 && size != t->offset + static_cast<uint64_t>(announced)) {
      give_up_or_retry(i, str("wrong length: the server announced ", t->offset + static_cast<uint64_t>(announced),
                              " bytes, the file has ", size),
                       false, false);
      return;
    }
    const std::string sha = sha256_file(partial);
    if (!items[i].sha256.empty() && sha != items[i].sha256) {
      give_up_or_retry(i, str("checksum mismatch: expected SHA-256 ", items[i].sha256, ", got ", sha), false, false);
      return;
    }
    const fs::path final_path = settings.out_dir / items[i].name;
    fs::rename(partial, final_path);
    ItemState& s = states[i];
    s.done = true;
    s.record.sha256 = sha;
    s.record.bytes = size;
    s.record.fetched_at = utc_text(unix_seconds(), "%Y-%m-%dT%H:%M:%SZ");
    finished_bytes += size - t->offset;
    ++finished_files;
    manifest[items[i].name] = Json{{"url", url}, {"file", items[i].name}, {"bytes", size}, {"sha256", sha},
                                   {"fetched_at", s.record.fetched_at}};
    save_download_manifest(manifest_path, manifest);
    (void)url;
  };

  while (!queue.empty() || !running.empty()) {
    // Start what may start: up to `parallel` transfers, retries once their backoff has passed.
    const double now = monotonic_seconds();
    double next_ready = -1;
    for (size_t n = queue.size(); n > 0 && running.size() < static_cast<size_t>(settings.parallel); --n) {
      size_t i = queue.front();
      queue.pop_front();
      if (states[i].ready_at > now) {
        next_ready = next_ready < 0 ? states[i].ready_at : std::min(next_ready, states[i].ready_at);
        queue.push_back(i);
        continue;
      }
      start(i);
    }
    int still_running = 0;
    curl_multi_perform(multi.get(), &still_running);
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(multi.get(), &left)) {
      if (message->msg != CURLMSG_DONE) continue;
      auto node = running.extract(message->easy_handle);
      finish(std::move(node.mapped()), message->data.result);
    }
    if (settings.progress && progress.enabled()) {
      uint64_t live = 0;
      for (const auto& [easy, t] : running) live += t->received;
      const double bytes = static_cast<double>(finished_bytes + live);
      progress.update(str("data download: ", finished_files, "/", items.size(), " files, ", human_mb(bytes), ", ",
                          human_mb(bytes / std::max(1e-9, clock.seconds())), "/s, ", running.size(), " running"));
    }
    int wait_ms = 200;
    if (running.empty() && next_ready > 0) wait_ms = std::max(1, static_cast<int>((next_ready - now) * 1000));
    if (running.empty() && queue.empty()) break;
    if (running.empty()) {
      ::usleep(static_cast<useconds_t>(std::min(wait_ms, 1000)) * 1000);
    } else {
      curl_multi_poll(multi.get(), nullptr, 0, std::min(wait_ms, 200), nullptr);
    }
  }
  if (settings.progress) progress.finish();

  std::string failures;
  for (size_t i = 0; i < items.size(); ++i) {
    if (states[i].failed) failures += str("\n  ", items[i].url, ": ", states[i].last_error, " (", states[i].attempts,
                                          " attempt", states[i].attempts == 1 ? "" : "s", ")");
  }
  size_t failed = std::count_if(states.begin(), states.end(), [](const ItemState& s) { return s.failed; });
  check(failed == 0, "data download: ", failed, " of ", items.size(), " file(s) failed; nothing of them is left in ",
        settings.out_dir.string(), ":", failures);
  std::vector<DownloadRecord> records;
  for (auto& s : states) records.push_back(std::move(s.record));
  return records;
}

}  // namespace ct
