// The precompiled header of every test binary (cmake/xshard.cmake, XSHARD_PCH): GoogleTest,
// the standard headers and the project headers that most test files include. Compiled once with
// the test files' flags; each test file then starts from it instead of parsing these again
// (~2 s less per file with GCC 12). Test files still include what they use: a build with
// -DXSHARD_PCH=OFF must compile.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/base/strings.h"
#include "xshard/core/array.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/module.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"
