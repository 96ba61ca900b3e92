// XSHARD_TRACE=FILE: every executor step of every device is timed and written at exit as Chrome
// trace JSON (chrome://tracing, Perfetto; WriteExecutorTrace writes it earlier and returns the
// error): process "steps" has one thread per device with one
// slice per instruction run; process "collectives in flight" has, per device, one slice from the
// begin of each -start / async-start to the end of its -done, so overlap with compute shows as a
// dot slice inside an in-flight interval of the same device. Collective slices carry their bytes
// (the result's size) and their replica groups or source-target pairs as args. Off (no wrapping,
// no cost) when the variable is unset. Works by wrapping the handler table's Prepare functions;
// fused loops (slices "fusion <result> (k ops)") take their run function from FusedLoopRunFn.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/core/npy.h"
#include "xshard/exec/executable_trace.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/exec/fusion_plan.h"

namespace xs {

Status RunFusedLoop(const Step& step, Frame& frame, RunContext& ctx);  // executable_fusion.cc

namespace {

struct Event {
  std::string name;
  int pid;
  int64_t tid;
  double ts_us, dur_us;
  std::string args;  // a JSON object's members ("\"bytes\":64,...") or empty
};

struct Trace {
  std::mutex mu;
  std::vector<Event> events;
  std::unordered_map<const Instruction*, RunFn> runs;  // the wrapped step functions
  std::array<PrepareFn, kOpcodeCount> prepares{};
  std::string path;
  std::string device_events;  // AddExecutorTraceEvents': objects each followed by ",\n"
  bool written = false;
  Status write_status;
};

Trace& GetTrace() {
  static Trace* t = new Trace();  // never destroyed: written by the atexit handler
  return *t;
}

double NowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void WriteAtExit();

// The whole trace as JSON.
std::string TraceJson(const Trace& t) {
  std::string out = "{\"traceEvents\":[\n";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"steps\"}},\n";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"collectives in flight\"}}";
  char times[96];
  for (const Event& e : t.events) {
    StrAppend(&out, ",\n{\"name\":\"", e.name, "\",\"ph\":\"X\",\"pid\":", e.pid, ",\"tid\":", e.tid);
    std::snprintf(times, sizeof(times), ",\"ts\":%.3f,\"dur\":%.3f", e.ts_us, e.dur_us);
    out += times;
    if (!e.args.empty()) StrAppend(&out, ",\"args\":{", e.args, "}");
    out += "}";
  }
  if (!t.device_events.empty()) {
    StrAppend(&out, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":", kDeviceTracePid,
              ",\"args\":{\"name\":\"device steps (device time)\"}},\n");
    out.append(t.device_events, 0, t.device_events.size() - 2);  // without the last ",\n"
  }
  out += "\n]}\n";
  return out;
}

// Sets the file from XSHARD_TRACE the first time a run or a device kind asks (t.mu held).
bool Enabled(Trace& t) {
  if (!t.path.empty()) return true;
  const char* path = std::getenv("XSHARD_TRACE");
  if (path == nullptr || *path == '\0') return false;
  t.path = path;
  std::atexit(&WriteAtExit);
  return true;
}

// Writes the file once (through a temporary renamed when complete); later calls return the
// first one's result.
Status WriteOnce() {
  Trace& t = GetTrace();
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.path.empty()) return OkStatus();
  if (!t.written) {
    t.written = true;
    t.write_status = WriteFileAtomically(t.path, TraceJson(t));
    if (!t.write_status.ok()) {
      t.write_status = Unavailable("--trace: the trace was not saved: ", t.write_status.message());
    }
  }
  return t.write_status;
}

// The exit handler's write, for programs that set XSHARD_TRACE themselves: nobody is left to
// return an error to, so it goes to stderr.
void WriteAtExit() {
  const Status s = WriteOnce();
  if (!s.ok()) std::fprintf(stderr, "xshard: error: %s\n", s.message().c_str());
}

bool IsAsyncStart(Opcode op) {
  return op == Opcode::kAllGatherStart || op == Opcode::kAllReduceStart ||
         op == Opcode::kCollectivePermuteStart || op == Opcode::kAsyncStart;
}

bool IsAsyncDone(Opcode op) {
  return op == Opcode::kAllGatherDone || op == Opcode::kAllReduceDone ||
         op == Opcode::kCollectivePermuteDone || op == Opcode::kAsyncDone;
}

// "{{0,1},{2,3}}" from lists of ints, cut after `max_chars` characters.
std::string Lists(const std::vector<std::vector<int64_t>>& lists, size_t max_chars = 240) {
  std::string out = "{";
  for (size_t i = 0; i < lists.size(); ++i) {
    if (out.size() > max_chars) return out + ",...}";
    out += (i ? ",{" : "{") + StrJoin(lists[i], ",") + "}";
  }
  return out + "}";
}

// The args of a collective's slice: bytes of its result and its groups or pairs. A -start's
// result is the tuple (operand, result[, context]): its bytes are the result element's.
std::string CollectiveArgs(const Instruction& inst) {
  const Shape& shape = inst.shape();
  const bool start_tuple = IsAsyncStart(inst.opcode()) && shape.IsTuple() && shape.tuple_size() >= 2;
  std::string args =
      StrCat("\"bytes\":", start_tuple ? shape.tuple_shape(1).byte_size() : shape.byte_size());
  const Attributes& a = inst.attrs();
  if (a.replica_groups) {
    args += StrCat(",\"groups\":\"", Lists(a.replica_groups->Groups()), "\"");
  }
  if (a.source_target_pairs) {
    std::vector<std::vector<int64_t>> pairs;
    for (const auto& [s, t] : *a.source_target_pairs) pairs.push_back({s, t});
    args += StrCat(",\"pairs\":\"", Lists(pairs), "\"");
  }
  return args;
}

Status TracedRun(const Step& step, Frame& frame, RunContext& ctx) {
  Trace& t = GetTrace();
  RunFn run;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    run = t.runs.at(step.inst);
  }
  // Begin times of this thread's unfinished starts (a device runs on one thread).
  thread_local std::unordered_map<const Instruction*, double> started;
  const double t0 = NowUs();
  Status st = run(step, frame, ctx);
  const double t1 = NowUs();
  const Opcode op = step.inst->opcode();
  const int64_t device = ctx.options.replica_id * 100000 + ctx.options.partition_id;
  std::lock_guard<std::mutex> lock(t.mu);
  const std::string args = IsCollective(op) && !IsAsyncDone(op) ? CollectiveArgs(*step.inst) : "";
  t.events.push_back({StrCat(OpcodeName(op), " ", step.inst->name()), 0, device, t0, t1 - t0, args});
  if (IsAsyncStart(op)) started[step.inst] = t0;
  if (IsAsyncDone(op) && step.inst->operand_count() > 0) {
    const Instruction* start = step.inst->operand(0);
    while (start->opcode() == Opcode::kAsyncUpdate) start = start->operand(0);
    auto it = started.find(start);
    if (it != started.end()) {
      t.events.push_back({StrCat(OpcodeName(start->opcode()), " ", start->name(), " in flight"),
                          1, device, it->second, t1 - it->second, CollectiveArgs(*start)});
      started.erase(it);
    }
  }
  return st;
}

Status TracedPrepare(const Instruction& inst, Step& step, const Program& program) {
  Trace& t = GetTrace();
  PrepareFn prepare = t.prepares[static_cast<int>(inst.opcode())];
  XS_RETURN_IF_ERROR(prepare(inst, step, program));
  if (step.run != nullptr) {
    std::lock_guard<std::mutex> lock(t.mu);
    t.runs[&inst] = step.run;
    step.run = &TracedRun;
  }
  return OkStatus();
}

Status TracedFusedLoop(const Step& step, Frame& frame, RunContext& ctx) {
  const double t0 = NowUs();
  Status st = RunFusedLoop(step, frame, ctx);
  const double t1 = NowUs();
  const int64_t device = ctx.options.replica_id * 100000 + ctx.options.partition_id;
  Trace& t = GetTrace();
  std::lock_guard<std::mutex> lock(t.mu);
  const FusedLoop& loop = *step.fused().loop;
  t.events.push_back({StrCat("fusion ", step.inst->name(), " (", loop.members,
                             loop.has_reduce ? " ops + reduce)" : " ops)"),
                      0, device, t0, t1 - t0, ""});
  return st;
}

}  // namespace

Status WriteExecutorTrace() { return WriteOnce(); }

bool ExecutorTraceEnabled() {
  Trace& t = GetTrace();
  std::lock_guard<std::mutex> lock(t.mu);
  return Enabled(t);
}

void AddExecutorTraceEvents(std::string_view events) {
  if (events.empty()) return;
  Trace& t = GetTrace();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!Enabled(t) || t.written) return;
  t.device_events.append(events);
  if (t.device_events.size() < 2 || t.device_events.compare(t.device_events.size() - 2, 2, ",\n") != 0) {
    t.device_events += ",\n";
  }
}

RunFn FusedLoopRunFn() {
  const char* path = std::getenv("XSHARD_TRACE");
  return path == nullptr || *path == '\0' ? &RunFusedLoop : &TracedFusedLoop;
}

// Called last while the handler table is filled (from RegisterCollectiveHandlers).
void WrapHandlersForTrace(HandlerTable& table) {
  const char* path = std::getenv("XSHARD_TRACE");
  if (path == nullptr || *path == '\0') return;
  Trace& t = GetTrace();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    Enabled(t);
    for (size_t i = 0; i < table.size(); ++i) {
      if (table[i] == nullptr || table[i] == &TracedPrepare) continue;
      t.prepares[i] = table[i];
      table[i] = &TracedPrepare;
    }
  }
}

}  // namespace xs
