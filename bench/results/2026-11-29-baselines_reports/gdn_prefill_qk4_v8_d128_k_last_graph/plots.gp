if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
  set terminal pngcairo noenhanced size 1000,500
} else {
  set terminal png noenhanced size 1000,500
}
set datafile separator whitespace
reset
set output 'latency.png'
set title 'gdn_prefill_qk4_v8_d128_k_last: latency per workload'
set xlabel 'workload index (dataset order)'
set ylabel 'latency (us)'
set logscale y
set grid
set key outside right top
plot 'latency.dat' index 0 using 1:2 with points title 'gdn_prefill_simple_cuda'
set output
