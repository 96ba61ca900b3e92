// Helpers the fused-loop tests share (executable_fusion_test.cc,
// executable_fusion_reduce_test.cc): random arguments, the fused-against-op-by-op check, and the
// fused loops of a plan.
#ifndef XSHARD_EXEC_FUSION_TEST_UTIL_H_
#define XSHARD_EXEC_FUSION_TEST_UTIL_H_

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "xshard/exec/executable.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/exec/fusion_plan.h"
#include "xshard/text/parse_test_util.h"

namespace xs::fusion_test {

using xs::testing::ParseOrFail;

inline Array RandomArray(DType t, const std::vector<int64_t>& dims, std::mt19937& rng) {
  Array a(t, dims);
  std::uniform_real_distribution<double> real(-3.0, 3.0);
  std::uniform_int_distribution<int> small(-20, 20);
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (t == DType::kPred)
      a.SetDouble(i, small(rng) > 0 ? 1 : 0);
    else if (t == DType::kS32)
      a.SetDouble(i, small(rng));
    else
      a.SetDouble(i, real(rng));
  }
  return a;
}

// Runs `text` fused and op by op; every output must be the same bytes.
inline void ExpectFusedEqualsUnfused(const std::string& text, const std::vector<Array>& args, int threads = 0) {
  std::unique_ptr<Module> m = ParseOrFail(text);
  StatusOr<std::unique_ptr<Executable>> e = Executable::Create(*m);
  ASSERT_TRUE(e.ok()) << e.status().ToString() << "\n" << text;
  ExecuteOptions fused, plain;
  fused.intra_op_threads = threads;
  plain.fusion = false;
  StatusOr<std::vector<Array>> a = (*e)->Run(args, fused);
  StatusOr<std::vector<Array>> b = (*e)->Run(args, plain);
  ASSERT_TRUE(a.ok()) << a.status().ToString() << "\n" << text;
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) {
    ASSERT_EQ((*a)[i].shape(), (*b)[i].shape()) << "output " << i;
    ASSERT_EQ(0, std::memcmp((*a)[i].data(), (*b)[i].data(), (*a)[i].byte_size())) << "output " << i << " differs\n"
                                                                                   << text;
  }
}

// The fused loops of the entry computation's plan.
inline std::vector<const FusedLoop*> FusedLoops(const Executable& e) {
  std::vector<const FusedLoop*> loops;
  for (const Step& s : e.program().entry->steps) {
    if (const FusedPayload* fused = s.FindPayload<FusedPayload>()) loops.push_back(fused->loop.get());
  }
  return loops;
}

}  // namespace xs::fusion_test

#endif  // XSHARD_EXEC_FUSION_TEST_UTIL_H_
