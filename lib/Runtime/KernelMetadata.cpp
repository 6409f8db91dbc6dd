//===- KernelMetadata.cpp - What the host needs to launch a kernel --------===//
//
// Text format, one record per line (fields separated by spaces):
//   hisa-kernel-metadata 1
//   kernel <name> <cubin|ptx> <threads> <shared bytes>
//   arg tensor <name> <element type> <element bytes> <alignment> <rank>
//   <dims...>
//   arg int|float <name> <bits>
//   tensormap <argument> <element bytes> <swizzle bytes> <rank> <box...>
//   inst <op> <a> <b> <immediate> <bits>
//   grid <value id>...
//   gridwait                  (the kernel waits for its prerequisite grids)
//   int32sizes                (compiled for run-time sizes below 2^31)
//   cluster <blocks>          (thread-block clusters of that many blocks
//                              along x; absent: no clusters)
//
//===----------------------------------------------------------------------===//

#include "hisa/Runtime/Jit.h"

#include "llvm/ADT/StringSwitch.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>

using namespace llvm;
using namespace hisa::runtime;

char CompileError::ID = 0;

std::string KernelMetadata::serialize() const {
  std::string text;
  raw_string_ostream os(text);
  os << "hisa-kernel-metadata 1\n";
  os << "kernel " << kernelName << " " << binaryKind << " " << threads << " "
     << sharedBytes << "\n";
  for (const Argument &arg : arguments) {
    if (arg.kind == Argument::Tensor) {
      os << "arg tensor " << arg.name << " " << arg.elementType << " "
         << arg.elementBytes << " " << arg.alignment << " " << arg.shape.size();
      for (int64_t size : arg.shape)
        os << " " << size;
      os << "\n";
      continue;
    }
    os << "arg " << (arg.kind == Argument::Int ? "int" : "float") << " "
       << arg.name << " " << arg.scalarBits << "\n";
  }
  for (const TensorMap &map : tensorMaps) {
    os << "tensormap " << map.argument << " " << map.elementBytes << " "
       << map.swizzleBytes << " " << map.box.size();
    for (int64_t extent : map.box)
      os << " " << extent;
    os << "\n";
  }
  for (const Instruction &inst : program)
    os << "inst " << inst.op << " " << inst.a << " " << inst.b << " "
       << inst.immediate << " " << inst.bits << "\n";
  os << "grid";
  for (int64_t value : gridValues)
    os << " " << value;
  os << "\n";
  if (waitsForPrerequisiteGrids)
    os << "gridwait\n";
  if (int32Sizes)
    os << "int32sizes\n";
  if (clusterBlocks > 1)
    os << "cluster " << clusterBlocks << "\n";
  return text;
}

Expected<KernelMetadata> KernelMetadata::parse(StringRef text) {
  auto malformed = [&](StringRef line) {
    return createStringError(inconvertibleErrorCode(),
                             "malformed kernel metadata line: '" + line + "'");
  };
  KernelMetadata metadata;
  SmallVector<StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  if (lines.empty() || lines.front() != "hisa-kernel-metadata 1")
    return createStringError(inconvertibleErrorCode(),
                             "not hisa kernel metadata (version 1)");
  for (StringRef line : ArrayRef<StringRef>(lines).drop_front()) {
    SmallVector<StringRef> fields;
    line.split(fields, ' ', -1, /*KeepEmpty=*/false);
    auto number = [&](size_t i, int64_t &value) {
      return i < fields.size() && !fields[i].getAsInteger(10, value);
    };
    if (fields.empty())
      continue;
    if (fields[0] == "kernel") {
      if (fields.size() != 5 || !number(3, metadata.threads) ||
          !number(4, metadata.sharedBytes))
        return malformed(line);
      metadata.kernelName = fields[1].str();
      metadata.binaryKind = fields[2].str();
    } else if (fields[0] == "arg" && fields.size() >= 4) {
      Argument arg;
      arg.name = fields[2].str();
      int64_t value;
      if (fields[1] == "tensor") {
        int64_t bytes, alignment, rank;
        if (fields.size() < 7 || !number(4, bytes) || !number(5, alignment) ||
            !number(6, rank) || fields.size() != 7 + size_t(rank))
          return malformed(line);
        arg.elementType = fields[3].str();
        arg.elementBytes = bytes;
        arg.alignment = alignment;
        for (int64_t i = 0; i < rank; ++i) {
          if (!number(7 + i, value))
            return malformed(line);
          arg.shape.push_back(value);
        }
      } else {
        if (!number(3, value))
          return malformed(line);
        arg.kind = fields[1] == "int" ? Argument::Int : Argument::Float;
        arg.scalarBits = value;
      }
      metadata.arguments.push_back(std::move(arg));
    } else if (fields[0] == "tensormap") {
      TensorMap map;
      int64_t argument, bytes, rank;
      if (!number(1, argument) || !number(2, bytes) ||
          !number(3, map.swizzleBytes) || !number(4, rank) || rank < 1 ||
          fields.size() != 5 + size_t(rank) || argument < 0 ||
          argument >= static_cast<int64_t>(metadata.arguments.size()) ||
          metadata.arguments[argument].kind != Argument::Tensor ||
          static_cast<int64_t>(metadata.arguments[argument].shape.size()) !=
              rank)
        return malformed(line);
      map.argument = argument;
      map.elementBytes = bytes;
      for (int64_t i = 0; i < rank; ++i) {
        int64_t extent;
        if (!number(5 + i, extent) || extent < 1 || extent > 256)
          return malformed(line);
        map.box.push_back(extent);
      }
      metadata.tensorMaps.push_back(std::move(map));
    } else if (fields[0] == "inst" && fields.size() == 6) {
      Instruction inst;
      int64_t bits;
      inst.op = fields[1].str();
      if (!number(2, inst.a) || !number(3, inst.b) ||
          !number(4, inst.immediate) || !number(5, bits))
        return malformed(line);
      inst.bits = bits;
      metadata.program.push_back(inst);
    } else if (fields[0] == "gridwait" && fields.size() == 1) {
      metadata.waitsForPrerequisiteGrids = true;
    } else if (fields[0] == "int32sizes" && fields.size() == 1) {
      metadata.int32Sizes = true;
    } else if (fields[0] == "cluster") {
      if (fields.size() != 2 || !number(1, metadata.clusterBlocks) ||
          metadata.clusterBlocks < 1 || metadata.clusterBlocks > 8)
        return malformed(line);
    } else if (fields[0] == "grid") {
      for (size_t i = 1; i < fields.size(); ++i) {
        int64_t value;
        if (!number(i, value) || value < 0 ||
            value >= static_cast<int64_t>(metadata.program.size()))
          return malformed(line);
        metadata.gridValues.push_back(value);
      }
    } else {
      return malformed(line);
    }
  }
  if (metadata.kernelName.empty() || metadata.gridValues.empty() ||
      metadata.gridValues.size() > 3)
    return createStringError(inconvertibleErrorCode(),
                             "incomplete kernel metadata");
  return metadata;
}

/// Wraps `value` to a `bits`-wide signed integer, as the IR would.
static int64_t wrap(int64_t value, unsigned bits) {
  return bits >= 64 ? value : SignExtend64(static_cast<uint64_t>(value), bits);
}

KernelMetadata::Opcode KernelMetadata::decodeOpcode(StringRef op) {
  return llvm::StringSwitch<Opcode>(op)
      .Case("arg", Opcode::Arg)
      .Case("const", Opcode::Const)
      .Case("dim", Opcode::Dim)
      .Case("cast", Opcode::Cast)
      .Case("castui", Opcode::CastUI)
      .Case("addi", Opcode::AddI)
      .Case("subi", Opcode::SubI)
      .Case("muli", Opcode::MulI)
      .Case("divsi", Opcode::DivSI)
      .Case("divui", Opcode::DivUI)
      .Case("ceildivui", Opcode::CeilDivUI)
      .Case("ceildivsi", Opcode::CeilDivSI)
      .Case("floordivsi", Opcode::FloorDivSI)
      .Case("remsi", Opcode::RemSI)
      .Case("remui", Opcode::RemUI)
      .Case("minsi", Opcode::MinSI)
      .Case("maxsi", Opcode::MaxSI)
      .Case("minui", Opcode::MinUI)
      .Case("maxui", Opcode::MaxUI)
      .Case("andi", Opcode::AndI)
      .Case("ori", Opcode::OrI)
      .Case("xori", Opcode::XOrI)
      .Case("shli", Opcode::ShLI)
      .Case("shrui", Opcode::ShRUI)
      .Case("shrsi", Opcode::ShRSI)
      .Default(Opcode::Unknown);
}

Expected<std::array<int64_t, 3>>
KernelMetadata::evaluateGrid(ArrayRef<SmallVector<int64_t, 8>> sizes) const {
  SmallVector<int64_t, 32> values(program.size());
  auto fail = [&](const Twine &message) {
    return createStringError(inconvertibleErrorCode(),
                             "kernel '" + kernelName + "' grid: " + message);
  };
  for (auto [i, inst] : llvm::enumerate(program)) {
    Opcode code = decodeOpcode(inst.op);
    bool leaf =
        code == Opcode::Const || code == Opcode::Dim || code == Opcode::Arg;
    if (!leaf &&
        (inst.a < 0 || inst.a >= static_cast<int64_t>(i) || inst.b < 0 ||
         inst.b >= static_cast<int64_t>(std::max<size_t>(i, 1))))
      return fail("instruction " + Twine(i) + " uses a later value");
    int64_t a = 0, b = 0, result = 0;
    uint64_t ua = 0, ub = 0;
    if (!leaf) {
      a = values[inst.a];
      b = values[inst.b];
      ua = static_cast<uint64_t>(a);
      ub = static_cast<uint64_t>(b);
      if (inst.bits < 64) {
        ua &= maskTrailingOnes<uint64_t>(inst.bits);
        ub &= maskTrailingOnes<uint64_t>(inst.bits);
      }
    }
    bool signedDivision = code == Opcode::DivSI || code == Opcode::CeilDivSI ||
                          code == Opcode::FloorDivSI || code == Opcode::RemSI;
    bool divides = signedDivision || code == Opcode::DivUI ||
                   code == Opcode::CeilDivUI || code == Opcode::RemUI;
    if (divides && b == 0)
      return fail("division by zero in '" + inst.op + "'");
    // The one signed quotient int64 cannot hold (x86 traps on it).
    if (signedDivision && a == std::numeric_limits<int64_t>::min() && b == -1)
      return fail("overflow in '" + inst.op + "'");
    switch (code) {
    case Opcode::Const:
      result = inst.immediate;
      break;
    case Opcode::Arg:
    case Opcode::Dim:
      if (inst.a < 0 || inst.a >= static_cast<int64_t>(sizes.size()) ||
          inst.b < 0 ||
          (code == Opcode::Dim &&
           inst.b >= static_cast<int64_t>(sizes[inst.a].size())))
        return fail("size of an argument it does not have");
      result = code == Opcode::Dim ? sizes[inst.a][inst.b] : sizes[inst.a][0];
      break;
    case Opcode::AddI: // wraps, as the IR does
      result = static_cast<int64_t>(ua + ub);
      break;
    case Opcode::SubI:
      result = static_cast<int64_t>(ua - ub);
      break;
    case Opcode::MulI:
      result = static_cast<int64_t>(ua * ub);
      break;
    case Opcode::DivSI:
      result = a / b;
      break;
    case Opcode::DivUI:
      result = static_cast<int64_t>(ua / ub);
      break;
    case Opcode::CeilDivUI:
      // (Not (ua + ub - 1) / ub, which wraps for ua near 2^64.)
      result = static_cast<int64_t>(ua == 0 ? 0 : (ua - 1) / ub + 1);
      break;
    case Opcode::CeilDivSI:
      result = divideCeilSigned(a, b);
      break;
    case Opcode::FloorDivSI:
      result = divideFloorSigned(a, b);
      break;
    case Opcode::RemSI:
      result = a % b;
      break;
    case Opcode::RemUI:
      result = static_cast<int64_t>(ua % ub);
      break;
    case Opcode::MinSI:
      result = std::min(a, b);
      break;
    case Opcode::MaxSI:
      result = std::max(a, b);
      break;
    case Opcode::MinUI:
      result = static_cast<int64_t>(std::min(ua, ub));
      break;
    case Opcode::MaxUI:
      result = static_cast<int64_t>(std::max(ua, ub));
      break;
    case Opcode::AndI:
      result = a & b;
      break;
    case Opcode::OrI:
      result = a | b;
      break;
    case Opcode::XOrI:
      result = a ^ b;
      break;
    case Opcode::ShLI:
      result = static_cast<int64_t>(ua << (ub & 63));
      break;
    case Opcode::ShRUI:
      result = static_cast<int64_t>(ua >> (ub & 63));
      break;
    case Opcode::ShRSI:
      result = a >> (b & 63);
      break;
    case Opcode::Cast:
      result = a;
      break;
    case Opcode::CastUI: // immediate: the source width
      result =
          static_cast<int64_t>(static_cast<uint64_t>(a) &
                               maskTrailingOnes<uint64_t>(
                                   std::clamp<int64_t>(inst.immediate, 1, 64)));
      break;
    case Opcode::Unknown:
      return fail("unknown instruction '" + inst.op + "'");
    }
    values[i] = wrap(result, inst.bits);
  }
  std::array<int64_t, 3> grid = {1, 1, 1};
  for (auto [i, id] : llvm::enumerate(gridValues))
    grid[i] = values[id];
  return grid;
}
