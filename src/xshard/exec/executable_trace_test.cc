// The trace file's seam for other device kinds: events they add (a GPU's per-step device times)
// land in the same Chrome trace file as a process of their own, and nothing is added when the
// trace is off.
#include "xshard/exec/executable_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace xs {
namespace {

TEST(ExecutorTrace, DeviceEventsJoinTheTraceFileAsAProcessOfTheirOwn) {
  const std::string path = std::filesystem::temp_directory_path() / ("xshard_trace_" + std::to_string(getpid()) + ".json");
  ASSERT_FALSE(ExecutorTraceEnabled()) << "XSHARD_TRACE is set in this test's environment";
  AddExecutorTraceEvents("{\"name\":\"lost\",\"ph\":\"X\",\"pid\":2,\"tid\":0,\"ts\":1.000,\"dur\":1.000},\n");
  setenv("XSHARD_TRACE", path.c_str(), 1);
  ASSERT_TRUE(ExecutorTraceEnabled());
  AddExecutorTraceEvents("{\"name\":\"gemm d\",\"ph\":\"X\",\"pid\":2,\"tid\":3,\"ts\":1004.000,\"dur\":10.000},\n");
  AddExecutorTraceEvents("{\"name\":\"fusion e\",\"ph\":\"X\",\"pid\":2,\"tid\":1,\"ts\":1020.000,\"dur\":2.000}");
  const Status written = WriteExecutorTrace();
  unsetenv("XSHARD_TRACE");
  ASSERT_TRUE(written.ok()) << written.message();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  const std::string json = text.str();
  EXPECT_NE(json.find("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":2,\"args\":{\"name\":\"device steps (device time)\"}},\n"
                      "{\"name\":\"gemm d\",\"ph\":\"X\",\"pid\":2,\"tid\":3,\"ts\":1004.000,\"dur\":10.000},\n"
                      "{\"name\":\"fusion e\",\"ph\":\"X\",\"pid\":2,\"tid\":1,\"ts\":1020.000,\"dur\":2.000}\n]}\n"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find("lost"), std::string::npos) << "an event added while the trace was off was kept";
  EXPECT_EQ(json.rfind("{\"traceEvents\":[\n", 0), 0u) << json;
}

}  // namespace
}  // namespace xs
