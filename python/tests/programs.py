"""HLO programs the tests compile, as HLO text."""

# relu(x . w1 + b1) . w2 + b2: x f32[4,3], w1 f32[3,8], b1 f32[8],
# w2 f32[8,2], b2 f32[2] -> f32[4,2].
MLP = """
HloModule mlp
ENTRY main {
  x = f32[4,3] parameter(0)
  w1 = f32[3,8] parameter(1)
  b1 = f32[8] parameter(2)
  w2 = f32[8,2] parameter(3)
  b2 = f32[2] parameter(4)
  h = f32[4,8] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  hb = f32[4,8] broadcast(b1), dimensions={1}
  hs = f32[4,8] add(h, hb)
  zero = f32[] constant(0)
  zeros = f32[4,8] broadcast(zero), dimensions={}
  relu = f32[4,8] maximum(hs, zeros)
  o = f32[4,2] dot(relu, w2), lhs_contracting_dims={1},
      rhs_contracting_dims={0}
  ob = f32[4,2] broadcast(b2), dimensions={1}
  ROOT out = f32[4,2] add(o, ob)
}
"""

# Each replica returns its replica id, and its argument plus one.
REPLICA_ID = """
HloModule replica
ENTRY main {
  x = s32[2] parameter(0)
  one = s32[] constant(1)
  ones = s32[2] broadcast(one), dimensions={}
  inc = s32[2] add(x, ones)
  id = u32[] replica-id()
  ROOT out = (u32[], s32[2]) tuple(id, inc)
}
"""

# (t = (f32[2] a, s32[3] b), s32[] s) -> ((-a, b + s), s).
TUPLES = """
HloModule tuples
ENTRY main {
  t = (f32[2], s32[3]) parameter(0)
  s = s32[] parameter(1)
  a = f32[2] get-tuple-element(t), index=0
  b = s32[3] get-tuple-element(t), index=1
  neg = f32[2] negate(a)
  sb = s32[3] broadcast(s), dimensions={}
  bs = s32[3] add(b, sb)
  inner = (f32[2], s32[3]) tuple(neg, bs)
  ROOT out = ((f32[2], s32[3]), s32[]) tuple(inner, s)
}
"""

# One tuple parameter (what tuple_arguments packs): (a f32[2], s s32[]) -> -a.
TUPLE_PARAMETER = """
HloModule tuple_parameter
ENTRY main {
  t = (f32[2], s32[]) parameter(0)
  a = f32[2] get-tuple-element(t), index=0
  ROOT neg = f32[2] negate(a)
}
"""

# x + x on bf16[3].
BF16_DOUBLE = """
HloModule bf16_double
ENTRY main {
  x = bf16[3] parameter(0)
  ROOT out = bf16[3] add(x, x)
}
"""

# x + 1 on a scalar: the smallest useful program.
ADD_ONE = """
HloModule add_one
ENTRY main {
  x = f32[] parameter(0)
  one = f32[] constant(1)
  ROOT out = f32[] add(x, one)
}
"""

# A while loop whose condition is always true: it never finishes.
SPIN_FOREVER = """
HloModule spin_forever
cond {
  c = s32[] parameter(0)
  ROOT always = pred[] constant(true)
}
body {
  i = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT next = s32[] add(i, one)
}
ENTRY main {
  zero = s32[] constant(0)
  ROOT loop = s32[] while(zero), condition=cond, body=body
}
"""

# Each replica adds its input to every other replica's: an all-reduce over
# all replicas of the launch.
ALL_REDUCE_SUM = """
HloModule all_reduce_sum
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4] parameter(0)
  ROOT sum = f32[4] all-reduce(x), replica_groups={}, to_apply=add
}
"""
