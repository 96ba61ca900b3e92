// The executor's trace (XSHARD_TRACE=FILE, the CLI's --trace; executable_trace.cc) as other
// device kinds reach it: whether it is on, and events they timed themselves (a GPU's per-step
// device times) added to the same file.
#ifndef XSHARD_EXEC_EXECUTABLE_TRACE_H_
#define XSHARD_EXEC_EXECUTABLE_TRACE_H_

#include <string_view>

#include "xshard/base/status.h"

namespace xs {

// The pid other device kinds' events use: shown as the process "device steps (device time)".
inline constexpr int kDeviceTracePid = 2;

// True when XSHARD_TRACE names a file: every run is traced and the file written at exit.
bool ExecutorTraceEnabled();

// Adds Chrome trace events to the file: JSON objects, each followed by ",\n" (what
// cuda::ChromeTraceEvents writes), with "ts" in steady_clock microseconds as the executor's
// own events. Ignored when the trace is off.
void AddExecutorTraceEvents(std::string_view events);

// Writes the trace file now (through a temporary renamed when complete), once per process; later
// calls return the first one's result. OK when the trace is off.
Status WriteExecutorTrace();

}  // namespace xs

#endif  // XSHARD_EXEC_EXECUTABLE_TRACE_H_
