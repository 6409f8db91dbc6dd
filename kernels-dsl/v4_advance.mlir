// The last launch of a V4 layer decode step: every sequence's position
// moves to the next token (base[b] += 1), in device memory, so that a
// captured decode step replays at the next positions each time. set = 1
// (after a prefill, or set_length): base[b] = value instead.

tile.kernel @v4_advance(%base: !tile.global<[?], i32>, %value: i32)
    params {set = 0} {
  %batch = tile.dim %base, 0 : !tile.global<[?], i32>
  %c256 = arith.constant 256 : index
  %blocks = arith.ceildivui %batch, %c256 : index
  tile.launch (%block) in (%blocks) threads 256 {
    %first = arith.muli %block, %c256 : index
    %one = arith.constant 1 : i32
    tile.parallel (%l) in [256] {
      %b = arith.addi %first, %l : index
      %real = arith.cmpi ult, %b, %batch : index
      scf.if %real {
        %set_param = tile.param "set" : index
        %c0 = arith.constant 0 : index
        %is_set = arith.cmpi ne, %set_param, %c0 : index
        %p = tile.load %base[%b] : !tile.global<[?], i32>
        %next = arith.addi %p, %one : i32
        %new = arith.select %is_set, %value, %next : i32
        tile.store %new, %base[%b] : !tile.global<[?], i32>
      }
    }
  }
}
