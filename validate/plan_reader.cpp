// plan JSON -> PlanSpec. Only the keys validate uses are read; each is checked for type and
// range, and an error names the file and the key path.
#include "validate/plan_reader.h"

#include <fmt/format.h>

#include "costmodel/calibration_io.h"
#include "topology/errors.h"
#include "topology/json_reader.h"
#include "validate/patterns.h"

namespace trident {
namespace {

using json_reader::json;
using json_reader::member;
using json_reader::Path;

/// Bounds on what a plan file may ask validate to run: a size whose product wrapped to the
/// MPI world size passed the rank check, and 1e300 bytes gave garbage "measurements".
constexpr long long kMaxPlanDimension = 1LL << 24;  ///< tp, pp, dp and their product
constexpr long long kMaxGemmDimension = (1LL << 31) - 1;
constexpr double kMaxPlanNumber = 1e15;  ///< bytes per call, calls per step, TFLOP/s

long long positive_integer(const json& object, const Path& at, const char* name, long long most) {
  return json_reader::bounded_integer(object, at, name, most);
}

double non_negative(const json& object, const Path& at, const char* name) {
  return json_reader::bounded_number(object, at, name, 0.0, kMaxPlanNumber);
}

std::string text(const json& object, const Path& at, const char* name) {
  return json_reader::string_value(object, at, name);
}

RankOrder rank_order(const json& plan, const Path& at) {
  const std::string order = text(plan, at, "rank_order");
  if (order == "tp-dp-pp") return RankOrder::tp_dp_pp;
  if (order == "tp-pp-dp") return RankOrder::tp_pp_dp;
  at.child("rank_order").fail("expected tp-dp-pp|tp-pp-dp, got '" + order + "'");
}

std::vector<Collective> collectives(const std::string& names, const Path& at) {
  std::vector<Collective> out;
  std::size_t start = 0;
  while (start <= names.size()) {
    const std::size_t end = std::min(names.find('+', start), names.size());
    Collective collective = Collective::all_reduce;
    try {
      collective = parse_collective(names.substr(start, end - start));
    } catch (const InputError&) {
      at.fail("unknown collective '" + names + "'");
    }
    // A collective trident models but validate does not run (broadcast) passed here and failed
    // after MPI started ("validate does not run broadcast", exit 1, no file or key).
    if (!validate_runs(collective)) {
      at.fail(
          fmt::format("'{}': validate does not run {} (it runs all-reduce, all-gather, "
                      "reduce-scatter, send-recv and all-to-all)",
                      names, to_string(collective)));
    }
    out.push_back(collective);
    start = end + 1;
  }
  return out;
}

std::optional<PlanComm> read_comm(const json& comm, const Path& at, const char* name) {
  if (!comm.contains(name)) return std::nullopt;
  const json& entry = comm.at(name);
  const Path here = at.child(name);
  if (!entry.is_object()) here.fail("expected an object");
  PlanComm out;
  out.name = name;
  out.ranks = static_cast<int>(positive_integer(entry, here, "ranks", kMaxPlanDimension));
  if (out.ranks == 1) return std::nullopt;  // no traffic ("collective": "none")
  out.collectives = collectives(text(entry, here, "collective"), here.child("collective"));
  out.bytes_per_call = non_negative(entry, here, "bytes_per_call");
  out.gather_bytes_per_call = entry.contains("gather_bytes_per_call")
                                  ? non_negative(entry, here, "gather_bytes_per_call")
                                  : out.bytes_per_call;
  out.calls_per_step = non_negative(entry, here, "calls_per_step");
  out.tier = parse_tier(text(entry, here, "tier"), here.child("tier"));
  out.time_per_call_s = non_negative(entry, here, "time_per_call_s");
  if (out.bytes_per_call <= 0.0) return std::nullopt;
  return out;
}

/// One GEMM; its "dtype" (written since plans carry precision per tensor) defaults to the
/// model's dtype for plan files written before.
PlanGemm read_gemm(const json& entry, const Path& here, Dtype model_dtype) {
  if (!entry.is_object()) here.fail("expected an object");
  PlanGemm gemm;
  gemm.name = text(entry, here, "name");
  gemm.dtype = entry.contains("dtype")
                   ? parse_dtype(text(entry, here, "dtype"), here.child("dtype"))
                   : model_dtype;
  gemm.m = positive_integer(entry, here, "m", kMaxGemmDimension);
  gemm.n = positive_integer(entry, here, "n", kMaxGemmDimension);
  gemm.k = positive_integer(entry, here, "k", kMaxGemmDimension);
  gemm.calls_per_step = non_negative(entry, here, "calls_per_step");
  gemm.predicted_tflops = non_negative(entry, here, "predicted_tflops");
  return gemm;
}

/// HSDP: the shard group's DP ranks when the plan shards over part of DP (`dp_shard` below
/// `dp` with ZeRO 2-3; plans without the key shard over all of DP), else 0.
int hybrid_shard(const json& plan, const Path& at, int dp) {
  if (!plan.contains("dp_shard") || !plan.contains("zero")) return 0;
  const long long shard = positive_integer(plan, at, "dp_shard", kMaxPlanDimension);
  const double zero = non_negative(plan, at, "zero");
  if (zero < 2 || shard >= dp) return 0;
  if (dp % shard != 0) {
    at.child("dp_shard").fail("expected a divisor of dp = " + std::to_string(dp));
  }
  return static_cast<int>(shard);
}

void check_comm_sizes(const PlanSpec& spec, const Path& at) {
  const auto check = [&](const std::optional<PlanComm>& comm, int size,
                         const std::string& why = "") {
    if (comm && comm->ranks != size) {
      at.child("comm")
          .child(comm->name)
          .child("ranks")
          .fail("expected " + std::to_string(size) + " (" +
                (why.empty() ? "the plan's " + comm->name : why) + ")");
    }
  };
  check(spec.tp, spec.config.tp);
  // A pipeline's traffic is a send-recv between two neighbouring stages, whatever PP is
  // (the plan prices one pair; the engine runs it around the PP group as sendrecv_perf does).
  check(spec.pp, 2, "a send-recv between two pipeline stages");
  // Gradients reduce over DP x CP; under HSDP the DP traffic is the shard group's.
  check(spec.dp, spec.config.shard_ranks() * spec.config.cp);
  check(spec.cp, spec.config.cp);
  check(spec.ep, spec.config.ep);
}

PlanSpec read_one(const json& plan, const json& document, const Path& top, const Path& at) {
  PlanSpec spec;
  if (!plan.is_object()) at.fail("expected an object");
  const long long tp = positive_integer(plan, at, "tp", kMaxPlanDimension);
  const long long pp = positive_integer(plan, at, "pp", kMaxPlanDimension);
  const long long dp = positive_integer(plan, at, "dp", kMaxPlanDimension);
  // cp and ep: 1 when absent (plans written before context/expert parallelism).
  const long long cp =
      plan.contains("cp") ? positive_integer(plan, at, "cp", kMaxPlanDimension) : 1;
  const long long ep =
      plan.contains("ep") ? positive_integer(plan, at, "ep", kMaxPlanDimension) : 1;
  if (tp * pp > kMaxPlanDimension || tp * pp * dp > kMaxPlanDimension ||
      tp * pp * dp * cp > kMaxPlanDimension) {  // each <= 2^24: no wrap
    at.fail("tp " + std::to_string(tp) + " x pp " + std::to_string(pp) + " x dp " +
            std::to_string(dp) + (cp > 1 ? " x cp " + std::to_string(cp) : std::string()) +
            " ranks; expected at most " + std::to_string(kMaxPlanDimension));
  }
  if ((tp * cp * dp) % ep != 0) {
    at.child("ep").fail("expected a divisor of tp x cp x dp = " + std::to_string(tp * cp * dp));
  }
  spec.config.tp = static_cast<int>(tp);
  spec.config.pp = static_cast<int>(pp);
  spec.config.dp = static_cast<int>(dp);
  spec.config.cp = static_cast<int>(cp);
  spec.config.ep = static_cast<int>(ep);
  spec.config.dp_shard = hybrid_shard(plan, at, spec.config.dp);
  spec.order = rank_order(plan, at);
  const json& comm = member(plan, at, "comm");
  if (!comm.is_object()) at.child("comm").fail("expected an object");
  // A dimension the plan splits has traffic to measure: its entry missing is an edited file (a
  // sweep skipped without a word).
  const std::pair<const char*, long long> split[] = {
      {"tp", tp}, {"pp", pp}, {"dp", dp * cp}, {"cp", cp}, {"ep", ep}};
  for (const auto& [name, size] : split) {
    if (size > 1 && !comm.contains(name)) {
      at.child("comm").child(name).fail("missing (the plan's " + std::string(name) + " group has " +
                                        std::to_string(size) + " ranks)");
    }
  }
  spec.tp = read_comm(comm, at.child("comm"), "tp");
  spec.pp = read_comm(comm, at.child("comm"), "pp");
  spec.dp = read_comm(comm, at.child("comm"), "dp");
  spec.cp = read_comm(comm, at.child("comm"), "cp");
  spec.ep = read_comm(comm, at.child("comm"), "ep");
  check_comm_sizes(spec, at);
  const Path model = top.child("model");
  const json& model_entry = member(document, top, "model");
  spec.dtype = parse_dtype(text(model_entry, model, "dtype"), model.child("dtype"));
  const json& gemms = member(plan, at, "gemms");
  if (!gemms.is_array()) at.child("gemms").fail("expected an array");
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    spec.gemms.push_back(read_gemm(gemms[i], at.child("gemms").index(i), spec.dtype));
  }
  if (document.contains("cluster") && document["cluster"].contains("gpu") &&
      document["cluster"]["gpu"].is_string()) {
    spec.gpu = document["cluster"]["gpu"].get<std::string>();
  }
  return spec;
}

}  // namespace

std::string PlanComm::label() const {
  std::string out = name;
  out += ' ';
  for (std::size_t i = 0; i < collectives.size(); ++i) {
    if (i > 0) out += '+';
    out += to_string(collectives[i]);
  }
  return out;
}

PlanSpec read_plan(const std::string& text_in, const std::string& source, int index) {
  const json document = json_reader::parse(text_in, source);
  if (!document.is_object()) throw InputError(source + ": expected a JSON object");
  const Path top = Path::root(source, text_in);
  const auto plans = document.find("plans");
  if (plans == document.end() || !plans->is_array()) {
    top.child("plans").fail("expected an array of plans");
  }
  if (index < 0 || static_cast<std::size_t>(index) >= plans->size()) {
    top.child("plans[" + std::to_string(index) + "]")
        .fail("missing (the file has " + std::to_string(plans->size()) +
              " plans; see --plan-index)");
  }
  const Path at = top.child("plans").index(static_cast<std::size_t>(index));
  PlanSpec spec = read_one((*plans)[static_cast<std::size_t>(index)], document, top, at);
  spec.source = source;
  spec.index = index;
  return spec;
}

}  // namespace trident
