// RUN: hisa-opt %s --tile-report-bank-conflicts -verify-diagnostics -o /dev/null

// A wgmma accumulator's bf16 values stored into a plain tile of 512-byte
// rows: each warp instruction's 8 rows x 4 column pairs fall in 4 banks (8
// wavefronts); into the swizzled tile no conflicts and no remark. Rows of
// 128 bytes read one row per thread, 16 bytes at a time: 32 lanes in the
// same 4 banks.
tile.kernel @staging_banks(%y: !tile.global<[64, 256], bf16>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %plain = tile.alloc : !tile.shared<[64, 256], bf16>
    %swizzled = tile.alloc {tile.swizzle = 128 : i64} : !tile.shared<[64, 256], bf16>
    %rows = tile.alloc : !tile.shared<[128, 32], f32>
    %acc = tile.alloc : !tile.frag<[64, 256], bf16, #tile.frag_layout<threads = 128, values = 128, map = (d0, d1) -> ((d1 floordiv 128) * 64 + (d0 floordiv 32) * 16 + (d0 mod 32) floordiv 4 + (((d1 mod 128) floordiv 2) mod 2) * 8, ((d1 mod 128) floordiv 4) * 8 + (d0 mod 4) * 2 + d1 mod 2)>>
    %row = tile.alloc : !tile.frag<[128, 32], f32, #tile.frag_layout<threads = 128, values = 32, map = (d0, d1) -> (d0, d1)>>
    %one = arith.constant 1.0 : bf16
    tile.fill %acc, %one : !tile.frag<[64, 256], bf16, #tile.frag_layout<threads = 128, values = 128, map = (d0, d1) -> ((d1 floordiv 128) * 64 + (d0 floordiv 32) * 16 + (d0 mod 32) floordiv 4 + (((d1 mod 128) floordiv 2) mod 2) * 8, ((d1 mod 128) floordiv 4) * 8 + (d0 mod 4) * 2 + d1 mod 2)>>, bf16
    // expected-remark @below {{fragment stores into '!tile.shared<[64, 256], bf16>': 8.0 wavefronts per warp instruction, 1.0 without bank conflicts (64 instructions per warp)}}
    tile.copy %acc to %plain : !tile.frag<[64, 256], bf16, #tile.frag_layout<threads = 128, values = 128, map = (d0, d1) -> ((d1 floordiv 128) * 64 + (d0 floordiv 32) * 16 + (d0 mod 32) floordiv 4 + (((d1 mod 128) floordiv 2) mod 2) * 8, ((d1 mod 128) floordiv 4) * 8 + (d0 mod 4) * 2 + d1 mod 2)>> to !tile.shared<[64, 256], bf16>
    tile.copy %acc to %swizzled : !tile.frag<[64, 256], bf16, #tile.frag_layout<threads = 128, values = 128, map = (d0, d1) -> ((d1 floordiv 128) * 64 + (d0 floordiv 32) * 16 + (d0 mod 32) floordiv 4 + (((d1 mod 128) floordiv 2) mod 2) * 8, ((d1 mod 128) floordiv 4) * 8 + (d0 mod 4) * 2 + d1 mod 2)>> to !tile.shared<[64, 256], bf16>
    // expected-remark @below {{fragment loads from '!tile.shared<[128, 32], f32>': 32.0 wavefronts per warp instruction, 4.0 without bank conflicts (8 instructions per warp)}}
    tile.copy %rows to %row : !tile.shared<[128, 32], f32> to !tile.frag<[128, 32], f32, #tile.frag_layout<threads = 128, values = 32, map = (d0, d1) -> (d0, d1)>>
  }
}

// Element accesses in a parallel: one warp instruction per value of the
// parallel's layout. Each lane summing 8 consecutive histogram bins reads
// with a stride of 8 words (8 lanes a bank, 8 wavefronts; counted at the
// loop's first iteration); rows padded to a stride of 9 words spread the
// lanes over all banks; the lanes' own bins (consecutive words), an index
// loaded from memory and one whose arithmetic overflows (not modelled) get
// no remark.
tile.kernel @parallel_banks(%y: !tile.global<[4], i32>) {
  %c1 = arith.constant 1 : index
  tile.launch (%bx) in (%c1) threads 128 {
    %hist = tile.alloc : !tile.shared<[4, 256], i32>
    %padded = tile.alloc : !tile.shared<[4, 288], i32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c9 = arith.constant 9 : index
    %zero = arith.constant 0 : i32
    tile.parallel (%w, %lane) in [4, 32] attributes {layout = #tile.frag_layout<threads = 128, values = 1, map = (d0, d1) -> (d1 * 4 + d0 floordiv 32, d0 mod 32)>} {
      %first = arith.muli %lane, %c8 : index
      %first_padded = arith.muli %lane, %c9 : index
      %sum = scf.for %j = %c0 to %c8 step %c1 iter_args(%s = %zero) -> (i32) {
        %b = arith.addi %first, %j : index
        // expected-remark @below {{element loads from '!tile.shared<[4, 256], i32>' in a parallel: 8.0 wavefronts per warp instruction, 1.0 without bank conflicts (4 warp instructions)}}
        %part = tile.load %hist[%w, %b] : !tile.shared<[4, 256], i32>
        %b_padded = arith.addi %first_padded, %j : index
        %part_padded = tile.load %padded[%w, %b_padded] : !tile.shared<[4, 288], i32>
        %both = arith.addi %part, %part_padded : i32
        %more = arith.addi %s, %both : i32
        scf.yield %more : i32
      }
      tile.store %sum, %hist[%w, %lane] : !tile.shared<[4, 256], i32>
      // An index whose arithmetic overflows is not modelled either.
      %huge = arith.constant 9223372036854775807 : index
      %overflowing = arith.muli %lane, %huge : index
      tile.store %zero, %hist[%w, %overflowing] : !tile.shared<[4, 256], i32>
      %loaded = tile.load %hist[%w, %lane] : !tile.shared<[4, 256], i32>
      %at = arith.index_cast %loaded : i32 to index
      tile.store %zero, %hist[%w, %at] : !tile.shared<[4, 256], i32>
    }
  }
}
