// flashmla_prefill.cu -- a C entry point over FlashMLA's sm90 sparse prefill
// launcher (d_qk = d_v = 512: the V4 operation, one KV head), so that
// probes/flashmla_ab.py can time DeepSeek's kernel beside hisa.sparse_attn
// in one process on the same inputs. FlashMLA itself is not part of this
// repository: flashmla_build.sh compiles this file with a FlashMLA checkout
// (and the CUTLASS headers it includes) into libflashmla_prefill.so.
//
// FlashMLA's layouts: q [s_q, h_q, 512], kv [s_kv, 1, 512], indices
// [s_q, 1, topk] (a row index of kv; -1 or >= s_kv: no key), attn_sink
// [h_q] in the denominator only, out [s_q, h_q, 512] bf16, and per (token,
// head) the maximum logit and the log-sum-exp (f32). One batch: hisa's
// [1, S, ...] tensors are the same bytes.
#include <cstdio>

#include "params.h"
#include "sm90/prefill/sparse/phase1.h"

extern "C" int flashmla_sparse_prefill(void *q, void *kv, int *indices,
                                       float *attnSink, void *out,
                                       float *maxLogits, float *lse, int sQ,
                                       int sKv, int hQ, int topk, float scale,
                                       int numSms, void *stream) {
  constexpr int kDim = 512;
  // FlashMLA asserts these (and aborts); refuse them here instead.
  if (sQ <= 0 || sKv <= 0 || hQ <= 0 || hQ % 64 != 0 || topk <= 0 ||
      topk % 128 != 0) {
    std::fprintf(stderr,
                 "flashmla_sparse_prefill: unsupported s_q = %d, s_kv = %d, "
                 "h_q = %d (a multiple of 64), topk = %d (a multiple of 128)\n",
                 sQ, sKv, hQ, topk);
    return 1;
  }
  SparseAttnFwdParams params{};
  params.s_q = sQ;
  params.s_kv = sKv;
  params.h_q = hQ;
  params.h_kv = 1;
  params.d_qk = kDim;
  params.d_v = kDim;
  params.topk = topk;
  params.sm_scale = scale;
  params.sm_scale_div_log2 = scale * 1.44269504088896340736f;
  params.q = static_cast<cutlass::bfloat16_t *>(q);
  params.kv = static_cast<cutlass::bfloat16_t *>(kv);
  params.indices = indices;
  params.attn_sink = attnSink;
  params.topk_length = nullptr;
  params.stride_q_s_q = hQ * kDim;
  params.stride_q_h_q = kDim;
  params.stride_kv_s_kv = kDim;
  params.stride_kv_h_kv = kDim;
  params.stride_indices_s_q = topk;
  params.stride_indices_h_kv = topk;
  params.out = static_cast<cutlass::bfloat16_t *>(out);
  params.max_logits = maxLogits;
  params.lse = lse;
  params.num_sm = numSms;
  params.stream = static_cast<cudaStream_t>(stream);
  sm90::fwd::run_fwd_phase1_kernel<kDim, false>(params);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    std::fprintf(stderr, "flashmla_sparse_prefill: %s\n",
                 cudaGetErrorString(status));
    return 2;
  }
  return 0;
}
