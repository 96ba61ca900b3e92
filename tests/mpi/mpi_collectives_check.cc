// Runs every collective and group form on devices spread over MPI processes (CreateMpiClient)
// and on the same number of in-process devices (Client::Create), and compares each local device's
// output bytes. Inputs are small integers, so sums and products are exact in every dtype and the
// results must agree bitwise whatever the reduction order. Run under mpirun (tests/CMakeLists.txt):
//   mpirun -np P mpi_collectives_check [--devices-per-process L] [--eager-bytes B]
//       [--mode collectives|mismatch|early|late]
// --eager-bytes 0 makes every call send its inputs after the signature exchange (and all-reduces
// MPI can do go through MPI_Iallreduce); the default sends these small inputs with the signature.
// mismatch: device 0 calls another shape than the others; every process must fail with a
// "collective mismatch" error naming both calls (exit 0 when they all do). early / late: the last
// device skips an all-reduce or arrives after the timeout; the others must fail naming its process.
// Exit code: 0 pass, 1 failure, 77 skipped (a build without MPI).
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "xshard/comm/reduction.h"
#include "xshard/mpi/mpi_process.h"
#include "xshard/platform/platform.h"
#include "xshard/runtime/client.h"

namespace xs {
namespace {

// Device d's input element i: 1, 2 or 3 (exact products of up to 16 of them in f32), negated at
// odd i for signed integers; pred is false where the value is 2.
Array Input(DType dtype, std::vector<int64_t> dims, int64_t device, int64_t salt = 0) {
  Array a(dtype, dims);
  const int64_t n = a.num_elements();
  const bool negate = dtype == DType::kS8 || dtype == DType::kS32;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = 1 + (device * 7 + i * 3 + salt) % 3;
    if (dtype == DType::kPred) {
      a.data()[i] = std::byte{static_cast<uint8_t>(v != 2)};
    } else {
      a.SetDouble(i, static_cast<double>(negate && i % 2 ? -v : v));
    }
  }
  return a;
}

std::vector<std::vector<int64_t>> GroupForm(const std::string& form, int64_t n) {
  std::vector<std::vector<int64_t>> g;
  if (form == "all") return {};
  if (form == "reversed") {
    g.emplace_back();
    for (int64_t d = n - 1; d >= 0; --d) g[0].push_back(d);
  } else if (form == "pairs") {
    for (int64_t d = 0; d < n; d += 2) g.push_back({d, d + 1});
  } else if (form == "strided") {
    g.resize(2);
    for (int64_t d = 0; d < n; ++d) g[d % 2].push_back(d);
  } else if (form == "singletons") {
    for (int64_t d = 0; d < n; ++d) g.push_back({d});
  }
  return g;
}

// One case: every rank's outputs, given its rank and the communicator.
using CaseFn = std::function<StatusOr<std::vector<Array>>(int64_t rank, Communicator& comm)>;
struct Case {
  std::string name;
  CaseFn fn;
};

StatusOr<std::vector<std::vector<Array>>> RunCase(Client& client, const CaseFn& fn) {
  std::vector<std::vector<Array>> outs(client.num_devices());
  std::vector<int64_t> ids(client.num_devices());
  for (int64_t d = 0; d < client.num_devices(); ++d) ids[d] = d;
  XS_RETURN_IF_ERROR(client.Run(ids, [&](int64_t rank, Communicator& comm) -> Status {
    XS_ASSIGN_OR_RETURN(outs[rank], fn(rank, comm));
    return OkStatus();
  }));
  return outs;
}

std::vector<Case> Cases(int64_t n) {
  std::vector<Case> cases;
  const std::vector<std::string> forms = {"all", "reversed", "pairs", "strided", "singletons"};
  for (const std::string& form : forms) {
    auto groups = std::make_shared<DeviceGroups>(
        *DeviceGroups::Create(GroupForm(form, n), n, "test"));
    const int64_t g = static_cast<int64_t>(groups->GroupOf(0).size());
    for (int dim : {0, 1}) {
      cases.push_back({StrCat("all-gather dim ", dim, " ", form), [=](int64_t r, Communicator& c)
                           -> StatusOr<std::vector<Array>> {
        Array in = Input(DType::kF32, {2, 3}, r);
        std::vector<int64_t> od = {2, 3};
        od[dim] *= g;
        Array out(DType::kF32, od);
        XS_RETURN_IF_ERROR(c.AllGather(CollectiveCall(r, "ag"), *groups, ConstBufferView::Of(in),
                                       BufferView::Of(out), dim));
        return std::vector<Array>{std::move(out)};
      }});
    }
    // Every dtype the in-process communicator reduces, with every reducer it accepts for it.
    for (DType dt : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kS8, DType::kS32,
                     DType::kS64, DType::kU8, DType::kU32, DType::kU64, DType::kPred,
                     DType::kC64, DType::kC128}) {
      for (ReductionKind red : {ReductionKind::kSum, ReductionKind::kProduct, ReductionKind::kMin,
                                ReductionKind::kMax, ReductionKind::kAnd, ReductionKind::kOr}) {
        if (!CheckReduction(red, dt, "test").ok()) continue;
        cases.push_back({StrCat("all-reduce ", DTypeName(dt), " ", ReductionKindName(red), " ",
                                form),
                         [=](int64_t r, Communicator& c) -> StatusOr<std::vector<Array>> {
          Array in = Input(dt, {5, 3}, r);
          Array out(dt, {5, 3});
          XS_RETURN_IF_ERROR(c.AllReduce(CollectiveCall(r, "psum"), *groups,
                                         ConstBufferView::Of(in), BufferView::Of(out), red));
          return std::vector<Array>{std::move(out)};
        }});
      }
    }
    for (ReductionKind red : {ReductionKind::kSum, ReductionKind::kMax}) {
      cases.push_back({StrCat("reduce-scatter ", ReductionKindName(red), " ", form),
                       [=](int64_t r, Communicator& c) -> StatusOr<std::vector<Array>> {
        Array in = Input(DType::kF32, {3, 4 * g}, r);
        Array out(DType::kF32, {3, 4});
        XS_RETURN_IF_ERROR(c.ReduceScatter(CollectiveCall(r, "rs"), *groups,
                                           ConstBufferView::Of(in), BufferView::Of(out), 1, red));
        return std::vector<Array>{std::move(out)};
      }});
    }
    cases.push_back({StrCat("all-to-all array ", form),
                     [=](int64_t r, Communicator& c) -> StatusOr<std::vector<Array>> {
      Array in = Input(DType::kS32, {2 * g, 3}, r);
      Array out(DType::kS32, {2, 3 * g});
      XS_RETURN_IF_ERROR(c.AllToAll(CollectiveCall(r, "a2a"), *groups, ConstBufferView::Of(in),
                                    BufferView::Of(out), 0, 1));
      return std::vector<Array>{std::move(out)};
    }});
    cases.push_back({StrCat("all-to-all tuple ", form),
                     [=](int64_t r, Communicator& c) -> StatusOr<std::vector<Array>> {
      std::vector<Array> ins, outs;
      std::vector<ConstBufferView> iv;
      std::vector<BufferView> ov;
      for (int64_t j = 0; j < g; ++j) {
        ins.push_back(Input(DType::kF32, {4}, r, j));
        outs.emplace_back(DType::kF32, std::vector<int64_t>{4});
      }
      for (int64_t j = 0; j < g; ++j) {
        iv.push_back(ConstBufferView::Of(ins[j]));
        ov.push_back(BufferView::Of(outs[j]));
      }
      XS_RETURN_IF_ERROR(c.AllToAllTuple(CollectiveCall(r, "a2a"), *groups, iv, ov));
      return outs;
    }});
    cases.push_back({StrCat("collective-broadcast ", form),
                     [=](int64_t r, Communicator& c) -> StatusOr<std::vector<Array>> {
      Array in = Input(DType::kF32, {6}, r);
      Array out(DType::kF32, {6});
      XS_RETURN_IF_ERROR(c.CollectiveBroadcast(CollectiveCall(r, "bcast"), *groups,
                                               ConstBufferView::Of(in), BufferView::Of(out)));
      return std::vector<Array>{std::move(out)};
    }});
  }
  // Broadcast where some devices are in no group (they get zeros).
  auto partial = std::make_shared<DeviceGroups>(*DeviceGroups::Create(
      {{n - 1, 0}}, n, "test", DeviceGroups::Coverage::kPartial));
  cases.push_back({"collective-broadcast partial", [=](int64_t r, Communicator& c)
                       -> StatusOr<std::vector<Array>> {
    Array in = Input(DType::kF32, {6}, r);
    Array out = Input(DType::kF32, {6}, 99);
    XS_RETURN_IF_ERROR(c.CollectiveBroadcast(CollectiveCall(r, "bcast"), *partial,
                                             ConstBufferView::Of(in), BufferView::Of(out)));
    return std::vector<Array>{std::move(out)};
  }});
  // Permutes: a ring shift, a reversal, and pairs that leave devices without a source.
  std::vector<std::pair<std::string, std::vector<std::pair<int64_t, int64_t>>>> perms(3);
  perms[0].first = "ring";
  perms[1].first = "reverse";
  perms[2].first = "partial";
  for (int64_t d = 0; d < n; ++d) {
    perms[0].second.push_back({d, (d + 1) % n});
    perms[1].second.push_back({d, n - 1 - d});
  }
  perms[2].second = {{n - 1, 0}};
  for (const auto& [name, pairs] : perms) {
    auto p = std::make_shared<PermutePairs>(*PermutePairs::Create(pairs, n, "test"));
    cases.push_back({StrCat("collective-permute ", name), [=](int64_t r, Communicator& c)
                         -> StatusOr<std::vector<Array>> {
      Array in = Input(DType::kF32, {3, 2}, r);
      Array out = Input(DType::kF32, {3, 2}, 99);
      XS_RETURN_IF_ERROR(c.CollectivePermute(CollectiveCall(r, "cp"), *p, ConstBufferView::Of(in),
                                             BufferView::Of(out)));
      return std::vector<Array>{std::move(out)};
    }});
  }
  cases.push_back({"barrier", [](int64_t r, Communicator& c) -> StatusOr<std::vector<Array>> {
    XS_RETURN_IF_ERROR(c.Barrier(CollectiveCall(r, "barrier")));
    return std::vector<Array>{};
  }});
  return cases;
}

int RunCollectives(Client& mpi_client) {
  const int64_t n = mpi_client.num_devices();
  ClientOptions o;
  o.num_devices = n;
  StatusOr<std::unique_ptr<Client>> local = Client::Create(o);
  if (!local.ok()) {
    std::fprintf(stderr, "in-process client: %s\n", local.status().message().c_str());
    return 1;
  }
  int failures = 0, checked = 0;
  for (const Case& c : Cases(n)) {
    StatusOr<std::vector<std::vector<Array>>> want = RunCase(**local, c.fn);
    StatusOr<std::vector<std::vector<Array>>> got = RunCase(mpi_client, c.fn);
    if (!want.ok() || !got.ok()) {
      std::fprintf(stderr, "FAIL %s: %s / %s\n", c.name.c_str(),
                   want.status().message().c_str(), got.status().message().c_str());
      ++failures;
      continue;
    }
    for (int64_t d = 0; d < n; ++d) {
      if (!mpi_client.IsLocal(d)) continue;
      ++checked;
      bool same = (*want)[d].size() == (*got)[d].size();
      for (size_t i = 0; same && i < (*want)[d].size(); ++i) {
        const Array& a = (*want)[d][i];
        const Array& b = (*got)[d][i];
        same = a.shape() == b.shape() &&
               std::memcmp(a.data(), b.data(), static_cast<size_t>(a.byte_size())) == 0;
        if (!same) {
          std::fprintf(stderr, "FAIL %s device %lld output %zu:\n  in-process %s\n  mpi        %s\n",
                       c.name.c_str(), static_cast<long long>(d), i, a.ToString().c_str(),
                       b.ToString().c_str());
        }
      }
      if (!same) ++failures;
    }
  }
  // A run over the first and last device only: with 3+ processes of one device the others take
  // part with no device (they only agree on the outcome). Device d contributes d + 1, so the
  // sum is n + 1; then every process gets both devices' results, and a full run still works.
  const std::vector<int64_t> ends = {0, n - 1};
  const DeviceGroups pair = DeviceGroups::All(2);
  std::vector<std::vector<Array>> sums(2);
  Status st = mpi_client.Run(ends, [&](int64_t r, Communicator& c) -> Status {
    Array in(DType::kF32, {3}), out(DType::kF32, {3});
    for (int64_t i = 0; i < 3; ++i) in.SetDouble(i, static_cast<double>(ends[r] + 1));
    XS_RETURN_IF_ERROR(c.AllReduce(CollectiveCall(r, "ends"), pair, ConstBufferView::Of(in),
                                   BufferView::Of(out), ReductionKind::kSum));
    sums[r].push_back(std::move(out));
    return OkStatus();
  });
  if (st.ok()) st = mpi_client.ShareRankResults(ends, sums);
  for (int64_t r = 0; r < 2 && st.ok(); ++r) {
    if (sums[r].size() != 1 || sums[r][0].GetDouble(2) != static_cast<double>(n + 1)) {
      st = Internal("device ", ends[r], "'s all-reduce over devices 0 and ", n - 1,
                    " is not ", n + 1);
    }
  }
  if (st.ok()) st = RunCase(mpi_client, Cases(n).back().fn).status();  // the barrier, after it
  // Then every device's value shared over all devices: a message left over from the run above
  // would be taken for one of these.
  std::vector<int64_t> all_ids(n);
  std::vector<std::vector<Array>> values(n);
  for (int64_t d = 0; d < n; ++d) {
    all_ids[d] = d;
    if (mpi_client.IsLocal(d)) values[d].push_back(Input(DType::kS32, {2}, 0, d + 100));
  }
  if (st.ok()) st = mpi_client.ShareRankResults(all_ids, values);
  for (int64_t d = 0; d < n && st.ok(); ++d) {
    const Array want = Input(DType::kS32, {2}, 0, d + 100);
    if (values[d].size() != 1 || values[d][0].shape() != want.shape() ||
        std::memcmp(values[d][0].data(), want.data(), 8) != 0) {
      st = Internal("device ", d, "'s shared value is wrong after a run over fewer devices");
    }
  }
  ++checked;
  if (!st.ok()) {
    std::fprintf(stderr, "FAIL run over devices 0 and %lld: %s\n", static_cast<long long>(n - 1),
                 st.message().c_str());
    ++failures;
  }
  std::printf("process %lld: %d of %d device results differ (%zu cases, %lld devices)\n",
              static_cast<long long>(mpi::ProcessRank()), failures, checked, Cases(n).size(),
              static_cast<long long>(n));
  return failures == 0 ? 0 : 1;
}

// Client::ShareRankResults: every process fills its own devices' entries; shared with every
// process each must hold every entry, shared only to process 0 only it does (the others keep
// just their own). Prints "process P: sharing ok" or what differs; returns the failures.
int RunShare(Client& client) {
  const int64_t n = client.num_devices();
  std::vector<int64_t> devices(n);
  for (int64_t d = 0; d < n; ++d) devices[d] = d;
  int failures = 0;
  for (const bool to_zero : {false, true}) {
    std::vector<std::vector<Array>> per_rank(n);
    for (int64_t d = 0; d < n; ++d) {
      if (client.IsLocal(d)) per_rank[d] = {Input(DType::kF32, {3}, d)};
    }
    const std::optional<int64_t> only_to = to_zero ? std::optional<int64_t>(0) : std::nullopt;
    if (Status s = client.ShareRankResults(devices, per_rank, only_to); !s.ok()) {
      std::printf("process %lld: sharing failed: %s\n", static_cast<long long>(mpi::ProcessRank()),
                  s.message().c_str());
      ++failures;
      continue;
    }
    const bool receives = !to_zero || mpi::ProcessRank() == 0;
    for (int64_t d = 0; d < n; ++d) {
      const bool want = receives || client.IsLocal(d);
      const bool same = want ? per_rank[d].size() == 1 &&
                                   std::memcmp(per_rank[d][0].data(), Input(DType::kF32, {3}, d).data(), 12) == 0
                             : per_rank[d].empty();
      if (!same) {
        std::printf("process %lld: device %lld's entry is wrong after sharing %s\n",
                    static_cast<long long>(mpi::ProcessRank()), static_cast<long long>(d),
                    to_zero ? "to process 0" : "with every process");
        ++failures;
      }
    }
  }
  if (failures == 0) std::printf("process %lld: sharing ok\n", static_cast<long long>(mpi::ProcessRank()));
  return failures;
}

// Device 0 all-gathers f32[2] while the others all-gather f32[3]: every process must fail with a
// mismatch naming both calls (device 0's process sees it locally or from a peer).
int RunMismatch(Client& client) {
  const int64_t n = client.num_devices();
  const DeviceGroups all = DeviceGroups::All(n);
  StatusOr<std::vector<std::vector<Array>>> got =
      RunCase(client, [&](int64_t r, Communicator& c) -> StatusOr<std::vector<Array>> {
        Array in(DType::kF32, {r == 0 ? 2 : 3});
        Array out(DType::kF32, {(r == 0 ? 2 : 3) * n});
        XS_RETURN_IF_ERROR(c.AllGather(CollectiveCall(r, "ag"), all, ConstBufferView::Of(in),
                                       BufferView::Of(out), 0));
        return std::vector<Array>{};
      });
  const std::string message = got.ok() ? "" : got.status().message();
  std::printf("process %lld: %s\n", static_cast<long long>(mpi::ProcessRank()),
              got.ok() ? "no error" : message.c_str());
  const bool named = message.find("collective mismatch") != std::string::npos &&
                     message.find("f32[2]") != std::string::npos &&
                     message.find("f32[3]") != std::string::npos;
  return named ? 0 : 1;
}

// The last device skips the all-reduce ("early": it returns at once; "late": it first sleeps 5 s,
// beyond the 2 s timeout). Every other process must fail naming the last process: at once when it
// left, after the timeout when it is late. Prints "process P: <error> (<seconds> s)".
int RunAbsent(Client& client, bool late) {
  const int64_t n = client.num_devices();
  const DeviceGroups all = DeviceGroups::All(n);
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<std::vector<std::vector<Array>>> got =
      RunCase(client, [&](int64_t r, Communicator& c) -> StatusOr<std::vector<Array>> {
        if (r == n - 1) {
          if (!late) return std::vector<Array>{};
          std::this_thread::sleep_for(std::chrono::seconds(5));
        }
        Array in(DType::kF32, {4});
        Array out(DType::kF32, {4});
        XS_RETURN_IF_ERROR(c.AllReduce(CollectiveCall(r, "psum"), all, ConstBufferView::Of(in),
                                       BufferView::Of(out), ReductionKind::kSum));
        return std::vector<Array>{};
      });
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string message = got.ok() ? "no error" : got.status().message();
  std::printf("process %lld: %s (%.1f s)\n", static_cast<long long>(mpi::ProcessRank()),
              message.c_str(), secs);
  std::fflush(stdout);
  // The last process skipped the call on purpose: whatever its peers told it, it did its part.
  // (A non-zero exit from it would make mpirun end the others before they print.)
  if (mpi::ProcessRank() == mpi::ProcessCount() - 1) return 0;
  const std::string last = StrCat("process ", mpi::ProcessCount() - 1);
  return !got.ok() && message.find(last) != std::string::npos ? 0 : 1;
}

}  // namespace
}  // namespace xs

int main(int argc, char** argv) {
  using namespace xs;
  if (!mpi::BuiltWithMpi()) {
    std::printf("skipped: this build has no MPI support (CMake did not find MPI)\n");
    return 77;
  }
  std::string mode = "collectives";
  int64_t per_process = 1;
  int64_t eager_bytes = -1;  // the default; 0 sends every input after the signatures
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--mode") mode = argv[i + 1];
    if (std::string(argv[i]) == "--devices-per-process") per_process = std::atoll(argv[i + 1]);
    if (std::string(argv[i]) == "--eager-bytes") eager_bytes = std::atoll(argv[i + 1]);
  }
  ClientOptions o;
  o.devices_per_process = per_process;
  o.collective_timeout = std::chrono::milliseconds(mode == "collectives" ? 20000 : 2000);
  StatusOr<std::unique_ptr<Client>> client = CreateMpiClient(o, eager_bytes);
  if (!client.ok()) {
    std::fprintf(stderr, "MPI client: %s\n", client.status().message().c_str());
    return 1;
  }
  int code = 1;
  if (mode == "collectives") code = RunCollectives(**client) | (RunShare(**client) == 0 ? 0 : 1);
  if (mode == "mismatch") code = RunMismatch(**client);
  if (mode == "early" || mode == "late") code = RunAbsent(**client, mode == "late");
  // The MPI state is broken after a failed collective: no Finalize. A process that exits without
  // it makes mpirun end the others, so each waits for its peers to have printed their line.
  if (mode != "collectives") {
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return code;
  }
  client->reset();
  mpi::Finalize();
  return code;
}
