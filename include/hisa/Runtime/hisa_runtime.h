/*===- hisa_runtime.h - C ABI of the hisa JIT runtime -----------*- C -*-===*\
|*                                                                          *|
|* The stable boundary between the C++ runtime (lib/Runtime) and bindings   *|
|* (python/). Every function that can fail returns 0 on success and a       *|
|* nonzero status otherwise; hisa_last_error() then describes the failure   *|
|* (naming the kernel, the argument or the CUDA call). Thread-safe.         *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef HISA_RUNTIME_HISA_RUNTIME_H
#define HISA_RUNTIME_HISA_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HISA_EXPORT __attribute__((visibility("default")))

/* Status codes. */
enum {
  HISA_OK = 0,
  HISA_ERROR_INVALID_ARGUMENT = 1, /* bad shape, pointer, parameter... */
  HISA_ERROR_COMPILE = 2,          /* the DSL kernel failed to compile   */
  HISA_ERROR_CUDA = 3,             /* a CUDA driver call failed          */
  HISA_ERROR_NO_DEVICE = 4,        /* libcuda.so.1 or a GPU is missing   */
};

/* Message of the last failure on this thread ("" if none). */
HISA_EXPORT const char *hisa_last_error(void);

/* Version of the compiler; part of every cache key. */
HISA_EXPORT const char *hisa_version(void);

/* Source text of a kernel shipped in kernels-dsl/ (e.g.
 * "fp8_block_mean_pooling"), or NULL if there is none by that name. */
HISA_EXPORT const char *hisa_builtin_kernel_source(const char *name);

/* Whether launches ask the driver, for every pointer argument, that it is
 * device memory (cuPointerGetAttribute: a host pointer or freed memory gets
 * HISA_ERROR_INVALID_ARGUMENT instead of a sticky illegal-address error).
 * On by default; a caller whose pointers are known device memory (hisa's
 * Python package: torch has checked each tensor) may turn it off to save
 * the driver queries. Process-wide; returns the previous setting. */
HISA_EXPORT int hisa_set_device_pointer_checks(int enabled);

/* Makes the primary context of device `ordinal` current on the calling
 * thread (the context the CUDA runtime, and so torch, uses for it), without
 * synchronizing anything: what a thread does before its first hisa call on
 * a device when no context is current there (hisa's Python package does it
 * once per thread and device). */
HISA_EXPORT int hisa_use_device(int32_t ordinal);

/* Whether hisa's kernels are launched as programmatic dependents of the
 * previous kernel in their stream (cuLaunchKernelEx with programmatic stream
 * serialization; CUDA graphs capture it as a programmatic edge): each kernel
 * waits for the grids before it at its entry (griddepcontrol.wait), so its
 * blocks may be scheduled while the previous grid's last wave still runs.
 * The results are the same either way. On by default (HISA_PDL=0 in the
 * environment turns it off); process-wide; returns the previous setting. */
HISA_EXPORT int hisa_set_programmatic_launch(int enabled);

/* Whether an operator that launches several kernels (hisa_hisa_indexer,
 * hisa_flat_indexer) issues them as one CUDA graph launch: a graph per
 * (context, stream, kernel sequence), instantiated at its first call, whose
 * kernel nodes get each later call's parameters (only those that changed)
 * before it is launched. On the GPU machine's host this replaces ~4-6 us of
 * driver time per launch by one graph launch. In a stream capture the
 * kernels are launched one by one (the capture records them). On by default
 * (HISA_LAUNCH_GRAPHS=0 in the environment turns it off); process-wide;
 * returns the previous setting. */
HISA_EXPORT int hisa_set_launch_graphs(int enabled);

/* Graphs instantiated, graph launches and kernel-node parameter updates so
 * far (any pointer may be NULL). */
HISA_EXPORT void hisa_launch_graph_stats(int64_t *instantiated,
                                         int64_t *launched,
                                         int64_t *node_updates);

/* ---- JIT ---------------------------------------------------------------- */

typedef struct hisa_kernel
    hisa_kernel; /* compiled and loaded; owned by the runtime cache */

/* Compiles `kernel_name` from `source` (DSL text; NULL = the built-in source
 * of that name) with parameters `params` ("heads=32,dim=64"; NULL or "" =
 * defaults) for `target` (e.g. "sm_90a"; "sm_90a,-tma" stages pipelined
 * copies with cp.async instead of TMA; "sm_90a,+narrow-indices" does the
 * index arithmetic of run-time sizes in 32 bits where it can, and its
 * launches then refuse sizes from 2^31 on), or fetches it from the
 * in-memory or on-disk cache, and loads it into the current CUDA context
 * (a launch in another context loads it there). */
HISA_EXPORT int hisa_kernel_get(const char *source, const char *kernel_name,
                                const char *params, const char *target,
                                hisa_kernel **out);

/* Same, without loading: only produces (or finds) the cubin/PTX in the disk
 * cache. Works with no GPU. `out_path` (may be NULL) receives the path of a
 * regular file holding the binary, up to `path_capacity` bytes: the cache
 * entry, or a private temporary file when the cache directory cannot be
 * written (a warning on stderr says so once); HISA_ERROR_COMPILE if neither
 * can be written. Parameters the kernel refuses (unknown names, names given
 * twice, values out of range, sizes too large) give
 * HISA_ERROR_INVALID_ARGUMENT; a compilation that takes longer than
 * $HISA_COMPILE_TIMEOUT_S seconds (default 120) gives HISA_ERROR_COMPILE. */
HISA_EXPORT int hisa_kernel_compile(const char *source, const char *kernel_name,
                                    const char *params, const char *target,
                                    char *out_path, int64_t path_capacity);

/* One kernel argument, in the order of the tile.kernel signature. */
typedef struct hisa_arg {
  int32_t kind;       /* 0: tensor, 1: integer scalar, 2: float scalar */
  int32_t rank;       /* tensors: number of dimensions (<= 8)            */
  void *data;         /* tensors: device pointer                          */
  int64_t sizes[8];   /* tensors: sizes, row-major contiguous             */
  int64_t int_value;  /* kind 1                                           */
  double float_value; /* kind 2                                           */
} hisa_arg;

/* Launches on `stream` (a CUstream; NULL = default stream). Checks ranks and
 * the static sizes of every tensor argument against the kernel signature;
 * num_args must be the kernel's argument count (checked before `args` is
 * read) and each tensor at most 2^48 bytes. */
HISA_EXPORT int hisa_kernel_launch(hisa_kernel *kernel, const hisa_arg *args,
                                   int32_t num_args, void *stream);

/* The element type of the kernel's argument `index` as the DSL names it
 * ("f32", "bf16", "f8E4M3FN", "i32", ...; a string the runtime owns) and
 * its bytes, for a caller to check its tensors' types before a launch
 * (hisa_arg carries no type: a tensor of smaller elements than the kernel
 * reads would be read past its end); "" and 0 for a scalar argument. */
HISA_EXPORT int hisa_kernel_argument_type(hisa_kernel *kernel, int32_t index,
                                          const char **element_type,
                                          int32_t *element_bytes);

/* Cache statistics for this process (compiles, disk hits, memory hits). */
HISA_EXPORT void hisa_cache_stats(int64_t *compiles, int64_t *disk_hits,
                                  int64_t *memory_hits);

/* Same, plus the disk cache entries found but refused (modified, damaged,
 * stored for another key, not regular files) and rebuilt. Any pointer may be
 * NULL. */
HISA_EXPORT void hisa_cache_stats2(int64_t *compiles, int64_t *disk_hits,
                                   int64_t *memory_hits,
                                   int64_t *rejected_entries);

/* ---- Operators on raw device pointers ------------------------------------ */

/* Sizes (rows, columns, queries, keys, k...) are at most 2^31 - 1, the
 * kernels' int32 indices, and every tensor at most 2^48 bytes
 * (docs/design.md, "Limits"), unless an operator says less; larger ones,
 * like other bad arguments, are HISA_ERROR_INVALID_ARGUMENT with a message
 * naming the argument. Device pointers of fp8/bf16 rows (q, k, kv, o,
 * blocked_k) and of the f32 per-row vectors the kernels read in 16-byte
 * pieces (k_scale, weights, blocked_k_scale, topk_block_index) must be
 * 16-byte aligned; others 4-byte (their element size). */

/* KERNELS.md 1.1. k: [n, dim] fp8 e4m3; k_scale: [n] f32; blocked_k:
 * [ceil(n/kb), dim] fp8; blocked_scale: [ceil(n/kb)] f32. */
HISA_EXPORT int hisa_fp8_block_mean_pooling(const void *k, const float *k_scale,
                                            void *blocked_k,
                                            float *blocked_scale, int64_t n,
                                            int64_t dim, int64_t kb,
                                            void *stream);

/* KERNELS.md 1.3, in place. logits: [m, n] f32 row-major; s, e: [m] int32. */
HISA_EXPORT int hisa_clean_and_maintain_logits(float *logits, const int32_t *s,
                                               const int32_t *e, int64_t m,
                                               int64_t n, void *stream);

/* KERNELS.md 1.2 (and, with raw keys, the flat V3.2 indexer). q: [m, heads,
 * dim] fp8; blocked_k: [nb, dim] fp8; blocked_k_scale: [nb] f32; weights:
 * [m, heads] f32; bks, bke: [m] int32 block windows (a negative bks counts
 * as 0, bke is clipped to nb); logits: [m, nb] f32 (values outside a
 * query's window are unspecified). heads in {16, 32, 64, 128}, dim in {64,
 * 128}. */
HISA_EXPORT int hisa_pool_mqa_logits(const void *q, const void *blocked_k,
                                     const float *blocked_k_scale,
                                     const float *weights, const int32_t *bks,
                                     const int32_t *bke, float *logits,
                                     int64_t m, int64_t nb, int64_t heads,
                                     int64_t dim, void *stream);

/* KERNELS.md 2.1. q: [m, heads, dim] fp8; k: [n, dim] fp8; k_scale: [n] f32;
 * topk_block_index: [m, topk] int32 (-1 = none); weights: [m, heads] f32;
 * ks, ke: [m] int32; out: [m, topk * kb] f32 (-inf outside the window, past
 * n or for -1). heads in {16, 32, 64, 128}, dim in {64, 128}, kb in {64, 128,
 * 256}, topk <= 32768 (the block indices stay in shared memory; each topk
 * is its own kernel specialization, compiled once). */
HISA_EXPORT int hisa_block_sparse_mqa_logits(
    const void *q, const void *k, const float *k_scale,
    const int32_t *topk_block_index, const float *weights, const int32_t *ks,
    const int32_t *ke, float *out, int64_t m, int64_t n, int64_t topk,
    int64_t kb, int64_t heads, int64_t dim, void *stream);

/* KERNELS.md "Top-k, exactly": the k largest values of each row of x
 * [rows, columns] f32 (within [starts[r], ends[r]) when both are given;
 * both NULL: whole rows). out: [rows, k] int32 columns (relative != 0 and
 * windows: offsets from starts[r], which must then be >= 0 so that every
 * offset fits in int32), in no order; ties to the lower column;
 * -inf/NaN never selected; -1 padded (k > columns allowed). columns <=
 * 2^30. */
HISA_EXPORT int hisa_topk(const float *x, const int32_t *starts,
                          const int32_t *ends, int32_t *out, int64_t rows,
                          int64_t columns, int64_t k, int32_t relative,
                          void *stream);

/* Starts bringing bytes [0, bytes) of data (16-byte aligned device memory)
 * into the L2 cache on `stream` and returns: a hint nothing waits for, for
 * a side stream while the memory system idles, so that a later launch that
 * streams the range (the next layer's weights) finds part of it in L2. */
HISA_EXPORT int hisa_l2_prefetch(const void *data, uint64_t bytes,
                                 void *stream);

/* hisa_topk of a bf16 x [rows, columns] (2-byte elements, 2-byte aligned):
 * the same selection as on the f32 values x widens to. */
HISA_EXPORT int hisa_topk_bf16(const void *x, const int32_t *starts,
                               const int32_t *ends, int32_t *out, int64_t rows,
                               int64_t columns, int64_t k, int32_t relative,
                               void *stream);

/* DeepSeek-V4 sparse attention (KERNELS.md): q [batch, seq_len, heads, 512]
 * bf16, kv [batch, nkv, 512] bf16, attn_sink [heads] f32, topk_idxs [batch,
 * seq_len, topk] int32 (-1, and any index outside [0, nkv), contributes
 * nothing) -> o [batch, seq_len, heads, 512] bf16; lse (NULL: not written)
 * [batch, seq_len, heads] f32, the natural log of each softmax denominator
 * with the sink. A token without a valid index gets o = 0. 1 <= heads <= 1024,
 * 1 <= topk <= 4096, batch * nkv < 2^31; kv may be NULL when nkv = 0. With few
 * tokens (decode) each token's indices are split over several blocks merged by
 * a second kernel through `workspace` (256-byte aligned, at least
 * hisa_sparse_attn_workspace_size bytes; 0 bytes and NULL when it says 0).
 * The split depends on the SM count of the device whose context is current
 * (132 when there is none): ask for the size with the same device current
 * as the call. */
HISA_EXPORT int hisa_sparse_attn_workspace_size(int64_t batch, int64_t seq_len,
                                                int64_t heads, int64_t topk,
                                                uint64_t *bytes);
HISA_EXPORT int hisa_sparse_attn(const void *q, const void *kv,
                                 const float *attn_sink,
                                 const int32_t *topk_idxs, void *o, float *lse,
                                 int64_t batch, int64_t seq_len, int64_t heads,
                                 int64_t nkv, int64_t topk, float softmax_scale,
                                 void *workspace, uint64_t workspace_bytes,
                                 void *stream);

/* The DeepSeek-V4 attention layer (KERNELS.md "The V4 attention layer
 * around the kernel"; python/hisa/v4/reference.py), with its caches:
 * create allocates them and a workspace once for `batch` sequences of up to
 * `max_seq` tokens (the same length in every sequence; prefills of at most
 * max_prefill_tokens = batch * seq tokens, 0: batch * max_seq); prefill (x
 * [batch, seq, dim] bf16 -> out [batch, seq, dim] bf16, positions 0 .. seq - 1)
 * and decode (x [batch, dim] -> out [batch, dim], the token at position
 * `length` of every sequence) allocate nothing. Weights are the caller's
 * device tensors (bf16 matrices [out, in]; wo_a [o_groups, o_lora, heads /
 * o_groups * 512]; f32 norms, attn_sink and ape) and must outlive the
 * layer; matrices and norms 16-byte aligned (the kernels read them in
 * 16-byte pieces), ape and attn_sink 4-byte aligned. compress_ratio 0
 * (window only), 4 (CSA: the indexer's weights i_* are needed, index_heads
 * 64, 1 <= index_topk <= 3968, so that with the 128-token window a token
 * has at most 4096 indices) and 128 (HCA). head_dim 512, rope 64, the
 * indexer's 128 dims and the 128-token window are fixed; q_lora is 128,
 * 256, 512, 1024, 2048 or 4096 (q's RMSNorm); each projection reads at most
 * 16384 columns (dim, q_lora, heads / o_groups * 512, o_groups * o_lora); HCA
 * layers take max_seq <= 508031 (the window and max_seq / 128 entries
 * within sparse attention's 4096 indices), CSA layers batch <= 65535;
 * batch * max_seq < 2^31, and a sequence's kv rows (max_seq + max_seq /
 * ratio) below 2^21 (a prefill's 2D copies); the RoPE base in use
 * (compress_rope_theta when compressing, else rope_theta) is finite and
 * > 0. */
typedef struct hisa_v4_config {
  int64_t dim, heads, q_lora, o_groups, o_lora, compress_ratio, index_heads,
      index_topk;
  float eps, rope_theta, compress_rope_theta;
} hisa_v4_config;

typedef struct hisa_v4_weights {
  const void *wq_a, *wq_b, *wkv, *wo_a, *wo_b;
  const float *q_norm, *kv_norm, *attn_sink;
  const void *c_wkv, *c_wgate;
  const float *c_ape, *c_norm;
  const void *i_wq, *i_weights, *i_wkv, *i_wgate;
  const float *i_ape, *i_norm;
} hisa_v4_weights;

typedef struct hisa_v4_attention hisa_v4_attention;

HISA_EXPORT int hisa_v4_attention_create(const hisa_v4_config *config,
                                         const hisa_v4_weights *weights,
                                         int64_t batch, int64_t max_seq,
                                         int64_t max_prefill_tokens,
                                         hisa_v4_attention **layer);
/* x and out: 16-byte aligned device memory; prefill: x [batch, seq, dim]
 * bf16 -> out of the same shape, positions 0 .. seq - 1 (batch * seq <=
 * max_prefill_tokens); decode: x [batch, dim] -> out [batch, dim], the
 * token at position length of every sequence. A decode
 * step that fails keeps the layer's length (the device positions are put
 * back; retrying runs the same step); a prefill that fails after its
 * argument checks (once it started writing the caches) leaves no prompt
 * (length 0: decode refuses until a prefill succeeds). A decode step
 * captured in a CUDA graph advances the device positions on each replay
 * without the host's check: stop replaying at max_seq (past it the RoPE
 * tables' last row and the last compressed entries are reused). */
HISA_EXPORT int hisa_v4_attention_prefill(hisa_v4_attention *layer,
                                          const void *x, int64_t seq, void *out,
                                          void *stream);
HISA_EXPORT int hisa_v4_attention_decode(hisa_v4_attention *layer,
                                         const void *x, void *out,
                                         void *stream);
/* The tokens per sequence so far, the columns of the index rows, the kv
 * cache [batch, 128 + max_seq / ratio, 512] bf16 and the last call's index
 * rows [tokens, index_columns] int32 (any pointer may be NULL). */
HISA_EXPORT int hisa_v4_attention_info(const hisa_v4_attention *layer,
                                       int64_t *length, int64_t *index_columns,
                                       const void **kv_cache,
                                       const int32_t **last_indices);
/* CSA layers (ratio 4): the indexer's key cache, fp8 e4m3 codes [batch,
 * rows_per_sequence, 128] and their power-of-two scales [batch,
 * rows_per_sequence] f32, writable (tests; benchmarks at a long context set
 * with hisa_v4_attention_set_length, whose entries are otherwise zeros).
 * Other ratios: NULLs and 0 rows. Any pointer may be NULL. */
HISA_EXPORT int hisa_v4_attention_index_keys(const hisa_v4_attention *layer,
                                             void **keys, float **scales,
                                             int64_t *rows_per_sequence);
/* The sequences hold `length` tokens: the host count and the device
 * positions (set on `stream`). Decode kernels read the positions from
 * device memory and each step advances them, so a decode step captured in
 * a CUDA graph replays at the next position each time; after replays, this
 * brings the host count along. A captured step (prefill or decode) leaves
 * the host count as it was: nothing ran; after n replays of a decode step,
 * set the length to the count before the capture plus n. Benchmarks also use it to time decode at a
 * long context without its prefill (the caches keep whatever they hold). */
HISA_EXPORT int hisa_v4_attention_set_length(hisa_v4_attention *layer,
                                             int64_t length, void *stream);
/* Opt-in: decode warms L2 with the head of its next big projection's weights
 * (wq_b, wo_a) on a side stream while the step's small launches leave the
 * memory system idle: at most `bytes` per weight; -1 picks a share of the
 * device's L2, 0 (the default) turns it off (it measured slower on the
 * H200 at B = 64: docs/performance.md). Takes effect at the next forward. */
HISA_EXPORT int hisa_v4_attention_set_l2_prefetch(hisa_v4_attention *layer,
                                                  int64_t bytes);
HISA_EXPORT void hisa_v4_attention_destroy(hisa_v4_attention *layer);

/* Context-parallel prefill over NCCL (one long causal sequence of `total`
 * tokens split over the ranks of an NCCL communicator `nccl_comm`, an
 * ncclComm_t; hisa opens libnccl.so.2 at run time, or $HISA_NCCL_LIB).
 * Rank r holds chunks r and 2W - 1 - r of 2W equal position ranges
 * (hisa_cp_rank_ranges), and passes only its own
 * tokens' rows; one ncclAllGather per call gathers the keys / kv rows.
 * Outputs are this rank's rows: indices are global positions (-1 padded).
 * Workspaces come from the matching *_workspace_size, which gives every
 * rank the same size (the largest rank's; `rank` is only checked). Every
 * rank-local argument check runs before the collective, but an error after
 * it started (a failed copy or NCCL call: HISA_ERROR_CUDA; NCCL missing:
 * HISA_ERROR_NO_DEVICE) may leave the peers waiting in it: abort the
 * communicator then. Not inside ncclGroupStart/End (the copies and kernels
 * queued after the gather would run before it), and only on blocking
 * communicators. 1 <= total <= 2^31 - 1 (hisa_cp_rank_ranges: 0 too),
 * 1 <= world <= 65536. */
HISA_EXPORT int hisa_cp_rank_ranges(int64_t total, int64_t world, int64_t rank,
                                    int64_t ranges[4]);
HISA_EXPORT int hisa_cp_hisa_indexer_workspace_size(
    int64_t total, int64_t world, int64_t rank, int64_t heads, int64_t dim,
    int64_t kb, int64_t block_topk, int64_t topk_tokens, uint64_t *bytes);
HISA_EXPORT int hisa_cp_hisa_indexer(const void *q, const void *k,
                                     const float *k_scale, const float *weights,
                                     int32_t *out, int64_t total, int64_t world,
                                     int64_t heads, int64_t dim, int64_t kb,
                                     int64_t block_topk, int64_t topk_tokens,
                                     void *nccl_comm, void *workspace,
                                     uint64_t workspace_bytes, void *stream);
HISA_EXPORT int hisa_cp_sparse_attn_workspace_size(int64_t total, int64_t world,
                                                   int64_t rank, int64_t heads,
                                                   int64_t topk,
                                                   uint64_t *bytes);
HISA_EXPORT int hisa_cp_sparse_attn(const void *q, const void *kv,
                                    const float *attn_sink,
                                    const int32_t *topk_idxs, void *o,
                                    int64_t total, int64_t heads, int64_t topk,
                                    float softmax_scale, void *nccl_comm,
                                    void *workspace, uint64_t workspace_bytes,
                                    void *stream);

/* Dense attention forward, bf16: q, k, v, o [batch, heads, seq_len, dim]
 * (torch's scaled_dot_product_attention layout), dim in {64, 128};
 * o = softmax(q k^T * softmax_scale, causal != 0: keys after the query
 * masked) v. */
HISA_EXPORT int hisa_flash_attn(const void *q, const void *k, const void *v,
                                void *o, int64_t batch, int64_t heads,
                                int64_t seq_len, int64_t dim, int32_t causal,
                                float softmax_scale, void *stream);

/* Fused HISA stage 1 (KERNELS.md 1.2 + 1.3 + 1.4): out [m, out_columns]
 * int32 block indices (out_columns = min(block_topk, nb); 0 and nothing
 * written when nb = 0), -1 padded.
 * starts/ends: [m] int32 token windows pooled by window_kb (1: block
 * windows). nb <= 32768. */
HISA_EXPORT int
hisa_pool_topk_blocks(const void *q, const void *blocked_k,
                      const float *blocked_k_scale, const float *weights,
                      const int32_t *starts, const int32_t *ends, int32_t *out,
                      int64_t m, int64_t nb, int64_t heads, int64_t dim,
                      int64_t out_columns, int64_t window_kb, void *stream);

/* Fused HISA stage 2 (KERNELS.md 2.1 + 2.2 + 2.3): out [m, topk_tokens]
 * int32 offsets from ks (ks >= 0: a row minus ks must fit in int32), -1
 * padded. topk * kb <= 32768, n >= 1. A row of topk_block_index names
 * distinct blocks (as stage 1 writes them; a block named twice gives its
 * offsets twice), in any order: ties at the threshold go to the lower token,
 * so the selection does not depend on that order. */
HISA_EXPORT int hisa_block_sparse_topk_tokens(
    const void *q, const void *k, const float *k_scale,
    const int32_t *topk_block_index, const float *weights, const int32_t *ks,
    const int32_t *ke, int32_t *out, int64_t m, int64_t n, int64_t topk,
    int64_t kb, int64_t heads, int64_t dim, int64_t topk_tokens, void *stream);

/* ---- Indexers: several kernels, a caller-provided workspace ---------------
 * No call allocates: the caller passes `workspace` (256-byte aligned) of at
 * least the bytes the matching *_workspace_size function reports, so a CUDA
 * graph can capture a call. Everything runs on `stream`. */

/* The HISA indexer end to end (KERNELS.md HISA, 1.1 -> 2.3). q: [m, heads,
 * dim] fp8; k: [n, dim] fp8; k_scale: [n] f32; weights: [m, heads] f32; ks,
 * ke: [m] int32 token windows in [0, n]; out: [m, topk_tokens] int32
 * offsets from ks, -1 padded. kb in {64, 128, 256}; block_topk * kb <=
 * 32768; n >= 1 and ceil(n / kb) <= 32768 (stage 1 keeps a row of block
 * logits on chip). */
HISA_EXPORT int hisa_hisa_indexer_workspace_size(int64_t m, int64_t n,
                                                 int64_t heads, int64_t dim,
                                                 int64_t kb, int64_t block_topk,
                                                 int64_t topk_tokens,
                                                 uint64_t *bytes);
HISA_EXPORT int hisa_hisa_indexer(const void *q, const void *k,
                                  const float *k_scale, const float *weights,
                                  const int32_t *ks, const int32_t *ke,
                                  int32_t *out, int64_t m, int64_t n,
                                  int64_t heads, int64_t dim, int64_t kb,
                                  int64_t block_topk, int64_t topk_tokens,
                                  void *workspace, uint64_t workspace_bytes,
                                  void *stream);

/* The flat V3.2 indexer: MQA logits of every token of each window (in the
 * workspace: m * n * 4 bytes), then the exact top topk_tokens as offsets
 * from ks, -1 padded. n <= 2^30 (the top-k's columns). */
HISA_EXPORT int hisa_flat_indexer_workspace_size(int64_t m, int64_t n,
                                                 int64_t heads, int64_t dim,
                                                 int64_t topk_tokens,
                                                 uint64_t *bytes);
HISA_EXPORT int hisa_flat_indexer(const void *q, const void *k,
                                  const float *k_scale, const float *weights,
                                  const int32_t *ks, const int32_t *ke,
                                  int32_t *out, int64_t m, int64_t n,
                                  int64_t heads, int64_t dim,
                                  int64_t topk_tokens, void *workspace,
                                  uint64_t workspace_bytes, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* HISA_RUNTIME_HISA_RUNTIME_H */
