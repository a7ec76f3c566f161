// RUN: %dnnc opt %s -p sink-transposes,simplify-shapes,dce | %filecheck %s

// A channels-last epilogue between two NCHW convolutions, as JAX's NHWC programs
// import: the transposes move below the bias add and the ReLU and cancel; the bias
// broadcast is taken to NCHW (a reshape of the parameter, for fold-params).
// CHECK-LABEL: func.func @nhwc_epilogue
// CHECK-NOT:     tcp.transpose
// CHECK:         %[[C:.*]] = tcp.conv2d
// CHECK:         %[[B:.*]] = tcp.param @b : tensor<1x1x1x8xf32>
// CHECK-NEXT:    %[[R:.*]] = tcp.reshape %[[B]] : tensor<1x1x1x8xf32> to tensor<1x8x1x1xf32>
// CHECK-NEXT:    %[[BB:.*]] = tcp.broadcast %[[R]] : tensor<1x8x1x1xf32> to tensor<2x8x5x5xf32>
// CHECK-NEXT:    %[[A:.*]] = tcp.add %[[C]], %[[BB]] : tensor<2x8x5x5xf32>
// CHECK-NEXT:    %[[RELU:.*]] = tcp.clamp %[[A]] {min = 0.000000e+00 : f64} : tensor<2x8x5x5xf32>
// CHECK-NEXT:    tcp.conv2d %[[RELU]]
// CHECK-NOT:     tcp.transpose
func.func @nhwc_epilogue(%x: tensor<2x3x5x5xf32>) -> tensor<2x8x5x5xf32> {
  %w0 = tcp.param @w0 : tensor<8x3x1x1xf32>
  %w1 = tcp.param @w1 : tensor<8x8x1x1xf32>
  %c = tcp.conv2d %x, %w0 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x5x5xf32>, tensor<8x3x1x1xf32>) -> tensor<2x8x5x5xf32>
  %t = tcp.transpose %c {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x5x5xf32> -> tensor<2x5x5x8xf32>
  %b = tcp.param @b : tensor<1x1x1x8xf32>
  %bb = tcp.broadcast %b : tensor<1x1x1x8xf32> to tensor<2x5x5x8xf32>
  %a = tcp.add %t, %bb : tensor<2x5x5x8xf32>
  %r = tcp.clamp %a {min = 0.0 : f64} : tensor<2x5x5x8xf32>
  %back = tcp.transpose %r {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x8xf32> -> tensor<2x8x5x5xf32>
  %y = tcp.conv2d %back, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x5x5xf32>, tensor<8x8x1x1xf32>) -> tensor<2x8x5x5xf32>
  func.return %y : tensor<2x8x5x5xf32>
}

// Runtime operands in two layouts: moving the transpose would add one, so nothing moves.
// CHECK-LABEL: func.func @mixed_layouts
// CHECK:         %[[T:.*]] = tcp.transpose %x
// CHECK-NEXT:    tcp.add %[[T]], %y
func.func @mixed_layouts(%x: tensor<2x3xf32>, %y: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %t = tcp.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %a = tcp.add %t, %y : tensor<3x2xf32>
  func.return %a : tensor<3x2xf32>
}

// Two operands transposed alike: one transpose after the op instead of two before it.
// CHECK-LABEL: func.func @same_layouts
// CHECK-NEXT:    %[[M:.*]] = tcp.mul %x, %y : tensor<2x3xf32>
// CHECK-NEXT:    %[[T:.*]] = tcp.transpose %[[M]] {permutation = array<i64: 1, 0>}
// CHECK-NEXT:    func.return %[[T]]
func.func @same_layouts(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %tx = tcp.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %ty = tcp.transpose %y {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %m = tcp.mul %tx, %ty : tensor<3x2xf32>
  func.return %m : tensor<3x2xf32>
}

// A transpose that has another user stays; moving it below the op would add a second
// one. Here %t also feeds the return, so the add keeps reading it.
// CHECK-LABEL: func.func @shared_transpose
// CHECK:         %[[T:.*]] = tcp.transpose %x
// CHECK-NEXT:    %[[A:.*]] = tcp.add %[[T]], %[[T]]
// CHECK-NEXT:    func.return %[[A]], %[[T]]
func.func @shared_transpose(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %t = tcp.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %a = tcp.add %t, %t : tensor<3x2xf32>
  func.return %a, %t : tensor<3x2xf32>, tensor<3x2xf32>
}

// ConvNeXt's residual stream: each block's branch ends channels-last and is transposed
// back before the scale and the residual add; the stream itself is a transpose shared
// with the next convolution. The branch's transpose is freed at each op, so the stream
// stays channels-last and one transpose per block is left, in front of its convolution.
// CHECK-LABEL: func.func @residual_stream
// CHECK:         %[[S0:.*]] = tcp.layer_norm %x
// CHECK-NEXT:    %[[R0:.*]] = tcp.transpose %[[S0]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    tcp.conv2d %[[R0]]
// CHECK:         %[[M0:.*]] = tcp.mul %{{.*}}, %{{.*}} : tensor<1x4x4x8xf32>
// CHECK-NEXT:    %[[S1:.*]] = tcp.add %[[M0]], %[[S0]] : tensor<1x4x4x8xf32>
// CHECK-NEXT:    %[[R1:.*]] = tcp.transpose %[[S1]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    tcp.conv2d %[[R1]]
// CHECK:         %[[M1:.*]] = tcp.mul %{{.*}}, %{{.*}} : tensor<1x4x4x8xf32>
// CHECK-NEXT:    %[[S2:.*]] = tcp.add %[[M1]], %[[S1]] : tensor<1x4x4x8xf32>
// CHECK-NEXT:    %[[OUT:.*]] = tcp.transpose %[[S2]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    func.return %[[OUT]]
func.func @residual_stream(%x: tensor<1x4x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<1x8x4x4xf32> {
  %w = tcp.param @w : tensor<8x1x3x3xf32>
  %gamma = tcp.param @gamma : tensor<1x8x1x1xf32>
  %gb = tcp.broadcast %gamma : tensor<1x8x1x1xf32> to tensor<1x8x4x4xf32>
  %s0 = tcp.layer_norm %x, %g, %b {axis = 3 : i64, epsilon = 1.0e-06 : f64} : tensor<1x4x4x8xf32>, tensor<8xf32>
  %r0 = tcp.transpose %s0 {permutation = array<i64: 0, 3, 1, 2>} : tensor<1x4x4x8xf32> -> tensor<1x8x4x4xf32>
  %c0 = tcp.conv2d %r0, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
  %l0 = tcp.transpose %c0 {permutation = array<i64: 0, 2, 3, 1>} : tensor<1x8x4x4xf32> -> tensor<1x4x4x8xf32>
  %y0 = tcp.layer_norm %l0, %g, %b {axis = 3 : i64, epsilon = 1.0e-06 : f64} : tensor<1x4x4x8xf32>, tensor<8xf32>
  %t0 = tcp.transpose %y0 {permutation = array<i64: 0, 3, 1, 2>} : tensor<1x4x4x8xf32> -> tensor<1x8x4x4xf32>
  %m0 = tcp.mul %t0, %gb : tensor<1x8x4x4xf32>
  %r1 = tcp.add %m0, %r0 : tensor<1x8x4x4xf32>
  %c1 = tcp.conv2d %r1, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
  %l1 = tcp.transpose %c1 {permutation = array<i64: 0, 2, 3, 1>} : tensor<1x8x4x4xf32> -> tensor<1x4x4x8xf32>
  %y1 = tcp.layer_norm %l1, %g, %b {axis = 3 : i64, epsilon = 1.0e-06 : f64} : tensor<1x4x4x8xf32>, tensor<8xf32>
  %t1 = tcp.transpose %y1 {permutation = array<i64: 0, 3, 1, 2>} : tensor<1x4x4x8xf32> -> tensor<1x8x4x4xf32>
  %m1 = tcp.mul %t1, %gb : tensor<1x8x4x4xf32>
  %r2 = tcp.add %m1, %r1 : tensor<1x8x4x4xf32>
  func.return %r2 : tensor<1x8x4x4xf32>
}

// A pinned transpose (a kernel's chosen output layout) stays where it is.
// CHECK-LABEL: func.func @pinned
// CHECK:         %[[T:.*]] = tcp.transpose %{{.*}} {dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:    tcp.clamp %[[T]]
func.func @pinned(%x: tensor<2x8x5x5xf32>) -> tensor<2x5x5x8xf32> {
  %t = tcp.transpose %x {dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x5x5xf32> -> tensor<2x5x5x8xf32>
  %r = tcp.clamp %t {min = 0.0 : f64} : tensor<2x5x5x8xf32>
  func.return %r : tensor<2x5x5x8xf32>
}

// A squeeze-excite block on a channels-last tensor brought back to NCHW: the mean and the
// scaling read the transpose. The scaling's result goes channels-last again (a cuDNN
// convolution's input), so the transpose moves below it although the mean still reads it:
// the gate, N x C x 1 x 1, is taken channels-last as a reshape, the transposes around the
// scaling cancel, and the one left is the mean's to read as rows of channels.
// CHECK-LABEL: func.func @squeeze_excite
// CHECK:         %[[T:.*]] = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    %[[M:.*]] = tcp.reduce_mean %[[T]]
// CHECK-NEXT:    %[[G:.*]] = tcp.sigmoid %[[M]]
// CHECK-NEXT:    %[[R:.*]] = tcp.reshape %[[G]] : tensor<2x6x1x1xf16> to tensor<2x1x1x6xf16>
// CHECK-NEXT:    %[[GB:.*]] = tcp.broadcast %[[R]] : tensor<2x1x1x6xf16> to tensor<2x5x5x6xf16>
// CHECK-NEXT:    %[[Y:.*]] = tcp.mul %x, %[[GB]] : tensor<2x5x5x6xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @squeeze_excite(%x: tensor<2x5x5x6xf16>) -> tensor<2x5x5x6xf16> {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x6xf16> -> tensor<2x6x5x5xf16>
  %m = tcp.reduce_mean %t {axes = array<i64: 2, 3>, keepdim = true} : tensor<2x6x5x5xf16> -> tensor<2x6x1x1xf16>
  %g = tcp.sigmoid %m : tensor<2x6x1x1xf16>
  %gb = tcp.broadcast %g : tensor<2x6x1x1xf16> to tensor<2x6x5x5xf16>
  %y = tcp.mul %t, %gb : tensor<2x6x5x5xf16>
  %n = tcp.transpose %y {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x6x5x5xf16> -> tensor<2x5x5x6xf16>
  func.return %n : tensor<2x5x5x6xf16>
}

// The same block whose scaled result is returned NCHW: moved, the transpose would be a
// second one, so nothing moves.
// CHECK-LABEL: func.func @squeeze_excite_nchw
// CHECK:         %[[T:.*]] = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>}
// CHECK:         %[[Y:.*]] = tcp.mul %[[T]], %{{.*}} : tensor<2x6x5x5xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @squeeze_excite_nchw(%x: tensor<2x5x5x6xf16>) -> tensor<2x6x5x5xf16> {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x6xf16> -> tensor<2x6x5x5xf16>
  %m = tcp.reduce_mean %t {axes = array<i64: 2, 3>, keepdim = true} : tensor<2x6x5x5xf16> -> tensor<2x6x1x1xf16>
  %g = tcp.sigmoid %m : tensor<2x6x1x1xf16>
  %gb = tcp.broadcast %g : tensor<2x6x1x1xf16> to tensor<2x6x5x5xf16>
  %y = tcp.mul %t, %gb : tensor<2x6x5x5xf16>
  func.return %y : tensor<2x6x5x5xf16>
}

// The same block over rows longer than ``analysis.SHORT_ROWS`` (a 40 x 40 image): read
// NHWC beside the scaling, such a mean runs one program per tile of channels down the
// whole image, so nothing moves and the tensor is stored NCHW for both readers.
// CHECK-LABEL: func.func @squeeze_excite_long_rows
// CHECK:         %[[T:.*]] = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>}
// CHECK:         %[[Y:.*]] = tcp.mul %[[T]], %{{.*}} : tensor<2x6x40x40xf16>
func.func @squeeze_excite_long_rows(%x: tensor<2x40x40x6xf16>) -> tensor<2x40x40x6xf16> {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x40x40x6xf16> -> tensor<2x6x40x40xf16>
  %m = tcp.reduce_mean %t {axes = array<i64: 2, 3>, keepdim = true} : tensor<2x6x40x40xf16> -> tensor<2x6x1x1xf16>
  %g = tcp.sigmoid %m : tensor<2x6x1x1xf16>
  %gb = tcp.broadcast %g : tensor<2x6x1x1xf16> to tensor<2x6x40x40xf16>
  %y = tcp.mul %t, %gb : tensor<2x6x40x40xf16>
  %n = tcp.transpose %y {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x6x40x40xf16> -> tensor<2x40x40x6xf16>
  func.return %n : tensor<2x40x40x6xf16>
}
