// RUN: %dnnc opt %s -p dce | %filecheck %s

// CHECK-LABEL: func.func @dead_ops
// CHECK-NEXT:    %[[E:.*]] = tcp.exp
// CHECK-NEXT:    func.return %[[E]]
func.func @dead_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = tcp.param @unused : tensor<4xf32>
  %a = tcp.add %x, %w : tensor<4xf32>
  %b = tcp.tanh %a : tensor<4xf32>
  %e = tcp.exp %x : tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// A group whose results are unused is dead as a whole (its body is pure).
// CHECK-LABEL: func.func @dead_group
// CHECK-NOT:     tcp.isolated_group
// CHECK:         func.return
func.func @dead_group(%x: tensor<4xf32>) -> tensor<4xf32> {
  %g = tcp.isolated_group(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = tcp.neg %a : tensor<4xf32>
    tcp.yield %n : tensor<4xf32>
  }
  func.return %x : tensor<4xf32>
}
