// RUN: %dnnc opt %s -p simplify-shapes,dce | %filecheck %s

// CHECK-LABEL: func.func @identities
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    func.return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]] :
func.func @identities(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %r = tcp.reshape %x : tensor<2x3xf32> to tensor<2x3xf32>
  %t = tcp.transpose %x {permutation = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %b = tcp.broadcast %x : tensor<2x3xf32> to tensor<2x3xf32>
  %s = tcp.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 2, 3>, strides = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %c = tcp.cast %x : tensor<2x3xf32> to tensor<2x3xf32>
  func.return %r, %t, %b, %s, %c : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @reshape_chain
// CHECK-NEXT:    %[[R:.*]] = tcp.reshape %{{.*}} : tensor<2x3x4xf32> to tensor<6x4xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @reshape_chain(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %a = tcp.reshape %x : tensor<2x3x4xf32> to tensor<24xf32>
  %b = tcp.reshape %a : tensor<24xf32> to tensor<4x6xf32>
  %c = tcp.reshape %b : tensor<4x6xf32> to tensor<6x4xf32>
  func.return %c : tensor<6x4xf32>
}

// Two transposes compose into one: p = [1, 2, 0] then q = [2, 0, 1] gives the identity,
// and [0, 2, 1] then [1, 0, 2] gives [2, 0, 1].
// CHECK-LABEL: func.func @transpose_chain
// CHECK-NEXT:    %[[T:.*]] = tcp.transpose %[[X:.*]] {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %[[X]], %[[T]]
func.func @transpose_chain(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>) {
  %a = tcp.transpose %x {permutation = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %b = tcp.transpose %a {permutation = array<i64: 2, 0, 1>} : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  %c = tcp.transpose %x {permutation = array<i64: 0, 2, 1>} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  %d = tcp.transpose %c {permutation = array<i64: 1, 0, 2>} : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
  func.return %b, %d : tensor<2x3x4xf32>, tensor<4x2x3xf32>
}

// A transpose that only moves size-1 dimensions is a reshape.
// CHECK-LABEL: func.func @unit_transpose
// CHECK-NEXT:    tcp.reshape %{{.*}} : tensor<1x8x1x16xf32> to tensor<8x1x1x16xf32>
// CHECK-NOT:     tcp.transpose
func.func @unit_transpose(%x: tensor<1x8x1x16xf32>) -> tensor<8x1x1x16xf32> {
  %t = tcp.transpose %x {permutation = array<i64: 1, 0, 2, 3>} : tensor<1x8x1x16xf32> -> tensor<8x1x1x16xf32>
  func.return %t : tensor<8x1x1x16xf32>
}

// A transpose that moves data stays.
// CHECK-LABEL: func.func @real_transpose
// CHECK-NEXT:    tcp.transpose
func.func @real_transpose(%x: tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32> {
  %t = tcp.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
  func.return %t : tensor<1x2x8x16xf32>
}

// CHECK-LABEL: func.func @broadcast_chain
// CHECK-NEXT:    %[[B:.*]] = tcp.broadcast %{{.*}} : tensor<1x4x1xf32> to tensor<2x4x5xf32>
// CHECK-NEXT:    func.return %[[B]]
func.func @broadcast_chain(%x: tensor<1x4x1xf32>) -> tensor<2x4x5xf32> {
  %a = tcp.broadcast %x : tensor<1x4x1xf32> to tensor<1x4x5xf32>
  %b = tcp.broadcast %a : tensor<1x4x5xf32> to tensor<2x4x5xf32>
  func.return %b : tensor<2x4x5xf32>
}

// Moving a splat constant around gives a splat constant of the new shape.
// CHECK-LABEL: func.func @splat_constants
// CHECK-NEXT:    %[[C:.*]] = tcp.constant {value = 0xfff0000000000000 : f64} : tensor<1x2x8x8xf32>
// CHECK-NEXT:    func.return %[[C]]
func.func @splat_constants() -> tensor<1x2x8x8xf32> {
  %c = tcp.constant {value = 0xFFF0000000000000 : f64} : tensor<f32>
  %r = tcp.reshape %c : tensor<f32> to tensor<1x1x1x1xf32>
  %b = tcp.broadcast %r : tensor<1x1x1x1xf32> to tensor<1x2x8x8xf32>
  func.return %b : tensor<1x2x8x8xf32>
}

// Single-input concat and zero padding are no-ops.
// CHECK-LABEL: func.func @noop_data_movement
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    func.return %[[X]], %[[X]]
func.func @noop_data_movement(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %c = tcp.concat %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %p = tcp.pad %x {low = array<i64: 0, 0>, high = array<i64: 0, 0>, value = 0.000000e+00 : f64} : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %c, %p : tensor<2x3xf32>, tensor<2x3xf32>
}

// A Linear on a 4-d tensor: product, bias, reshape back, then the activation. The GELU
// and a splat multiply move above the reshape, which then meets the next one and both go.
// CHECK-LABEL: func.func @elementwise_before_reshape
// CHECK-SAME:    (%[[X:.*]]: tensor<6x4xf32>)
// CHECK-NEXT:    %[[G:.*]] = tcp.gelu %[[X]] {approximate = "none"} : tensor<6x4xf32>
// CHECK-NEXT:    %[[C:.*]] = tcp.constant {value = 2.000000e+00 : f64} : tensor<6x4xf32>
// CHECK-NEXT:    %[[M:.*]] = tcp.mul %[[G]], %[[C]] : tensor<6x4xf32>
// CHECK-NEXT:    func.return %[[M]]
func.func @elementwise_before_reshape(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %r = tcp.reshape %x : tensor<6x4xf32> to tensor<2x3x4xf32>
  %g = tcp.gelu %r {approximate = "none"} : tensor<2x3x4xf32>
  %c = tcp.constant {value = 2.0 : f64} : tensor<2x3x4xf32>
  %m = tcp.mul %g, %c : tensor<2x3x4xf32>
  %back = tcp.reshape %m : tensor<2x3x4xf32> to tensor<6x4xf32>
  func.return %back : tensor<6x4xf32>
}

// Two reshapes of one source shape: the sum is taken before them.
// CHECK-LABEL: func.func @two_reshapes_alike
// CHECK-NEXT:    %[[A:.*]] = tcp.add %x, %y : tensor<6x4xf32>
// CHECK-NEXT:    %[[R:.*]] = tcp.reshape %[[A]] : tensor<6x4xf32> to tensor<24xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @two_reshapes_alike(%x: tensor<6x4xf32>, %y: tensor<6x4xf32>) -> tensor<24xf32> {
  %rx = tcp.reshape %x : tensor<6x4xf32> to tensor<24xf32>
  %ry = tcp.reshape %y : tensor<6x4xf32> to tensor<24xf32>
  %a = tcp.add %rx, %ry : tensor<24xf32>
  func.return %a : tensor<24xf32>
}

// A reshape beside a broadcast bias, or beside a reshape from another shape: nothing moves.
// CHECK-LABEL: func.func @reshape_beside_other_layouts
// CHECK:         %[[R:.*]] = tcp.reshape %x : tensor<6x4xf32> to tensor<2x3x4xf32>
// CHECK:         tcp.add %[[R]], %{{.*}} : tensor<2x3x4xf32>
// CHECK:         %[[RY:.*]] = tcp.reshape %y : tensor<4x6xf32> to tensor<2x3x4xf32>
// CHECK-NEXT:    tcp.mul %[[R]], %[[RY]] : tensor<2x3x4xf32>
func.func @reshape_beside_other_layouts(%x: tensor<6x4xf32>, %y: tensor<4x6xf32>, %b: tensor<1x1x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %r = tcp.reshape %x : tensor<6x4xf32> to tensor<2x3x4xf32>
  %bb = tcp.broadcast %b : tensor<1x1x4xf32> to tensor<2x3x4xf32>
  %a = tcp.add %r, %bb : tensor<2x3x4xf32>
  %ry = tcp.reshape %y : tensor<4x6xf32> to tensor<2x3x4xf32>
  %m = tcp.mul %r, %ry : tensor<2x3x4xf32>
  func.return %a, %m : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}
