// libFuzzer target for the whole pipeline as the CLI drives it: parse, verify, print, propagate,
// partition (with cleanup), and for small modules run on their devices. Any input must end in a
// result or a Status; a crash, an abort (XS_CHECK), a hang or a runaway allocation is a finding.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string_view>
#include <unordered_map>

#include "xshard/exec/executable.h"
#include "xshard/ir/verifier.h"
#include "xshard/jit/annotations.h"
#include "xshard/jit/sharded_program.h"
#include "xshard/propagation/propagation.h"
#include "xshard/runtime/client.h"
#include "xshard/runtime/spmd_executor_io.h"
#include "xshard/spmd/shardy_import.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace {

constexpr size_t kMaxInputBytes = 64 << 10;
constexpr int64_t kMaxFuzzDevices = 8;
// Runs only modules whose values are small, so one input stays well inside -rss_limit_mb and
// -timeout (the naive kernels of a 128x512x1024 block-scaled dot on 8 devices alone take seconds
// on a loaded machine).
constexpr int64_t kMaxRunValueBytes = 64 << 10;
constexpr int64_t kMaxRunTotalBytes = 1 << 20;
constexpr int64_t kMaxWhileIterations = 200;
// ... and whose work (ApproximateWork) is small: the instrumented generic reduce-window of a
// cumulative sum over f32[4,64,32] on 8 devices (64-wide windows, ~2.5 M byte-reads by this
// count) took 7-26 s, past -timeout. Of the ~1,450 seeds only it and a 29 ms convolution
// (conv_pad_slice.hlo) count over this; the rest run in under 0.6 s each.
constexpr int64_t kMaxRunWork = int64_t{1} << 21;

// A module's work, roughly: each result's bytes times the inputs each element reads (a window's
// size for reduce-window, select-and-scatter and convolution, times a convolution's input
// features; a dot's contracted size). Elementwise ops count their bytes.
int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

int64_t ApproximateWork(const xs::Instruction& inst) {
  const xs::Attributes& a = inst.attrs();
  int64_t factor = 1;
  if (a.window) {
    for (const xs::WindowDim& d : a.window->dims) factor = SaturatingMul(factor, std::max<int64_t>(1, d.size));
    if (a.conv_dims && inst.operands().size() > 1 && inst.operands()[1]->shape().IsArray()) {
      const xs::Shape& kernel = inst.operands()[1]->shape();
      const int64_t f = a.conv_dims->kernel_input_feature;
      if (f >= 0 && f < kernel.rank()) factor = SaturatingMul(factor, std::max<int64_t>(1, kernel.dims()[f]));
    }
  }
  if (a.dot && !inst.operands().empty() && inst.operands()[0]->shape().IsArray()) {
    const xs::Shape& lhs = inst.operands()[0]->shape();
    for (int64_t d : a.dot->lhs_contracting) {
      if (d >= 0 && d < lhs.rank()) factor = SaturatingMul(factor, std::max<int64_t>(1, lhs.dims()[d]));
    }
  }
  return SaturatingMul(std::max<int64_t>(0, inst.shape().byte_size()), factor);
}

// A while loop's body and condition count kMaxWhileIterations times (nested loops multiply): a
// loop that never ends runs that often here, and each pass of a body of 3072 sines on 4 devices
// took ~50 ms under ASan (the instrumented Highway emulation), so 200 of them went past -timeout.
bool SmallEnoughToRun(const xs::Module& m) {
  std::unordered_map<const xs::Computation*, int64_t> runs;
  std::vector<xs::Computation*> order = m.MakeComputationPostOrder();
  std::reverse(order.begin(), order.end());  // callers before callees
  int64_t total = 0, work = 0;
  for (const xs::Computation* c : order) {
    const int64_t times = runs.count(c) ? runs[c] : 1;
    for (const xs::Instruction* inst : c->instructions()) {
      const int64_t b = inst->shape().byte_size();
      if (b > kMaxRunValueBytes) return false;
      total += b;
      if (total > kMaxRunTotalBytes) return false;
      const int64_t w = SaturatingMul(ApproximateWork(*inst), times);
      if (w > kMaxRunWork - work) return false;
      work += w;
      if (inst->opcode() == xs::Opcode::kWhile) {
        for (const xs::Computation* loop : {inst->while_body(), inst->while_condition()}) {
          if (loop != nullptr) runs[loop] = std::max(runs[loop], SaturatingMul(times, kMaxWhileIterations));
        }
      }
    }
  }
  return true;
}

xs::Client* ClientFor(int64_t n) {
  static std::map<int64_t, std::unique_ptr<xs::Client>> clients;
  auto& c = clients[n];
  if (!c) {
    xs::ClientOptions options;
    options.num_devices = n;
    // Mismatched collectives fail fast (a peer that left is seen at once); a wait this long is a
    // hang worth reporting below libFuzzer's -timeout.
    options.collective_timeout = std::chrono::milliseconds(3000);
    auto made = xs::Client::Create(options);
    if (!made.ok()) return nullptr;
    c = std::move(*made);
  }
  return c.get();
}

// Random arguments as the CLI makes them; nullopt for unbounded dynamic dims, which the CLI
// refuses before making any (LoadArguments).
std::optional<std::vector<xs::Array>> RandomArguments(const std::vector<xs::Shape>& shapes) {
  for (const xs::Shape& s : shapes) {
    for (int64_t d : s.dims()) {
      if (d < 0) return std::nullopt;
    }
  }
  std::mt19937_64 rng(1);
  std::vector<xs::Array> args;
  for (const xs::Shape& s : shapes) args.push_back(xs::RandomArray(s, rng));
  return args;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInputBytes) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = xs::ParseHloModule(text, "fuzz.hlo");
  if (!parsed.ok()) return 0;
  const xs::Module& module = **parsed;
  if (!xs::Verify(module).ok()) return 0;
  (void)xs::PrintHloModule(module, xs::PrintOptions());

  const int64_t partitions = module.config().num_partitions;
  const int64_t n = partitions > 1 ? partitions : xs::AnnotatedDevices(module);
  const bool small = SmallEnoughToRun(module);

  // `xshard propagate`: in place on a clone.
  if (n <= kMaxFuzzDevices) {
    std::unique_ptr<xs::Module> copy = module.Clone();
    if (xs::ImportShardyManualComputations(*copy).ok()) {
      xs::PropagationOptions options;
      options.num_devices = n;
      (void)xs::PropagateShardings(*copy, options);
    }
  }

  if (xs::NeedsPartitioning(module)) {
    // `xshard partition` / `run` on a global module.
    if (n > kMaxFuzzDevices || module.config().replica_count > 1) return 0;
    auto program = xs::ShardedProgram::Compile(module, n);
    if (!program.ok()) return 0;
    (void)xs::PrintHloModule((*program)->spmd_module(), xs::PrintOptions());
    if (!small || !SmallEnoughToRun((*program)->spmd_module())) return 0;
    xs::Client* client = ClientFor(n);
    if (client == nullptr) return 0;
    xs::SpmdRunOptions options;
    options.max_while_iterations = kMaxWhileIterations;
    options.blas_threads = 1;
    if (auto args = RandomArguments((*program)->argument_shapes())) (void)(*program)->Run(*client, *args, options);
    return 0;
  }
  if (!small) return 0;
  const int64_t devices = partitions * module.config().replica_count;
  if (devices == 1) {
    // `xshard run` on a one-device module.
    xs::ExecuteOptions options;
    options.max_while_iterations = kMaxWhileIterations;
    options.blas_threads = 1;
    auto exe = xs::Executable::Create(module);
    if (!exe.ok()) return 0;
    if (auto args = RandomArguments((*exe)->argument_shapes())) (void)(*exe)->Run(*args, options);
    return 0;
  }
  // `xshard run` on an SPMD module.
  if (devices > kMaxFuzzDevices) return 0;
  auto spmd = xs::SpmdExecutable::Create(module);
  if (!spmd.ok()) return 0;
  xs::Client* client = ClientFor(devices);
  if (client == nullptr) return 0;
  xs::SpmdRunOptions options;
  options.max_while_iterations = kMaxWhileIterations;
  options.blas_threads = 1;
  (void)(*spmd)->Run(*client, xs::RandomDeviceArguments(1, devices, (*spmd)->executable().argument_shapes()), options);
  return 0;
}
