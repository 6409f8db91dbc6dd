// The CSA indexer's operands in fp8 for hisa's MQA logits (the flat
// indexer): rows of 128 bf16 values, already Walsh-Hadamard transformed and
// fp4 quantize-dequantized (v4_hadamard_fp4), become fp8 e4m3 codes times a
// power-of-two row scale, the smallest 2^e >= amax / 448. The fp4 values
// (e2m1 codes times power-of-two block scales) are then exact in fp8 unless
// a block's scale is below 2^-14 of the row's largest (those values flush
// toward zero): the indexer's scores equal the reference's.
//
// x [batch, slots, 128] bf16; rows (b, s) with first_slot <= s < end_slot
// are converted into out [batch, slots, 128] f8E4M3FN and scale [batch,
// slots] f32. weights = 1 (q heads): the row's weight w_in [batch, slots]
// bf16 times scale * factor goes to w_out [batch, slots] f32, so that
// relu(q . k) * w is unchanged (scales are positive). 8 rows per block.
// decode = 1 (the keys after a decode step, first_slot = 0, end_slot = 1):
// sequence b converts row base[b] / 4 only when its token at position
// base[b] (device memory) completed that entry ((base[b] + 1) % 4 == 0),
// and only inside x's slots.

// From hisa's device library (kernels-dsl/lib/quantize.mlir).
func.func private @pow2_at_least(f32) -> f32

tile.kernel @v4_to_fp8(%x: !tile.global<[?, ?, 128], bf16>,
                       %out: !tile.global<[?, ?, 128], f8E4M3FN>,
                       %scale: !tile.global<[?, ?], f32>,
                       %w_in: !tile.global<[?, ?], bf16>,
                       %w_out: !tile.global<[?, ?], f32>,
                       %base: !tile.global<[?], i32>,
                       %first_slot: index, %end_slot: index, %factor: f32)
    params {weights = 0, decode = 0} {
  %batch = tile.dim %x, 0 : !tile.global<[?, ?, 128], bf16>
  %count = arith.subi %end_slot, %first_slot : index
  %c8_host = arith.constant 8 : index
  %per_batch = arith.ceildivui %count, %c8_host : index
  %blocks = arith.muli %batch, %per_batch : index
  tile.launch (%block) in (%blocks) threads 128 {
    %values = tile.alloc : !tile.frag<[8, 128], f32>
    %amax = tile.alloc : !tile.shared<[8], f32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %rows = arith.subi %end_slot, %first_slot : index
    %blocks_per_batch = arith.ceildivui %rows, %c8 : index
    %b = arith.divui %block, %blocks_per_batch : index
    %chunk = arith.remui %block, %blocks_per_batch : index
    %chunk_first = arith.muli %chunk, %c8 : index
    %prefill_first = arith.addi %first_slot, %chunk_first : index
    %decode_param = tile.param "decode" : index
    %is_decode = arith.cmpi ne, %decode_param, %c0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %slots = tile.dim %x, 1 : !tile.global<[?, ?, 128], bf16>
    %first, %last = scf.if %is_decode -> (index, index) {
      %position_i32 = tile.load %base[%b] : !tile.global<[?], i32>
      %position = arith.index_cast %position_i32 : i32 to index
      %entry = arith.divui %position, %c4 : index
      %next = arith.addi %position, %c1 : index
      %in_group = arith.remui %next, %c4 : index
      %completes = arith.cmpi eq, %in_group, %c0 : index
      %inside = arith.cmpi ult, %entry, %slots : index
      %converts = arith.andi %completes, %inside : i1
      %entry_end = arith.addi %entry, %c1 : index
      %end = arith.select %converts, %entry_end, %entry : index
      scf.yield %entry, %end : index, index
    } else {
      scf.yield %prefill_first, %end_slot : index, index
    }
    tile.parallel (%r, %i) in [8, 128] {
      %slot = arith.addi %first, %r : index
      %real = arith.cmpi ult, %slot, %last : index
      %v = scf.if %real -> (f32) {
        %h = tile.load %x[%b, %slot, %i] : !tile.global<[?, ?, 128], bf16>
        %f = arith.extf %h : bf16 to f32
        scf.yield %f : f32
      } else {
        scf.yield %zero : f32
      }
      tile.store %v, %values[%r, %i] : !tile.frag<[8, 128], f32>
    }
    tile.reduce absmax %values to %amax dim = 1
        : !tile.frag<[8, 128], f32> to !tile.shared<[8], f32>
    tile.parallel (%r, %i) in [8, 128] {
      %slot = arith.addi %first, %r : index
      %real = arith.cmpi ult, %slot, %last : index
      scf.if %real {
        %v = tile.load %values[%r, %i] : !tile.frag<[8, 128], f32>
        %m = tile.load %amax[%r] : !tile.shared<[8], f32>
        // The smallest power of two >= amax / 448 (kernels-dsl/lib/quantize.mlir).
        %fp8_max = arith.constant 448.0 : f32
        %ratio = arith.divf %m, %fp8_max : f32
        %row_scale = func.call @pow2_at_least(%ratio) : (f32) -> f32
        %scaled = arith.divf %v, %row_scale : f32
        %code = arith.truncf %scaled : f32 to f8E4M3FN
        tile.store %code, %out[%b, %slot, %i] : !tile.global<[?, ?, 128], f8E4M3FN>
        %first_lane = arith.cmpi eq, %i, %c0 : index
        scf.if %first_lane {
          tile.store %row_scale, %scale[%b, %slot] : !tile.global<[?, ?], f32>
          %weights_param = tile.param "weights" : index
          %has_weights = arith.cmpi ne, %weights_param, %c0 : index
          scf.if %has_weights {
            %w_b = tile.load %w_in[%b, %slot] : !tile.global<[?, ?], bf16>
            %w = arith.extf %w_b : bf16 to f32
            %w_scaled = arith.mulf %w, %row_scale : f32
            %w_final = arith.mulf %w_scaled, %factor : f32
            tile.store %w_final, %w_out[%b, %slot] : !tile.global<[?, ?], f32>
          }
        }
      }
    }
  }
}
