// Malformed tile types and attributes.
// RUN: hisa-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{a shared tile needs at least one dimension}}
func.func private @empty_shape(!tile.shared<[], f32>)

// -----

// expected-error @+1 {{a fragment needs sizes known at compile time; '?' is only allowed in global tensors}}
func.func private @runtime_fragment(!tile.frag<[?, 4], f32>)

// -----

// expected-error @+1 {{a local tile needs sizes known at compile time; '?' is only allowed in global tensors}}
func.func private @runtime_local(!tile.local<[?], f32>)

// -----

// expected-error @+1 {{dimension sizes must be positive, got 0}}
func.func private @zero_size(!tile.shared<[0, 4], f32>)

// -----

// expected-error @+1 {{invalid parameter name 'a-b'}}
func.func private @bad_name(!tile.shared<["a-b"], f32>)

// -----

// expected-error @+1 {{expected a dimension: an integer, '?' or a parameter name}}
func.func private @bad_dim(!tile.shared<[4, *], f32>)

// -----

// expected-error @+1 {{tile elements must be integers or floats (i64 or i32 for indices), got 'vector<4xf32>'}}
func.func private @vector_element(!tile.shared<[4], vector<4xf32>>)

// -----

// expected-error @+1 {{fragment layout map has 1 results but the fragment has rank 2}}
func.func private @layout_rank(!tile.frag<[8, 8], f32, #tile.frag_layout<threads = 32, values = 2, map = (t, v) -> (t)>>)

// -----

// expected-error @+1 {{fragment layout holds 64 values but the fragment has 128 elements}}
func.func private @layout_too_small(!tile.frag<[8, 16], f32, #tile.frag_layout<threads = 32, values = 2, map = (t, v) -> (t floordiv 4, v)>>)

// -----

// expected-error @+1 {{fragment layout needs a positive thread and value count, got threads = 0, values = 2}}
func.func private @layout_no_threads() attributes {l = #tile.frag_layout<threads = 0, values = 2, map = (t, v) -> (t)>}

// -----

// expected-error @+1 {{fragment layout map must be (thread, value) -> (coordinates) with no symbols, got affine_map<(d0) -> (d0)>}}
func.func private @layout_one_dim() attributes {l = #tile.frag_layout<threads = 32, values = 2, map = (t) -> (t)>}

// -----

// expected-error @+1 {{fragment layout map must have at least one result}}
func.func private @layout_no_results() attributes {l = #tile.frag_layout<threads = 32, values = 2, map = (t, v) -> ()>}

// -----

// index has no byte size of its own on the GPU: tiles of indices are i64 or
// i32 (an index element used to crash layout assignment and the lowering).
// expected-error @+1 {{tile elements must be integers or floats (i64 or i32 for indices), got 'index'}}
func.func private @index_fragment(!tile.frag<[64, 128], index>)

// -----

// expected-error @+1 {{tile elements must be integers or floats (i64 or i32 for indices), got 'index'}}
func.func private @index_global(!tile.global<[?, 32], index>)
