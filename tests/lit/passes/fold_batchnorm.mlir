// RUN: %dnnc opt %s -p fold-batchnorm | %filecheck %s
// RUN: %dnnc opt %s -p fold-batchnorm,simplify-shapes,fold-params,dce --random-params | %filecheck %s --check-prefix=FOLDED

// conv -> batch_norm: the weight is scaled per output channel, the shift becomes
// a broadcast bias add, and the batch norm is gone.
// CHECK-LABEL: func.func @conv_bn
// CHECK-NOT:     tcp.batch_norm
// CHECK:         %[[EPS:.*]] = tcp.constant {value = 1.000000e-05 : f64} : tensor<4xf32>
// CHECK:         %[[VE:.*]] = tcp.add %[[VAR:.*]], %[[EPS]] : tensor<4xf32>
// CHECK:         %[[R:.*]] = tcp.rsqrt %[[VE]] : tensor<4xf32>
// CHECK:         %[[S:.*]] = tcp.mul %[[GAMMA:.*]], %[[R]] : tensor<4xf32>
// CHECK:         %[[WS:.*]] = tcp.reshape %[[S]] : tensor<4xf32> to tensor<4x1x1x1xf32>
// CHECK:         %[[WB:.*]] = tcp.broadcast %[[WS]] : tensor<4x1x1x1xf32> to tensor<4x3x3x3xf32>
// CHECK:         %[[W2:.*]] = tcp.mul %[[W:.*]], %[[WB]] : tensor<4x3x3x3xf32>
// CHECK:         %[[C:.*]] = tcp.conv2d %[[X:.*]], %[[W2]]
// CHECK:         %[[B:.*]] = tcp.broadcast %{{.*}} : tensor<1x4x1x1xf32> to tensor<1x4x8x8xf32>
// CHECK:         %[[Y:.*]] = tcp.add %[[C]], %[[B]] : tensor<1x4x8x8xf32>
// CHECK:         func.return %[[Y]]

// After parameter folding only the conv, one bias parameter and the add remain.
// FOLDED-LABEL: func.func @conv_bn
// FOLDED-NEXT:    %[[W:.*]] = tcp.param @conv.weight.folded : tensor<4x3x3x3xf32>
// FOLDED-NEXT:    %[[C:.*]] = tcp.conv2d %{{.*}}, %[[W]]
// FOLDED-NEXT:    %[[B:.*]] = tcp.param @{{.*}}.folded : tensor<1x4x1x1xf32>
// FOLDED-NEXT:    %[[BB:.*]] = tcp.broadcast %[[B]] : tensor<1x4x1x1xf32> to tensor<1x4x8x8xf32>
// FOLDED-NEXT:    %[[Y:.*]] = tcp.add %[[C]], %[[BB]] : tensor<1x4x8x8xf32>
// FOLDED-NEXT:    func.return %[[Y]]
func.func @conv_bn(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = tcp.param @conv.weight : tensor<4x3x3x3xf32>
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %g = tcp.param @bn.weight : tensor<4xf32>
  %b = tcp.param @bn.bias : tensor<4xf32>
  %m = tcp.param @bn.running_mean : tensor<4xf32>
  %v = tcp.param @bn.running_var : tensor<4xf32>
  %y = tcp.batch_norm %c, %g, %b, %m, %v {epsilon = 1.000000e-05 : f64} : tensor<1x4x8x8xf32>, tensor<4xf32>
  func.return %y : tensor<1x4x8x8xf32>
}

// A conv bias (broadcast add) is rescaled and merged with the shift.
// CHECK-LABEL: func.func @conv_bias_bn
// CHECK-NOT:     tcp.batch_norm
// CHECK:         %[[BIAS:.*]] = tcp.mul %[[CB:.*]], %{{.*}} : tensor<1x4x1x1xf32>
// CHECK:         %[[BIAS2:.*]] = tcp.add %[[BIAS]], %{{.*}} : tensor<1x4x1x1xf32>
// CHECK:         tcp.broadcast %[[BIAS2]] : tensor<1x4x1x1xf32> to tensor<1x4x8x8xf32>
// FOLDED-LABEL: func.func @conv_bias_bn
// FOLDED-NOT:     tcp.batch_norm
// FOLDED-COUNT-2: tcp.param
// FOLDED-NOT:     tcp.param
// FOLDED:         func.return
func.func @conv_bias_bn(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = tcp.param @conv.weight : tensor<4x3x3x3xf32>
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %cb = tcp.param @conv.bias : tensor<1x4x1x1xf32>
  %cbb = tcp.broadcast %cb : tensor<1x4x1x1xf32> to tensor<1x4x8x8xf32>
  %cc = tcp.add %c, %cbb : tensor<1x4x8x8xf32>
  %g = tcp.param @bn.weight : tensor<4xf32>
  %b = tcp.param @bn.bias : tensor<4xf32>
  %m = tcp.param @bn.running_mean : tensor<4xf32>
  %v = tcp.param @bn.running_var : tensor<4xf32>
  %y = tcp.batch_norm %cc, %g, %b, %m, %v {epsilon = 1.000000e-05 : f64} : tensor<1x4x8x8xf32>, tensor<4xf32>
  func.return %y : tensor<1x4x8x8xf32>
}

// matmul -> batch_norm over the features (BatchNorm1d after a Linear): the weight
// columns are scaled.
// CHECK-LABEL: func.func @matmul_bn
// CHECK-NOT:     tcp.batch_norm
// CHECK:         tcp.reshape %{{.*}} : tensor<5xf32> to tensor<1x5xf32>
// CHECK:         tcp.broadcast %{{.*}} : tensor<1x5xf32> to tensor<7x5xf32>
// CHECK:         tcp.matmul
// FOLDED-LABEL: func.func @matmul_bn
// FOLDED-NOT:     tcp.batch_norm
func.func @matmul_bn(%x: tensor<2x7xf32>) -> tensor<2x5xf32> {
  %w = tcp.param @fc.weight : tensor<7x5xf32>
  %c = tcp.matmul %x, %w : (tensor<2x7xf32>, tensor<7x5xf32>) -> tensor<2x5xf32>
  %g = tcp.param @bn1d.weight : tensor<5xf32>
  %b = tcp.param @bn1d.bias : tensor<5xf32>
  %m = tcp.param @bn1d.running_mean : tensor<5xf32>
  %v = tcp.param @bn1d.running_var : tensor<5xf32>
  %y = tcp.batch_norm %c, %g, %b, %m, %v {epsilon = 1.000000e-03 : f64} : tensor<2x5xf32>, tensor<5xf32>
  func.return %y : tensor<2x5xf32>
}

// The conv result is used twice: folding would change the other use, so nothing happens.
// CHECK-LABEL: func.func @conv_two_uses
// CHECK:         tcp.batch_norm
// FOLDED-LABEL: func.func @conv_two_uses
// FOLDED:         tcp.batch_norm
func.func @conv_two_uses(%x: tensor<1x3x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %w = tcp.param @conv.weight : tensor<4x3x3x3xf32>
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %g = tcp.param @bn.weight : tensor<4xf32>
  %b = tcp.param @bn.bias : tensor<4xf32>
  %m = tcp.param @bn.running_mean : tensor<4xf32>
  %v = tcp.param @bn.running_var : tensor<4xf32>
  %y = tcp.batch_norm %c, %g, %b, %m, %v {epsilon = 1.000000e-05 : f64} : tensor<1x4x8x8xf32>, tensor<4xf32>
  func.return %y, %c : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// A weight that is a run-time input is not folded (it would move work to run time).
// CHECK-LABEL: func.func @runtime_weight
// CHECK:         tcp.batch_norm
func.func @runtime_weight(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %g = tcp.param @bn.weight : tensor<4xf32>
  %b = tcp.param @bn.bias : tensor<4xf32>
  %m = tcp.param @bn.running_mean : tensor<4xf32>
  %v = tcp.param @bn.running_var : tensor<4xf32>
  %y = tcp.batch_norm %c, %g, %b, %m, %v {epsilon = 1.000000e-05 : f64} : tensor<1x4x8x8xf32>, tensor<4xf32>
  func.return %y : tensor<1x4x8x8xf32>
}
