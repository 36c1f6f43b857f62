#pragma once
// Seeded variants of a pod list for judging placement policies on workloads they were not tuned on: GPU-model
// constraints (`gpu_spec`) of several shapes, and more multi-GPU pods. Each variant is named by its parameters,
// and the name, given back to ParseVariant, regenerates the same pods from the same lists.
//
//   spec:share=S:pop=P[:focus=M:skew=K]:lists=L:seed=N
//     S % of the GPU pods without a gpu_spec (exactly, while models have room; see below) get one. Each names one
//     model, or with probability L % a list of 2–5 models. The first (or only) model is drawn by popularity P:
//       uniform  every model alike;
//       fleet    in proportion to the model's GPUs in the node list;
//       one      the model M takes K % of the weight, the others share the rest alike;
//       small    in inverse proportion to the model's GPUs (the smallest fleets first).
//     The further models of a list are drawn by the same weights without replacement. A model is only drawn for
//     a pod one of its nodes can host (GPUs, CPU, memory), and only while the constrained demand whose first
//     model it is stays within its share of the list's demand (its GPUs × the list's requested GPU / the
//     cluster's GPU): a popular small fleet fills up and the draws move on to the others; a pod no model has room
//     for stays unconstrained and the next pod is tried.
//   multi:share=S:gpus=G:seed=N
//     S % of the pods asking for exactly one whole GPU (1 × 1000 milli) ask for G GPUs instead (G = 2, 4, 8, or
//     mix: each drawn from 2, 4, 8), with CPU and memory multiplied by G and capped at the node with the most CPU
//     among those with ≥ G GPUs (its memory likewise), so every converted pod fits an empty node. The list's GPU
//     demand grows accordingly.
//   mig:share=S:model=M:seed=N
//     S % of the pods asking for part of a GPU (0 < gpu_milli < 1000) ask for the compute share of the smallest
//     MIG profile of M (a table of model/mig_profile.h, e.g. A100-80GB) that covers their request instead (0.3 of
//     a GPU becomes 3/7 = 428 milli; the full-size profile, a whole GPU): a workload sized to MIG profiles, on
//     which MIG and shared slices can be compared without MIG's rounding (sim/mig_fill.h).
//
// A family is a set of variants whose parameters are drawn from fixed ranges (FamilyVariants): spec-uniform,
// spec-fleet, spec-one, spec-small (single-model specs, S in 5–40), spec-lists (2–5-model lists, popularity
// drawn), spec-mixed (popularity drawn, L in 10–40), multi (S in 5–30, G drawn).
//
// Pure functions over value types: no I/O, no globals; thread-safe. Randomness is an mt19937_64 seeded from the
// variant's seed.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "sim/trace.h"

namespace xpool::sim {

enum class VariantKind : uint8_t { kSpec, kMulti, kMigSized };
enum class Popularity : uint8_t { kUniform, kFleet, kOne, kSmall };

struct Variant {
  VariantKind kind = VariantKind::kSpec;
  int share_percent = 25;  // spec: GPU pods constrained; multi: 1 × 1000 pods made multi-GPU; mig: pods resized
  // spec only.
  Popularity popularity = Popularity::kFleet;
  std::string focus;      // kOne: the favoured model
  int skew_percent = 0;   // kOne: its share of the weight, 1–100
  int lists_percent = 0;  // constrained pods naming 2–5 models
  // multi only: 2, 4 or 8; 0 = each pod draws one of them.
  int gpus = 0;
  std::string mig_model;  // mig only: the MIG table's name
  uint64_t seed = 1;
};

// The canonical name ("spec:share=25:pop=fleet:lists=0:seed=7").
std::string VariantName(const Variant& variant);
// A name back to its parameters (keys in any order; every key of the kind required). InvalidArgument naming the
// offending part otherwise.
Result<Variant> ParseVariant(std::string_view name);

// The pods of `variant` made from `pods` on the cluster `nodes` (pod order and names kept). InvalidArgument when
// the variant names a model the node list lacks, or the node list has no GPU.
Result<std::vector<TracePod>> ApplyVariant(const std::vector<TracePod>& pods, const std::vector<TraceNode>& nodes,
                                           const Variant& variant);

// The family names, in the order above.
const std::vector<std::string>& FamilyNames();
bool IsFamilyName(std::string_view name);
// `count` variants of a family, drawn with mt19937_64(`seed`); a focus model is drawn from the models of
// `nodes`. InvalidArgument for an unknown family or a node list without GPUs.
Result<std::vector<Variant>> FamilyVariants(std::string_view family, const std::vector<TraceNode>& nodes, int count,
                                            uint64_t seed);

}  // namespace xpool::sim
