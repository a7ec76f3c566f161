// RUN: %dnnc opt %s -p cudnn-group,assign-layouts | %filecheck %s
// RUN: %dnnc opt %s -p cudnn-group,assign-layouts,simplify-shapes,dce | %filecheck %s --check-prefix=CANCEL
// RUN: %dnnc opt %s -p cudnn-group,assign-layouts,simplify-shapes,fold-params,dce --random-params | %filecheck %s --check-prefix=FOLD

// One conv group: the activation and the weight enter channels-last (NHWC, KRSC)
// through explicit transposes, the group transposes them back inside (so it means
// what it meant), and its result leaves NHWC and is transposed back to NCHW. The
// [1, C, 1, 1] bias keeps its layout.
// CHECK-LABEL: func.func @single
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x8x6xf32>)
// CHECK-NEXT:    %[[W:.*]] = tcp.param @w
// CHECK-NEXT:    %[[B:.*]] = tcp.param @b
// CHECK-NEXT:    %[[XT:.*]] = tcp.transpose %[[X]] {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x3x8x6xf32> -> tensor<2x8x6x3xf32>
// CHECK-NEXT:    %[[WT:.*]] = tcp.transpose %[[W]] {permutation = array<i64: 0, 2, 3, 1>} : tensor<5x3x3x1xf32> -> tensor<5x3x1x3xf32>
// CHECK-NEXT:    %[[G:.*]] = tcp.isolated_group(%[[XT]], %[[WT]], %[[B]]) {backend = "cudnn", kind = "conv_bias_relu"} : (tensor<2x8x6x3xf32>, tensor<5x3x1x3xf32>, tensor<1x5x1x1xf32>) -> tensor<2x8x6x5xf32>
// CHECK-NEXT:    ^bb0(%[[XA:.*]]: tensor<2x8x6x3xf32>, %[[WA:.*]]: tensor<5x3x1x3xf32>, %[[BA:.*]]: tensor<1x5x1x1xf32>):
// CHECK-DAG:       %[[WN:.*]] = tcp.transpose %[[WA]] {permutation = array<i64: 0, 3, 1, 2>} : tensor<5x3x1x3xf32> -> tensor<5x3x3x1xf32>
// CHECK-DAG:       %[[XN:.*]] = tcp.transpose %[[XA]] {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x8x6x3xf32> -> tensor<2x3x8x6xf32>
// CHECK:           %[[C:.*]] = tcp.conv2d %[[XN]], %[[WN]]
// CHECK-NEXT:      tcp.broadcast %[[BA]]
// CHECK-NEXT:      tcp.add
// CHECK-NEXT:      %[[R:.*]] = tcp.clamp
// CHECK-NEXT:      %[[RT:.*]] = tcp.transpose %[[R]] {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x5x8x6xf32> -> tensor<2x8x6x5xf32>
// CHECK-NEXT:      tcp.yield %[[RT]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[Y:.*]] = tcp.transpose %[[G]] {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x8x6x5xf32> -> tensor<2x5x8x6xf32>
// CHECK-NEXT:    func.return %[[Y]]
// The weight transpose becomes a stored KRSC parameter at compile time.
// FOLD-LABEL: func.func @single
// FOLD-NOT:      tcp.param @w :
// FOLD-DAG:      %[[WF:.*]] = tcp.param @w.folded : tensor<5x3x1x3xf32>
// FOLD-DAG:      %[[XT:.*]] = tcp.transpose %x
// FOLD:          tcp.isolated_group(%[[XT]], %[[WF]], %{{.*}})
// FOLD-NOT:      tcp.transpose %[[WF]]
// FOLD:          func.return
func.func @single(%x: tensor<2x3x8x6xf32>) -> tensor<2x5x8x6xf32> {
  %w = tcp.param @w : tensor<5x3x3x1xf32>
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x8x6xf32>, tensor<5x3x3x1xf32>) -> tensor<2x5x8x6xf32>
  %b = tcp.param @b : tensor<1x5x1x1xf32>
  %bb = tcp.broadcast %b : tensor<1x5x1x1xf32> to tensor<2x5x8x6xf32>
  %a = tcp.add %c, %bb : tensor<2x5x8x6xf32>
  %r = tcp.clamp %a {min = 0.000000e+00 : f64} : tensor<2x5x8x6xf32>
  func.return %r : tensor<2x5x8x6xf32>
}

// A residual block: conv+relu -> conv + block input -> relu. Before simplify-shapes the
// block input is transposed to NHWC once, though two groups read it (the first conv and
// the residual add); between the groups the result goes back to NCHW and forth to NHWC.
// CHECK-LABEL: func.func @chain
// CHECK:         %[[XT:.*]] = tcp.transpose %x {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NOT:     tcp.transpose %x
// CHECK:         %[[G1:.*]] = tcp.isolated_group(%[[XT]], %{{.*}}) {backend = "cudnn", kind = "conv_relu"}
// CHECK:         %[[N:.*]] = tcp.transpose %[[G1]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK:         %[[H:.*]] = tcp.transpose %[[N]] {permutation = array<i64: 0, 2, 3, 1>}
// CHECK:         tcp.isolated_group(%[[H]], %{{.*}}, %[[XT]]) {backend = "cudnn", kind = "conv_add_relu"}
// After it, the pair between the groups is gone: the second group reads the first
// one's NHWC result, and only the program input and output are transposed.
// CANCEL-LABEL: func.func @chain
// CANCEL-SAME:    (%[[X:.*]]: tensor<1x8x5x5xf32>)
// CANCEL:         %[[XT:.*]] = tcp.transpose %[[X]] {permutation = array<i64: 0, 2, 3, 1>}
// CANCEL-NOT:     tcp.transpose %[[X]]
// CANCEL:         %[[G1:.*]] = tcp.isolated_group(%[[XT]], %{{.*}}) {backend = "cudnn", kind = "conv_relu"}
// CANCEL:         tcp.yield
// CANCEL-NEXT:    }
// CANCEL-NOT:     tcp.transpose %[[G1]]
// CANCEL:         %[[G2:.*]] = tcp.isolated_group(%[[G1]], %{{.*}}, %[[XT]]) {backend = "cudnn", kind = "conv_add_relu"} : (tensor<1x5x5x4xf32>, tensor<8x3x3x4xf32>, tensor<1x5x5x8xf32>) -> tensor<1x5x5x8xf32>
// CANCEL:         tcp.yield
// CANCEL-NEXT:    }
// CANCEL-NEXT:    %[[Y:.*]] = tcp.transpose %[[G2]] {permutation = array<i64: 0, 3, 1, 2>}
// CANCEL-NEXT:    func.return %[[Y]]
// With fold-params both weights are stored channels-last.
// FOLD-LABEL: func.func @chain
// FOLD:          %[[XT:.*]] = tcp.transpose %x
// FOLD-NEXT:     %[[W1:.*]] = tcp.param @w1.folded : tensor<4x1x1x8xf32>
// FOLD-NEXT:     %[[G1:.*]] = tcp.isolated_group(%[[XT]], %[[W1]])
// FOLD:          tcp.yield
// FOLD-NEXT:     }
// FOLD-NEXT:     %[[W2:.*]] = tcp.param @w2.folded : tensor<8x3x3x4xf32>
// FOLD-NEXT:     %[[G2:.*]] = tcp.isolated_group(%[[G1]], %[[W2]], %[[XT]])
// FOLD:          tcp.yield
// FOLD-NEXT:     }
// FOLD-NEXT:     tcp.transpose %[[G2]]
// FOLD-NEXT:     func.return
func.func @chain(%x: tensor<1x8x5x5xf32>) -> tensor<1x8x5x5xf32> {
  %w1 = tcp.param @w1 : tensor<4x8x1x1xf32>
  %c1 = tcp.conv2d %x, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x5x5xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x5x5xf32>
  %r1 = tcp.clamp %c1 {min = 0.000000e+00 : f64} : tensor<1x4x5x5xf32>
  %w2 = tcp.param @w2 : tensor<8x4x3x3xf32>
  %c2 = tcp.conv2d %r1, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x5x5xf32>
  %s = tcp.add %c2, %x : tensor<1x8x5x5xf32>
  %r2 = tcp.clamp %s {min = 0.000000e+00 : f64} : tensor<1x8x5x5xf32>
  func.return %r2 : tensor<1x8x5x5xf32>
}

// A non-cuDNN op between two conv groups (a max pool needs NCHW) keeps the pair of
// transposes around it.
// CANCEL-LABEL: func.func @around_pool
// CANCEL:         %[[G1:.*]] = tcp.isolated_group
// CANCEL:         %[[N:.*]] = tcp.transpose %[[G1]] {permutation = array<i64: 0, 3, 1, 2>}
// CANCEL-NEXT:    %[[P:.*]] = tcp.max_pool2d %[[N]]
// CANCEL:         %[[PT:.*]] = tcp.transpose %[[P]] {permutation = array<i64: 0, 2, 3, 1>}
// CANCEL:         tcp.isolated_group(%[[PT]],
func.func @around_pool(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32> {
  %w1 = tcp.param @p1 : tensor<2x2x1x1xf32>
  %c1 = tcp.conv2d %x, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x8x8xf32>
  %p = tcp.max_pool2d %c1 {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false} : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  %w2 = tcp.param @p2 : tensor<2x2x1x1xf32>
  %c2 = tcp.conv2d %p, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %c2 : tensor<1x2x4x4xf32>
}

// Matmul and layer norm groups keep their layouts.
// CHECK-LABEL: func.func @matmul_untouched
// CHECK-NOT:     tcp.transpose
// CHECK:         func.return
func.func @matmul_untouched(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = tcp.param @m : tensor<8x8xf32>
  %mm = tcp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = tcp.clamp %mm {min = 0.000000e+00 : f64} : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// fp16 inputs of few channels are zero-padded in C, weights to match: 3 channels to 4
// (cuDNN's first-layer engines), 5 to 8 (tensor cores' multiple); 8 stay as they are.
// CHECK-LABEL: func.func @padded_channels
// CHECK:         tcp.pad {{.*}} {low = array<i64: 0, 0, 0, 0>, high = array<i64: 0, 0, 0, 1>, value = 0.000000e+00 : f64} : tensor<2x9x9x3xf16> -> tensor<2x9x9x4xf16>
// CHECK:         tcp.pad {{.*}} : tensor<16x7x7x3xf16> -> tensor<16x7x7x4xf16>
// CHECK:         tcp.pad {{.*}} {low = array<i64: 0, 0, 0, 0>, high = array<i64: 0, 0, 0, 3>, value = 0.000000e+00 : f64} : tensor<2x9x9x5xf16> -> tensor<2x9x9x8xf16>
// CHECK:         tcp.pad {{.*}} : tensor<16x3x3x5xf16> -> tensor<16x3x3x8xf16>
// CHECK-NOT:     tcp.pad
// CHECK:         func.return
func.func @padded_channels(%x: tensor<2x3x9x9xf16>, %w: tensor<16x3x7x7xf16>, %y: tensor<2x5x9x9xf16>, %v: tensor<16x5x3x3xf16>, %z: tensor<2x8x9x9xf16>, %u: tensor<16x8x3x3xf16>) -> (tensor<2x16x5x5xf16>, tensor<2x16x9x9xf16>, tensor<2x16x9x9xf16>) {
  %a = tcp.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 3, 3, 3, 3>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x9x9xf16>, tensor<16x3x7x7xf16>) -> tensor<2x16x5x5xf16>
  %b = tcp.conv2d %y, %v {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x5x9x9xf16>, tensor<16x5x3x3xf16>) -> tensor<2x16x9x9xf16>
  %c = tcp.conv2d %z, %u {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x9x9xf16>, tensor<16x8x3x3xf16>) -> tensor<2x16x9x9xf16>
  func.return %a, %b, %c : tensor<2x16x5x5xf16>, tensor<2x16x9x9xf16>, tensor<2x16x9x9xf16>
}
