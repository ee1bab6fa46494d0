// Input generation: reproducible bit for bit from the seed, structural tensors fixed across
// trials, the others fresh, and each operator's invariants (valid pages, sorted cu_seqlens,
// padding, the FP8 K-cache layout, routing of the MoE variants). Small axis values keep it fast.
#include <algorithm>
#include <cmath>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/check/checker.h"
#include "kh/core/error.h"
#include "kh/core/minifloat.h"
#include "kh/gen/input_generator.h"
#include "kh/ref/dsa_index_cache.h"
#include "kh/ref/moe_routing.h"
#include "test_support.h"

namespace kh {
namespace {

const char* kDecode = "gdn_decode_qk4_v8_d128_k_last";
const char* kPrefill = "gdn_prefill_qk4_v8_d128_k_last";
const char* kAttention = "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64";
const char* kIndexer = "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64";
const char* kMoe = "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048";

Workload workload(const std::string& uuid, std::vector<std::pair<std::string, std::int64_t>> axes,
                  Json hints = Json::object()) {
  Workload w;
  w.uuid = uuid;
  w.axes = std::move(axes);
  w.hints = std::move(hints);
  return w;
}

struct Fixture {
  Definition def;
  InputGenerator gen;
  Fixture(const char* name, Workload w, GeneratorOptions o = {})
      : def(test::shipped_definition(name)), gen(def, std::move(w), test::source_dir(), o) {}
};

TEST(InputGenerator, IsReproducibleFromTheSeed) {
  const Workload w = workload("w-repro", {{"batch_size", 2}});
  Fixture a(kDecode, w), b(kDecode, w), c(kDecode, w, {kDefaultSeed + 1, ""});
  const InputSet x = a.gen.generate(0), y = b.gen.generate(0), z = c.gen.generate(0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(x[i].tensor.bytes_equal(y[i].tensor)) << x[i].name;
    if (x[i].tensor.numel() > 1) {
      EXPECT_FALSE(x[i].tensor.bytes_equal(z[i].tensor)) << x[i].name;
    }
  }
}

TEST(InputGenerator, GoldenBitsDoNotDriftAcrossVersions) {
  // A fingerprint of one workload's trial-0 inputs: a change to any generator that alters a bit
  // must be deliberate (update the value and say why in the commit).
  Fixture f(kPrefill,
            workload("golden", {{"total_seq_len", 5}, {"num_seqs", 2}, {"len_cu_seqlens", 3}}));
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& item : f.gen.generate(0))
    for (std::byte b : item.tensor.byte_span())
      h = (h ^ static_cast<std::uint8_t>(b)) * 0x100000001b3ull;
  EXPECT_EQ(h, 784720068820924591ull) << "fingerprint";
}

TEST(InputGenerator, PrefillSequenceLengthsFollowTheSeqLensHint) {
  const auto cu_of = [](const InputSet& in) {
    const HostTensor& t = in.at("cu_seqlens");
    return std::vector<std::int64_t>(t.data<std::int64_t>(), t.data<std::int64_t>() + t.numel());
  };
  const auto prefill = [](Json hints) {
    return workload("w-lens", {{"total_seq_len", 160}, {"num_seqs", 2}, {"len_cu_seqlens", 3}},
                    std::move(hints));
  };
  Fixture f(kPrefill, prefill({{"seq_lens", {60, 100}}}));
  EXPECT_EQ(cu_of(f.gen.generate(0)), (std::vector<std::int64_t>{0, 60, 160}));
  EXPECT_EQ(cu_of(f.gen.generate(3)), (std::vector<std::int64_t>{0, 60, 160}));
  // zero_length empties the first sequence: its tokens go to the next one.
  Fixture z(kPrefill, prefill({{"seq_lens", {60, 100}}}), {kDefaultSeed, "zero_length"});
  EXPECT_EQ(cu_of(z.gen.generate(0)), (std::vector<std::int64_t>{0, 0, 160}));
  // Wrong count, wrong sum, negative or fractional lengths: an error naming the workload and hint.
  for (Json bad : {Json{{"seq_lens", {160}}}, Json{{"seq_lens", {60, 99}}},
                   Json{{"seq_lens", {170, -10}}}, Json{{"seq_lens", {60.5, 99.5}}},
                   Json{{"seq_lens", "60,100"}}}) {
    Fixture b(kPrefill, prefill(bad));
    try {
      b.gen.generate(0);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("w-lens: hint kh.seq_lens"), std::string::npos)
          << e.what();
    }
  }
}

TEST(InputGenerator, StructuralInputsStayFixedAcrossTrialsOthersChange) {
  Fixture f(kPrefill,
            workload("w-trials", {{"total_seq_len", 300}, {"num_seqs", 5}, {"len_cu_seqlens", 6}}));
  const InputSet t0 = f.gen.generate(0), t1 = f.gen.generate(1);
  EXPECT_TRUE(t0.at("cu_seqlens").bytes_equal(t1.at("cu_seqlens")));
  for (const char* name : {"q", "k", "v", "state", "a", "b", "A_log", "dt_bias"})
    EXPECT_FALSE(t0.at(name).bytes_equal(t1.at(name))) << name;
  Fixture g(kIndexer,
            workload("w-idx", {{"batch_size", 3}, {"max_num_pages", 5}, {"num_pages", 40}}));
  const InputSet i0 = g.gen.generate(0), i1 = g.gen.generate(1);
  EXPECT_TRUE(i0.at("seq_lens").bytes_equal(i1.at("seq_lens")));
  EXPECT_TRUE(i0.at("block_table").bytes_equal(i1.at("block_table")));
  EXPECT_FALSE(i0.at("k_index_cache_fp8").bytes_equal(i1.at("k_index_cache_fp8")));
  EXPECT_FALSE(i0.at("q_index_fp8").bytes_equal(i1.at("q_index_fp8")));
}

TEST(GdnInputs, CuSeqlensPartitionTheTokensAndKeysAreUnitNorm) {
  for (auto [total, seqs] : {std::pair{8192, 57}, {6, 1}, {7, 7}, {3, 5}, {1000, 2}}) {
    Fixture f(kPrefill, workload("cu" + std::to_string(total), {{"total_seq_len", total},
                                                                {"num_seqs", seqs},
                                                                {"len_cu_seqlens", seqs + 1}}));
    const InputSet in = f.gen.generate(0, {"q", "k", "v", "state"});
    const HostTensor& cu = in.at("cu_seqlens");
    ASSERT_EQ(cu.dtype(), DType::kInt64);
    EXPECT_EQ(cu.get(0), 0);
    EXPECT_EQ(cu.get(seqs), total);
    for (int i = 0; i < seqs; ++i) {
      const double len = cu.get(i + 1) - cu.get(i);
      EXPECT_GE(len, total >= seqs ? 1 : 0) << "sequence " << i;
    }
  }
  Fixture f(kDecode, workload("norm", {{"batch_size", 3}}));
  const InputSet in = f.gen.generate(0);
  for (const char* name : {"q", "k"}) {
    const HostTensor& t = in.at(name);
    for (std::int64_t v = 0; v < t.numel() / 128; ++v) {
      double n2 = 0;
      for (int d = 0; d < 128; ++d) n2 += t.get(v * 128 + d) * t.get(v * 128 + d);
      EXPECT_NEAR(n2, 1.0, 0.01) << name << " vector " << v;
    }
  }
  const HostTensor& a_log = in.at("A_log");
  for (int h = 0; h < 8; ++h) EXPECT_TRUE(a_log.get(h) >= 0 && a_log.get(h) <= std::log(16.0));
}

TEST(GdnInputs, Variants) {
  Fixture zero(kPrefill,
               workload("zl", {{"total_seq_len", 50}, {"num_seqs", 4}, {"len_cu_seqlens", 5}}),
               {kDefaultSeed, "zero_length"});
  const InputSet cu_inputs = zero.gen.generate(0);
  const HostTensor& cu = cu_inputs.at("cu_seqlens");
  EXPECT_EQ(cu.get(1) - cu.get(0), 0);  // sequence 0 and 3 are empty
  EXPECT_EQ(cu.get(4) - cu.get(3), 0);
  EXPECT_EQ(cu.get(4), 50);
  Fixture absent(kDecode, workload("as", {{"batch_size", 1}}), {kDefaultSeed, "absent_state"});
  EXPECT_EQ(absent.gen.generate(0).find("state"), nullptr);
  EXPECT_THROW(Fixture(kDecode, workload("x", {{"batch_size", 1}}), {kDefaultSeed, "zero_length"}),
               Error);
}

TEST(GdnInputs, ZeroLengthIsDrawnOnlyWhereThereAreTwoSequences) {
  const Definition prefill = test::shipped_definition(kPrefill);
  auto seqs = [](std::int64_t n) {
    return workload("n", {{"total_seq_len", 40}, {"num_seqs", n}, {"len_cu_seqlens", n + 1}});
  };
  EXPECT_EQ(InputGenerator::variant_does_not_apply(prefill, "zero_length", seqs(1)),
            "variant zero_length needs num_seqs >= 2; the workload has 1");
  EXPECT_EQ(InputGenerator::variant_does_not_apply(prefill, "zero_length", seqs(2)), "");
  EXPECT_EQ(InputGenerator::variant_does_not_apply(prefill, "extreme", seqs(1)), "");
  EXPECT_EQ(InputGenerator::variant_does_not_apply(prefill, "", seqs(1)), "");
  // What it predicts is what the generator does.
  EXPECT_THROW(Fixture(kPrefill, seqs(1), {kDefaultSeed, "zero_length"}).gen.generate(0), Error);
  EXPECT_NO_THROW(Fixture(kPrefill, seqs(2), {kDefaultSeed, "zero_length"}).gen.generate(0));
}

TEST(IndexerInputs, PagesAreDistinctLengthsFitAndTheCacheLayoutRoundTrips) {
  const std::int64_t batch = 6, pages = 9, num_pages = 80;
  Fixture f(
      kIndexer,
      workload("idx", {{"batch_size", batch}, {"max_num_pages", pages}, {"num_pages", num_pages}}));
  const InputSet in = f.gen.generate(0);
  const HostTensor &lens = in.at("seq_lens"), &table = in.at("block_table"),
                   &cache = in.at("k_index_cache_fp8");
  std::set<double> seen;
  bool some_row_needs_all_pages = false;
  for (std::int64_t b = 0; b < batch; ++b) {
    EXPECT_GE(lens.get(b), 1);
    EXPECT_LE(lens.get(b), pages * 64);
    some_row_needs_all_pages |= lens.get(b) > (pages - 1) * 64;
    for (std::int64_t p = 0; p < pages; ++p) {
      const double page = table.get(b * pages + p);
      EXPECT_TRUE(page >= 0 && page < num_pages);
      EXPECT_TRUE(seen.insert(page).second) << "page " << page << " handed out twice";
    }
  }
  EXPECT_TRUE(some_row_needs_all_pages);
  // Layout: per token, scale = amax/448 of the dequantised key, and some value hits +-448.
  for (std::int64_t page : {0, 41, 79}) {
    for (int off : {0, 17, 63}) {
      const float scale = dsa::key_scale(cache, page, off);
      EXPECT_GT(scale, 0.0f);
      float amax = 0;
      for (int d = 0; d < 128; ++d)
        amax = std::max(amax, std::abs(dsa::key_value(cache, page, off, d)));
      EXPECT_NEAR(amax / scale, 448.0f, 1e-3) << page << "/" << off;
    }
  }
}

TEST(IndexerInputs, TiesVariantRepeatsKeys) {
  Fixture f(kIndexer, workload("ties", {{"batch_size", 1}, {"max_num_pages", 4}, {"num_pages", 8}}),
            {kDefaultSeed, "ties"});
  const InputSet cache_inputs = f.gen.generate(0);
  const HostTensor& cache = cache_inputs.at("k_index_cache_fp8");
  std::set<std::vector<float>> distinct;
  for (int t = 0; t < 8 * 64; ++t) {
    std::vector<float> key(128);
    for (int d = 0; d < 128; ++d) key[d] = dsa::key_value(cache, t / 64, t % 64, d);
    distinct.insert(key);
  }
  EXPECT_LE(distinct.size(), 16u);
}

TEST(AttentionInputs, IndicesAreValidPageSpansOrScatteredSets) {
  const std::int64_t tokens = 4, num_pages = 300;
  Fixture span(kAttention, workload("span", {{"num_tokens", tokens}, {"num_pages", num_pages}},
                                    {{"pattern", "page_span"}, {"max_pages", 5}}));
  const InputSet idx_inputs = span.gen.generate(0, {"ckv_cache", "kpe_cache"});
  const HostTensor& idx = idx_inputs.at("sparse_indices");
  for (std::int64_t t = 0; t < tokens; ++t) {
    std::int64_t valid = 0;
    for (std::int64_t j = 0; j < 2048; ++j) {
      const double v = idx.get(t * 2048 + j);
      if (v == -1) continue;
      EXPECT_EQ(valid, j) << "padding only at the end of a page_span row";
      ++valid;
      EXPECT_TRUE(v >= 0 && v < num_pages * 64);
      if (j % 64) {
        EXPECT_EQ(v, idx.get(t * 2048 + j - 1) + 1) << "whole pages in order";
      }
    }
    EXPECT_LE(valid, 5 * 64);
    if (t == 0) {
      EXPECT_GT(valid, 4 * 64);
    }
  }
  Fixture scattered(kAttention, workload("sc", {{"num_tokens", 2}, {"num_pages", num_pages}},
                                         {{"pattern", "scattered"}}));
  const InputSet s_inputs = scattered.gen.generate(0, {"ckv_cache", "kpe_cache"});
  const HostTensor& s = s_inputs.at("sparse_indices");
  for (int t = 0; t < 2; ++t) {
    std::set<double> distinct;
    for (int j = 0; j < 2048; ++j) distinct.insert(s.get(t * 2048 + j));
    EXPECT_EQ(distinct.size(), 2048u);
    EXPECT_EQ(distinct.count(-1), 0u);
  }
  Fixture pad(kAttention,
              workload("pad", {{"num_tokens", 5}, {"num_pages", num_pages}}, {{"max_pages", 3}}),
              {kDefaultSeed, "all_padding"});
  const InputSet p_inputs = pad.gen.generate(0, {"ckv_cache", "kpe_cache"});
  const HostTensor& p = p_inputs.at("sparse_indices");
  for (int j = 0; j < 2048; ++j) EXPECT_EQ(p.get(j), -1);  // token 0
  Fixture mid(kAttention,
              workload("mid", {{"num_tokens", 1}, {"num_pages", num_pages}}, {{"max_pages", 3}}),
              {kDefaultSeed, "scattered_padding"});
  const InputSet m_inputs = mid.gen.generate(0, {"ckv_cache", "kpe_cache"});
  const HostTensor& m = m_inputs.at("sparse_indices");
  std::int64_t first_pad = -1, last_valid = -1;
  for (std::int64_t j = 0; j < 2048; ++j) {
    if (m.get(j) == -1 && first_pad < 0) first_pad = j;
    if (m.get(j) != -1) last_valid = j;
  }
  EXPECT_GE(first_pad, 0);
  EXPECT_GT(last_valid, first_pad) << "some -1 sits before a valid index";
  Fixture dup(kAttention,
              workload("dup", {{"num_tokens", 2}, {"num_pages", num_pages}},
                       {{"pattern", "scattered"}}),
              {kDefaultSeed, "duplicates"});
  const InputSet d_inputs = dup.gen.generate(0, {"ckv_cache", "kpe_cache"});
  const HostTensor& d = d_inputs.at("sparse_indices");
  for (int t = 0; t < 2; ++t) {
    std::set<double> distinct;
    for (int j = 0; j < 2048; ++j) {
      EXPECT_NE(d.get(t * 2048 + j), -1);
      distinct.insert(d.get(t * 2048 + j));
    }
    EXPECT_LT(distinct.size(), 2048u - 2048u / 8) << "about a quarter of the entries repeat others";
    EXPECT_GT(distinct.size(), 2048u / 2);
  }
}

TEST(MoeInputs, ScalesArePositiveCodesInRangeAndVariantsRouteAsNamed) {
  auto w = workload("moe", {{"seq_len", 6}});
  w.inputs.emplace_back("local_expert_offset",
                        WorkloadInput{WorkloadInput::Kind::kScalar, Json(64), "", ""});
  const std::set<std::string> weights = {"gemm1_weights", "gemm2_weights"};
  Fixture f(kMoe, w);
  const InputSet in = f.gen.generate(0, weights);
  EXPECT_EQ(in.at("local_expert_offset").get(0), 64);
  EXPECT_EQ(in.at("routed_scaling_factor").get(0), 2.5);
  for (const char* s : {"hidden_states_scale", "gemm1_weights_scale", "gemm2_weights_scale"}) {
    const HostTensor& t = in.at(s);
    for (std::int64_t i = 0; i < t.numel(); ++i) ASSERT_GT(t.get(i), 0) << s;
  }
  const HostTensor& hs = in.at("hidden_states");
  double amax = 0;
  for (std::int64_t i = 0; i < hs.numel(); ++i) amax = std::max(amax, std::abs(hs.get(i)));
  EXPECT_GT(amax, 300);
  EXPECT_LE(amax, 448);

  Fixture one(kMoe, w, {kDefaultSeed, "one_expert"});
  const InputSet o = one.gen.generate(0, weights);
  for (const auto& route : moe_route(o.at("routing_logits"), o.at("routing_bias"), 2.5))
    EXPECT_NE(std::find(route.expert, route.expert + 8, 64), route.expert + 8);
  EXPECT_THAT(moe_local_experts_used(o), ::testing::Contains(0));

  Fixture none(kMoe, w, {kDefaultSeed, "no_local"});
  EXPECT_TRUE(moe_local_experts_used(none.gen.generate(0, weights)).empty());
}

TEST(MoeInputs, AnExpertSliceMaterialisesAloneAndMatchesTheWholeTensor) {
  auto w = workload("slice", {{"seq_len", 1}});
  Fixture f(kMoe, w);
  const InputSet in = f.gen.generate(0, {"gemm1_weights", "gemm2_weights"});
  HostTensor part(DType::kFloat8E4M3, {2, 4096, 7168});
  const std::int64_t per = 4096 * 7168;
  f.gen.fill_range("gemm1_weights", 0, part, per, 2 * per);  // expert 1 only
  HostTensor expect(DType::kFloat8E4M3, {2, 4096, 7168});
  f.gen.fill_range("gemm1_weights", 0, expect, 0, 2 * per);
  EXPECT_EQ(std::memcmp(part.bytes() + per, expect.bytes() + per, per), 0);
  EXPECT_EQ(part.get(0), 0.0);  // expert 0 untouched
}

TEST(InputGenerator, AValueScalingVariantScalesTheAbsoluteTolerance) {
  const Workload w = workload("scale", {{"total_seq_len", 3}, {"num_seqs", 2}, {"len_cu_seqlens", 3}});
  Fixture extreme(kPrefill, w, {kDefaultSeed, "extreme"}), plain(kPrefill, w),
      absent(kPrefill, w, {kDefaultSeed, "absent_state"});
  EXPECT_EQ(extreme.gen.value_scale(), 1000.0);
  EXPECT_EQ(plain.gen.value_scale(), 1.0);
  EXPECT_EQ(absent.gen.value_scale(), 1.0);
  // The values really are that much larger: the state's spread grows by the same factor.
  auto spread = [](const InputSet& in) {
    double s = 0;
    const HostTensor& t = in.at("state");
    for (std::int64_t i = 0; i < t.numel(); ++i) s += t.get(i) * t.get(i);
    return std::sqrt(s / static_cast<double>(t.numel()));
  };
  EXPECT_NEAR(spread(extreme.gen.generate(0)) / spread(plain.gen.generate(0)), 1000.0, 100.0);
  EXPECT_EQ(official_options(extreme.def, false, extreme.gen.value_scale()).tolerance.atol, 10.0);
  EXPECT_EQ(official_options(extreme.def, false, extreme.gen.value_scale()).tolerance.rtol, 1e-2);
}

TEST(InputGenerator, UnknownVariantIsAnErrorListingTheKnownOnes) {
  try {
    Fixture(kMoe, workload("v", {{"seq_len", 1}}), {kDefaultSeed, "bogus"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(
        e.what(),
        ::testing::HasSubstr("no input variant 'bogus' (variants: one_expert, no_local, extreme)"));
  }
}

}  // namespace
}  // namespace kh
