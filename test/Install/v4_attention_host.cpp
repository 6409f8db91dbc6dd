// v4_attention_host: one DeepSeek-V4 attention layer from C++ through the
// installed package (hisa::v4::Attention over the C ABI), as a C++ server
// without Python would run it: weights and inputs from files, a prefill of
// SEQ tokens per sequence, then STEPS decode steps.
//
//   v4_attention_host DIR RATIO BATCH SEQ STEPS DIM HEADS Q_LORA O_GROUPS
//                     O_LORA INDEX_TOPK MAX_SEQ
//
// DIR holds <name>.bin for every weight of hisa.v4.reference.random_weights
// the ratio needs (matrices bf16 [out, in], wo_a [o_groups, o_lora, heads /
// o_groups * 512]; norms, attn_sink and ape f32) and x.bin [BATCH, SEQ +
// STEPS, DIM] bf16. Writes prefill.bin [BATCH, SEQ, DIM] and decode.bin
// [STEPS, BATCH, DIM] bf16 (python/tests/test_cpp_host.py compares them
// with hisa.v4.Attention).

#include <hisa/hisa.hpp>

#include "driver.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

using namespace host;

int main(int argc, char **argv) {
  if (argc != 13) {
    std::fprintf(stderr,
                 "usage: %s DIR RATIO BATCH SEQ STEPS DIM HEADS Q_LORA "
                 "O_GROUPS O_LORA INDEX_TOPK MAX_SEQ\n",
                 argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  int64_t ratio = std::atoll(argv[2]), batch = std::atoll(argv[3]),
          seq = std::atoll(argv[4]), steps = std::atoll(argv[5]);
  hisa_v4_config config = hisa::v4::flashConfig(ratio);
  config.dim = std::atoll(argv[6]);
  config.heads = std::atoll(argv[7]);
  config.q_lora = std::atoll(argv[8]);
  config.o_groups = std::atoll(argv[9]);
  config.o_lora = std::atoll(argv[10]);
  config.index_topk = std::atoll(argv[11]);
  int64_t maxSeq = std::atoll(argv[12]);
  if (batch < 1 || seq < 1 || steps < 0 || config.dim < 1) {
    std::fprintf(stderr, "bad sizes\n");
    return 2;
  }

  Driver cu = openDriver();
  std::vector<CUdeviceptr> owned;
  auto upload = [&](const std::string &name, size_t bytes) {
    std::vector<char> data = readFile(dir + "/" + name + ".bin", bytes);
    CUdeviceptr device = 0;
    check(cu.memAlloc(&device, bytes), "cuMemAlloc");
    check(cu.memcpyHtoD(device, data.data(), bytes), "cuMemcpyHtoD");
    owned.push_back(device);
    return reinterpret_cast<void *>(device);
  };
  auto vector = [&](const std::string &name, size_t count) {
    return static_cast<const float *>(upload(name, count * 4));
  };
  size_t d = config.dim, h = config.heads, ql = config.q_lora,
         og = config.o_groups, ol = config.o_lora, hd = 512;
  hisa_v4_weights w = {};
  w.wq_a = upload("wq_a", ql * d * 2);
  w.wq_b = upload("wq_b", h * hd * ql * 2);
  w.wkv = upload("wkv", hd * d * 2);
  w.wo_a = upload("wo_a", og * ol * (h / og * hd) * 2);
  w.wo_b = upload("wo_b", d * og * ol * 2);
  w.q_norm = vector("q_norm", ql);
  w.kv_norm = vector("kv_norm", hd);
  w.attn_sink = vector("attn_sink", h);
  if (ratio) {
    size_t width = (ratio == 4 ? 2 : 1) * hd;
    w.c_wkv = upload("c_wkv", width * d * 2);
    w.c_wgate = upload("c_wgate", width * d * 2);
    w.c_ape = vector("c_ape", ratio * width);
    w.c_norm = vector("c_norm", hd);
  }
  if (ratio == 4) {
    w.i_wq = upload("i_wq", 64 * 128 * ql * 2);
    w.i_weights = upload("i_weights", 64 * d * 2);
    w.i_wkv = upload("i_wkv", 256 * d * 2);
    w.i_wgate = upload("i_wgate", 256 * d * 2);
    w.i_ape = vector("i_ape", 4 * 256);
    w.i_norm = vector("i_norm", 128);
  }

  std::unique_ptr<hisa::v4::Attention> layer;
  if (hisa::Status s =
          hisa::v4::Attention::create(config, w, batch, maxSeq, layer);
      !s) {
    std::fprintf(stderr, "create: %s\n", s.message.c_str());
    return 1;
  }
  // x [batch, seq + steps, dim] -> the prompt [batch, seq, dim] and one
  // [batch, dim] row block per step.
  size_t row = d * 2, total = seq + steps;
  std::vector<char> x = readFile(dir + "/x.bin", batch * total * row);
  std::vector<char> prompt(batch * seq * row);
  for (int64_t b = 0; b < batch; ++b)
    std::memcpy(prompt.data() + b * seq * row, x.data() + b * total * row,
                seq * row);
  CUdeviceptr promptDevice = 0, outDevice = 0, stepDevice = 0;
  check(cu.memAlloc(&promptDevice, prompt.size()), "cuMemAlloc");
  check(cu.memAlloc(&outDevice, prompt.size()), "cuMemAlloc");
  check(cu.memAlloc(&stepDevice, batch * row), "cuMemAlloc");
  check(cu.memcpyHtoD(promptDevice, prompt.data(), prompt.size()),
        "cuMemcpyHtoD");
  auto pointer = [](CUdeviceptr p) { return reinterpret_cast<void *>(p); };
  if (hisa::Status s = layer->prefill(pointer(promptDevice), seq,
                                      pointer(outDevice), nullptr);
      !s) {
    std::fprintf(stderr, "prefill: %s\n", s.message.c_str());
    return 1;
  }
  check(cu.ctxSynchronize(), "cuCtxSynchronize");
  std::vector<char> result(prompt.size());
  check(cu.memcpyDtoH(result.data(), outDevice, result.size()), "cuMemcpyDtoH");
  std::ofstream(dir + "/prefill.bin", std::ios::binary)
      .write(result.data(), static_cast<std::streamsize>(result.size()));

  std::ofstream decoded(dir + "/decode.bin", std::ios::binary);
  std::vector<char> step(batch * row);
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < batch; ++b)
      std::memcpy(step.data() + b * row, x.data() + (b * total + seq + t) * row,
                  row);
    check(cu.memcpyHtoD(stepDevice, step.data(), step.size()), "cuMemcpyHtoD");
    if (hisa::Status s =
            layer->decode(pointer(stepDevice), pointer(outDevice), nullptr);
        !s) {
      std::fprintf(stderr, "decode: %s\n", s.message.c_str());
      return 1;
    }
    check(cu.ctxSynchronize(), "cuCtxSynchronize");
    check(cu.memcpyDtoH(step.data(), outDevice, step.size()), "cuMemcpyDtoH");
    decoded.write(step.data(), static_cast<std::streamsize>(step.size()));
  }
  layer.reset();
  for (CUdeviceptr p : owned)
    cu.memFree(p);
  for (CUdeviceptr p : {promptDevice, outDevice, stepDevice})
    cu.memFree(p);
  std::printf("v4_attention_host: ratio %lld, batch %lld, %lld + %lld tokens: "
              "ok\n",
              static_cast<long long>(ratio), static_cast<long long>(batch),
              static_cast<long long>(seq), static_cast<long long>(steps));
  return 0;
}
