// The precompiled header of each library (cmake/xshard.cmake, XSHARD_PCH): the standard headers
// most of the project's sources include and the base layer's status and string helpers (below
// every layer). Each library builds its own from its flags; sources still include what they use
// (a build with -DXSHARD_PCH=OFF must compile).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/base/strings.h"
