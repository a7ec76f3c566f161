// RUN: %dnnc opt %s -p split-reductions | %filecheck %s

// "any" over a whole tensor (T5's overflow check): 256 chunks of 2048, then the 256.
// CHECK-LABEL: func.func @any_of_all
// CHECK-NEXT:    %[[C:.*]] = tcp.reshape %x : tensor<8x128x512xi1> to tensor<256x2048xi1>
// CHECK-NEXT:    %[[P:.*]] = tcp.reduce_max %[[C]] {axes = array<i64: 1>, keepdim = false} : tensor<256x2048xi1> -> tensor<256xi1>
// CHECK-NEXT:    %[[R:.*]] = tcp.reduce_max %[[P]] {axes = array<i64: 0>, keepdim = false} : tensor<256xi1> -> tensor<i1>
// CHECK-NEXT:    func.return %[[R]]
func.func @any_of_all(%x: tensor<8x128x512xi1>) -> tensor<i1> {
  %r = tcp.reduce_max %x {axes = array<i64: 0, 1, 2>, keepdim = false} : tensor<8x128x512xi1> -> tensor<i1>
  func.return %r : tensor<i1>
}

// A float16 sum per row, kept dims: summed in float32 across both steps, rounded once.
// CHECK-LABEL: func.func @sum_kept
// CHECK-NEXT:    %[[W:.*]] = tcp.cast %x : tensor<2x65536xf16> to tensor<2x65536xf32>
// CHECK-NEXT:    %[[C:.*]] = tcp.reshape %[[W]] : tensor<2x65536xf32> to tensor<2x32x2048xf32>
// CHECK-NEXT:    %[[P:.*]] = tcp.reduce_sum %[[C]] {axes = array<i64: 2>, keepdim = false} : tensor<2x32x2048xf32> -> tensor<2x32xf32>
// CHECK-NEXT:    %[[S:.*]] = tcp.reduce_sum %[[P]] {axes = array<i64: 1>, keepdim = false} : tensor<2x32xf32> -> tensor<2xf32>
// CHECK-NEXT:    %[[N:.*]] = tcp.cast %[[S]] : tensor<2xf32> to tensor<2xf16>
// CHECK-NEXT:    %[[R:.*]] = tcp.reshape %[[N]] : tensor<2xf16> to tensor<2x1xf16>
// CHECK-NEXT:    func.return %[[R]]
func.func @sum_kept(%x: tensor<2x65536xf16>) -> tensor<2x1xf16> {
  %r = tcp.reduce_sum %x {axes = array<i64: 1>, keepdim = true} : tensor<2x65536xf16> -> tensor<2x1xf16>
  func.return %r : tensor<2x1xf16>
}

// A float32 mean: the mean of equal chunks' means, no casts; a length of 98304 = 48 x 2048.
// CHECK-LABEL: func.func @mean_f32
// CHECK-NEXT:    %[[C:.*]] = tcp.reshape %x : tensor<3x32768xf32> to tensor<48x2048xf32>
// CHECK-NEXT:    %[[P:.*]] = tcp.reduce_mean %[[C]] {axes = array<i64: 1>, keepdim = false} : tensor<48x2048xf32> -> tensor<48xf32>
// CHECK-NEXT:    %[[R:.*]] = tcp.reduce_mean %[[P]] {axes = array<i64: 0>, keepdim = false} : tensor<48xf32> -> tensor<f32>
// CHECK-NEXT:    func.return %[[R]]
func.func @mean_f32(%x: tensor<3x32768xf32>) -> tensor<f32> {
  %r = tcp.reduce_mean %x {axes = array<i64: 0, 1>, keepdim = false} : tensor<3x32768xf32> -> tensor<f32>
  func.return %r : tensor<f32>
}

// Left alone: many rows (64 > 32), short rows, reduced axes not trailing, and a
// length with no divisor between 512 and 2048 (65537 is prime).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     tcp.reshape
// CHECK:         tcp.reduce_sum %a {axes = array<i64: 1>, keepdim = false} : tensor<64x65536xf32> -> tensor<64xf32>
// CHECK-NEXT:    tcp.reduce_sum %b {axes = array<i64: 1>, keepdim = false} : tensor<1x4096xf32> -> tensor<1xf32>
// CHECK-NEXT:    tcp.reduce_max %c {axes = array<i64: 0>, keepdim = false} : tensor<65536x2xf32> -> tensor<2xf32>
// CHECK-NEXT:    tcp.reduce_max %d {axes = array<i64: 0>, keepdim = false} : tensor<65537xf32> -> tensor<f32>
func.func @left_alone(%a: tensor<64x65536xf32>, %b: tensor<1x4096xf32>, %c: tensor<65536x2xf32>, %d: tensor<65537xf32>) -> (tensor<64xf32>, tensor<1xf32>, tensor<2xf32>, tensor<f32>) {
  %ra = tcp.reduce_sum %a {axes = array<i64: 1>, keepdim = false} : tensor<64x65536xf32> -> tensor<64xf32>
  %rb = tcp.reduce_sum %b {axes = array<i64: 1>, keepdim = false} : tensor<1x4096xf32> -> tensor<1xf32>
  %rc = tcp.reduce_max %c {axes = array<i64: 0>, keepdim = false} : tensor<65536x2xf32> -> tensor<2xf32>
  %rd = tcp.reduce_max %d {axes = array<i64: 0>, keepdim = false} : tensor<65537xf32> -> tensor<f32>
  func.return %ra, %rb, %rc, %rd : tensor<64xf32>, tensor<1xf32>, tensor<2xf32>, tensor<f32>
}
