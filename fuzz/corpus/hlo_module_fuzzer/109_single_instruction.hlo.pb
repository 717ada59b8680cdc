
UsesLogApproximationmainv
fused_computation
param_0	parameter* ˜
b.1log* ˜¢"
* * param_0(08Bmainp
main
a	parameter* ˜.

log_fusionfusion* ZkLoop˜¢²"
* * a(0Bmain"
* * 0:


