// RUN: %dnnc opt %s -p raise-ops,dce | %filecheck %s

// jax.nn.softmax as it imports: max, subtract, exp, sum, divide over one axis.
// CHECK-LABEL: func.func @softmax_in_steps
// CHECK-NEXT:    %[[S:.*]] = tcp.softmax %x {axis = 1 : i64} : tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[S]]
func.func @softmax_in_steps(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = tcp.reduce_max %x {axes = array<i64: 1>, keepdim = 0 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  %mr = tcp.reshape %m : tensor<4xf32> to tensor<4x1xf32>
  %mb = tcp.broadcast %mr : tensor<4x1xf32> to tensor<4x8xf32>
  %s = tcp.sub %x, %mb : tensor<4x8xf32>
  %e = tcp.exp %s : tensor<4x8xf32>
  %z = tcp.reduce_sum %e {axes = array<i64: 1>, keepdim = 0 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  %zr = tcp.reshape %z : tensor<4xf32> to tensor<4x1xf32>
  %zb = tcp.broadcast %zr : tensor<4x1xf32> to tensor<4x8xf32>
  %y = tcp.div %e, %zb : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// The max over another axis than the sum: not a softmax, nothing changes.
// CHECK-LABEL: func.func @different_axes
// CHECK-NOT:     tcp.softmax
// CHECK:         tcp.div
func.func @different_axes(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %m = tcp.reduce_max %x {axes = array<i64: 0>, keepdim = 0 : i64} : tensor<4x4xf32> -> tensor<4xf32>
  %mr = tcp.reshape %m : tensor<4xf32> to tensor<1x4xf32>
  %mb = tcp.broadcast %mr : tensor<1x4xf32> to tensor<4x4xf32>
  %s = tcp.sub %x, %mb : tensor<4x4xf32>
  %e = tcp.exp %s : tensor<4x4xf32>
  %z = tcp.reduce_sum %e {axes = array<i64: 1>, keepdim = 0 : i64} : tensor<4x4xf32> -> tensor<4xf32>
  %zr = tcp.reshape %z : tensor<4xf32> to tensor<4x1xf32>
  %zb = tcp.broadcast %zr : tensor<4x1xf32> to tensor<4x4xf32>
  %y = tcp.div %e, %zb : tensor<4x4xf32>
  func.return %y : tensor<4x4xf32>
}

// The max of another tensor: not a softmax of x.
// CHECK-LABEL: func.func @max_of_another_tensor
// CHECK-NOT:     tcp.softmax
func.func @max_of_another_tensor(%x: tensor<4x8xf32>, %w: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = tcp.reduce_max %w {axes = array<i64: 1>, keepdim = 0 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  %mr = tcp.reshape %m : tensor<4xf32> to tensor<4x1xf32>
  %mb = tcp.broadcast %mr : tensor<4x1xf32> to tensor<4x8xf32>
  %s = tcp.sub %x, %mb : tensor<4x8xf32>
  %e = tcp.exp %s : tensor<4x8xf32>
  %z = tcp.reduce_sum %e {axes = array<i64: 1>, keepdim = 0 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  %zr = tcp.reshape %z : tensor<4xf32> to tensor<4x1xf32>
  %zb = tcp.broadcast %zr : tensor<4x1xf32> to tensor<4x8xf32>
  %y = tcp.div %e, %zb : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// A layer norm as JAX writes it: the mean as a sum over the count, the biased variance,
// (x - mean) * rsqrt(var + eps) * g + b, with the parameters broadcast from [C].
// CHECK-LABEL: func.func @layer_norm_in_steps
// CHECK:         %[[G:.*]] = tcp.param @g : tensor<1x8xf32>
// CHECK:         %[[B:.*]] = tcp.param @b : tensor<1x8xf32>
// CHECK:         %[[GR:.*]] = tcp.reshape %[[G]] : tensor<1x8xf32> to tensor<8xf32>
// CHECK-NEXT:    %[[BR:.*]] = tcp.reshape %[[B]] : tensor<1x8xf32> to tensor<8xf32>
// CHECK-NEXT:    %[[N:.*]] = tcp.layer_norm %x, %[[GR]], %[[BR]] {axis = 1 : i64, epsilon = 1.000000e-05 : f64}
// CHECK-NEXT:    func.return %[[N]]
func.func @layer_norm_in_steps(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = tcp.reduce_sum %x {axes = array<i64: 1>, keepdim = 0 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  %sr = tcp.reshape %s : tensor<4xf32> to tensor<4x1xf32>
  %n = tcp.constant {value = 8.0 : f64} : tensor<4x1xf32>
  %mean = tcp.div %sr, %n : tensor<4x1xf32>
  %mb = tcp.broadcast %mean : tensor<4x1xf32> to tensor<4x8xf32>
  %d = tcp.sub %x, %mb : tensor<4x8xf32>
  %sq = tcp.mul %d, %d : tensor<4x8xf32>
  %vs = tcp.reduce_sum %sq {axes = array<i64: 1>, keepdim = 0 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  %vr = tcp.reshape %vs : tensor<4xf32> to tensor<4x1xf32>
  %var = tcp.div %vr, %n : tensor<4x1xf32>
  %eps = tcp.constant {value = 1.0e-05 : f64} : tensor<4x1xf32>
  %ve = tcp.add %var, %eps : tensor<4x1xf32>
  %r = tcp.rsqrt %ve : tensor<4x1xf32>
  %rb = tcp.broadcast %r : tensor<4x1xf32> to tensor<4x8xf32>
  %d2 = tcp.sub %x, %mb : tensor<4x8xf32>
  %normed = tcp.mul %d2, %rb : tensor<4x8xf32>
  %g = tcp.param @g : tensor<1x8xf32>
  %gb = tcp.broadcast %g : tensor<1x8xf32> to tensor<4x8xf32>
  %scaled = tcp.mul %normed, %gb : tensor<4x8xf32>
  %b = tcp.param @b : tensor<1x8xf32>
  %bb = tcp.broadcast %b : tensor<1x8xf32> to tensor<4x8xf32>
  %y = tcp.add %scaled, %bb : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// The count is not the axis' size (a mean over 7 of 8): not a layer norm.
// CHECK-LABEL: func.func @wrong_count
// CHECK-NOT:     tcp.layer_norm
func.func @wrong_count(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = tcp.reduce_sum %x {axes = array<i64: 1>, keepdim = 0 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  %sr = tcp.reshape %s : tensor<4xf32> to tensor<4x1xf32>
  %n = tcp.constant {value = 7.0 : f64} : tensor<4x1xf32>
  %mean = tcp.div %sr, %n : tensor<4x1xf32>
  %mb = tcp.broadcast %mean : tensor<4x1xf32> to tensor<4x8xf32>
  %d = tcp.sub %x, %mb : tensor<4x8xf32>
  %sq = tcp.mul %d, %d : tensor<4x8xf32>
  %vs = tcp.reduce_sum %sq {axes = array<i64: 1>, keepdim = 0 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  %vr = tcp.reshape %vs : tensor<4xf32> to tensor<4x1xf32>
  %var = tcp.div %vr, %n : tensor<4x1xf32>
  %eps = tcp.constant {value = 1.0e-05 : f64} : tensor<4x1xf32>
  %ve = tcp.add %var, %eps : tensor<4x1xf32>
  %r = tcp.rsqrt %ve : tensor<4x1xf32>
  %rb = tcp.broadcast %r : tensor<4x1xf32> to tensor<4x8xf32>
  %normed = tcp.mul %d, %rb : tensor<4x8xf32>
  %one = tcp.constant {value = 1.0 : f64} : tensor<4x8xf32>
  %scaled = tcp.mul %normed, %one : tensor<4x8xf32>
  %y = tcp.add %scaled, %one : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
