// Projection between a tensor's dim shardings (AxesSharding) and per-factor shardings of an
// OpShardingRule (Shardy's sharding_projection): 1) project each tensor's dim axes onto its
// factors, 2) decide per factor, 3) project factor axes back onto each tensor's dims.
// Example, rule ([(ij)]) -> ([i, j]) {i=4, j=6} (reshape f32[24] -> f32[4,6]) on mesh [2,2,2]:
// operand dim 0 on axes {0,1,2} projects to i: {0,1}, j: {2} (i=4 is full after two size-2
// axes, the rest goes to the minor factor), and back onto the result as [{0,1}, {2}].
#ifndef XSHARD_RULES_PROJECTION_H_
#define XSHARD_RULES_PROJECTION_H_

#include <vector>

#include "xshard/rules/sharding_rule.h"
#include "xshard/sharding/tile_mesh.h"

namespace xs {

// Mesh axes per factor (major to minor); factors a tensor does not have stay empty.
using FactorAxes = std::vector<std::vector<int>>;

// Projects one tensor's sharding onto the rule's factors. For each dim, axes go to its factors
// major to minor: a non-minor-most factor takes axes while their sizes divide what is left of
// the factor's size, the minor-most factor takes the rest (uneven sharding is allowed there).
// Axes that fit no factor (a partially sharded major factor followed by more axes, or a dim with
// no factors) are dropped; `*lossless` (if given) is set to false then.
FactorAxes ProjectToFactors(const AxesSharding& sharding, const TensorFactors& tensor,
                            const OpShardingRule& rule, const TileMesh& mesh,
                            bool* lossless = nullptr);

// Projects factor axes back onto a tensor: each dim concatenates its factors' axes major to
// minor, stopping after a non-minor-most factor that is not fully sharded (its size not equal to
// the product of its axes) or whose axes do not divide its size, since more minor axes would need
// a strided view. Factors listed in no dim of the tensor are ignored.
AxesSharding ProjectFromFactors(const FactorAxes& factors, const TensorFactors& tensor,
                                const OpShardingRule& rule, const TileMesh& mesh);

// True when factor f appears in some dim of the tensor.
bool HasFactor(const TensorFactors& tensor, int f);

}  // namespace xs

#endif  // XSHARD_RULES_PROJECTION_H_
