// RUN: env DNNC_CUDNN_ATTENTION=1 %dnnc opt %s -p cudnn-attention | %filecheck %s --check-prefix=GROUP
// RUN: env DNNC_CUDNN_ATTENTION=1 %dnnc opt %s -p cudnn-attention,lower-cudnn | %filecheck %s --check-prefix=LOWER

// With DNNC_CUDNN_ATTENTION=1, tcp.attention where cuDNN's fused attention runs it (fp16, causal, no mask, heads
// matching) becomes a cudnn group of that one op, then one cudnn.sdpa node reading
// q, k and v as they lie. With a mask, with fewer key/value heads (grouped-query), or
// in float32, it stays for code generation.

builtin.module {
  func.func @forward(%q: tensor<2x4x20x64xf16>, %k: tensor<2x4x24x64xf16>, %v: tensor<2x4x24x32xf16>, %m: tensor<2x4x20x24xi1>, %kg: tensor<2x2x24x64xf16>, %vg: tensor<2x2x24x32xf16>) -> (tensor<2x4x20x32xf16>, tensor<2x4x20x32xf16>, tensor<2x4x20x32xf16>) {
    %a = tcp.attention %q, %k, %v {scale = 1.250000e-01 : f64, causal = true} : tensor<2x4x20x64xf16>, tensor<2x4x24x64xf16>, tensor<2x4x24x32xf16> -> tensor<2x4x20x32xf16>
    %b = tcp.attention %q, %k, %v mask(%m : tensor<2x4x20x24xi1>) {scale = 1.250000e-01 : f64, causal = false} : tensor<2x4x20x64xf16>, tensor<2x4x24x64xf16>, tensor<2x4x24x32xf16> -> tensor<2x4x20x32xf16>
    %c = tcp.attention %q, %kg, %vg {scale = 1.250000e-01 : f64, causal = false} : tensor<2x4x20x64xf16>, tensor<2x2x24x64xf16>, tensor<2x2x24x32xf16> -> tensor<2x4x20x32xf16>
    func.return %a, %b, %c : tensor<2x4x20x32xf16>, tensor<2x4x20x32xf16>, tensor<2x4x20x32xf16>
  }
}

// GROUP:      %a = tcp.isolated_group(%q, %k, %v) {backend = "cudnn", kind = "sdpa_causal", scale = 1.250000e-01 : f64}
// GROUP-NEXT: ^bb0(
// GROUP-NEXT:   tcp.attention {{.*}} {scale = 1.250000e-01 : f64, causal = true}
// GROUP-NEXT:   tcp.yield
// GROUP:      %b = tcp.attention %q, %k, %v mask(%m
// GROUP:      %c = tcp.attention %q, %kg, %vg

// LOWER:      cudnn.graph(%q, %k, %v) {kind = "sdpa_causal", result_strides = [strided<[2560, 640, 32, 1]>]}
// LOWER-NEXT: ^bb0(%{{.*}}: tensor<2x4x20x64xf16, strided<[5120, 1280, 64, 1]>>, %{{.*}}: tensor<2x4x24x64xf16, strided<[6144, 1536, 64, 1]>>, %{{.*}}: tensor<2x4x24x32xf16, strided<[3072, 768, 32, 1]>>):
// LOWER-NEXT:   %{{.*}} = cudnn.sdpa {{.*}} {scale = 1.250000e-01 : f64, causal = true}
// LOWER-NEXT:   cudnn.return
// LOWER:      tcp.attention %q, %k, %v mask(%m
// LOWER:      tcp.attention %q, %kg, %vg
