// mxfp4 quantize --input X.npy --codes Q.npy --scales S.npy [--rule aiter|floor|rceil]
// X [rows, K]: '<u2' (bf16 bit patterns), '<f2' or '<f4'. Q uint8 [rows, K/2] (element 2i in
// the low nibble), S uint8 [rows, K/32] E8M0 bytes (spec §1, §2).
#include <filesystem>
#include <memory>

#include "common.hpp"

namespace mxfp4cli {

namespace {
struct QuantizeArgs {
  std::string input, codes, scales, rule = "aiter";
};

int run_quantize(const QuantizeArgs& a) {
  // Two outputs: the scales written second would silently replace the codes.
  if (std::filesystem::weakly_canonical(a.codes) == std::filesystem::weakly_canonical(a.scales))
    throw CliError("--codes " + a.codes + " and --scales " + a.scales + " name the same file");
  const npy::Array x = load_matrix(a.input, "--input", {npy::Dtype::u2, npy::Dtype::f2, npy::Dtype::f4});
  const int64_t rows = x.shape[0], K = x.shape[1];
  if (rows < 1 || K < 32 || K % 32 != 0)
    throw CliError("--input " + a.input + ": shape " + npy::shape_str(x.shape) +
                   " must be [rows >= 1, K] with K a positive multiple of 32");
  const mxfp4::DType dt = x.dtype == npy::Dtype::u2   ? mxfp4::DType::bf16
                          : x.dtype == npy::Dtype::f2 ? mxfp4::DType::fp16
                                                      : mxfp4::DType::fp32;
  std::vector<uint8_t> codes(size_t(rows * K / 2)), scales(size_t(rows * K / 32));
  // x.data is allocated by operator new (aligned for float); the library reads it as dt.
  mxfp4::quantize(x.data.data(), dt, rows, K, K, codes.data(), scales.data(), parse_rule(a.rule));
  save_u8(a.codes, codes, rows, K / 2);
  save_u8(a.scales, scales, rows, K / 32);
  return 0;
}
}  // namespace

Command add_quantize(CLI::App& app) {
  auto a = std::make_shared<QuantizeArgs>();
  CLI::App* sub = app.add_subcommand("quantize", "Quantize a [rows, K] matrix to MXFP4 codes and E8M0 scales");
  sub->add_option("--input,-i", a->input, "X.npy: [rows, K] '<u2' (bf16 bits), '<f2' or '<f4'")->required();
  sub->add_option("--codes", a->codes, "output Q.npy: uint8 [rows, K/2]")->required();
  sub->add_option("--scales", a->scales, "output S.npy: uint8 [rows, K/32]")->required();
  sub->add_option("--rule", a->rule, "scale rule")->check(CLI::IsMember(kRuleNames))->capture_default_str();
  return {sub, [a] { return run_quantize(*a); }};
}

}  // namespace mxfp4cli
