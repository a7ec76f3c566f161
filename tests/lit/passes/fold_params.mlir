// RUN: %dnnc opt %s -p fold-params,dce --random-params | %filecheck %s

// A transposed weight becomes a stored, pre-transposed parameter.
// CHECK-LABEL: func.func @transposed_weight
// CHECK-NEXT:    %[[W:.*]] = tcp.param @fc.weight.folded : tensor<4x3xf32>
// CHECK-NEXT:    %[[Y:.*]] = tcp.matmul %{{.*}}, %[[W]]
// CHECK-NEXT:    func.return %[[Y]]
func.func @transposed_weight(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = tcp.param @fc.weight : tensor<3x4xf32>
  %t = tcp.transpose %w {permutation = array<i64: 1, 0>} : tensor<3x4xf32> -> tensor<4x3xf32>
  %y = tcp.matmul %x, %t : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// A broadcast at the boundary is kept; its (small) input is folded.
// CHECK-LABEL: func.func @bias_broadcast
// CHECK-NEXT:    %[[B:.*]] = tcp.param @b.folded : tensor<1x3xf32>
// CHECK-NEXT:    %[[BB:.*]] = tcp.broadcast %[[B]] : tensor<1x3xf32> to tensor<64x3xf32>
// CHECK-NEXT:    tcp.add %{{.*}}, %[[BB]]
func.func @bias_broadcast(%x: tensor<64x3xf32>) -> tensor<64x3xf32> {
  %b = tcp.param @b : tensor<3xf32>
  %two = tcp.constant {value = 2.000000e+00 : f64} : tensor<3xf32>
  %b2 = tcp.mul %b, %two : tensor<3xf32>
  %r = tcp.reshape %b2 : tensor<3xf32> to tensor<1x3xf32>
  %bb = tcp.broadcast %r : tensor<1x3xf32> to tensor<64x3xf32>
  %y = tcp.add %x, %bb : tensor<64x3xf32>
  func.return %y : tensor<64x3xf32>
}

// Position embeddings of a fixed sequence length: gather(table, iota) folds into
// the rows actually used.
// CHECK-LABEL: func.func @position_embedding
// CHECK-NEXT:    %[[P:.*]] = tcp.param @wpe.folded : tensor<4x8xf32>
// CHECK-NEXT:    tcp.add %{{.*}}, %[[P]]
func.func @position_embedding(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %pos = tcp.iota {start = 0 : i64, step = 1 : i64} : tensor<4xi64>
  %table = tcp.param @wpe : tensor<16x8xf32>
  %e = tcp.gather %table, %pos {axis = 0 : i64} : (tensor<16x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  %y = tcp.add %x, %e : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// Constant-only and expanding subgraphs stay as code: folding them would store
// more than any parameter they come from.
// CHECK-LABEL: func.func @no_growth
// CHECK:         tcp.iota
// CHECK:         tcp.cast
// CHECK:         %[[S:.*]] = tcp.param @small : tensor<2x1xf32>
// CHECK:         tcp.broadcast %[[S]]
// CHECK-NOT:     .folded
func.func @no_growth(%x: tensor<8xf32>, %y: tensor<2x8xf32>) -> (tensor<8xf32>, tensor<2x8xf32>) {
  %i = tcp.iota {start = 0 : i64, step = 1 : i64} : tensor<8xi64>
  %f = tcp.cast %i : tensor<8xi64> to tensor<8xf32>
  %a = tcp.add %x, %f : tensor<8xf32>
  %s = tcp.param @small : tensor<2x1xf32>
  %sb = tcp.broadcast %s : tensor<2x1xf32> to tensor<2x8xf32>
  %e = tcp.exp %sb : tensor<2x8xf32>
  %b = tcp.mul %y, %e : tensor<2x8xf32>
  func.return %a, %b : tensor<8xf32>, tensor<2x8xf32>
}

// RUN: %dnnc opt %s -p "fold-params{max-growth=8.0},dce" --random-params | %filecheck %s --check-prefix=GROW
// With max-growth=8 the exp of the broadcast small parameter (16 elements from 2) is folded.
// GROW-LABEL: func.func @no_growth
// GROW:         tcp.iota
// GROW:         %[[E:.*]] = tcp.param @small.folded : tensor<2x8xf32>
// GROW-NEXT:    tcp.mul %{{.*}}, %[[E]]
