// RUN: %dnnc opt %s -p pad-product-columns,dce --random-params | %filecheck %s

// GPT-2's vocabulary projection: 50257 columns (wide: a multiple of 64), the reshape of
// its rows moved above the slice, which is then the program's result.
// CHECK-LABEL: func.func @vocabulary
// CHECK-NEXT:    %[[W:.*]] = tcp.param @lm_head.weight.padded : tensor<768x50304xf16>
// CHECK-NEXT:    %[[Y:.*]] = tcp.matmul %x, %[[W]] : (tensor<1024x768xf16>, tensor<768x50304xf16>) -> tensor<1024x50304xf16>
// CHECK-NEXT:    %[[R:.*]] = tcp.reshape %[[Y]] : tensor<1024x50304xf16> to tensor<8x128x50304xf16>
// CHECK-NEXT:    %[[S:.*]] = tcp.slice %[[R]] {starts = array<i64: 0, 0, 0>, limits = array<i64: 8, 128, 50257>, strides = array<i64: 1, 1, 1>} : tensor<8x128x50304xf16> -> tensor<8x128x50257xf16>
// CHECK-NEXT:    func.return %[[S]]
func.func @vocabulary(%x: tensor<1024x768xf16>) -> tensor<8x128x50257xf16> {
  %w = tcp.param @lm_head.weight : tensor<768x50257xf16>
  %y = tcp.matmul %x, %w : (tensor<1024x768xf16>, tensor<768x50257xf16>) -> tensor<1024x50257xf16>
  %r = tcp.reshape %y : tensor<1024x50257xf16> to tensor<8x128x50257xf16>
  func.return %r : tensor<8x128x50257xf16>
}

// A bias (a padded parameter), an activation and a scale (a constant) stay on the padded
// columns; the slice stops before the reduction, which reads the cut columns.
// CHECK-LABEL: func.func @epilogue
// CHECK-NEXT:    %[[W:.*]] = tcp.param @fc.weight.padded : tensor<1024x1008xf16>
// CHECK-NEXT:    %[[Y:.*]] = tcp.matmul %x, %[[W]] : (tensor<4096x1024xf16>, tensor<1024x1008xf16>) -> tensor<4096x1008xf16>
// CHECK-NEXT:    %[[B:.*]] = tcp.param @fc.bias.padded : tensor<1x1008xf16>
// CHECK-NEXT:    %[[BB:.*]] = tcp.broadcast %[[B]] : tensor<1x1008xf16> to tensor<4096x1008xf16>
// CHECK-NEXT:    %[[Z:.*]] = tcp.add %[[Y]], %[[BB]] : tensor<4096x1008xf16>
// CHECK-NEXT:    %[[G:.*]] = tcp.gelu %[[Z]] {approximate = "tanh"} : tensor<4096x1008xf16>
// CHECK-NEXT:    %[[H:.*]] = tcp.constant {value = 5.000000e-01 : f64} : tensor<4096x1008xf16>
// CHECK-NEXT:    %[[M:.*]] = tcp.mul %[[G]], %[[H]] : tensor<4096x1008xf16>
// CHECK-NEXT:    %[[S:.*]] = tcp.slice %[[M]] {starts = array<i64: 0, 0>, limits = array<i64: 4096, 1001>, strides = array<i64: 1, 1>} : tensor<4096x1008xf16> -> tensor<4096x1001xf16>
// CHECK-NEXT:    %[[R:.*]] = tcp.reduce_sum %[[S]]
// CHECK-NEXT:    func.return %[[R]]
func.func @epilogue(%x: tensor<4096x1024xf16>) -> tensor<4096xf16> {
  %w = tcp.param @fc.weight : tensor<1024x1001xf16>
  %b = tcp.param @fc.bias : tensor<1x1001xf16>
  %y = tcp.matmul %x, %w : (tensor<4096x1024xf16>, tensor<1024x1001xf16>) -> tensor<4096x1001xf16>
  %bb = tcp.broadcast %b : tensor<1x1001xf16> to tensor<4096x1001xf16>
  %z = tcp.add %y, %bb : tensor<4096x1001xf16>
  %g = tcp.gelu %z {approximate = "tanh"} : tensor<4096x1001xf16>
  %half = tcp.constant {value = 5.000000e-01 : f64} : tensor<4096x1001xf16>
  %m = tcp.mul %g, %half : tensor<4096x1001xf16>
  %r = tcp.reduce_sum %m {axes = array<i64: 1>, keepdim = false} : tensor<4096x1001xf16> -> tensor<4096xf16>
  func.return %r : tensor<4096xf16>
}

// float32 rows are aligned at multiples of 4; a run-time operand (the residual) stops the
// slice before the add; a row broadcast (one value per row) needs no padding.
// CHECK-LABEL: func.func @f32_residual
// CHECK-NEXT:    %[[W:.*]] = tcp.param @proj.weight.padded : tensor<1024x1004xf32>
// CHECK-NEXT:    %[[Y:.*]] = tcp.matmul %x, %[[W]] : (tensor<2048x1024xf32>, tensor<1024x1004xf32>) -> tensor<2048x1004xf32>
// CHECK-NEXT:    %[[C:.*]] = tcp.broadcast %c : tensor<2048x1xf32> to tensor<2048x1004xf32>
// CHECK-NEXT:    %[[D:.*]] = tcp.sub %[[Y]], %[[C]] : tensor<2048x1004xf32>
// CHECK-NEXT:    %[[S:.*]] = tcp.slice %[[D]] {{.*}} : tensor<2048x1004xf32> -> tensor<2048x1001xf32>
// CHECK-NEXT:    %{{.*}} = tcp.add %[[S]], %res
func.func @f32_residual(%x: tensor<2048x1024xf32>, %c: tensor<2048x1xf32>, %res: tensor<2048x1001xf32>) -> tensor<2048x1001xf32> {
  %w = tcp.param @proj.weight : tensor<1024x1001xf32>
  %y = tcp.matmul %x, %w : (tensor<2048x1024xf32>, tensor<1024x1001xf32>) -> tensor<2048x1001xf32>
  %cc = tcp.broadcast %c : tensor<2048x1xf32> to tensor<2048x1001xf32>
  %d = tcp.sub %y, %cc : tensor<2048x1001xf32>
  %r = tcp.add %d, %res : tensor<2048x1001xf32>
  func.return %r : tensor<2048x1001xf32>
}

// Left as they are: aligned rows, a small product, a run-time right operand.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT:     tcp.slice
// CHECK:         func.return
func.func @untouched(%x: tensor<1024x768xf16>, %xs: tensor<8x768xf16>, %v: tensor<768x50257xf16>) -> (tensor<1024x50264xf16>, tensor<8x1001xf16>, tensor<1024x50257xf16>) {
  %w = tcp.param @aligned.weight : tensor<768x50264xf16>
  %a = tcp.matmul %x, %w : (tensor<1024x768xf16>, tensor<768x50264xf16>) -> tensor<1024x50264xf16>
  %s = tcp.param @small.weight : tensor<768x1001xf16>
  %b = tcp.matmul %xs, %s : (tensor<8x768xf16>, tensor<768x1001xf16>) -> tensor<8x1001xf16>
  %c = tcp.matmul %x, %v : (tensor<1024x768xf16>, tensor<768x50257xf16>) -> tensor<1024x50257xf16>
  func.return %a, %b, %c : tensor<1024x50264xf16>, tensor<8x1001xf16>, tensor<1024x50257xf16>
}
