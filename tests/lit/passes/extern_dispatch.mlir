// User kernels through the canonical and GPU passes: a dispatch stays where it is
// (never folded at compile time, even on parameters; never fused into a group),
// an unused one is dead, and its kernel declaration stays at module level.
// RUN: %dnnc opt %s -p fold-params,simplify-shapes,dce --random-params | %filecheck %s --check-prefix=CANON
// RUN: %dnnc opt %s -p triton-fuse,dce | %filecheck %s --check-prefix=FUSE

builtin.module {
  extern.kernel @simple_mul {bindings = [{name = "lhs", dtype = "f32", shape = ["n"], access = "read"}, {name = "rhs", dtype = "f32", shape = ["n"], access = "read"}, {name = "out", dtype = "f32", shape = ["n"], access = "write"}], push_constants = [{name = "dim", type = "i32", value = "n"}], block = array<i64: 64, 1, 1>, grid = ["ceildiv(n, 64)", "1", "1"], objects = {sm_90 = "kernels_sm_90.cubin"}, reference = "tests.kernels.references:mul"}

  // CANON: extern.kernel @simple_mul
  // CANON-LABEL: func.func @forward
  // CANON:         %[[W:.*]] = tcp.param @w
  // CANON:         %[[K:.*]] = extern.dispatch @simple_mul(%[[W]], %[[W]]) {constants = []} : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  // CANON:         %[[D:.*]] = extern.dispatch @simple_mul(%x, %[[K]])
  // CANON-NOT:     extern.dispatch
  // CANON:         func.return

  // FUSE-LABEL: func.func @forward
  // FUSE:         %[[F:.*]] = extern.dispatch @simple_mul(%w, %w)
  // FUSE-NEXT:    %[[D:.*]] = extern.dispatch @simple_mul(%x, %[[F]])
  // FUSE-NEXT:    tcp.isolated_group(%x, %[[D]]) {backend = "triton", kind = "pointwise"}
  // FUSE-NOT:     extern.dispatch
  func.func @forward(%x: tensor<256xf32>) -> tensor<256xf32> {
    %w = tcp.param @w : tensor<256xf32>
    %folded = extern.dispatch @simple_mul(%w, %w) {constants = []} : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %t = tcp.tanh %x : tensor<256xf32>
    %d = extern.dispatch @simple_mul(%x, %folded) {constants = []} : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %unused = extern.dispatch @simple_mul(%x, %x) {constants = []} : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %e = tcp.exp %d : tensor<256xf32>
    %r = tcp.add %e, %t : tensor<256xf32>
    func.return %r : tensor<256xf32>
  }
}
