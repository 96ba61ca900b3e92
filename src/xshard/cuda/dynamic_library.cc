// dlopen / dlsym with errors that name the library and the fix.
#include "xshard/cuda/dynamic_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "xshard/base/strings.h"

namespace xs::cuda {

StatusOr<DynamicLibrary> DynamicLibrary::Open(std::string_view what,
                                              std::initializer_list<const char*> names) {
  std::vector<std::string> dirs;
  dirs.reserve(4);
  dirs.emplace_back();
#ifdef XSHARD_CUDA_LIBRARY_DIR
  dirs.push_back(std::string(XSHARD_CUDA_LIBRARY_DIR) + "/");
#endif
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0') {
    dirs.push_back(StrCat(home, "/lib64/"));
  }
  dirs.push_back("/usr/local/cuda/lib64/");
  std::string first_error;
  for (const std::string& dir : dirs) {
    for (const char* name : names) {
      const std::string path = dir + name;
      dlerror();
      void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h != nullptr) {
        DynamicLibrary lib;
        lib.handle_ = h;
        lib.what_ = std::string(what);
        lib.path_ = path;
        return lib;
      }
      if (first_error.empty()) {
        const char* e = dlerror();
        first_error = e != nullptr ? e : "not found";
      }
    }
  }
  std::string tried;
  for (const char* name : names) tried += (tried.empty() ? "" : ", ") + std::string(name);
  return Unavailable("the cuda platform needs " + std::string(what) + " (" + tried +
                     ") and could not open it: " + first_error +
                     "; install it with the CUDA toolkit, or add its folder to LD_LIBRARY_PATH");
}

StatusOr<void*> DynamicLibrary::Symbol(const char* symbol) const {
  dlerror();
  void* p = dlsym(handle_, symbol);
  if (p == nullptr) {
    const char* e = dlerror();
    return Unavailable(what_ + " (" + path_ + ") has no symbol " + symbol + ": " +
                       (e != nullptr ? e : "null") + "; it is older than the CUDA 13 toolkit xshard needs");
  }
  return p;
}

}  // namespace xs::cuda
