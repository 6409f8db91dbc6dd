#!/usr/bin/env python3
"""Writes stage2_unroll8.mlir-style probes: block_sparse_topk_tokens.mlir
with the select's key loops unrolled by U (SRC DST U). The kernel itself
now unrolls by 4; run it on the kernel of before the thirty-eighth session."""
import sys
src, dst, U = sys.argv[1], sys.argv[2], int(sys.argv[3])
s=open(src).read()
def loads(indent, base):
    out=[f"{indent}%key_0 = tile.load %keys[{base}] : !tile.shared<[topk*kb], i32>",
         f"{indent}%c_0 = arith.addi {base}, %c0 : index",
         f"{indent}%in_0 = arith.constant true"]
    for u in range(1,U):
        out += [f"{indent}%step_{u} = arith.constant {128*u} : index",
                f"{indent}%c_{u} = arith.addi {base}, %step_{u} : index",
                f"{indent}%in_{u} = arith.cmpi ult, %c_{u}, %length : index",
                f"{indent}%safe_{u} = arith.select %in_{u}, %c_{u}, {base} : index",
                f"{indent}%key_{u} = tile.load %keys[%safe_{u}] : !tile.shared<[topk*kb], i32>"]
    return "\n".join(out)+"\n"
old1="""      scf.for %c = %t to %length step %c128 {
        %key = tile.load %keys[%c] : !tile.shared<[topk*kb], i32>
        %selectable = arith.cmpi ne, %key, %zero : i32
        scf.if %selectable {
          %c24 = arith.constant 24 : i32
          %digit = arith.shrui %key, %c24 : i32
          %bin = arith.index_cast %digit : i32 to index
          %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[4, 256], i32>
        }
      }
"""
assert old1 in s
ind="        "
new1=f"      %step_h = arith.constant {128*U} : index\n      scf.for %c = %t to %length step %step_h {{\n"+loads(ind,"%c")
for u in range(U):
    new1+=f"""{ind}%selectable_{u} = arith.cmpi ne, %key_{u}, %zero : i32
{ind}%counted_{u} = arith.andi %selectable_{u}, %in_{u} : i1
{ind}scf.if %counted_{u} {{
{ind}  %c24 = arith.constant 24 : i32
{ind}  %digit = arith.shrui %key_{u}, %c24 : i32
{ind}  %bin = arith.index_cast %digit : i32 to index
{ind}  %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[4, 256], i32>
{ind}}}
"""
new1+="      }\n"
s=s.replace(old1,new1)
old2="""          scf.for %c = %t to %length step %c128 {
            %key = tile.load %keys[%c] : !tile.shared<[topk*kb], i32>
            %key_high = arith.shrui %key, %above : i32
            %same_prefix = arith.cmpi eq, %key_high, %prefix_high : i32
            %selectable = arith.cmpi ne, %key, %zero : i32
            %counted = arith.andi %same_prefix, %selectable : i1
            scf.if %counted {
              %shifted = arith.shrui %key, %shift : i32
              %mask = arith.constant 255 : i32
              %digit = arith.andi %shifted, %mask : i32
              %bin = arith.index_cast %digit : i32 to index
              %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[4, 256], i32>
            }
          }
"""
assert old2 in s
ind="            "
new2=f"          %step_p = arith.constant {128*U} : index\n          scf.for %c = %t to %length step %step_p {{\n"+loads(ind,"%c")
for u in range(U):
    new2+=f"""{ind}%key_high_{u} = arith.shrui %key_{u}, %above : i32
{ind}%same_prefix_{u} = arith.cmpi eq, %key_high_{u}, %prefix_high : i32
{ind}%selectable_{u} = arith.cmpi ne, %key_{u}, %zero : i32
{ind}%counted_key_{u} = arith.andi %same_prefix_{u}, %selectable_{u} : i1
{ind}%counted_{u} = arith.andi %counted_key_{u}, %in_{u} : i1
{ind}scf.if %counted_{u} {{
{ind}  %shifted = arith.shrui %key_{u}, %shift : i32
{ind}  %mask = arith.constant 255 : i32
{ind}  %digit = arith.andi %shifted, %mask : i32
{ind}  %bin = arith.index_cast %digit : i32 to index
{ind}  %old = tile.atomic add %one, %hist[%warp, %bin] : !tile.shared<[4, 256], i32>
{ind}}}
"""
new2+="          }\n"
s=s.replace(old2,new2)
old3_head="""      scf.for %c = %t to %length step %c128 {
        %key = tile.load %keys[%c] : !tile.shared<[topk*kb], i32>
        %above = arith.cmpi ugt, %key, %threshold : i32
        %at_threshold = arith.cmpi eq, %key, %threshold : i32
        %equal_taken = arith.andi %at_threshold, %all_at_threshold : i1
        %take = arith.ori %above, %equal_taken : i1
        scf.if %take {
"""
a=s.index(old3_head)
b=s.index("        }\n      }\n    }\n", a)
take_body=s[a+len(old3_head):b]
old3=s[a:b+len("        }\n      }\n")]
ind="        "
new3=f"      %step_o = arith.constant {128*U} : index\n      scf.for %c_base = %t to %length step %step_o {{\n"+loads(ind,"%c_base")
for u in range(U):
    tb=take_body.replace("%c,", f"%c_{u},").replace("%c :",f"%c_{u} :")
    new3+=f"""{ind}%above_{u} = arith.cmpi ugt, %key_{u}, %threshold : i32
{ind}%at_threshold_{u} = arith.cmpi eq, %key_{u}, %threshold : i32
{ind}%equal_taken_{u} = arith.andi %at_threshold_{u}, %all_at_threshold : i1
{ind}%wanted_{u} = arith.ori %above_{u}, %equal_taken_{u} : i1
{ind}%take_{u} = arith.andi %wanted_{u}, %in_{u} : i1
{ind}scf.if %take_{u} {{
{tb}{ind}}}
"""
new3+="      }\n"
s=s.replace(old3,new3)
s=s.replace("// HISA fused stage 2",f"// PROBE (python/bench/probes/stage2_source_ab.py): block_sparse_topk_tokens.mlir\n// with the select's key loops unrolled by {U} ({U} shared-memory loads in\n// flight a thread instead of one dependent load a step).\n//\n// HISA fused stage 2",1)
open(dst,'w').write(s)
