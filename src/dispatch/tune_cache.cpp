#include "dispatch/tune_cache.hpp"

#include "dispatch/path_name.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

namespace mxfp4::tune_cache {
namespace {

std::mutex g_mutex;
bool g_loaded = false;
std::string g_loaded_path;  // the file g_cache was read from
nlohmann::json g_cache = nlohmann::json::object();

std::string key(int64_t M, int64_t N, int64_t K) {
  return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
}

// Reads the file once per path: a process that points MXFP4_TUNE_CACHE elsewhere gets that
// file's entries, not the previous file's.
void load_locked() {
  const std::string file = path();
  if (g_loaded && file == g_loaded_path) return;
  g_loaded = true;
  g_loaded_path = file;
  g_cache = nlohmann::json::object();
  std::ifstream in(file);
  if (!in) return;
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    if (j.is_object()) g_cache = std::move(j);
  } catch (const nlohmann::json::exception&) {
    // An unreadable cache is ignored: the dispatcher's choice is always valid.
  }
}

}  // namespace

std::string path() {
  if (const char* p = std::getenv("MXFP4_TUNE_CACHE"); p && *p) return p;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/mxfp4/tune.json";
}

std::optional<GemmConfig> lookup(const std::string& gpu, int64_t M, int64_t N, int64_t K) {
  std::lock_guard<std::mutex> lock(g_mutex);
  load_locked();
  const auto dev = g_cache.find(gpu);
  if (dev == g_cache.end() || !dev->is_object()) return std::nullopt;
  const auto e = dev->find(key(M, N, K));
  if (e == dev->end() || !e->is_object()) return std::nullopt;
  try {
    const auto p = parse_gemm_path(e->at("path").get<std::string>());
    if (!p) return std::nullopt;
    GemmConfig cfg;
    cfg.path = *p;
    cfg.block_n = e->at("block_n").get<int>();
    cfg.block_m = e->at("block_m").get<int>();
    cfg.split_k = e->at("split_k").get<int>();
    cfg.warps = e->at("warps").get<int>();
    // Never trust a hand-edited entry the kernels cannot run.
    if (!gemm_config_problem_for_shape(cfg, M, K).empty()) return std::nullopt;
    return cfg;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

void store(const std::string& gpu, int64_t M, int64_t N, int64_t K, const GemmConfig& cfg) {
  std::lock_guard<std::mutex> lock(g_mutex);
  load_locked();
  // A hand-edited entry for this GPU that is not an object is replaced (lookup ignores it too).
  if (auto it = g_cache.find(gpu); it != g_cache.end() && !it->is_object()) *it = nlohmann::json::object();
  g_cache[gpu][key(M, N, K)] = {{"path", gemm_path_name(cfg.path)}, {"block_n", cfg.block_n}, {"block_m", cfg.block_m},
                                {"split_k", cfg.split_k}, {"warps", cfg.warps}};
  const std::filesystem::path file(path());
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  std::ofstream out(file);
  if (!out) throw Error("cannot write the tune cache " + file.string());
  out << g_cache.dump(2) << "\n";
  if (!out) throw Error("failed writing the tune cache " + file.string());
}

}  // namespace mxfp4::tune_cache
