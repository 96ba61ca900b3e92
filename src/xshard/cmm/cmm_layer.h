// The cmm (collective matmul) layer's identity function.
#pragma once

namespace xs::cmm {

// Returns "cmm": the layer's name (a trivial symbol so xs_cmm always has an object file).
const char* LayerName();

}  // namespace xs::cmm
