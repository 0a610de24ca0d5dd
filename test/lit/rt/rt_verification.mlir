// RUN: shardc-opt %s -split-input-file -verify-diagnostics

func.func @f() {
  // expected-error @below {{offset must be non-negative, got -64}}
  %x = rt.view arena 0 offset -64 : memref<8xf32>
  return
}

// -----

func.func @f() {
  %x = rt.view arena 0 offset 0 : memref<8xf32>
  // expected-error @below {{xf.gelu takes 1 operands and 1 results, not 1 operands and 0 results}}
  rt.kernel "xf.gelu" ins(%x : memref<8xf32>) {attrs = {}}
  return
}

// -----

// The op table (runtime/abi/OpTable.cpp) is the contract: an op it does not
// list, an attribute it does not name, one of another kind, a missing one.
func.func @f() {
  %x = rt.view arena 0 offset 0 : memref<8xf32>
  // expected-error @below {{the runtime has no kernel 'xf.tanh'}}
  rt.kernel "xf.tanh" ins(%x : memref<8xf32>) outs(%x : memref<8xf32>) {attrs = {}}
  return
}

// -----

func.func @f() {
  %x = rt.view arena 0 offset 0 : memref<8xf32>
  // expected-error @below {{attribute 'approximate' is not one of xf.gelu's}}
  rt.kernel "xf.gelu" ins(%x : memref<8xf32>) outs(%x : memref<8xf32>) {attrs = {approximate = true}}
  return
}

// -----

func.func @f() {
  %x = rt.view arena 0 offset 0 : memref<8xf32>
  // expected-error @below {{attribute 'factor' must be f64, not "2"}}
  rt.kernel "xf.scale" ins(%x : memref<8xf32>) outs(%x : memref<8xf32>) {attrs = {factor = "2"}}
  return
}

// -----

func.func @f() {
  %x = rt.view arena 0 offset 0 : memref<8xf32>
  // expected-error @below {{attribute 'factor' (f64) is missing}}
  rt.kernel "xf.scale" ins(%x : memref<8xf32>) outs(%x : memref<8xf32>) {attrs = {}}
  return
}

// -----

func.func @f() {
  %x = rt.view arena 0 offset 0 : memref<8xf32>
  %s = rt.view arena 4 offset 0 : memref<8xf32>
  // expected-error @below {{scratch must be a non-empty 1-d memref of i8, not 'memref<8xf32>'}}
  rt.collective "shard.all_gather" axes [0] ins(%x : memref<8xf32>) outs(%x : memref<8xf32>) scratch(%s : memref<8xf32>) {attrs = {gather_axis = 0 : i64}}
  return
}

// -----

func.func @f() {
  %x = rt.view arena 0 offset 0 : memref<8xf32>
  // expected-error @below {{attribute 'gather_axis' (i64) is missing}}
  rt.collective "shard.all_gather" axes [0] ins(%x : memref<8xf32>) outs(%x : memref<8xf32>) {attrs = {}}
  return
}

// -----

func.func @f() {
  %x = rt.view arena 0 offset 0 : memref<8xf32>
  // expected-error @below {{operand_axes: every entry lists the axes of each dim of its buffer}}
  rt.kernel "xf.gelu" ins(%x : memref<8xf32>) outs(%x : memref<8xf32>) {attrs = {}, operand_axes = [[]], result_axes = [[array<i16>]]}
  return
}

// -----

func.func @f() {
  %x = rt.view arena 0 offset 0 : memref<8xf32>
  // expected-error @below {{unknown collective 'shard.broadcast'}}
  rt.collective "shard.broadcast" axes [0] ins(%x : memref<8xf32>) outs(%x : memref<8xf32>) {attrs = {}}
  return
}

// -----

func.func @f() {
  %x = rt.view arena 0 offset 0 : memref<8xf32>
  // expected-error @below {{a collective needs at least one mesh axis}}
  rt.collective "shard.all_reduce" axes [] ins(%x : memref<8xf32>) outs(%x : memref<8xf32>) {attrs = {}}
  return
}


// -----

func.func @f() {
  %x = rt.view arena 0 offset 0 : memref<8xf32>
  // expected-error @below {{the event must be waited on exactly once (one rt.wait)}}
  %e = rt.collective_start "shard.all_reduce" axes [0] ins(%x : memref<8xf32>) outs(%x : memref<8xf32>) {attrs = {}}
  return
}

// -----

func.func @f() {
  %x = rt.view arena 0 offset 0 : memref<8xf32>
  // expected-error @below {{the event must be waited on exactly once (one rt.wait)}}
  %e = rt.collective_start "shard.all_reduce" axes [0] ins(%x : memref<8xf32>) outs(%x : memref<8xf32>) {attrs = {}}
  rt.wait %e
  rt.wait %e
  return
}
