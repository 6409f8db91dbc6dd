// The Compressor of the DeepSeek-V4 attention layer (KERNELS.md "The V4
// attention layer around the kernel"; python/hisa/v4/reference.py:
// compress_entries, Attention._decode_compress): entry j of a sequence pools
// its group of `ratio` tokens column by column, with softmax weights over the
// tokens of the gate scores plus the position bias ape[t % ratio], then gets
// the RMSNorm, the RoPE of its first position j * ratio on the last 64 dims
// and (quantize = 1) the fp8 quantize-dequantize of the other dims in blocks
// of 64, or (quantize = 2, the CSA indexer's keys, dim 128) the Hadamard
// transform and fp4 quantize-dequantize of the whole entry, and is written
// straight into the cache: out[b, first_slot + j].
//
// overlap = 1 (ratio 4, CSA): rows are 2 * dim wide; entry j pools the
// previous group's tokens on columns [0, dim) and its own group's on
// [dim, 2 * dim) (entry 0 has no previous group). overlap = 0: rows are dim
// wide and entry j pools its own group.
//
// The decode state: the rows (kv, and score + ape, f32) of a sequence's
// last two groups, group g in half g % 2 of state_kv / state_score
// [batch, 2 * ratio, width], token t of it at row (t / ratio % 2) * ratio +
// t % ratio. Nothing is ever cleared: a group's rows are all rewritten
// before it completes, and entry 0 ignores the previous half.
//
// decode = 0 (prefill): kv, score [batch * seq, width] bf16 are the
//   projections of every token; blocks 0 .. seq / ratio - 1 of a sequence
//   write its entries, one more block writes the state of its last two
//   groups (the tail group that is not complete, and the one before).
// decode = 1: kv, score [batch, width] are the projections of sequence b's
//   token at position base[b] (int32, device memory); one block per
//   sequence puts it in the state and, when it completes its group, writes
//   the entry (not past out's slots). seq is not read (pass 1); prefill
//   does not read base.
//
// ape [ratio, width] f32, norm [dim] f32, cos / sin [positions, 32] f32,
// out [batch, slots, dim] bf16; dim = 64 * blocks. 128 threads per block;
// the pooling is an online softmax per column, so any ratio runs in the
// registers of [dim]. Every (block, lane) of the [blocks, 64] loops below
// handles the same columns (d, and d + dim with overlap), so a thread reads
// back only state rows it wrote itself.

// From hisa's device library (kernels-dsl/lib/quantize.mlir).
func.func private @fp4_qdq(f32, f32) -> f32

tile.kernel @v4_compress(%kv: !tile.global<[?, ?], bf16>,
                         %score: !tile.global<[?, ?], bf16>,
                         %ape: !tile.global<[?, ?], f32>,
                         %norm: !tile.global<[?], f32>,
                         %cos: !tile.global<[?, 32], f32>,
                         %sin: !tile.global<[?, 32], f32>,
                         %state_kv: !tile.global<[?, ?, ?], f32>,
                         %state_score: !tile.global<[?, ?, ?], f32>,
                         %out: !tile.global<[?, ?, ?], bf16>,
                         %base: !tile.global<[?], i32>,
                         %seq: index, %first_slot: index, %eps: f32)
    params {blocks = 8, ratio = 4, overlap = 1, quantize = 1, decode = 0} {
  %batch = tile.dim %out, 0 : !tile.global<[?, ?, ?], bf16>
  %ratio_p = tile.param "ratio" : index
  %decode_p = tile.param "decode" : index
  // Blocks per sequence: groups + 1 (prefill), 1 (decode = 1); the JIT
  // evaluates this arithmetic on the host (no compares or selects there).
  %one_index = arith.constant 1 : index
  %full_groups = arith.divui %seq, %ratio_p : index
  %prefill_blocks = arith.addi %full_groups, %one_index : index
  %decode_groups = arith.muli %decode_p, %full_groups : index
  %per_batch_host = arith.subi %prefill_blocks, %decode_groups : index
  %grid = arith.muli %batch, %per_batch_host : index
  tile.launch (%block) in (%grid) threads 128 {
    %max = tile.alloc : !tile.frag<[blocks, 64], f32>
    %sum = tile.alloc : !tile.frag<[blocks, 64], f32>
    %acc = tile.alloc : !tile.frag<[blocks, 64], f32>
    %squares = tile.alloc : !tile.frag<[blocks, 64], f32>
    %result = tile.alloc : !tile.frag<[blocks, 64], f32>
    %normed = tile.alloc : !tile.shared<[blocks, 64], f32>
    %amax = tile.alloc : !tile.shared<[blocks], f32>
    %block_sums = tile.alloc : !tile.shared<[blocks], f32>
    %amax32 = tile.alloc : !tile.shared<[blocks, 2], f32>

    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %neg_inf = arith.constant 0xFF800000 : f32
    %fp8_max = arith.constant 448.0 : f32
    %true = arith.constant true
    %ratio = tile.param "ratio" : index
    %blocks_p = tile.param "blocks" : index
    %dim = arith.muli %blocks_p, %c64 : index
    %overlap_p = tile.param "overlap" : index
    %overlap = arith.cmpi ne, %overlap_p, %c0 : index
    %quantize_p = tile.param "quantize" : index
    %quantize = arith.cmpi eq, %quantize_p, %c1 : index
    %decode_param = tile.param "decode" : index
    %decode = arith.cmpi ne, %decode_param, %c0 : index
    %halves = arith.select %overlap, %c2, %c1 : index
    %groups = arith.divui %seq, %ratio : index
    %groups_plus = arith.addi %groups, %c1 : index
    %per_batch = arith.select %decode, %c1, %groups_plus : index
    %b = arith.divui %block, %per_batch : index
    %in_batch = arith.remui %block, %per_batch : index
    // Decode: sequence b's token at position base[b] (device memory: a
    // captured CUDA graph replays at the current positions), in group
    // position / ratio.
    %base_i32 = tile.load %base[%b] : !tile.global<[?], i32>
    %base_index = arith.index_cast %base_i32 : i32 to index
    %position = arith.select %decode, %base_index, %seq : index
    %token_in_group = arith.remui %position, %ratio : index
    %position_group = arith.divui %position, %ratio : index
    %j = arith.select %decode, %position_group, %in_batch : index
    %group_start = arith.muli %j, %ratio : index
    %batch_row = arith.muli %b, %seq : index
    %j_parity = arith.remui %j, %c2 : index
    %own_half = arith.muli %j_parity, %ratio : index
    %prev_parity = arith.xori %j_parity, %c1 : index
    %prev_half = arith.muli %prev_parity, %ratio : index
    %last_in_group = arith.subi %ratio, %c1 : index
    %completes = arith.cmpi eq, %token_in_group, %last_in_group : index
    %state_block = arith.cmpi eq, %in_batch, %groups : index
    %prefill_state = arith.xori %decode, %true : i1
    %writes_state_rows = arith.andi %prefill_state, %state_block : i1
    %pools_prefill = arith.xori %state_block, %true : i1
    %pools_in_prefill = arith.andi %prefill_state, %pools_prefill : i1
    %pools_in_decode = arith.andi %decode, %completes : i1
    %pools_any = arith.ori %pools_in_prefill, %pools_in_decode : i1
    // An entry past out's slots (a position past max_seq) is not written.
    %out_slots = tile.dim %out, 1 : !tile.global<[?, ?, ?], bf16>
    %entry_slot = arith.addi %first_slot, %j : index
    %fits = arith.cmpi ult, %entry_slot, %out_slots : index
    %pools = arith.andi %pools_any, %fits : i1

    // Prefill's state block: the rows of groups groups - 1 and groups.
    scf.if %writes_state_rows {
      %has_prev = arith.cmpi ugt, %groups, %c0 : index
      %prev_group = arith.subi %groups, %c1 : index
      %first_group = arith.select %has_prev, %prev_group, %groups : index
      %first_token = arith.muli %first_group, %ratio : index
      scf.for %t = %first_token to %seq step %c1 {
        %row = arith.addi %batch_row, %t : index
        %g = arith.divui %t, %ratio : index
        %g_parity = arith.remui %g, %c2 : index
        %g_half = arith.muli %g_parity, %ratio : index
        %t_in_group = arith.remui %t, %ratio : index
        %state_row = arith.addi %g_half, %t_in_group : index
        tile.parallel (%blk, %lane) in [blocks, 64] {
          %in_block = arith.muli %blk, %c64 : index
          %d = arith.addi %in_block, %lane : index
          scf.for %h = %c0 to %halves step %c1 {
            %half_base = arith.muli %h, %dim : index
            %column = arith.addi %half_base, %d : index
            %kv_b = tile.load %kv[%row, %column] : !tile.global<[?, ?], bf16>
            %score_b = tile.load %score[%row, %column] : !tile.global<[?, ?], bf16>
            %bias = tile.load %ape[%t_in_group, %column] : !tile.global<[?, ?], f32>
            %value = arith.extf %kv_b : bf16 to f32
            %raw = arith.extf %score_b : bf16 to f32
            %logit = arith.addf %raw, %bias : f32
            tile.store %value, %state_kv[%b, %state_row, %column] : !tile.global<[?, ?, ?], f32>
            tile.store %logit, %state_score[%b, %state_row, %column] : !tile.global<[?, ?, ?], f32>
          }
        }
      }
    }

    // Decode: the new token's rows go to its group's half of the state.
    scf.if %decode {
      %state_row = arith.addi %own_half, %token_in_group : index
      tile.parallel (%blk, %lane) in [blocks, 64] {
        %in_block = arith.muli %blk, %c64 : index
        %d = arith.addi %in_block, %lane : index
        scf.for %h = %c0 to %halves step %c1 {
          %half_base = arith.muli %h, %dim : index
          %column = arith.addi %half_base, %d : index
          %kv_b = tile.load %kv[%b, %column] : !tile.global<[?, ?], bf16>
          %score_b = tile.load %score[%b, %column] : !tile.global<[?, ?], bf16>
          %bias = tile.load %ape[%token_in_group, %column] : !tile.global<[?, ?], f32>
          %value = arith.extf %kv_b : bf16 to f32
          %raw = arith.extf %score_b : bf16 to f32
          %logit = arith.addf %raw, %bias : f32
          tile.store %value, %state_kv[%b, %state_row, %column] : !tile.global<[?, ?, ?], f32>
          tile.store %logit, %state_score[%b, %state_row, %column] : !tile.global<[?, ?, ?], f32>
        }
      }
    }

    scf.if %pools {
      tile.fill %max, %neg_inf : !tile.frag<[blocks, 64], f32>, f32
      tile.fill %sum, %zero : !tile.frag<[blocks, 64], f32>, f32
      tile.fill %acc, %zero : !tile.frag<[blocks, 64], f32>, f32

      // Slots: overlap reads the previous group (columns [0, dim)) then
      // its own (columns [dim, 2 dim)); otherwise its own group only.
      %twice = arith.muli %ratio, %c2 : index
      %slots = arith.select %overlap, %twice, %ratio : index
      %first_entry = arith.cmpi eq, %j, %c0 : index
      scf.for %s = %c0 to %slots step %c1 {
        %is_prev_slot = arith.cmpi ult, %s, %ratio : index
        %prev_slot = arith.andi %overlap, %is_prev_slot : i1
        %own_s = arith.subi %s, %ratio : index
        %in_group = arith.select %prev_slot, %s, %own_s : index
        %in_own = arith.select %overlap, %in_group, %s : index
        %in_group_final = arith.select %prev_slot, %s, %in_own : index
        %prev_start = arith.subi %group_start, %ratio : index
        %prev_token = arith.addi %prev_start, %s : index
        %own_token = arith.addi %group_start, %in_own : index
        %token = arith.select %prev_slot, %prev_token, %own_token : index
        %row = arith.addi %batch_row, %token : index
        %half = arith.select %prev_slot, %prev_half, %own_half : index
        %state_row = arith.addi %half, %in_group_final : index
        %own_with_overlap = arith.xori %prev_slot, %true : i1
        %second_half = arith.andi %overlap, %own_with_overlap : i1
        %column_base = arith.select %second_half, %dim, %c0 : index
        %ape_row = arith.remui %token, %ratio : index
        // Entry 0 has no previous group.
        %missing = arith.andi %prev_slot, %first_entry : i1
        %present = arith.xori %missing, %true : i1
        scf.if %present {
          tile.parallel (%blk, %lane) in [blocks, 64] {
            %in_block = arith.muli %blk, %c64 : index
            %d = arith.addi %in_block, %lane : index
            %column = arith.addi %column_base, %d : index
            %value, %logit = scf.if %decode -> (f32, f32) {
              %v = tile.load %state_kv[%b, %state_row, %column] : !tile.global<[?, ?, ?], f32>
              %l = tile.load %state_score[%b, %state_row, %column] : !tile.global<[?, ?, ?], f32>
              scf.yield %v, %l : f32, f32
            } else {
              %kv_b = tile.load %kv[%row, %column] : !tile.global<[?, ?], bf16>
              %score_b = tile.load %score[%row, %column] : !tile.global<[?, ?], bf16>
              %bias = tile.load %ape[%ape_row, %column] : !tile.global<[?, ?], f32>
              %v = arith.extf %kv_b : bf16 to f32
              %raw = arith.extf %score_b : bf16 to f32
              %l = arith.addf %raw, %bias : f32
              scf.yield %v, %l : f32, f32
            }
            %m_old = tile.load %max[%blk, %lane] : !tile.frag<[blocks, 64], f32>
            %l_old = tile.load %sum[%blk, %lane] : !tile.frag<[blocks, 64], f32>
            %a_old = tile.load %acc[%blk, %lane] : !tile.frag<[blocks, 64], f32>
            %m_new = arith.maximumf %m_old, %logit : f32
            %delta = arith.subf %m_old, %m_new : f32
            %alpha = math.exp %delta : f32
            %shifted = arith.subf %logit, %m_new : f32
            %weight = math.exp %shifted : f32
            %l_scaled = arith.mulf %l_old, %alpha : f32
            %l_new = arith.addf %l_scaled, %weight : f32
            %a_scaled = arith.mulf %a_old, %alpha : f32
            %contribution = arith.mulf %weight, %value : f32
            %a_new = arith.addf %a_scaled, %contribution : f32
            tile.store %m_new, %max[%blk, %lane] : !tile.frag<[blocks, 64], f32>
            tile.store %l_new, %sum[%blk, %lane] : !tile.frag<[blocks, 64], f32>
            tile.store %a_new, %acc[%blk, %lane] : !tile.frag<[blocks, 64], f32>
          }
        }
      }

      // RMSNorm of the pooled row.
      tile.parallel (%blk, %lane) in [blocks, 64] {
        %a = tile.load %acc[%blk, %lane] : !tile.frag<[blocks, 64], f32>
        %l = tile.load %sum[%blk, %lane] : !tile.frag<[blocks, 64], f32>
        %pooled = arith.divf %a, %l : f32
        %square = arith.mulf %pooled, %pooled : f32
        tile.store %pooled, %acc[%blk, %lane] : !tile.frag<[blocks, 64], f32>
        tile.store %square, %squares[%blk, %lane] : !tile.frag<[blocks, 64], f32>
      }
      tile.reduce sum %squares to %block_sums dim = 1
          : !tile.frag<[blocks, 64], f32> to !tile.shared<[blocks], f32>
      %sum_squares = scf.for %blk = %c0 to %blocks_p step %c1
          iter_args(%running = %zero) -> (f32) {
        %part = tile.load %block_sums[%blk] : !tile.shared<[blocks], f32>
        %next = arith.addf %running, %part : f32
        scf.yield %next : f32
      }
      %dim_i64 = arith.index_cast %dim : index to i64
      %dim_f = arith.sitofp %dim_i64 : i64 to f32
      %mean = arith.divf %sum_squares, %dim_f : f32
      %mean_eps = arith.addf %mean, %eps : f32
      %inverse = math.rsqrt %mean_eps : f32
      tile.parallel (%blk, %lane) in [blocks, 64] {
        %in_block = arith.muli %blk, %c64 : index
        %d = arith.addi %in_block, %lane : index
        %pooled = tile.load %acc[%blk, %lane] : !tile.frag<[blocks, 64], f32>
        %w = tile.load %norm[%d] : !tile.global<[?], f32>
        %scaled = arith.mulf %pooled, %inverse : f32
        %y = arith.mulf %scaled, %w : f32
        tile.store %y, %normed[%blk, %lane] : !tile.shared<[blocks, 64], f32>
      }

      // RoPE of the last block at position j * ratio: pairs (2i, 2i + 1)
      // of its 64 dims, read from shared memory (a pair may span threads).
      %rope_block = arith.subi %blocks_p, %c1 : index
      %table = tile.dim %cos, 0 : !tile.global<[?, 32], f32>
      %last_row = arith.subi %table, %c1 : index
      %rope_row = arith.minui %group_start, %last_row : index
      tile.parallel (%blk, %lane) in [blocks, 64] {
        %y = tile.load %normed[%blk, %lane] : !tile.shared<[blocks, 64], f32>
        %is_rope = arith.cmpi eq, %blk, %rope_block : index
        %pair = arith.divui %lane, %c2 : index
        %odd_i = arith.remui %lane, %c2 : index
        %is_odd = arith.cmpi ne, %odd_i, %c0 : index
        %partner_lane = arith.xori %lane, %c1 : index
        %partner = tile.load %normed[%blk, %partner_lane] : !tile.shared<[blocks, 64], f32>
        %c = tile.load %cos[%rope_row, %pair] : !tile.global<[?, 32], f32>
        %s = tile.load %sin[%rope_row, %pair] : !tile.global<[?, 32], f32>
        // even: re' = re c - im s (y = re, partner = im);
        // odd:  im' = re s + im c (y = im, partner = re).
        %y_c = arith.mulf %y, %c : f32
        %p_s = arith.mulf %partner, %s : f32
        %even_out = arith.subf %y_c, %p_s : f32
        %odd_out = arith.addf %p_s, %y_c : f32
        %rotated = arith.select %is_odd, %odd_out, %even_out : f32
        %kept = arith.select %is_rope, %rotated, %y : f32
        tile.store %kept, %result[%blk, %lane] : !tile.frag<[blocks, 64], f32>
      }

      %slot = arith.addi %first_slot, %j : index
      %fp4_mode = arith.cmpi eq, %quantize_p, %c2 : index
      scf.if %fp4_mode {
        // quantize = 2 (the indexer's keys, dim 128): the Walsh-Hadamard
        // transform in shared memory (v4_hadamard_fp4's butterflies and
        // order), then fp4 (e2m1) in blocks of 32 with power-of-two scales.
        tile.parallel (%blk, %lane) in [blocks, 64] {
          %v = tile.load %result[%blk, %lane] : !tile.frag<[blocks, 64], f32>
          tile.store %v, %normed[%blk, %lane] : !tile.shared<[blocks, 64], f32>
        }
        %c8 = arith.constant 8 : index
        %h_last = arith.constant 64 : index
        scf.for %stage = %c0 to %c8 step %c1 {
          %stage_i = arith.index_cast %stage : index to i64
          %one_i64 = arith.constant 1 : i64
          %h_i = arith.shli %one_i64, %stage_i : i64
          %h = arith.index_cast %h_i : i64 to index
          %active = arith.cmpi ule, %h, %h_last : index
          scf.if %active {
            tile.parallel (%p) in [64] {
              %group = arith.divui %p, %h : index
              %offset = arith.remui %p, %h : index
              %two_h = arith.muli %h, %c2 : index
              %pair_base = arith.muli %group, %two_h : index
              %i = arith.addi %pair_base, %offset : index
              %k = arith.addi %i, %h : index
              %i_blk = arith.divui %i, %c64 : index
              %i_lane = arith.remui %i, %c64 : index
              %k_blk = arith.divui %k, %c64 : index
              %k_lane = arith.remui %k, %c64 : index
              %a = tile.load %normed[%i_blk, %i_lane] : !tile.shared<[blocks, 64], f32>
              %bv = tile.load %normed[%k_blk, %k_lane] : !tile.shared<[blocks, 64], f32>
              %sum_ab = arith.addf %a, %bv : f32
              %difference = arith.subf %a, %bv : f32
              tile.store %sum_ab, %normed[%i_blk, %i_lane] : !tile.shared<[blocks, 64], f32>
              tile.store %difference, %normed[%k_blk, %k_lane] : !tile.shared<[blocks, 64], f32>
            }
          }
        }
        %sqrt_n = arith.constant 11.3137084989847603904 : f32
        tile.parallel (%blk, %lane) in [blocks, 64] {
          %v = tile.load %normed[%blk, %lane] : !tile.shared<[blocks, 64], f32>
          %transformed = arith.divf %v, %sqrt_n : f32
          tile.store %transformed, %result[%blk, %lane] : !tile.frag<[blocks, 64], f32>
        }
        %quarters = tile.view %result
            : !tile.frag<[blocks, 64], f32> to !tile.frag<[blocks, 2, 32], f32>
        tile.reduce absmax %quarters to %amax32 dim = 2
            : !tile.frag<[blocks, 2, 32], f32> to !tile.shared<[blocks, 2], f32>
        tile.parallel (%blk, %half, %lane) in [blocks, 2, 32] {
          %v = tile.load %quarters[%blk, %half, %lane] : !tile.frag<[blocks, 2, 32], f32>
          %m = tile.load %amax32[%blk, %half] : !tile.shared<[blocks, 2], f32>
          %restored = func.call @fp4_qdq(%v, %m) : (f32, f32) -> f32
          %bf = arith.truncf %restored : f32 to bf16
          %c32 = arith.constant 32 : index
          %in_block = arith.muli %blk, %c64 : index
          %in_half = arith.muli %half, %c32 : index
          %base_d = arith.addi %in_block, %in_half : index
          %d = arith.addi %base_d, %lane : index
          tile.store %bf, %out[%b, %slot, %d] : !tile.global<[?, ?, ?], bf16>
        }
      } else {
        // fp8 quantize-dequantize of the other blocks: scale amax / 448.
        tile.reduce absmax %result to %amax dim = 1
            : !tile.frag<[blocks, 64], f32> to !tile.shared<[blocks], f32>
        tile.parallel (%blk, %lane) in [blocks, 64] {
          %v = tile.load %result[%blk, %lane] : !tile.frag<[blocks, 64], f32>
          %m = tile.load %amax[%blk] : !tile.shared<[blocks], f32>
          %ratio_f = arith.divf %m, %fp8_max : f32
          %nonzero = arith.cmpf ogt, %ratio_f, %zero : f32
          %scale = arith.select %nonzero, %ratio_f, %one : f32
          %scaled = arith.divf %v, %scale : f32
          %code = arith.truncf %scaled : f32 to f8E4M3FN
          %back = arith.extf %code : f8E4M3FN to f32
          %restored = arith.mulf %back, %scale : f32
          %is_rope = arith.cmpi eq, %blk, %rope_block : index
          %exact = arith.xori %quantize, %true : i1
          %keep = arith.ori %is_rope, %exact : i1
          %final = arith.select %keep, %v, %restored : f32
          %bf = arith.truncf %final : f32 to bf16
          %in_block = arith.muli %blk, %c64 : index
          %d = arith.addi %in_block, %lane : index
          tile.store %bf, %out[%b, %slot, %d] : !tile.global<[?, ?, ?], bf16>
        }
      }
    }
  }
}
