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
