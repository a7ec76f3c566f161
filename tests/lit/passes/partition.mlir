// RUN: %dnnc opt %s --random-params -p "partition{policy=triton-only backends=cudnn,triton}" | %filecheck %s --check-prefix=TRITON
// RUN: %dnnc opt %s --random-params -p "partition{policy=cudnn-only backends=cudnn,triton}" | %filecheck %s --check-prefix=CUDNN
// RUN: %dnnc opt %s --random-params -p "partition{policy=auto backends=cudnn,triton}" | %filecheck %s --check-prefix=AUTO
// RUN: %dnnc opt %s --random-params -p "partition{policy=auto backends=cudnn,triton},assign-layouts,lower-cudnn,triton-fuse,dce" | %filecheck %s --check-prefix=BUILT
// RUN: %dnnc opt %s --random-params -p "partition{policy=cudnn-only backends=cudnn,triton},assign-layouts,lower-cudnn,dce" | %filecheck %s --check-prefix=GRAPH

// conv -> bias -> relu -> max_pool. triton-only: no cuDNN group; the ops of one
// chosen Triton kernel carry one dnnc.part mark. Here the bias and ReLU ride with
// the pooling (they are computed where the pool reads them), the conv is its own
// kernel. The bias broadcast is a compile-time value, not a node: it joins
// whichever group reads it.
// TRITON:      func.func @forward
// TRITON-SAME:   dnnc.decisions = "{{.*}}\22policy\22: \22triton-only\22
// TRITON-NOT:    backend = "cudnn"
// The conv is a cuDNN-rootable site: it carries what a tuning spec would match
// there (the conv alone under Triton) and its decision group (dnnc tune reads it).
// TRITON:        tcp.conv2d {{.*}}dnnc.site = "{\22group\22: 0, \22kind\22: \22conv\22, \22dtype\22: \22f16\22, \22input\22: [2, 16, 16, 16], \22output\22: [2, 32, 16, 16], \22weight\22: [32, 16, 3, 3]}", dnnc.part = [[P:[0-9]+]]
// TRITON:        tcp.add {{.*}}dnnc.part = [[Q:[0-9]+]]
// TRITON:        tcp.clamp {{.*}}dnnc.part = [[Q]]
// TRITON:        tcp.max_pool2d {{.*}}dnnc.part = [[Q]]

// cudnn-only: the convolution is in a cuDNN group; the pooling stays with Triton.
// CUDNN:       func.func @forward
// CUDNN:         tcp.isolated_group({{.*}}) {backend = "cudnn", kind = "conv{{.*}}"}
// CUDNN:           tcp.conv2d {{.*}}dnnc.site = "{\22group\22: 0, \22kind\22: \22conv
// CUDNN:         tcp.max_pool2d {{.*}}dnnc.part =
// CUDNN-NOT:     tcp.conv2d {{.*}}dnnc.part

// auto: a decision record, and every op ends in exactly one place.
// AUTO:        func.func @forward
// AUTO-SAME:     dnnc.decisions = "{{.*}}\22groups\22
// AUTO:          tcp.max_pool2d {{.*}}dnnc.part =

// After lowering: cuDNN graphs and Triton groups only, marks gone.
// BUILT:       func.func @forward
// BUILT-NOT:     dnnc.part
// BUILT:         tcp.isolated_group({{.*}}) {backend = "triton", kind = "pool"}
// BUILT:         func.return
// lower-cudnn moves the site onto the cuDNN graph (its signature ignores it).
// GRAPH:       cudnn.graph({{.*}}) {kind = "conv{{[a-z_]*}}", dnnc.site = "{\22group\22: 0, \22kind\22: \22conv{{.*}}\22input\22: [2, 16, 16, 16]
func.func @forward(%x: tensor<2x16x16x16xf16>) -> tensor<2x32x8x8xf16> {
  %w = tcp.param @conv.weight : tensor<32x16x3x3xf16>
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x16x16x16xf16>, tensor<32x16x3x3xf16>) -> tensor<2x32x16x16xf16>
  %b = tcp.param @conv.bias : tensor<1x32x1x1xf16>
  %bb = tcp.broadcast %b : tensor<1x32x1x1xf16> to tensor<2x32x16x16xf16>
  %a = tcp.add %c, %bb : tensor<2x32x16x16xf16>
  %r = tcp.clamp %a {min = 0.000000e+00 : f64} : tensor<2x32x16x16xf16>
  %p = tcp.max_pool2d %r {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false} : tensor<2x32x16x16xf16> -> tensor<2x32x8x8xf16>
  func.return %p : tensor<2x32x8x8xf16>
}
