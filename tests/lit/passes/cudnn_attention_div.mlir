// RUN: %dnnc opt %s -p cudnn-attention --random-params | %filecheck %s --check-prefix=GROUP
// RUN: %dnnc opt %s -p cudnn-attention,lower-cudnn --random-params | %filecheck %s --check-prefix=LOWER

// Attention as BERT writes it out: the scores divided by sqrt(head dim) (8 here),
// then softmax and the weighted sum; and a second head whose scores go into the
// softmax unscaled, over 512 keys. Each becomes one cudnn group, its scale the
// divisor's inverse (or 1), then one cudnn.sdpa node. A third over 24 keys stays as
// it is (its products and softmax are quicker as kernels of their own).

builtin.module {
  func.func @forward(%q: tensor<6x20x64xf16>, %kt: tensor<6x64x512xf16>, %v: tensor<6x512x32xf16>, %kt24: tensor<6x64x24xf16>, %v24: tensor<6x24x32xf16>) -> (tensor<6x20x32xf16>, tensor<6x20x32xf16>, tensor<6x20x32xf16>) {
    %s = tcp.batch_matmul %q, %kt : (tensor<6x20x64xf16>, tensor<6x64x512xf16>) -> tensor<6x20x512xf16>
    %r = tcp.reshape %s : tensor<6x20x512xf16> to tensor<1x6x20x512xf16>
    %c = tcp.constant {value = 8.000000e+00 : f64} : tensor<1x6x20x512xf16>
    %d = tcp.div %r, %c : tensor<1x6x20x512xf16>
    %p = tcp.softmax %d {axis = 3 : i64} : tensor<1x6x20x512xf16>
    %p2 = tcp.reshape %p : tensor<1x6x20x512xf16> to tensor<6x20x512xf16>
    %o = tcp.batch_matmul %p2, %v : (tensor<6x20x512xf16>, tensor<6x512x32xf16>) -> tensor<6x20x32xf16>
    %s2 = tcp.batch_matmul %q, %kt : (tensor<6x20x64xf16>, tensor<6x64x512xf16>) -> tensor<6x20x512xf16>
    %u = tcp.softmax %s2 {axis = 2 : i64} : tensor<6x20x512xf16>
    %o2 = tcp.batch_matmul %u, %v : (tensor<6x20x512xf16>, tensor<6x512x32xf16>) -> tensor<6x20x32xf16>
    %s3 = tcp.batch_matmul %q, %kt24 : (tensor<6x20x64xf16>, tensor<6x64x24xf16>) -> tensor<6x20x24xf16>
    %u3 = tcp.softmax %s3 {axis = 2 : i64} : tensor<6x20x24xf16>
    %o3 = tcp.batch_matmul %u3, %v24 : (tensor<6x20x24xf16>, tensor<6x24x32xf16>) -> tensor<6x20x32xf16>
    func.return %o, %o2, %o3 : tensor<6x20x32xf16>, tensor<6x20x32xf16>, tensor<6x20x32xf16>
  }
}

// GROUP:      %o = tcp.isolated_group({{.*}}) {backend = "cudnn", kind = "sdpa", scale = 1.250000e-01 : f64}
// GROUP:        tcp.div
// GROUP:        tcp.softmax
// GROUP:      %o2 = tcp.isolated_group({{.*}}) {backend = "cudnn", kind = "sdpa", scale = 1.000000e+00 : f64}
// GROUP-NOT:    tcp.mul
// GROUP:        tcp.softmax
// GROUP:      %s3 = tcp.batch_matmul %q, %kt24
// GROUP-NEXT: %u3 = tcp.softmax %s3

// LOWER:      cudnn.sdpa {{.*}} {scale = 1.250000e-01 : f64, causal = false}
// LOWER:      cudnn.sdpa {{.*}} {scale = 1.000000e+00 : f64, causal = false}
// LOWER:      tcp.softmax %s3
