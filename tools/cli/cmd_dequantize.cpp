// mxfp4 dequantize --codes Q.npy --scales S.npy --out X.npy   (fp32 [rows, K]; spec §1.3)
#include <memory>

#include "common.hpp"

namespace mxfp4cli {

namespace {
struct DequantizeArgs {
  std::string codes, scales, out;
};

int run_dequantize(const DequantizeArgs& a) {
  const HostMx q = load_mx(a.codes, a.scales);
  std::vector<float> x(size_t(q.rows * q.K));
  mxfp4::dequantize(q.view(), x.data(), mxfp4::DType::fp32, q.K);
  save_f32(a.out, x, q.rows, q.K);
  return 0;
}
}  // namespace

Command add_dequantize(CLI::App& app) {
  auto a = std::make_shared<DequantizeArgs>();
  CLI::App* sub = app.add_subcommand("dequantize", "Decode MXFP4 codes and scales to fp32");
  sub->add_option("--codes", a->codes, "Q.npy: uint8 [rows, K/2]")->required();
  sub->add_option("--scales", a->scales, "S.npy: uint8 [rows, K/32]")->required();
  sub->add_option("--out,-o", a->out, "output X.npy: float32 [rows, K]")->required();
  return {sub, [a] { return run_dequantize(*a); }};
}

}  // namespace mxfp4cli
