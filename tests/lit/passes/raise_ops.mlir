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

// Llama's RMS norm as PyTorch exports it: in float32 between casts, x * rsqrt(mean(x^2)
// + eps), then the weight in the input's type. One tcp.rms_norm with a unit weight;
// the casts and the weight stay around it (a fused kernel's prologue and epilogue).
// CHECK-LABEL: func.func @rms_norm_llama
// CHECK:         %[[H:.*]] = tcp.cast %x : tensor<2x3x8xf16> to tensor<2x3x8xf32>
// CHECK-NEXT:    %[[ONE:.*]] = tcp.constant {value = 1.000000e+00 : f64} : tensor<8xf32>
// CHECK-NEXT:    %[[N:.*]] = tcp.rms_norm %[[H]], %[[ONE]] {axis = 2 : i64, epsilon = 1.000000e-06 : f64} : tensor<2x3x8xf32>, tensor<8xf32>
// CHECK-NEXT:    %[[C:.*]] = tcp.cast %[[N]] : tensor<2x3x8xf32> to tensor<2x3x8xf16>
// CHECK-NEXT:    %[[Y:.*]] = tcp.mul %wb, %[[C]]
// CHECK-NOT:     tcp.rsqrt
func.func @rms_norm_llama(%x: tensor<2x3x8xf16>, %wb: tensor<2x3x8xf16>) -> tensor<2x3x8xf16> {
  %h = tcp.cast %x : tensor<2x3x8xf16> to tensor<2x3x8xf32>
  %two = tcp.constant {value = 2.000000e+00 : f64} : tensor<2x3x8xf32>
  %sq = tcp.pow %h, %two : tensor<2x3x8xf32>
  %m = tcp.reduce_mean %sq {axes = array<i64: 2>, keepdim = true} : tensor<2x3x8xf32> -> tensor<2x3x1xf32>
  %eps = tcp.constant {value = 1.000000e-06 : f64} : tensor<2x3x1xf32>
  %v = tcp.add %m, %eps : tensor<2x3x1xf32>
  %r = tcp.rsqrt %v : tensor<2x3x1xf32>
  %rb = tcp.broadcast %r : tensor<2x3x1xf32> to tensor<2x3x8xf32>
  %n = tcp.mul %h, %rb : tensor<2x3x8xf32>
  %c = tcp.cast %n : tensor<2x3x8xf32> to tensor<2x3x8xf16>
  %y = tcp.mul %wb, %c : tensor<2x3x8xf16>
  func.return %y : tensor<2x3x8xf16>
}

// Over the last two axes, the square as x * x and the scale on the left; the mean of
// another value's square is not this value's norm (nothing changes).
// CHECK-LABEL: func.func @rms_norm_two_axes
// CHECK:         tcp.rms_norm %x, %{{.*}} {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x4x5xf32>, tensor<4x5xf32>
// CHECK-LABEL: func.func @not_its_own_square
// CHECK-NOT:     tcp.rms_norm
// CHECK:         tcp.rsqrt
func.func @rms_norm_two_axes(%x: tensor<2x4x5xf32>) -> tensor<2x4x5xf32> {
  %sq = tcp.mul %x, %x : tensor<2x4x5xf32>
  %m = tcp.reduce_mean %sq {axes = array<i64: 1, 2>, keepdim = true} : tensor<2x4x5xf32> -> tensor<2x1x1xf32>
  %eps = tcp.constant {value = 1.000000e-05 : f64} : tensor<2x1x1xf32>
  %v = tcp.add %eps, %m : tensor<2x1x1xf32>
  %r = tcp.rsqrt %v : tensor<2x1x1xf32>
  %rb = tcp.broadcast %r : tensor<2x1x1xf32> to tensor<2x4x5xf32>
  %n = tcp.mul %rb, %x : tensor<2x4x5xf32>
  func.return %n : tensor<2x4x5xf32>
}
func.func @not_its_own_square(%x: tensor<2x8xf32>, %z: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sq = tcp.mul %z, %z : tensor<2x8xf32>
  %m = tcp.reduce_mean %sq {axes = array<i64: 1>, keepdim = true} : tensor<2x8xf32> -> tensor<2x1xf32>
  %eps = tcp.constant {value = 1.000000e-05 : f64} : tensor<2x1xf32>
  %v = tcp.add %m, %eps : tensor<2x1xf32>
  %r = tcp.rsqrt %v : tensor<2x1xf32>
  %rb = tcp.broadcast %r : tensor<2x1xf32> to tensor<2x8xf32>
  %n = tcp.mul %x, %rb : tensor<2x8xf32>
  func.return %n : tensor<2x8xf32>
}

// GPT-2's activation (transformers' gelu_new) as it imports: one tcp.gelu with the tanh
// approximation in place of nine ops.
// CHECK-LABEL: func.func @tanh_gelu_in_steps
// CHECK-NEXT:    %[[G:.*]] = tcp.gelu %x {approximate = "tanh"} : tensor<4x8xf16>
// CHECK-NEXT:    func.return %[[G]]
func.func @tanh_gelu_in_steps(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %half = tcp.constant {value = 0.5 : f64} : tensor<4x8xf16>
  %h = tcp.mul %x, %half : tensor<4x8xf16>
  %three = tcp.constant {value = 3.0 : f64} : tensor<4x8xf16>
  %cube = tcp.pow %x, %three : tensor<4x8xf16>
  %k = tcp.constant {value = 0.044715 : f64} : tensor<4x8xf16>
  %kc = tcp.mul %cube, %k : tensor<4x8xf16>
  %inner = tcp.add %x, %kc : tensor<4x8xf16>
  %c = tcp.constant {value = 0.79788456080286541 : f64} : tensor<4x8xf16>
  %scaled = tcp.mul %inner, %c : tensor<4x8xf16>
  %t = tcp.tanh %scaled : tensor<4x8xf16>
  %one = tcp.constant {value = 1.0 : f64} : tensor<4x8xf16>
  %f = tcp.add %t, %one : tensor<4x8xf16>
  %y = tcp.mul %h, %f : tensor<4x8xf16>
  func.return %y : tensor<4x8xf16>
}

// The cube as x * x * x and the half on the other factor: the same GELU.
// CHECK-LABEL: func.func @tanh_gelu_cube_by_products
// CHECK-NEXT:    %[[G:.*]] = tcp.gelu %x {approximate = "tanh"} : tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[G]]
func.func @tanh_gelu_cube_by_products(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sq = tcp.mul %x, %x : tensor<4x8xf32>
  %cube = tcp.mul %sq, %x : tensor<4x8xf32>
  %k = tcp.constant {value = 0.044715 : f64} : tensor<4x8xf32>
  %kc = tcp.mul %k, %cube : tensor<4x8xf32>
  %inner = tcp.add %kc, %x : tensor<4x8xf32>
  %c = tcp.constant {value = 0.79788456080286541 : f64} : tensor<4x8xf32>
  %scaled = tcp.mul %c, %inner : tensor<4x8xf32>
  %t = tcp.tanh %scaled : tensor<4x8xf32>
  %one = tcp.constant {value = 1.0 : f64} : tensor<4x8xf32>
  %f = tcp.add %one, %t : tensor<4x8xf32>
  %half = tcp.constant {value = 0.5 : f64} : tensor<4x8xf32>
  %hf = tcp.mul %f, %half : tensor<4x8xf32>
  %y = tcp.mul %x, %hf : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// Another coefficient than 0.044715: not the tanh GELU, nothing is raised.
// CHECK-LABEL: func.func @not_a_tanh_gelu
// CHECK-NOT:     tcp.gelu
// CHECK:         tcp.tanh
func.func @not_a_tanh_gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = tcp.constant {value = 0.5 : f64} : tensor<4x8xf32>
  %h = tcp.mul %x, %half : tensor<4x8xf32>
  %three = tcp.constant {value = 3.0 : f64} : tensor<4x8xf32>
  %cube = tcp.pow %x, %three : tensor<4x8xf32>
  %k = tcp.constant {value = 0.05 : f64} : tensor<4x8xf32>
  %kc = tcp.mul %cube, %k : tensor<4x8xf32>
  %inner = tcp.add %x, %kc : tensor<4x8xf32>
  %c = tcp.constant {value = 0.79788456080286541 : f64} : tensor<4x8xf32>
  %scaled = tcp.mul %inner, %c : tensor<4x8xf32>
  %t = tcp.tanh %scaled : tensor<4x8xf32>
  %one = tcp.constant {value = 1.0 : f64} : tensor<4x8xf32>
  %f = tcp.add %t, %one : tensor<4x8xf32>
  %y = tcp.mul %h, %f : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
