// RUN: %dnnc opt %s -p cudnn-attention --random-params | %filecheck %s --check-prefix=GROUP
// RUN: %dnnc opt %s -p cudnn-attention,lower-cudnn --random-params | %filecheck %s --check-prefix=LOWER

// Attention as a ViT exports it (scores, scale, softmax, weighted sum), in fp16:
// one cudnn group with the ops unchanged, given k = transpose(kT) (cuDNN wants the
// head dim contiguous), then one cudnn.sdpa node.

builtin.module {
  func.func @forward(%q: tensor<6x20x64xf16>, %kt: tensor<6x64x512xf16>, %v: tensor<6x512x32xf16>) -> tensor<6x20x32xf16> {
    %s = tcp.batch_matmul %q, %kt : (tensor<6x20x64xf16>, tensor<6x64x512xf16>) -> tensor<6x20x512xf16>
    %r = tcp.reshape %s : tensor<6x20x512xf16> to tensor<1x6x20x512xf16>
    %c = tcp.constant {value = 1.250000e-01 : f64} : tensor<1x6x20x512xf16>
    %m = tcp.mul %r, %c : tensor<1x6x20x512xf16>
    %p = tcp.softmax %m {axis = 3 : i64} : tensor<1x6x20x512xf16>
    %p2 = tcp.reshape %p : tensor<1x6x20x512xf16> to tensor<6x20x512xf16>
    %o = tcp.batch_matmul %p2, %v : (tensor<6x20x512xf16>, tensor<6x512x32xf16>) -> tensor<6x20x32xf16>
    func.return %o : tensor<6x20x32xf16>
  }
}

// GROUP:      %[[K:.*]] = tcp.transpose %kt {permutation = array<i64: 0, 2, 1>}
// GROUP:      %o = tcp.isolated_group(%q, %[[K]], %c, %v) {backend = "cudnn", kind = "sdpa", scale = 1.250000e-01 : f64}
// GROUP:        tcp.transpose
// GROUP:        tcp.batch_matmul
// GROUP:        tcp.mul
// GROUP:        tcp.softmax
// GROUP:        tcp.batch_matmul
// GROUP:        tcp.yield

// LOWER:      cudnn.graph(%q, %{{.*}}, %v) {kind = "sdpa", result_strides = [strided<[3840, 640, 32, 1]>]}
// LOWER-NEXT: ^{{.*}}(%{{.*}}: tensor<1x6x20x64xf16, strided<[7680, 1280, 64, 1]>>, %{{.*}}: tensor<1x6x512x64xf16, strided<[196608, 32768, 64, 1]>>, %{{.*}}: tensor<1x6x512x32xf16, strided<[98304, 16384, 32, 1]>>):
// LOWER-NEXT:   cudnn.sdpa {{.*}} {scale = 1.250000e-01 : f64, causal = false} : {{.*}} -> tensor<1x6x20x32xf16>
// LOWER-NOT:  tcp.softmax
