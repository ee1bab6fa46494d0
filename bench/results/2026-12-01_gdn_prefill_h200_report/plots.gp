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
plot 'latency.dat' index 0 using 1:2 with points title 'khk_gdn_prefill', '' index 1 using 1:2 with points title 'fla_gdn_prefill'
set output
reset
set output 'speedup.png'
set title 'speedup against khk_gdn_prefill (sorted)'
set xlabel 'percent of workloads compared'
set ylabel 'khk_gdn_prefill latency / candidate latency'
set logscale y
set grid
set key outside right top
plot 'speedup.dat' index 0 using 1:2 with linespoints title 'fla_gdn_prefill', 1 with lines dashtype 2 linecolor rgb 'gray40' notitle
set output
