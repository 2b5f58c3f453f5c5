// libFuzzer target: the CLI's .npy reader (tools/cli/npy.cpp).
//
// Properties, for every input:
//   - npy::parse either returns an array or throws NpyError (no other exception, no crash,
//     no sanitizer report) whose message starts with the file name and is one line;
//   - npy::read on the same bytes stored in a file gives the same outcome as parse (same
//     dtype, shape and data, or an error with the same text after the file name): the file
//     path reads the header region separately, the in-memory path does not;
//   - an accepted array holds exactly count * itemsize bytes, and write -> read reproduces it;
//   - what the CLI does next with an accepted 2-D float array (quantize it) runs cleanly.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_util.hpp"
#include "mxfp4/mxfp4.hpp"
#include "npy.hpp"

namespace npy = mxfp4cli::npy;

namespace {

std::string g_paths[2];

void remove_temp_files() {
  for (const std::string& p : g_paths)
    if (!p.empty()) std::remove(p.c_str());
}

const std::string& temp_path(const char* tag) {
  std::string& p = g_paths[tag[0] == 'w'];
  if (p.empty()) {
    static const bool registered = std::atexit(remove_temp_files) == 0;
    (void)registered;
    // Two small files per input: tmpfs keeps that fast (a disk-backed /tmp can be 40x slower).
    const char* env = std::getenv("TMPDIR");
    struct stat st {};
    const char* dir = env && *env ? env : (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp");
    p = std::string(dir) + "/mxfp4_fuzz_npy_" + tag + "_" + std::to_string(getpid()) + ".npy";
  }
  return p;
}

struct Outcome {
  bool ok = false;
  npy::Array a;
  std::string error;  // message without the "<name>: " prefix
};

Outcome run(bool from_file, const uint8_t* data, size_t size) {
  Outcome o;
  const std::string name = from_file ? temp_path("r") : std::string("fuzz.npy");
  try {
    if (from_file) {
      std::ofstream f(name, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
      f.close();
      FUZZ_CHECK(bool(f), "cannot write the temporary file %s", name.c_str());
      o.a = npy::read(name);
    } else {
      o.a = npy::parse(data, size, name);
    }
    o.ok = true;
  } catch (const npy::NpyError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.rfind(name + ": ", 0) == 0, "error does not start with the file name: %s", m.c_str());
    FUZZ_CHECK(m.find('\n') == std::string::npos, "error is not one line: %s", m.c_str());
    o.error = m.substr(name.size() + 2);
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Outcome mem = run(false, data, size);
  const Outcome file = run(true, data, size);
  FUZZ_CHECK(mem.ok == file.ok, "parse %s but read %s (%s%s)", mem.ok ? "accepts" : "rejects",
             file.ok ? "accepts" : "rejects", mem.error.c_str(), file.error.c_str());
  if (!mem.ok) {
    FUZZ_CHECK(mem.error == file.error, "different errors: parse '%s', read '%s'", mem.error.c_str(),
               file.error.c_str());
    return 0;
  }
  const npy::Array& a = mem.a;
  FUZZ_CHECK(a.dtype == file.a.dtype && a.shape == file.a.shape && a.data == file.a.data, "parse and read differ");
  const int64_t count = a.count();
  FUZZ_CHECK(count >= 0, "negative count");
  FUZZ_CHECK(a.data.size() == uint64_t(count) * npy::itemsize(a.dtype), "data holds %zu bytes for %lld elements",
             a.data.size(), (long long)count);

  // write -> read round trip (shape and bytes preserved).
  const std::string& wp = temp_path("w");
  npy::write(wp, a.dtype, a.shape, a.data.data());
  const npy::Array back = npy::read(wp);
  FUZZ_CHECK(back.dtype == a.dtype && back.shape == a.shape && back.data == a.data, "write/read round trip differs");

  // What `mxfp4 quantize` does with a 2-D float array (bounded size).
  if (a.shape.size() == 2 && a.shape[0] >= 1 && a.shape[1] >= 32 && a.shape[1] % 32 == 0 &&
      count <= 4096 && (a.dtype == npy::Dtype::u2 || a.dtype == npy::Dtype::f2 || a.dtype == npy::Dtype::f4)) {
    const int64_t rows = a.shape[0], K = a.shape[1];
    const mxfp4::DType dt = a.dtype == npy::Dtype::u2   ? mxfp4::DType::bf16
                            : a.dtype == npy::Dtype::f2 ? mxfp4::DType::fp16
                                                        : mxfp4::DType::fp32;
    std::vector<uint8_t> codes(size_t(rows * K / 2)), scales(size_t(rows * K / 32));
    mxfp4::quantize(a.data.data(), dt, rows, K, K, codes.data(), scales.data());
    std::vector<float> deq(size_t(rows * K));
    mxfp4::MxMatrix q{codes.data(), scales.data(), rows, K};
    mxfp4::dequantize(q, deq.data(), mxfp4::DType::fp32, K);
  }
  return 0;
}
