// The _SPMDInternalOp_* custom-calls' backend_config parser (spmd_internal_config.h).
#include "xshard/exec/spmd_internal_config.h"

#include <string_view>

#include "xshard/base/strings.h"

namespace xs {
namespace {

Status ConfigError(const Instruction& inst, std::string_view target, std::string_view what) {
  return InvalidArgument("custom-call '", inst.name(), "' (", target, "): ", what);
}

}  // namespace

// backend_config="dimension=0,amount=3,start_indices=[6],limit_indices=[1526],strides=[1]".
StatusOr<SpmdInternalConfig> ParseSpmdInternalConfig(const Instruction& inst) {
  const std::string target = inst.attrs().custom_call_target.value_or("");
  std::string text = inst.attrs().backend_config.value_or("");
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') text = text.substr(1, text.size() - 2);
  SpmdInternalConfig config;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t eq = text.find('=', pos);
    if (eq == std::string::npos) {
      return ConfigError(inst, target, StrCat("backend_config \"", text, "\" is not key=value,...: '",
                                              text.substr(pos), "' has no '='"));
    }
    const std::string key(StripWhitespace(std::string_view(text).substr(pos, eq - pos)));
    SpmdInternalConfigValue value;
    size_t end = eq + 1;
    std::string_view body;
    if (end < text.size() && text[end] == '[') {
      const size_t close = text.find(']', end);
      if (close == std::string::npos) {
        return ConfigError(inst, target, StrCat("backend_config \"", text, "\": the list of '", key, "' has no ']'"));
      }
      value.list = true;
      body = std::string_view(text).substr(end + 1, close - end - 1);
      end = close + 1;
      for (std::string_view item : StrSplit(body, ',')) {
        if (StripWhitespace(item).empty()) continue;
        int64_t v = 0;
        if (!ParseInt64(StripWhitespace(item), &v)) {
          return ConfigError(inst, target, StrCat("backend_config '", key, "' has a non-integer '", item, "'"));
        }
        value.values.push_back(v);
      }
    } else {
      const size_t comma = text.find(',', end);
      body = std::string_view(text).substr(end, (comma == std::string::npos ? text.size() : comma) - end);
      end = comma == std::string::npos ? text.size() : comma;
      int64_t v = 0;
      if (!ParseInt64(StripWhitespace(body), &v)) {
        return ConfigError(inst, target, StrCat("backend_config '", key, "=", body, "' is not an integer"));
      }
      value.values.push_back(v);
    }
    config[key] = std::move(value);
    while (end < text.size() && (text[end] == ',' || text[end] == ' ')) ++end;
    pos = end;
  }
  return config;
}

}  // namespace xs
