// The cmm layer's identity: its name, so the library has at least one object while it grows.
#include "xshard/cmm/cmm_layer.h"

namespace xs::cmm {

const char* LayerName() { return "cmm"; }

}  // namespace xs::cmm
