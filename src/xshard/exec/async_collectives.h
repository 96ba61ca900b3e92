// The executor's interface for asynchronous collectives (XLA's -start / -done pairs and
// async-start wrapping a collective): a CollectiveRunner that can also start a collective and
// finish it later, so that the device computes in between.
#ifndef XSHARD_EXEC_ASYNC_COLLECTIVES_H_
#define XSHARD_EXEC_ASYNC_COLLECTIVES_H_

#include <memory>
#include <span>
#include <vector>

#include "xshard/exec/executable.h"

namespace xs {

class AsyncCollectiveRunner : public CollectiveRunner {
 public:
  // Starts collective `inst` on `operands` and returns its result arrays at once; they hold the
  // result after Finish(key) returns. `key` names the start (the -start or async-start
  // instruction); starts of one key finish in start order. `keep` is held until Finish so the
  // operands stay alive and unchanged (nothing can donate a buffer that is shared).
  virtual StatusOr<std::vector<Array>> Start(const Instruction& inst, const void* key,
                                             std::span<const Array* const> operands,
                                             std::vector<std::shared_ptr<const void>> keep) = 0;
  // Completes the oldest unfinished start of `key`. A key with nothing started is an error.
  virtual Status Finish(const void* key) = 0;
};

}  // namespace xs

#endif  // XSHARD_EXEC_ASYNC_COLLECTIVES_H_
