// RUN: shardc-opt %s -split-input-file -verify-diagnostics

// Every diagnostic a user can trigger in an xf op, argument attribute or
// parameter attribute.

func.func @embedding_table_rank(%t: tensor<64xf32>, %ids: tensor<2x8xi32>) {
  // expected-error @+1 {{table must have rank 2 ([vocab, hidden])}}
  %0 = xf.embedding %t, %ids : tensor<64xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @embedding_result(%t: tensor<64x16xf32>, %ids: tensor<2x8xi32>) {
  // expected-error @+1 {{result type 'tensor<2x8x32xf32>' should be 'tensor<2x8x16xf32>'}}
  %0 = xf.embedding %t, %ids : tensor<64x16xf32>, tensor<2x8xi32> -> tensor<2x8x32xf32>
  return
}

// -----

func.func @embedding_ids_type(%t: tensor<64x16xf32>, %ids: tensor<2x8xi64>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer values}}
  %0 = xf.embedding %t, %ids : tensor<64x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @dynamic_shape(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{must be statically shaped tensor}}
  %0 = xf.gelu %x : tensor<?x16xf32>
  return
}

// -----

func.func @iota_dim() {
  // expected-error @+1 {{dim 2 is out of range for a rank-2 result}}
  %0 = xf.iota dim = 2 : tensor<2x8xi32>
  return
}

// -----

func.func @matmul_form(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{equation 'ij,jk' must have the form 'lhs,rhs->out'}}
  %0 = xf.matmul "ij,jk" %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @matmul_operands(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{equation 'ij->ij' must have exactly two operands}}
  %0 = xf.matmul "ij->ij" %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @matmul_letters(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{equation 'iJ,Jk->ik' has 'J'; use lower-case letters only}}
  %0 = xf.matmul "iJ,Jk->ik" %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @matmul_repeat(%a: tensor<8x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{letter 'i' repeats within 'ii' in equation 'ii,ik->ik'}}
  %0 = xf.matmul "ii,ik->ik" %a, %b : tensor<8x8xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @matmul_unknown_out(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{result letter 'z' appears in no operand of 'ij,jk->iz'}}
  %0 = xf.matmul "ij,jk->iz" %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @matmul_single_sum(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{letter 'x' of lhs is neither in the result nor in rhs}}
  %0 = xf.matmul "xi,jk->ik" %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @matmul_single_sum_rhs(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{letter 'y' of rhs is neither in the result nor in lhs}}
  %0 = xf.matmul "ij,yk->ijk" %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x8x4xf32>
  return
}

// -----

func.func @matmul_rank(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{lhs has rank 2 but the equation names 3 dimensions ('bij')}}
  %0 = xf.matmul "bij,jk->bik" %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x2x4xf32>
  return
}

// -----

func.func @matmul_rhs_rank(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{rhs has rank 2 but the equation names 1 dimensions ('j')}}
  %0 = xf.matmul "ij,j->i" %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2xf32>
  return
}

// -----

func.func @matmul_contracted_size(%a: tensor<2x8xf32>, %b: tensor<6x4xf32>) {
  // expected-error @+1 {{dimension 'j' is 8 in lhs but 6 in rhs}}
  %0 = xf.matmul "ij,jk->ik" %a, %b : tensor<2x8xf32>, tensor<6x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @matmul_result_shape(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{result type 'tensor<4x2xf32>' should have shape 'tensor<2x4xf32>' for 'ij,jk->ik'}}
  %0 = xf.matmul "ij,jk->ik" %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @matmul_mixed(%a: tensor<2x8xf32>, %b: tensor<8x4xbf16>) {
  // expected-error @+1 {{operand element types differ: 'f32' and 'bf16'}}
  %0 = xf.matmul "ij,jk->ik" %a, %b : tensor<2x8xf32>, tensor<8x4xbf16> -> tensor<2x4xf32>
  return
}

// -----

func.func @matmul_result_type(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{result element type 'bf16' must be 'f32'}}
  %0 = xf.matmul "ij,jk->ik" %a, %b : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xbf16>
  return
}

// -----

func.func @add_types(%a: tensor<2x8xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'xf.add' op rhs shape 'tensor<2x4xf32>' differs from the result's 'tensor<2x8xf32>'}}
  %0 = "xf.add"(%a, %b) : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Only a narrower operand is widened by the add, never a wider one narrowed.
func.func @add_wider_operand(%a: tensor<2x8xbf16>, %b: tensor<2x8xf32>) {
  // expected-error @+1 {{'xf.add' op rhs element type 'f32' is neither the result's ('bf16') nor a narrower float the add widens}}
  %0 = "xf.add"(%a, %b) : (tensor<2x8xbf16>, tensor<2x8xf32>) -> tensor<2x8xbf16>
  return
}

// -----

func.func @add_two_narrow(%a: tensor<2x8xbf16>, %b: tensor<2x8xf16>) {
  // expected-error @+1 {{'xf.add' op at most one operand may be narrower than the result 'tensor<2x8xf32>'}}
  %0 = "xf.add"(%a, %b) : (tensor<2x8xbf16>, tensor<2x8xf16>) -> tensor<2x8xf32>
  return
}

// -----

func.func @bias_size(%x: tensor<2x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{bias must be 'tensor<8xf32>' to match the last dimension of the input, got 'tensor<4xf32>'}}
  %0 = xf.bias_add %x, %b : tensor<2x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @bias_type(%x: tensor<2x8xf32>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{bias element type 'bf16' differs from the input's 'f32'}}
  %0 = xf.bias_add %x, %b : tensor<2x8xf32>, tensor<8xbf16>
  return
}

// -----

func.func @softmax_rank(%x: tensor<f32>) {
  // expected-error @+1 {{input must have rank >= 1}}
  %0 = xf.softmax %x : tensor<f32>
  return
}

// -----

func.func @layernorm_gamma(%x: tensor<2x8xf32>, %g: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{gamma must be 'tensor<8xf32>' to match the last dimension of the input}}
  %0 = xf.layernorm %x, %g, %b epsilon = 1.0e-5 : tensor<2x8xf32>, tensor<4xf32>, tensor<8xf32>
  return
}

// -----

func.func @layernorm_beta(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<2x8xf32>) {
  // expected-error @+1 {{beta must be 'tensor<8xf32>' to match the last dimension of the input}}
  %0 = xf.layernorm %x, %g, %b epsilon = 1.0e-5 : tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @layernorm_result_shape(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{the result 'tensor<8x2xbf16>' must have the shape of the input 'tensor<2x8xf32>'}}
  %0 = xf.layernorm %x, %g, %b epsilon = 1.0e-5 : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8x2xbf16>
  return
}

// -----

func.func @layernorm_grad_plus_type(%dy: tensor<2x8xbf16>, %x: tensor<2x8xf32>, %g: tensor<8xf32>,
                                    %r: tensor<2x8xbf16>) {
  // expected-error @+1 {{the added residual gradient must have x's type 'tensor<2x8xf32>', got 'tensor<2x8xbf16>'}}
  %0:3 = xf.layernorm_grad %dy, %x, %g plus %r : tensor<2x8xbf16> epsilon = 1.0e-5 : tensor<2x8xf32>, tensor<8xf32> dy tensor<2x8xbf16>
  return
}

// -----

func.func @layernorm_grad_dy_shape(%dy: tensor<2x4xbf16>, %x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{dy 'tensor<2x4xbf16>' must have the shape of x 'tensor<2x8xf32>'}}
  %0:3 = xf.layernorm_grad %dy, %x, %g epsilon = 1.0e-5 : tensor<2x8xf32>, tensor<8xf32> dy tensor<2x4xbf16>
  return
}

// -----

func.func @layernorm_eps(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{epsilon must be positive}}
  %0 = xf.layernorm %x, %g, %b epsilon = 0.0 : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @rmsnorm_gamma(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{gamma must be 'tensor<8xf32>'}}
  %0 = xf.rmsnorm %x, %g epsilon = 1.0e-5 : tensor<2x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @rmsnorm_eps(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{epsilon must be positive}}
  %0 = xf.rmsnorm %x, %g epsilon = -1.0 : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @attention_rank(%q: tensor<2x8x32xf32>, %k: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{q must have rank 4 ([batch, seq, heads, head_dim])}}
  %0 = "xf.attention"(%q, %k, %k) {scale = 1.0 : f64} : (tensor<2x8x32xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>) -> tensor<2x8x32xf32>
  return
}

// -----

func.func @attention_kv(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x4x8xf32>, %v: tensor<2x8x2x8xf32>) {
  // expected-error @+1 {{k and v must have the same type}}
  %0 = xf.attention %q, %k, %v causal scale = 1.0 : tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>
  return
}

// -----

func.func @attention_heads(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x3x8xf32>) {
  // expected-error @+1 {{kv heads (3) must divide query heads (4)}}
  %0 = xf.attention %q, %k, %k causal scale = 1.0 : tensor<2x8x4x8xf32>, tensor<2x8x3x8xf32>, tensor<2x8x3x8xf32>
  return
}

// -----

func.func @attention_seq(%q: tensor<2x8x4x8xf32>, %k: tensor<2x6x4x8xf32>) {
  // expected-error @+1 {{seq of q (8) and k/v (6) differ}}
  %0 = xf.attention %q, %k, %k scale = 1.0 : tensor<2x8x4x8xf32>, tensor<2x6x4x8xf32>, tensor<2x6x4x8xf32>
  return
}

// -----

// A partitioned op (xf.factor_axes) may hold a block of the query rows against
// every key, never more rows than keys.
func.func @attention_rows_more_than_keys(%q: tensor<2x8x4x8xf32>, %k: tensor<2x6x4x8xf32>) {
  // expected-error @+1 {{seq of q (8) and k/v (6) differ}}
  %0 = xf.attention %q, %k, %k causal scale = 1.0 {xf.factor_axes = [array<i16>, array<i16: 0>, array<i16>, array<i16>, array<i16>]} : tensor<2x8x4x8xf32>, tensor<2x6x4x8xf32>, tensor<2x6x4x8xf32>
  return
}

// -----

func.func @attention_headdim(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x4x4xf32>) {
  // expected-error @+1 {{head_dim of q (8) and k/v (4) differ}}
  %0 = xf.attention %q, %k, %k scale = 1.0 : tensor<2x8x4x8xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>
  return
}

// -----

func.func @attention_types(%q: tensor<2x8x4x8xf32>, %k: tensor<2x8x4x8xbf16>) {
  // expected-error @+1 {{q and k/v element types differ: 'f32' and 'bf16'}}
  %0 = xf.attention %q, %k, %k scale = 1.0 : tensor<2x8x4x8xf32>, tensor<2x8x4x8xbf16>, tensor<2x8x4x8xbf16>
  return
}

// -----

func.func @attention_scale(%q: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{scale must be positive}}
  %0 = xf.attention %q, %q, %q scale = 0.0 : tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>
  return
}

// -----

func.func @rope_rank(%x: tensor<2x8x32xf32>) {
  // expected-error @+1 {{input must have rank 4 ([batch, seq, heads, head_dim])}}
  %0 = xf.rope %x theta = 10000.0 : tensor<2x8x32xf32>
  return
}

// -----

func.func @rope_odd(%x: tensor<2x8x4x7xf32>) {
  // expected-error @+1 {{head_dim 7 must be even}}
  %0 = xf.rope %x theta = 10000.0 : tensor<2x8x4x7xf32>
  return
}

// -----

func.func @rope_theta(%x: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{theta must be positive}}
  %0 = xf.rope %x theta = 0.0 : tensor<2x8x4x8xf32>
  return
}

// -----

func.func @dropout_rate(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{rate 1.000000e+00 must be in [0, 1)}}
  %0 = xf.dropout %x rate = 1.0 key = 0 : tensor<2x8xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{cannot reshape 'tensor<2x8xf32>' (16 elements) to 'tensor<4x8xf32>' (32 elements)}}
  %0 = xf.reshape %x : tensor<2x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @reshape_type(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{element type changes from 'f32' to 'bf16'; use xf.cast}}
  %0 = xf.reshape %x : tensor<2x8xf32> -> tensor<16xbf16>
  return
}

// -----

func.func @transpose_len(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{permutation has 3 entries for a rank-2 input}}
  %0 = xf.transpose %x [0, 1, 2] : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @transpose_perm(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{permutation must hold each of 0..1 once}}
  %0 = xf.transpose %x [1, 1] : tensor<2x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @transpose_result(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{result type 'tensor<2x8xf32>' should be 'tensor<8x2xf32>'}}
  %0 = xf.transpose %x [1, 0] : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{cast must keep the shape}}
  %0 = xf.cast %x : tensor<2x8xf32> -> tensor<16xbf16>
  return
}

// -----

func.func @cast_int(%x: tensor<2x8xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = xf.cast %x : tensor<2x8xi32> -> tensor<2x8xf32>
  return
}

// -----

func.func @ce_targets(%l: tensor<2x8x64xf32>, %t: tensor<2x4xi32>) {
  // expected-error @+1 {{targets 'tensor<2x4xi32>' must have the shape of logits 'tensor<2x8x64xf32>' without its last dimension}}
  %0 = xf.cross_entropy %l, %t ignore_index = -100 : tensor<2x8x64xf32>, tensor<2x4xi32> -> tensor<f32>
  return
}

// -----

func.func @ce_mask(%l: tensor<2x8x64xf32>, %t: tensor<2x8xi32>, %m: tensor<8xf32>) {
  // expected-error @+1 {{mask 'tensor<8xf32>' must have the shape of targets 'tensor<2x8xi32>'}}
  %0 = xf.cross_entropy %l, %t mask %m ignore_index = -100 : tensor<2x8x64xf32>, tensor<2x8xi32>, tensor<8xf32> -> tensor<f32>
  return
}

// -----

func.func @ce_classes(%l: tensor<2x8x64xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{classes = 65 must be in [1, 64] (the vocabulary dimension)}}
  %0 = xf.cross_entropy %l, %t ignore_index = -100 classes = 65 : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<f32>
  return
}

// -----

func.func @lce_classes(%x: tensor<2x8x16xf32>, %w: tensor<16x64xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{classes = 0 must be in [1, 64] (the vocabulary dimension)}}
  %0 = xf.linear_cross_entropy %x, %w, %t ignore_index = -100 classes = 0 : tensor<2x8x16xf32>, tensor<16x64xf32>, tensor<2x8xi32> -> tensor<f32>
  return
}

// -----

func.func @ce_loss_type(%l: tensor<2x8x64xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{loss must be 'tensor<f32>' for logits of element type 'f32'}}
  %0 = xf.cross_entropy %l, %t ignore_index = -100 : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<f64>
  return
}

// -----

func.func @ce_loss_rank(%l: tensor<2x8x64xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float or 64-bit float values}}
  %0 = xf.cross_entropy %l, %t ignore_index = -100 : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<2xf32>
  return
}

// -----

func.func @lce_weight_rank(%x: tensor<2x8x16xf32>, %w: tensor<64xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{weight must have rank 2}}
  %0 = xf.linear_cross_entropy %x, %w, %t ignore_index = -100 : tensor<2x8x16xf32>, tensor<64xf32>, tensor<2x8xi32> -> tensor<f32>
  return
}

// -----

func.func @lce_hidden(%x: tensor<2x8x16xf32>, %w: tensor<64x16xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{hidden size of x (16) does not match the weight 'tensor<64x16xf32>' ([hidden, vocab])}}
  %0 = xf.linear_cross_entropy %x, %w, %t ignore_index = -100 : tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<2x8xi32> -> tensor<f32>
  return
}

// -----

func.func @lce_types(%x: tensor<2x8x16xf32>, %w: tensor<64x16xbf16>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{weight element type 'bf16' differs from x's 'f32'}}
  %0 = xf.linear_cross_entropy %x, %w, %t vocab_major ignore_index = -100 : tensor<2x8x16xf32>, tensor<64x16xbf16>, tensor<2x8xi32> -> tensor<f32>
  return
}

// -----

func.func @lce_targets(%x: tensor<2x8x16xf32>, %w: tensor<64x16xf32>, %t: tensor<16xi32>) {
  // expected-error @+1 {{targets 'tensor<16xi32>' must have the shape of x 'tensor<2x8x16xf32>' without its last dimension}}
  %0 = xf.linear_cross_entropy %x, %w, %t vocab_major ignore_index = -100 : tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<16xi32> -> tensor<f32>
  return
}

// -----

// expected-error @+1 {{parameter 'w' (argument #0) must be a statically shaped float tensor, got 'tensor<4xi32>'}}
func.func @param_type(%w: tensor<4xi32> {xf.param = #xf.param<name = "w", role = weight, init = zeros>}) {
  return
}

// -----

// expected-error @+1 {{parameter name 'w' is used by arguments #0 and #1}}
func.func @param_dup(%a: tensor<4xf32> {xf.param = #xf.param<name = "w", role = bias, init = zeros>},
                     %b: tensor<4xf32> {xf.param = #xf.param<name = "w", role = bias, init = zeros>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'xf.param' must be an #xf.param attribute}}
func.func @param_kind(%a: tensor<4xf32> {xf.param = "w"}) {
  return
}

// -----

// expected-error @+1 {{parameter 'w' has init = normal with std = 0.000000e+00; std must be positive}}
func.func @param_std(%a: tensor<4xf32> {xf.param = #xf.param<name = "w", role = weight, init = normal>}) {
  return
}

// -----

// expected-error @+1 {{parameter 'b': std applies only to init = normal}}
func.func @param_std_zeros(%a: tensor<4xf32> {xf.param = #xf.param<name = "b", role = bias, init = zeros, std = 0.5>}) {
  return
}

// -----

// expected-error @+1 {{parameter name must not be empty}}
func.func @param_name(%a: tensor<4xf32> {xf.param = #xf.param<name = "", role = bias, init = zeros>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'xf.input' must be one of "tokens", "targets", "token_types", "loss_mask"}}
func.func @input_kind(%a: tensor<4xi32> {xf.input = "labels"}) {
  return
}

// -----

// expected-error @+1 {{input 'tokens' (argument #0) must have i32 elements, got 'tensor<4xf32>'}}
func.func @input_type(%a: tensor<4xf32> {xf.input = "tokens"}) {
  return
}

// -----

// expected-error @+1 {{input 'loss_mask' (argument #0) must have a float elements, got 'tensor<4xi32>'}}
func.func @input_mask_type(%a: tensor<4xi32> {xf.input = "loss_mask"}) {
  return
}

// -----

// expected-error @+1 {{unknown xf argument attribute 'xf.parameter'}}
func.func @unknown_attr(%a: tensor<4xf32> {xf.parameter = 1}) {
  return
}

// -----

func.func @bad_role(%a: tensor<4xf32> {
    // expected-error @+2 {{expected ::shardc::xf::ParamRole to be one of: weight, bias, norm_scale, embedding}}
    // expected-error @+1 {{failed to parse Xf_ParamAttr parameter 'role'}}
    xf.param = #xf.param<name = "w", role = kernel, init = zeros>}) {
  return
}

// -----

func.func @multi_adamw_wide_grad(%p0: tensor<4x8xbf16>, %g0: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<i32>) {
  // expected-error @+1 {{gradient #0 'tensor<4x8xf32>' must be the parameter's type 'tensor<4x8xbf16>' or its shape in a narrower float}}
  %p, %m, %v = xf.multi_adamw params(%p0) grads(%g0) m(%p0) v(%p0) lr %lr grad_scale %lr step %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 1.000000e-01 decay = [1] copies = [] : tensor<4x8xbf16> grads tensor<4x8xf32>
  return
}

// -----

func.func @multi_adamw_grad_shape(%p0: tensor<4x8xf32>, %g0: tensor<8x4xbf16>, %lr: tensor<f32>, %step: tensor<i32>) {
  // expected-error @+1 {{gradient #0 'tensor<8x4xbf16>' must be the parameter's type 'tensor<4x8xf32>' or its shape in a narrower float}}
  %p, %m, %v = xf.multi_adamw params(%p0) grads(%g0) m(%p0) v(%p0) lr %lr grad_scale %lr step %step beta1 = 9.000000e-01 beta2 = 9.500000e-01 epsilon = 1.000000e-08 weight_decay = 1.000000e-01 decay = [1] copies = [] : tensor<4x8xf32> grads tensor<8x4xbf16>
  return
}

// -----

func.func @packed_attention_rank(%qkv: tensor<2x8x4x24xf32>) {
  // expected-error @+1 {{qkv must have rank 5 ([batch, seq, kv_heads, group + 2, head_dim])}}
  %0 = "xf.packed_attention"(%qkv) {scale = 1.0 : f64} : (tensor<2x8x4x24xf32>) -> tensor<2x8x4x8xf32>
  return
}

// -----

func.func @packed_attention_slots(%qkv: tensor<2x8x4x2x8xf32>) {
  // expected-error @+1 {{qkv's slot dimension (2) must hold at least one query, a key and a value}}
  %0 = xf.packed_attention %qkv scale = 1.0 : tensor<2x8x4x2x8xf32> -> tensor<2x8x0x8xf32>
  return
}

// -----

func.func @packed_attention_result(%qkv: tensor<2x8x2x4x8xf32>) {
  // expected-error @+1 {{result must be 'tensor<2x8x4x8xf32>', got 'tensor<2x8x2x8xf32>'}}
  %0 = xf.packed_attention %qkv causal scale = 1.0 : tensor<2x8x2x4x8xf32> -> tensor<2x8x2x8xf32>
  return
}

// -----

func.func @packed_attention_grad_dout(%qkv: tensor<2x8x2x3x8xf32>, %d: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{dout and out must be 'tensor<2x8x2x8xf32>', got 'tensor<2x8x4x8xf32>'}}
  %0 = xf.packed_attention_grad %d, %qkv, %d scale = 1.0 : tensor<2x8x4x8xf32>, tensor<2x8x2x3x8xf32>
  return
}

// -----

func.func @concat_dims(%a: tensor<4x2xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+1 {{operand #1 differs from operand #0 in dim 0 (3 vs 4)}}
  %0 = xf.concat %a, %b dim = 1 : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @concat_result(%a: tensor<4x2xf32>) {
  // expected-error @+1 {{result must be 'tensor<4x4xf32>', got 'tensor<4x3xf32>'}}
  %0 = xf.concat %a, %a dim = 1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<4x2xf32>) {
  // expected-error @+1 {{dim 2 is outside the operands' rank 2}}
  %0 = xf.concat %a dim = 2 : tensor<4x2xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @split_sizes(%a: tensor<4x6xf32>) {
  // expected-error @+1 {{the results' sizes in dim 1 sum to 5, not the operand's 6}}
  %0:2 = xf.split %a dim = 1 : tensor<4x6xf32> -> tensor<4x2xf32>, tensor<4x3xf32>
  return
}

// -----

func.func @split_dims(%a: tensor<4x6xf32>) {
  // expected-error @+1 {{result #0 differs from the operand in dim 0 (2 vs 4)}}
  %0:2 = xf.split %a dim = 1 : tensor<4x6xf32> -> tensor<2x3xf32>, tensor<4x3xf32>
  return
}
