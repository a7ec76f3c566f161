// RUN: %dnnc opt %s -p triton-fuse | %filecheck %s
// RUN: %dnnc opt %s -p "triton-fuse{products=false}" | %filecheck %s --check-prefix=NOMM

// The bias add, the activation and the residual add fuse into the matmul as its
// epilogue; the layer_norm is a kernel of its own.
// CHECK-LABEL: func.func @block
// CHECK:         %[[W:.*]] = tcp.param @w
// CHECK:         %[[B:.*]] = tcp.param @b
// CHECK:         %[[S:.*]] = tcp.isolated_group(%x, %[[W]], %[[B]]) {backend = "triton", kind = "matmul"}
// CHECK:           tcp.matmul
// CHECK-NEXT:      tcp.broadcast
// CHECK-NEXT:      tcp.add
// CHECK-NEXT:      tcp.gelu
// CHECK-NEXT:      tcp.add
// CHECK-NEXT:      tcp.yield
// CHECK:         %[[N:.*]] = tcp.isolated_group(%[[S]], {{.*}}) {backend = "triton", kind = "layer_norm"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.layer_norm
// CHECK-NEXT:      tcp.yield
// CHECK:         func.return %[[S]], %[[N]]

// With products left out, the matmul stays at top level; its epilogue, the residual
// sum and the layer_norm are one row kernel that stores both the sum and the norm.
// NOMM-LABEL: func.func @block
// NOMM:         %[[MM:.*]] = tcp.matmul %x
// NOMM:         %[[S:.*]], %[[N:.*]] = tcp.isolated_group({{.*}}%[[MM]]{{.*}}) {backend = "triton", kind = "layer_norm"}
// NOMM-NOT:       tcp.matmul
// NOMM:           tcp.gelu
// NOMM-NEXT:      tcp.add
// NOMM-NEXT:      tcp.layer_norm
// NOMM:         func.return %[[S]], %[[N]]
func.func @block(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %w = tcp.param @w : tensor<16x16xf32>
  %mm = tcp.matmul %x, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %b = tcp.param @b : tensor<1x16xf32>
  %bb = tcp.broadcast %b : tensor<1x16xf32> to tensor<8x16xf32>
  %a = tcp.add %mm, %bb : tensor<8x16xf32>
  %g = tcp.gelu %a {approximate = "tanh"} : tensor<8x16xf32>
  %s = tcp.add %x, %g : tensor<8x16xf32>
  %lw = tcp.param @lw : tensor<16xf32>
  %lb = tcp.param @lb : tensor<16xf32>
  %n = tcp.layer_norm %s, %lw, %lb {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<8x16xf32>, tensor<16xf32>
  func.return %s, %n : tensor<8x16xf32>, tensor<8x16xf32>
}

// A value of the reduction input's shape is stored on the way (one kernel, two
// outputs); a splat constant is cloned into the group.
// CHECK-LABEL: func.func @reduce_with_prologue_output
// CHECK:         %[[R:.*]], %[[S:.*]] = tcp.isolated_group(%x) {backend = "triton", kind = "reduce"}
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<4x6xf16>):
// CHECK-NEXT:      %[[C:.*]] = tcp.constant
// CHECK-NEXT:      tcp.mul %[[A]], %[[C]]
// CHECK-NEXT:      tcp.reshape
// CHECK-NEXT:      tcp.reduce_sum
// CHECK-NEXT:      tcp.yield
// CHECK-NOT:     tcp.constant
// CHECK:         func.return %[[R]], %[[S]]
func.func @reduce_with_prologue_output(%x: tensor<4x6xf16>) -> (tensor<24xf16>, tensor<f16>) {
  %c = tcp.constant {value = 2.0 : f64} : tensor<4x6xf16>
  %m = tcp.mul %x, %c : tensor<4x6xf16>
  %r = tcp.reshape %m : tensor<4x6xf16> to tensor<24xf16>
  %s = tcp.reduce_sum %r {axes = array<i64: 0>, keepdim = false} : tensor<24xf16> -> tensor<f16>
  func.return %r, %s : tensor<24xf16>, tensor<f16>
}

// Outputs of different element counts are two kernels (the second reads the
// first's output through the slice); a lone reshape is a view, not a kernel.
// CHECK-LABEL: func.func @split
// CHECK:         %[[E:.*]] = tcp.isolated_group(%x) {backend = "triton", kind = "pointwise"}
// CHECK:           tcp.exp
// CHECK:         %[[N:.*]] = tcp.isolated_group(%[[E]]) {backend = "triton", kind = "pointwise"}
// CHECK:           tcp.slice
// CHECK-NEXT:      tcp.neg
// CHECK:         %[[V:.*]] = tcp.reshape %x
// CHECK:         func.return %[[E]], %[[N]], %[[V]]
func.func @split(%x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<2x6xf32>, tensor<24xf32>) {
  %e = tcp.exp %x : tensor<4x6xf32>
  %t = tcp.slice %e {starts = array<i64: 1, 0>, limits = array<i64: 3, 6>, strides = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<2x6xf32>
  %n = tcp.neg %t : tensor<2x6xf32>
  %v = tcp.reshape %x : tensor<4x6xf32> to tensor<24xf32>
  func.return %e, %n, %v : tensor<4x6xf32>, tensor<2x6xf32>, tensor<24xf32>
}

// Around channels-last convolutions: the stem's transpose and channel pad are one
// tiled `transpose` kernel; transpose -> max_pool2d -> transpose is one pool kernel
// over its NHWC output (NHWC -> NHWC); the NHWC global mean is one reduce kernel.
// CHECK-LABEL: func.func @channels_last
// CHECK:         %[[S:.*]] = tcp.isolated_group(%x) {backend = "triton", kind = "transpose"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:      tcp.pad
// CHECK-NEXT:      tcp.yield
// CHECK:         %[[P:.*]] = tcp.isolated_group(%r) {backend = "triton", kind = "pool"} : (tensor<2x12x12x16xf16>) -> tensor<2x6x6x16xf16>
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:      tcp.max_pool2d
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:      tcp.yield
// CHECK:         %[[M:.*]] = tcp.isolated_group(%f) {backend = "triton", kind = "reduce"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.transpose
// CHECK-NEXT:      tcp.reduce_mean
// CHECK-NEXT:      tcp.yield
// CHECK-NOT:     tcp.isolated_group
// CHECK:         func.return %[[S]], %[[P]], %[[M]]
func.func @channels_last(%x: tensor<2x3x12x12xf16>, %r: tensor<2x12x12x16xf16>, %f: tensor<2x3x3x32xf16>) -> (tensor<2x12x12x8xf16>, tensor<2x6x6x16xf16>, tensor<2x32x1x1xf16>) {
  %xt = tcp.transpose %x {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x3x12x12xf16> -> tensor<2x12x12x3xf16>
  %stem = tcp.pad %xt {low = array<i64: 0, 0, 0, 0>, high = array<i64: 0, 0, 0, 5>, value = 0.0 : f64} : tensor<2x12x12x3xf16> -> tensor<2x12x12x8xf16>
  %rt = tcp.transpose %r {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x12x12x16xf16> -> tensor<2x16x12x12xf16>
  %m = tcp.max_pool2d %rt {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = 0 : i64} : tensor<2x16x12x12xf16> -> tensor<2x16x6x6xf16>
  %pool = tcp.transpose %m {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x16x6x6xf16> -> tensor<2x6x6x16xf16>
  %ft = tcp.transpose %f {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x3x3x32xf16> -> tensor<2x32x3x3xf16>
  %mean = tcp.reduce_mean %ft {axes = array<i64: 2, 3>, keepdim = true} : tensor<2x32x3x3xf16> -> tensor<2x32x1x1xf16>
  func.return %stem, %pool, %mean : tensor<2x12x12x8xf16>, tensor<2x6x6x16xf16>, tensor<2x32x1x1xf16>
}

// A pooled value that is also returned in its own layout stays the pool kernel's
// only output; its transpose reads it in a kernel of its own.
// CHECK-LABEL: func.func @pool_used_twice
// CHECK:         %[[P:.*]] = tcp.isolated_group(%r) {backend = "triton", kind = "pool"} : (tensor<2x24x24x16xf16>) -> tensor<2x16x12x12xf16>
// CHECK:         %[[T:.*]] = tcp.isolated_group(%[[P]]) {backend = "triton", kind = "transpose"}
// CHECK:         func.return %[[P]], %[[T]]
func.func @pool_used_twice(%r: tensor<2x24x24x16xf16>) -> (tensor<2x16x12x12xf16>, tensor<2x12x12x16xf16>) {
  %rt = tcp.transpose %r {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x24x24x16xf16> -> tensor<2x16x24x24xf16>
  %m = tcp.max_pool2d %rt {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = 0 : i64} : tensor<2x16x24x24xf16> -> tensor<2x16x12x12xf16>
  %pool = tcp.transpose %m {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x16x12x12xf16> -> tensor<2x12x12x16xf16>
  func.return %m, %pool : tensor<2x16x12x12xf16>, tensor<2x12x12x16xf16>
}

// A convolution whose result a cuDNN convolution reads channels-last stores NHWC
// itself: the transpose (and the residual added after it) joins its epilogue, a
// depthwise convolution's too. A result also returned NCHW leaves the transpose to
// a kernel of its own.
// CHECK-LABEL: func.func @conv_stores_channels_last
// CHECK:         %[[C:.*]] = tcp.isolated_group(%x, %w, %b, %res) {backend = "triton", kind = "conv2d"} : ({{.*}}) -> tensor<2x9x9x16xf16>
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:      tcp.conv2d
// CHECK-NEXT:      tcp.broadcast
// CHECK-NEXT:      tcp.add
// CHECK-NEXT:      tcp.clamp
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:      tcp.add
// CHECK-NEXT:      tcp.yield
// CHECK:         %[[K:.*]] = tcp.isolated_group(%x, %w) {backend = "triton", kind = "conv2d"} : ({{.*}}) -> tensor<2x16x9x9xf16>
// CHECK:         %[[KT:.*]] = tcp.isolated_group(%[[K]]) {backend = "triton", kind = "transpose"}
// CHECK:         %[[DT:.*]] = tcp.isolated_group(%x, %dw) {backend = "triton", kind = "conv2d"} : ({{.*}}) -> tensor<2x9x9x8xf16>
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:      tcp.conv2d {{.*}} groups = 8
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:      tcp.yield
// CHECK:         func.return %[[C]], %[[K]], %[[KT]], %[[DT]]
func.func @conv_stores_channels_last(%x: tensor<2x9x9x8xf16>, %w: tensor<16x8x1x1xf16>, %b: tensor<1x16x1x1xf16>, %res: tensor<2x9x9x16xf16>, %dw: tensor<8x1x3x3xf16>) -> (tensor<2x9x9x16xf16>, tensor<2x16x9x9xf16>, tensor<2x9x9x16xf16>, tensor<2x9x9x8xf16>) {
  %xt = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x9x9x8xf16> -> tensor<2x8x9x9xf16>
  %c = tcp.conv2d %xt, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x9x9xf16>, tensor<16x8x1x1xf16>) -> tensor<2x16x9x9xf16>
  %bb = tcp.broadcast %b : tensor<1x16x1x1xf16> to tensor<2x16x9x9xf16>
  %a = tcp.add %c, %bb : tensor<2x16x9x9xf16>
  %r = tcp.clamp %a {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x16x9x9xf16>
  %rt = tcp.transpose %r {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x16x9x9xf16> -> tensor<2x9x9x16xf16>
  %s = tcp.add %rt, %res : tensor<2x9x9x16xf16>
  %xt2 = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x9x9x8xf16> -> tensor<2x8x9x9xf16>
  %k = tcp.conv2d %xt2, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x9x9xf16>, tensor<16x8x1x1xf16>) -> tensor<2x16x9x9xf16>
  %kt = tcp.transpose %k {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x16x9x9xf16> -> tensor<2x9x9x16xf16>
  %xt3 = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x9x9x8xf16> -> tensor<2x8x9x9xf16>
  %d = tcp.conv2d %xt3, %dw {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<2x8x9x9xf16>, tensor<8x1x3x3xf16>) -> tensor<2x8x9x9xf16>
  %dt = tcp.transpose %d {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x9x9xf16> -> tensor<2x9x9x8xf16>
  func.return %s, %k, %kt, %dt : tensor<2x9x9x16xf16>, tensor<2x16x9x9xf16>, tensor<2x9x9x16xf16>, tensor<2x9x9x8xf16>
}

// A group norm's result, grouped NCHW ([N, G, C/G, H*W]), goes to a channels-last
// consumer: the copy is a tiled transpose, read along the positions (the norm's row)
// and written along the channels, not a kernel that reads one element per line.
// CHECK-LABEL: func.func @group_norm_to_channels_last
// CHECK:         %[[N:.*]] = tcp.isolated_group(%x) {backend = "triton", kind = "layer_norm"}
// CHECK:           tcp.layer_norm
// CHECK-NEXT:      tcp.silu
// CHECK-NEXT:      tcp.yield
// CHECK:         %[[T:.*]] = tcp.isolated_group(%[[N]]) {backend = "triton", kind = "transpose"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.reshape
// CHECK-NEXT:      tcp.transpose
// CHECK-NEXT:      tcp.yield
// CHECK:         func.return %[[T]]
func.func @group_norm_to_channels_last(%x: tensor<2x4x3x45xf16>) -> tensor<2x5x9x12xf16> {
  %one = tcp.constant {value = 1.0 : f64} : tensor<3x45xf16>
  %zero = tcp.constant {value = 0.0 : f64} : tensor<3x45xf16>
  %n = tcp.layer_norm %x, %one, %zero {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x4x3x45xf16>, tensor<3x45xf16>
  %s = tcp.silu %n : tensor<2x4x3x45xf16>
  %r = tcp.reshape %s : tensor<2x4x3x45xf16> to tensor<2x12x5x9xf16>
  %t = tcp.transpose %r {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x12x5x9xf16> -> tensor<2x5x9x12xf16>
  func.return %t : tensor<2x5x9x12xf16>
}

// A block that changes its width: the expansion and the strided downsample, each with
// its bias, summed and rectified, are one kernel (two convolutions of one result type).
// CHECK-LABEL: func.func @summed_convolutions
// CHECK:         %[[R:.*]] = tcp.isolated_group({{.*}}) {backend = "triton", kind = "conv2d"}
// CHECK:           tcp.conv2d
// CHECK:           tcp.conv2d
// CHECK:           tcp.clamp
// CHECK-NEXT:      tcp.yield
// CHECK-NOT:     tcp.isolated_group
// CHECK:         func.return %[[R]]
func.func @summed_convolutions(%y: tensor<2x6x5x5xf16>, %x: tensor<2x5x9x9xf16>) -> tensor<2x7x5x5xf16> {
  %w1 = tcp.param @w1 : tensor<7x6x1x1xf16>
  %c1 = tcp.conv2d %y, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<7x6x1x1xf16>) -> tensor<2x7x5x5xf16>
  %b1 = tcp.param @b1 : tensor<1x7x1x1xf16>
  %bb1 = tcp.broadcast %b1 : tensor<1x7x1x1xf16> to tensor<2x7x5x5xf16>
  %a1 = tcp.add %c1, %bb1 : tensor<2x7x5x5xf16>
  %w2 = tcp.param @w2 : tensor<7x5x1x1xf16>
  %c2 = tcp.conv2d %x, %w2 {stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x5x9x9xf16>, tensor<7x5x1x1xf16>) -> tensor<2x7x5x5xf16>
  %s = tcp.add %a1, %c2 : tensor<2x7x5x5xf16>
  %r = tcp.clamp %s {min = 0.0 : f64} : tensor<2x7x5x5xf16>
  func.return %r : tensor<2x7x5x5xf16>
}

// Not when one convolution's result is also needed alone, nor for a depthwise one:
// each such convolution keeps a kernel of its own.
// CHECK-LABEL: func.func @convolutions_not_summed
// CHECK:         %[[A:.*]] = tcp.isolated_group({{.*}}) {backend = "triton", kind = "conv2d"}
// CHECK:           tcp.conv2d
// CHECK-NOT:       tcp.conv2d
// CHECK:           tcp.yield
// CHECK:         tcp.isolated_group({{.*}}%[[A]]{{.*}}) {backend = "triton", kind = "conv2d"}
// CHECK:           tcp.conv2d
// CHECK-NOT:       tcp.conv2d
// CHECK:           tcp.yield
// CHECK:         tcp.isolated_group({{.*}}) {backend = "triton", kind = "conv2d"}
// CHECK:           tcp.conv2d
// CHECK-NOT:       tcp.conv2d
// CHECK:           tcp.yield
// CHECK:         tcp.isolated_group({{.*}}) {backend = "triton", kind = "conv2d"}
// CHECK:           tcp.conv2d
// CHECK-NOT:       tcp.conv2d
// CHECK:           tcp.yield
func.func @convolutions_not_summed(%y: tensor<2x6x5x5xf16>, %x: tensor<2x6x5x5xf16>) -> (tensor<2x7x5x5xf16>, tensor<2x7x5x5xf16>, tensor<2x6x5x5xf16>) {
  %w1 = tcp.param @w1 : tensor<7x6x1x1xf16>
  %c1 = tcp.conv2d %y, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<7x6x1x1xf16>) -> tensor<2x7x5x5xf16>
  %w2 = tcp.param @w2 : tensor<7x6x1x1xf16>
  %c2 = tcp.conv2d %x, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<7x6x1x1xf16>) -> tensor<2x7x5x5xf16>
  %s = tcp.add %c1, %c2 : tensor<2x7x5x5xf16>
  %dw = tcp.param @dw : tensor<6x1x3x3xf16>
  %d = tcp.conv2d %x, %dw {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 6 : i64} : (tensor<2x6x5x5xf16>, tensor<6x1x3x3xf16>) -> tensor<2x6x5x5xf16>
  %w3 = tcp.param @w3 : tensor<6x6x1x1xf16>
  %c3 = tcp.conv2d %y, %w3 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<6x6x1x1xf16>) -> tensor<2x6x5x5xf16>
  %e = tcp.add %d, %c3 : tensor<2x6x5x5xf16>
  func.return %s, %c1, %e : tensor<2x7x5x5xf16>, tensor<2x7x5x5xf16>, tensor<2x6x5x5xf16>
}

// A channels-last tensor brought back to NCHW for two convolutions only: each reads it
// through a copy of the transpose in its own kernel, so the kernel producing it stores
// it NHWC (the transpose is not its epilogue), whichever part the partitioner gave the
// transpose.
// CHECK-LABEL: func.func @conv_prologues
// CHECK:         %[[P:.*]] = tcp.isolated_group(%x) {backend = "triton", kind = "pointwise"} : (tensor<2x5x5x6xf16>) -> tensor<2x5x5x6xf16>
// CHECK-NOT:       tcp.transpose
// CHECK:           tcp.yield
// CHECK:         tcp.isolated_group(%[[P]], {{.*}}) {backend = "triton", kind = "conv2d"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.transpose
// CHECK-NEXT:      tcp.conv2d
// CHECK:         tcp.isolated_group(%[[P]], {{.*}}) {backend = "triton", kind = "conv2d"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.transpose
// CHECK-NEXT:      tcp.conv2d
func.func @conv_prologues(%x: tensor<2x5x5x6xf16>) -> (tensor<2x7x5x5xf16>, tensor<2x7x3x3xf16>) {
  %r = tcp.clamp %x {min = 0.0 : f64} : tensor<2x5x5x6xf16>
  %t = tcp.transpose %r {dnnc.part = 1 : i64, permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x6xf16> -> tensor<2x6x5x5xf16>
  %w1 = tcp.param @w1 : tensor<7x6x1x1xf16>
  %c1 = tcp.conv2d %t, %w1 {dnnc.part = 1 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<7x6x1x1xf16>) -> tensor<2x7x5x5xf16>
  %w2 = tcp.param @w2 : tensor<7x6x1x1xf16>
  %c2 = tcp.conv2d %t, %w2 {dnnc.part = 2 : i64, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<7x6x1x1xf16>) -> tensor<2x7x3x3xf16>
  func.return %c1, %c2 : tensor<2x7x5x5xf16>, tensor<2x7x3x3xf16>
}

// One 3x3 convolution reading a 1x1 convolution's channels-last result takes the transpose
// back into its own kernel: the 1x1 kernel stores NHWC and the 3x3 one reads its K tiles
// (taps x channels) along the channels. A single 1x1 reader leaves the transpose to the
// producer's kernel (stored NCHW, read as rows of pixels).
// CHECK-LABEL: func.func @window_prologue
// CHECK:         %[[P:.*]] = tcp.isolated_group(%x, {{.*}}) {backend = "triton", kind = "conv2d"} : ({{.*}}) -> tensor<2x5x5x6xf16>
// CHECK:         tcp.isolated_group(%[[P]], {{.*}}) {backend = "triton", kind = "conv2d"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.transpose
// CHECK-NEXT:      tcp.conv2d
func.func @window_prologue(%x: tensor<2x6x5x5xf16>) -> tensor<2x6x5x5xf16> {
  %w1 = tcp.param @w1 : tensor<6x6x1x1xf16>
  %c1 = tcp.conv2d %x, %w1 {dnnc.part = 1 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<6x6x1x1xf16>) -> tensor<2x6x5x5xf16>
  %n = tcp.transpose %c1 {dnnc.part = 1 : i64, dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>} : tensor<2x6x5x5xf16> -> tensor<2x5x5x6xf16>
  %r = tcp.clamp %n {dnnc.part = 1 : i64, min = 0.0 : f64} : tensor<2x5x5x6xf16>
  %t = tcp.transpose %r {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x6xf16> -> tensor<2x6x5x5xf16>
  %w3 = tcp.param @w3 : tensor<6x6x3x3xf16>
  %c3 = tcp.conv2d %t, %w3 {dnnc.part = 2 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<6x6x3x3xf16>) -> tensor<2x6x5x5xf16>
  func.return %c3 : tensor<2x6x5x5xf16>
}

// A single 1x1 reader takes the transpose too: its producer stores NHWC and it reads the
// channels-last rows (as the partitioner timed it alone).
// CHECK-LABEL: func.func @pixelwise_reader
// CHECK:         %[[P:.*]] = tcp.isolated_group(%x, {{.*}}) {backend = "triton", kind = "conv2d"} : ({{.*}}) -> tensor<2x5x5x6xf16>
// CHECK:           tcp.clamp
// CHECK-NEXT:      tcp.yield
// CHECK:         tcp.isolated_group(%[[P]], {{.*}}) {backend = "triton", kind = "conv2d"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:      tcp.conv2d
func.func @pixelwise_reader(%x: tensor<2x6x5x5xf16>) -> tensor<2x6x5x5xf16> {
  %w1 = tcp.param @w1 : tensor<6x6x1x1xf16>
  %c1 = tcp.conv2d %x, %w1 {dnnc.part = 1 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<6x6x1x1xf16>) -> tensor<2x6x5x5xf16>
  %n = tcp.transpose %c1 {dnnc.part = 1 : i64, dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>} : tensor<2x6x5x5xf16> -> tensor<2x5x5x6xf16>
  %r = tcp.clamp %n {dnnc.part = 1 : i64, min = 0.0 : f64} : tensor<2x5x5x6xf16>
  %t = tcp.transpose %r {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x6xf16> -> tensor<2x6x5x5xf16>
  %w2 = tcp.param @w2 : tensor<6x6x1x1xf16>
  %c2 = tcp.conv2d %t, %w2 {dnnc.part = 2 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<6x6x1x1xf16>) -> tensor<2x6x5x5xf16>
  func.return %c2 : tensor<2x6x5x5xf16>
}

// A global mean of a 1x1 convolution's channels-last result takes the transpose back into
// its own kernel, whichever part the partitioner gave it: the convolution's kernel stores
// NHWC and the mean reads rows of contiguous channels.
// CHECK-LABEL: func.func @mean_reader
// CHECK:         %[[P:.*]] = tcp.isolated_group(%x, {{.*}}) {backend = "triton", kind = "conv2d"} : ({{.*}}) -> tensor<2x5x5x6xf16>
// CHECK-NOT:       tcp.transpose {{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// CHECK:           tcp.yield
// CHECK:         tcp.isolated_group(%[[P]]) {backend = "triton", kind = "reduce"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:      tcp.reduce_mean
func.func @mean_reader(%x: tensor<2x6x5x5xf16>) -> tensor<2x6x1x1xf16> {
  %w1 = tcp.param @w1 : tensor<6x6x1x1xf16>
  %c1 = tcp.conv2d %x, %w1 {dnnc.part = 1 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<6x6x1x1xf16>) -> tensor<2x6x5x5xf16>
  %n = tcp.transpose %c1 {dnnc.part = 1 : i64, dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>} : tensor<2x6x5x5xf16> -> tensor<2x5x5x6xf16>
  %r = tcp.clamp %n {dnnc.part = 1 : i64, min = 0.0 : f64} : tensor<2x5x5x6xf16>
  %t = tcp.transpose %r {dnnc.part = 1 : i64, permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x6xf16> -> tensor<2x6x5x5xf16>
  %m = tcp.reduce_mean %t {dnnc.part = 2 : i64, axes = array<i64: 2, 3>, keepdim = true} : tensor<2x6x5x5xf16> -> tensor<2x6x1x1xf16>
  func.return %m : tensor<2x6x1x1xf16>
}

// A max pool whose result goes channels-last again takes the transpose back to NCHW of a
// 1x1 convolution's channels-last result into its own kernel: the convolution's kernel
// stores NHWC (its bias and ReLU with it) and the pool runs NHWC -> NHWC.
// CHECK-LABEL: func.func @pool_reader
// CHECK:         %[[P:.*]] = tcp.isolated_group(%x, {{.*}}) {backend = "triton", kind = "conv2d"} : ({{.*}}) -> tensor<2x6x6x6xf16>
// CHECK-NOT:       tcp.transpose {{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// CHECK:           tcp.clamp
// CHECK-NEXT:      tcp.yield
// CHECK:         tcp.isolated_group(%[[P]]) {backend = "triton", kind = "pool"} : (tensor<2x6x6x6xf16>) -> tensor<2x3x3x6xf16>
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:      tcp.max_pool2d
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:      tcp.yield
func.func @pool_reader(%x: tensor<2x6x6x6xf16>) -> tensor<2x3x3x6xf16> {
  %w1 = tcp.param @w1 : tensor<6x6x1x1xf16>
  %c1 = tcp.conv2d %x, %w1 {dnnc.part = 1 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x6x6xf16>, tensor<6x6x1x1xf16>) -> tensor<2x6x6x6xf16>
  %n = tcp.transpose %c1 {dnnc.part = 1 : i64, dnnc.pinned, permutation = array<i64: 0, 2, 3, 1>} : tensor<2x6x6x6xf16> -> tensor<2x6x6x6xf16>
  %r = tcp.clamp %n {dnnc.part = 1 : i64, min = 0.0 : f64} : tensor<2x6x6x6xf16>
  %t = tcp.transpose %r {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x6x6x6xf16> -> tensor<2x6x6x6xf16>
  %p = tcp.max_pool2d %t {dnnc.part = 2 : i64, kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = false} : tensor<2x6x6x6xf16> -> tensor<2x6x3x3xf16>
  %o = tcp.transpose %p {dnnc.part = 2 : i64, permutation = array<i64: 0, 2, 3, 1>} : tensor<2x6x3x3xf16> -> tensor<2x3x3x6xf16>
  func.return %o : tensor<2x3x3x6xf16>
}

// A squeeze-excite block's scaling run channels-last (``sink-transposes``) before a 1x1
// convolution: the transpose back to NCHW takes the scaling into the convolution's kernel
// as its prologue, where on its own it would be a kernel storing what the convolution reads
// once. The mean beside it reads the NHWC tensor through its own transpose, and the SiLU
// before that joins the mean's kernel, which stores it NHWC at the positions it reads.
// CHECK-LABEL: func.func @scaled_prologue
// CHECK:         %[[S:.*]], %[[M:.*]] = tcp.isolated_group(%x) {backend = "triton", kind = "reduce"} : (tensor<2x5x5x6xf16>) -> (tensor<2x5x5x6xf16>, tensor<2x6x1x1xf16>)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.silu
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:      tcp.reduce_mean
// CHECK:         tcp.isolated_group(%[[M]], %[[S]], {{.*}}) {backend = "triton", kind = "conv2d"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.reshape
// CHECK-NEXT:      tcp.broadcast
// CHECK-NEXT:      tcp.mul {{.*}} : tensor<2x5x5x6xf16>
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:      tcp.conv2d
func.func @scaled_prologue(%x: tensor<2x5x5x6xf16>) -> tensor<2x7x5x5xf16> {
  %s = tcp.silu %x {dnnc.part = 1 : i64} : tensor<2x5x5x6xf16>
  %t = tcp.transpose %s {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x6xf16> -> tensor<2x6x5x5xf16>
  %m = tcp.reduce_mean %t {dnnc.part = 1 : i64, axes = array<i64: 2, 3>, keepdim = true} : tensor<2x6x5x5xf16> -> tensor<2x6x1x1xf16>
  %g = tcp.reshape %m {dnnc.part = 2 : i64} : tensor<2x6x1x1xf16> to tensor<2x1x1x6xf16>
  %gb = tcp.broadcast %g {dnnc.part = 2 : i64} : tensor<2x1x1x6xf16> to tensor<2x5x5x6xf16>
  %y = tcp.mul %s, %gb {dnnc.part = 2 : i64} : tensor<2x5x5x6xf16>
  %b = tcp.transpose %y {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x6xf16> -> tensor<2x6x5x5xf16>
  %w = tcp.param @w : tensor<7x6x1x1xf16>
  %c = tcp.conv2d %b, %w {dnnc.part = 2 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<7x6x1x1xf16>) -> tensor<2x7x5x5xf16>
  func.return %c : tensor<2x7x5x5xf16>
}

// As above, but the partitioner gave the SiLU and the mean different parts: the mean's
// transpose does not join the SiLU's kernel, which would then store the tensor both NHWC
// (for the scaling) and NCHW (for the mean); the mean reads the NHWC tensor itself.
// CHECK-LABEL: func.func @scaled_prologue_parts
// CHECK:         %[[S:.*]] = tcp.isolated_group(%x) {backend = "triton", kind = "pointwise"} : (tensor<2x5x5x6xf16>) -> tensor<2x5x5x6xf16>
// CHECK-NOT:       tcp.transpose
// CHECK:           tcp.yield
// CHECK:         tcp.isolated_group(%[[S]]) {backend = "triton", kind = "reduce"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tcp.transpose {{.*}} {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:      tcp.reduce_mean
func.func @scaled_prologue_parts(%x: tensor<2x5x5x6xf16>) -> tensor<2x7x5x5xf16> {
  %s = tcp.silu %x {dnnc.part = 1 : i64} : tensor<2x5x5x6xf16>
  %t = tcp.transpose %s {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x6xf16> -> tensor<2x6x5x5xf16>
  %m = tcp.reduce_mean %t {dnnc.part = 3 : i64, axes = array<i64: 2, 3>, keepdim = true} : tensor<2x6x5x5xf16> -> tensor<2x6x1x1xf16>
  %g = tcp.reshape %m {dnnc.part = 2 : i64} : tensor<2x6x1x1xf16> to tensor<2x1x1x6xf16>
  %gb = tcp.broadcast %g {dnnc.part = 2 : i64} : tensor<2x1x1x6xf16> to tensor<2x5x5x6xf16>
  %y = tcp.mul %s, %gb {dnnc.part = 2 : i64} : tensor<2x5x5x6xf16>
  %b = tcp.transpose %y {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x5x6xf16> -> tensor<2x6x5x5xf16>
  %w = tcp.param @w : tensor<7x6x1x1xf16>
  %c = tcp.conv2d %b, %w {dnnc.part = 2 : i64, stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x6x5x5xf16>, tensor<7x6x1x1xf16>) -> tensor<2x7x5x5xf16>
  func.return %c : tensor<2x7x5x5xf16>
}
