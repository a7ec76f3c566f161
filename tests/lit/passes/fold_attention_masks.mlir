// RUN: %dnnc opt %s -p fold-attention-masks,dce --random-params | %filecheck %s

// A decoder's causal mask, built from iota comparisons: key j is kept for query i
// iff j <= i. It becomes causal = true and its ops go.
// CHECK-LABEL: func.func @causal_from_iota
// CHECK-NOT:     tcp.iota
// CHECK-NOT:     tcp.compare
// CHECK:         tcp.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64, causal = true}
// CHECK-NOT:     mask(
func.func @causal_from_iota(%q: tensor<2x4x8x16xf16>, %k: tensor<2x4x8x16xf16>, %v: tensor<2x4x8x16xf16>) -> tensor<2x4x8x16xf16> {
  %i = tcp.iota {start = 0 : i64, step = 1 : i64} : tensor<8xi64>
  %rows = tcp.reshape %i : tensor<8xi64> to tensor<1x1x8x1xi64>
  %cols = tcp.reshape %i : tensor<8xi64> to tensor<1x1x1x8xi64>
  %rb = tcp.broadcast %rows : tensor<1x1x8x1xi64> to tensor<1x1x8x8xi64>
  %cb = tcp.broadcast %cols : tensor<1x1x1x8xi64> to tensor<1x1x8x8xi64>
  %keep = tcp.compare %cb, %rb {predicate = "le"} : tensor<1x1x8x8xi64> -> tensor<1x1x8x8xi1>
  %m = tcp.broadcast %keep : tensor<1x1x8x8xi1> to tensor<2x4x8x8xi1>
  %o = tcp.attention %q, %k, %v mask(%m : tensor<2x4x8x8xi1>) {scale = 1.250000e-01 : f64, causal = false} : tensor<2x4x8x16xf16>, tensor<2x4x8x16xf16>, tensor<2x4x8x16xf16> -> tensor<2x4x8x16xf16>
  func.return %o : tensor<2x4x8x16xf16>
}

// The same as a float mask holding 0 and the type's lowest value.
// CHECK-LABEL: func.func @causal_float_mask
// CHECK-NOT:     tcp.select
// CHECK:         tcp.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64, causal = true}
func.func @causal_float_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %i = tcp.iota {start = 0 : i64, step = 1 : i64} : tensor<4xi64>
  %rows = tcp.reshape %i : tensor<4xi64> to tensor<4x1xi64>
  %cols = tcp.reshape %i : tensor<4xi64> to tensor<1x4xi64>
  %rb = tcp.broadcast %rows : tensor<4x1xi64> to tensor<4x4xi64>
  %cb = tcp.broadcast %cols : tensor<1x4xi64> to tensor<4x4xi64>
  %above = tcp.compare %cb, %rb {predicate = "gt"} : tensor<4x4xi64> -> tensor<4x4xi1>
  %low = tcp.constant {value = -3.4028234663852886e+38 : f64} : tensor<4x4xf32>
  %zero = tcp.constant {value = 0.000000e+00 : f64} : tensor<4x4xf32>
  %bias = tcp.select %above, %low, %zero : tensor<4x4xi1>, tensor<4x4xf32>
  %b4 = tcp.reshape %bias : tensor<4x4xf32> to tensor<1x1x4x4xf32>
  %m = tcp.broadcast %b4 : tensor<1x1x4x4xf32> to tensor<1x2x4x4xf32>
  %o = tcp.attention %q, %k, %v mask(%m : tensor<1x2x4x4xf32>) {scale = 1.250000e-01 : f64, causal = false} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}

// An encoder's padding mask with nothing padded keeps every key: dropped.
// CHECK-LABEL: func.func @all_keep
// CHECK:         tcp.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64, causal = false}
// CHECK-NOT:     mask(
func.func @all_keep(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> tensor<1x2x4x8xf32> {
  %t = tcp.constant {value = 1 : i64} : tensor<1x1x1x6xi1>
  %m = tcp.broadcast %t : tensor<1x1x1x6xi1> to tensor<1x2x4x6xi1>
  %o = tcp.attention %q, %k, %v mask(%m : tensor<1x2x4x6xi1>) {scale = 1.250000e-01 : f64, causal = false} : tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32> -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}

// A position bias (T5's relative attention) is no pattern: kept.
// CHECK-LABEL: func.func @bias_kept
// CHECK:         tcp.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<1x2x4x4xf32>)
func.func @bias_kept(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %b = tcp.param @bias : tensor<1x2x4x4xf32>
  %o = tcp.attention %q, %k, %v mask(%b : tensor<1x2x4x4xf32>) {scale = 1.000000e+00 : f64, causal = false} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}

// A mask from an input (a padding mask passed at run time) is kept.
// CHECK-LABEL: func.func @input_mask_kept
// CHECK:         tcp.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<1x2x4x4xi1>)
func.func @input_mask_kept(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %pad: tensor<1x1x1x4xi1>) -> tensor<1x2x4x8xf32> {
  %m = tcp.broadcast %pad : tensor<1x1x1x4xi1> to tensor<1x2x4x4xi1>
  %o = tcp.attention %q, %k, %v mask(%m : tensor<1x2x4x4xi1>) {scale = 1.250000e-01 : f64, causal = false} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}

// A causal mask on an op already causal, combined with an all-keep one: causal, no mask.
// CHECK-LABEL: func.func @already_causal
// CHECK:         tcp.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64, causal = true}
func.func @already_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %t = tcp.constant {value = 1 : i64} : tensor<1x2x4x4xi1>
  %o = tcp.attention %q, %k, %v mask(%t : tensor<1x2x4x4xi1>) {scale = 1.250000e-01 : f64, causal = true} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}
