// One use of every tcp op, for the round-trip and reference tests.
func.func @forward(%x: tensor<2x3x8x8xf32>, %idx: tensor<2x5xi64>, %m: tensor<4x6xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x5x6xf32>, tensor<2x6xf32>, tensor<4x6xi1>, tensor<2x3x4x4xf32>, tensor<1x1x4x6xf32>, tensor<4x6xf32>, tensor<2x5xi64>, tensor<4x6xf32>, tensor<4xi64>, tensor<1x6xi64>, tensor<4x2xf32>, tensor<4x2xi64>) {
  %w = tcp.param @conv.weight : tensor<4x3x3x3xf32>
  %c = tcp.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 2, 1, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x7xf32>
  %p = tcp.pad %c {low = array<i64: 0, 0, 0, 1>, high = array<i64: 0, 0, 0, 0>, value = 0.000000e+00 : f64} : tensor<2x4x8x7xf32> -> tensor<2x4x8x8xf32>
  %g = tcp.param @bn.weight : tensor<4xf32>
  %b = tcp.param @bn.bias : tensor<4xf32>
  %mean = tcp.param @bn.mean : tensor<4xf32>
  %var = tcp.param @bn.var : tensor<4xf32>
  %bn = tcp.batch_norm %p, %g, %b, %mean, %var {epsilon = 1.000000e-05 : f64} : tensor<2x4x8x8xf32>, tensor<4xf32>
  %r = tcp.clamp %bn {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : tensor<2x4x8x8xf32>
  %e = tcp.exp %r : tensor<2x4x8x8xf32>
  %l = tcp.log %e : tensor<2x4x8x8xf32>
  %t = tcp.tanh %l : tensor<2x4x8x8xf32>
  %s = tcp.sigmoid %t : tensor<2x4x8x8xf32>
  %si = tcp.silu %s : tensor<2x4x8x8xf32>
  %sq = tcp.sqrt %si : tensor<2x4x8x8xf32>
  %rs = tcp.rsqrt %e : tensor<2x4x8x8xf32>
  %er = tcp.erf %rs : tensor<2x4x8x8xf32>
  %n = tcp.neg %er : tensor<2x4x8x8xf32>
  %a = tcp.abs %n : tensor<2x4x8x8xf32>
  %ge = tcp.gelu %a {approximate = "tanh"} : tensor<2x4x8x8xf32>
  %ad = tcp.add %ge, %sq : tensor<2x4x8x8xf32>
  %sb = tcp.sub %ad, %t : tensor<2x4x8x8xf32>
  %mu = tcp.mul %sb, %s : tensor<2x4x8x8xf32>
  %dv = tcp.div %mu, %e : tensor<2x4x8x8xf32>
  %mx = tcp.maximum %dv, %t : tensor<2x4x8x8xf32>
  %mn = tcp.minimum %mx, %e : tensor<2x4x8x8xf32>
  %pw = tcp.pow %e, %s : tensor<2x4x8x8xf32>
  %sum = tcp.add %mn, %pw : tensor<2x4x8x8xf32>
  %table = tcp.param @embedding : tensor<10x6xf32>
  %emb = tcp.gather %table, %idx {axis = 0 : i64} : (tensor<10x6xf32>, tensor<2x5xi64>) -> tensor<2x5x6xf32>
  %iota = tcp.iota {start = 0 : i64, step = 2 : i64} : tensor<5xi64>
  %iotaf = tcp.cast %iota : tensor<5xi64> to tensor<5xf32>
  %pos = tcp.reshape %iotaf : tensor<5xf32> to tensor<1x5x1xf32>
  %posb = tcp.broadcast %pos : tensor<1x5x1xf32> to tensor<2x5x6xf32>
  %embp = tcp.add %emb, %posb : tensor<2x5x6xf32>
  %ln_w = tcp.constant {value = 1.500000e+00 : f64} : tensor<6xf32>
  %ln_b = tcp.constant {value = -5.000000e-01 : f64} : tensor<6xf32>
  %ln = tcp.layer_norm %embp, %ln_w, %ln_b {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x5x6xf32>, tensor<6xf32>
  %sm = tcp.softmax %ln {axis = 1 : i64} : tensor<2x5x6xf32>
  %tr = tcp.transpose %sm {permutation = array<i64: 0, 2, 1>} : tensor<2x5x6xf32> -> tensor<2x6x5xf32>
  %bm = tcp.batch_matmul %sm, %tr : (tensor<2x5x6xf32>, tensor<2x6x5xf32>) -> tensor<2x5x5xf32>
  %sl = tcp.slice %bm {starts = array<i64: 0, 0, 1>, limits = array<i64: 2, 5, 5>, strides = array<i64: 1, 2, 3>} : tensor<2x5x5xf32> -> tensor<2x3x2xf32>
  %rsum = tcp.reduce_sum %sl {axes = array<i64: 1>, keepdim = false} : tensor<2x3x2xf32> -> tensor<2x2xf32>
  %rmax = tcp.reduce_max %sl {axes = array<i64: 1, 2>, keepdim = true} : tensor<2x3x2xf32> -> tensor<2x1x1xf32>
  %rmean = tcp.reduce_mean %embp {axes = array<i64: 1>, keepdim = false} : tensor<2x5x6xf32> -> tensor<2x6xf32>
  %rmf = tcp.reshape %rmax : tensor<2x1x1xf32> to tensor<2x1xf32>
  %cc = tcp.concat %rsum, %rmf, %rsum, %rmf {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x6xf32>
  %mw = tcp.param @fc.weight : tensor<6x6xf32>
  %mm = tcp.matmul %cc, %mw : (tensor<2x6xf32>, tensor<6x6xf32>) -> tensor<2x6xf32>
  %out2 = tcp.add %mm, %rmean : tensor<2x6xf32>
  %zero = tcp.constant {value = 0.000000e+00 : f64} : tensor<4x6xf32>
  %gt = tcp.compare %m, %zero {predicate = "gt"} : tensor<4x6xf32> -> tensor<4x6xi1>
  %lt = tcp.compare %m, %zero {predicate = "lt"} : tensor<4x6xf32> -> tensor<4x6xi1>
  %nt = tcp.logical_not %lt : tensor<4x6xi1>
  %and = tcp.logical_and %gt, %nt : tensor<4x6xi1>
  %or = tcp.logical_or %and, %lt : tensor<4x6xi1>
  %sel = tcp.select %or, %m, %zero : tensor<4x6xi1>, tensor<4x6xf32>
  %selpos = tcp.compare %sel, %m {predicate = "eq"} : tensor<4x6xf32> -> tensor<4x6xi1>
  %mp = tcp.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = false} : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
  %ap = tcp.avg_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, ceil_mode = true, count_include_pad = false} : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
  %pools = tcp.isolated_group(%mp, %ap) : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32> {
  ^bb0(%u: tensor<2x3x4x4xf32>, %v: tensor<2x3x4x4xf32>):
    %uv = tcp.add %u, %v : tensor<2x3x4x4xf32>
    tcp.yield %uv : tensor<2x3x4x4xf32>
  }
  %qa = tcp.reshape %m : tensor<4x6xf32> to tensor<1x1x4x6xf32>
  %att = tcp.attention %qa, %qa, %qa {scale = 5.000000e-01 : f64, causal = true} : tensor<1x1x4x6xf32>, tensor<1x1x4x6xf32>, tensor<1x1x4x6xf32> -> tensor<1x1x4x6xf32>
  %m1 = tcp.sin %m : tensor<4x6xf32>
  %m2 = tcp.cos %m1 : tensor<4x6xf32>
  %m3 = tcp.tan %m2 : tensor<4x6xf32>
  %m4 = tcp.log1p %m3 : tensor<4x6xf32>
  %m5 = tcp.expm1 %m4 : tensor<4x6xf32>
  %m6 = tcp.floor %m5 : tensor<4x6xf32>
  %m7 = tcp.ceil %m6 : tensor<4x6xf32>
  %m8 = tcp.round %m7 : tensor<4x6xf32>
  %m9 = tcp.trunc %m8 : tensor<4x6xf32>
  %m10 = tcp.sign %m9 : tensor<4x6xf32>
  %m11 = tcp.floor_div %m10, %m : tensor<4x6xf32>
  %m12 = tcp.remainder %m11, %m : tensor<4x6xf32>
  %m13 = tcp.fmod %m12, %m : tensor<4x6xf32>
  %mi = tcp.constant {value = 2 : i64} : tensor<4x6xi64>
  %mt = tcp.take_along %m13, %mi {axis = 1 : i64} : (tensor<4x6xf32>, tensor<4x6xi64>) -> tensor<4x6xf32>
  %ms = tcp.scatter %mt, %mi, %m {axis = 0 : i64, mode = "add"} : (tensor<4x6xf32>, tensor<4x6xi64>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %k3 = tcp.constant {value = 3 : i64} : tensor<2x5xi64>
  %k1 = tcp.bitwise_and %idx, %k3 : tensor<2x5xi64>
  %k2 = tcp.bitwise_or %k1, %idx : tensor<2x5xi64>
  %k4 = tcp.bitwise_xor %k2, %k3 : tensor<2x5xi64>
  %k5 = tcp.bitwise_not %k4 : tensor<2x5xi64>
  %k6 = tcp.shift_left %k5, %k3 : tensor<2x5xi64>
  %k7 = tcp.shift_right %k6, %k3 : tensor<2x5xi64>
  %cs = tcp.cumsum %m {axis = 1 : i64} : tensor<4x6xf32> -> tensor<4x6xf32>
  %rw = tcp.constant {value = 1.0 : f64} : tensor<6xf32>
  %rn = tcp.rms_norm %cs, %rw {axis = 1 : i64, epsilon = 1.000000e-06 : f64} : tensor<4x6xf32>, tensor<6xf32>
  %amx = tcp.argmax %m {axis = 1 : i64, keepdim = false} : tensor<4x6xf32> -> tensor<4xi64>
  %amn = tcp.argmin %m {axis = 0 : i64, keepdim = true} : tensor<4x6xf32> -> tensor<1x6xi64>
  %tv, %ti = tcp.topk %m {k = 2 : i64, axis = 1 : i64, largest = true} : tensor<4x6xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  func.return %sum, %embp, %out2, %selpos, %pools, %att, %ms, %k7, %rn, %amx, %amn, %tv, %ti : tensor<2x4x8x8xf32>, tensor<2x5x6xf32>, tensor<2x6xf32>, tensor<4x6xi1>, tensor<2x3x4x4xf32>, tensor<1x1x4x6xf32>, tensor<4x6xf32>, tensor<2x5xi64>, tensor<4x6xf32>, tensor<4xi64>, tensor<1x6xi64>, tensor<4x2xf32>, tensor<4x2xi64>
}
