// RUN: %dnnc opt %s -p merge-sibling-products,dce --random-params | %filecheck %s

// An attention layer's query, key and value projections of one input, each reshaped on
// its own (three nn.Linear of a 3-D input): one product over the three weights side by
// side, the three biases added above the slices (the key's add has its operands swapped).
// CHECK-LABEL: func.func @qkv
// CHECK-NEXT:    %[[X:.*]] = tcp.reshape %x : tensor<2x16x64xf16> to tensor<32x64xf16>
// CHECK-NEXT:    %[[W:.*]] = tcp.param @q.weight.merged : tensor<64x128xf16>
// CHECK-NEXT:    %[[Y:.*]] = tcp.matmul %[[X]], %[[W]] : (tensor<32x64xf16>, tensor<64x128xf16>) -> tensor<32x128xf16>
// CHECK-NEXT:    %[[B:.*]] = tcp.param @q.bias.merged : tensor<1x128xf16>
// CHECK-NEXT:    %[[BB:.*]] = tcp.broadcast %[[B]] : tensor<1x128xf16> to tensor<32x128xf16>
// CHECK-NEXT:    %[[Z:.*]] = tcp.add %[[Y]], %[[BB]] : tensor<32x128xf16>
// CHECK-NEXT:    %[[Q:.*]] = tcp.slice %[[Z]] {starts = array<i64: 0, 0>, limits = array<i64: 32, 64>, strides = array<i64: 1, 1>}
// CHECK-NEXT:    %[[K:.*]] = tcp.slice %[[Z]] {starts = array<i64: 0, 64>, limits = array<i64: 32, 96>, strides = array<i64: 1, 1>}
// CHECK-NEXT:    %[[V:.*]] = tcp.slice %[[Z]] {starts = array<i64: 0, 96>, limits = array<i64: 32, 128>, strides = array<i64: 1, 1>}
// CHECK-NEXT:    func.return %[[Q]], %[[K]], %[[V]]
func.func @qkv(%x: tensor<2x16x64xf16>) -> (tensor<32x64xf16>, tensor<32x32xf16>, tensor<32x32xf16>) {
  %xq = tcp.reshape %x : tensor<2x16x64xf16> to tensor<32x64xf16>
  %wq = tcp.param @q.weight : tensor<64x64xf16>
  %q = tcp.matmul %xq, %wq : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  %bq = tcp.param @q.bias : tensor<1x64xf16>
  %bqb = tcp.broadcast %bq : tensor<1x64xf16> to tensor<32x64xf16>
  %qb = tcp.add %q, %bqb : tensor<32x64xf16>
  %xk = tcp.reshape %x : tensor<2x16x64xf16> to tensor<32x64xf16>
  %wk = tcp.param @k.weight : tensor<64x32xf16>
  %k = tcp.matmul %xk, %wk : (tensor<32x64xf16>, tensor<64x32xf16>) -> tensor<32x32xf16>
  %bk = tcp.param @k.bias : tensor<1x32xf16>
  %bkb = tcp.broadcast %bk : tensor<1x32xf16> to tensor<32x32xf16>
  %kb = tcp.add %bkb, %k : tensor<32x32xf16>
  %xv = tcp.reshape %x : tensor<2x16x64xf16> to tensor<32x64xf16>
  %wv = tcp.param @v.weight : tensor<64x32xf16>
  %v = tcp.matmul %xv, %wv : (tensor<32x64xf16>, tensor<64x32xf16>) -> tensor<32x32xf16>
  %bv = tcp.param @v.bias : tensor<1x32xf16>
  %bvb = tcp.broadcast %bv : tensor<1x32xf16> to tensor<32x32xf16>
  %vb = tcp.add %v, %bvb : tensor<32x32xf16>
  func.return %qb, %kb, %vb : tensor<32x64xf16>, tensor<32x32xf16>, tensor<32x32xf16>
}

// A gated MLP's gate and up products: only the up product has a bias, so the gate gets
// a zero one and both are added above the slices; a product of other rows is left alone.
// CHECK-LABEL: func.func @gate_up
// CHECK-NEXT:    %[[W:.*]] = tcp.param @gate.weight.merged : tensor<64x256xf16>
// CHECK-NEXT:    %[[Y:.*]] = tcp.matmul %x, %[[W]] : (tensor<8x64xf16>, tensor<64x256xf16>) -> tensor<8x256xf16>
// CHECK-NEXT:    %[[B:.*]] = tcp.param @gate.weight.zero_bias.merged : tensor<1x256xf16>
// CHECK-NEXT:    %[[BB:.*]] = tcp.broadcast %[[B]] : tensor<1x256xf16> to tensor<8x256xf16>
// CHECK-NEXT:    %[[Z:.*]] = tcp.add %[[Y]], %[[BB]] : tensor<8x256xf16>
// CHECK-NEXT:    %[[G:.*]] = tcp.slice %[[Z]] {starts = array<i64: 0, 0>, limits = array<i64: 8, 128>
// CHECK-NEXT:    %[[U:.*]] = tcp.slice %[[Z]] {starts = array<i64: 0, 128>, limits = array<i64: 8, 256>
// CHECK-NEXT:    %[[S:.*]] = tcp.silu %[[G]]
// CHECK-NEXT:    %[[M:.*]] = tcp.mul %[[S]], %[[U]]
// CHECK-NEXT:    %[[WO:.*]] = tcp.param @other.weight
// CHECK-NEXT:    %[[O:.*]] = tcp.matmul %other, %[[WO]] : (tensor<8x64xf16>, tensor<64x128xf16>) -> tensor<8x128xf16>
// CHECK-NEXT:    func.return %[[M]], %[[O]]
func.func @gate_up(%x: tensor<8x64xf16>, %other: tensor<8x64xf16>) -> (tensor<8x128xf16>, tensor<8x128xf16>) {
  %wg = tcp.param @gate.weight : tensor<64x128xf16>
  %g = tcp.matmul %x, %wg : (tensor<8x64xf16>, tensor<64x128xf16>) -> tensor<8x128xf16>
  %s = tcp.silu %g : tensor<8x128xf16>
  %wu = tcp.param @up.weight : tensor<64x128xf16>
  %u = tcp.matmul %x, %wu : (tensor<8x64xf16>, tensor<64x128xf16>) -> tensor<8x128xf16>
  %bu = tcp.param @up.bias : tensor<1x128xf16>
  %bub = tcp.broadcast %bu : tensor<1x128xf16> to tensor<8x128xf16>
  %ub = tcp.add %u, %bub : tensor<8x128xf16>
  %m = tcp.mul %s, %ub : tensor<8x128xf16>
  %wo = tcp.param @other.weight : tensor<64x128xf16>
  %o = tcp.matmul %other, %wo : (tensor<8x64xf16>, tensor<64x128xf16>) -> tensor<8x128xf16>
  func.return %m, %o : tensor<8x128xf16>, tensor<8x128xf16>
}
